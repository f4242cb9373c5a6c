//! Shapes of bodies the handlers read as maps or write as JSON values (the OAuth 2.0
//! forms, JWK sets, small status answers), described here for the document only: these
//! types are never built, and what the handlers really read and write is checked against
//! them by the harness, on every answer of the end-to-end tests.
#![expect(
    dead_code,
    reason = "described for the OpenAPI document only, never built"
)]

use utoipa::ToSchema;

/// A token request (RFC 6749 §4.3, §4.4, §6); the client authenticates by HTTP Basic or by
/// `client_id` and `client_secret`.
#[derive(ToSchema)]
pub struct TokenForm {
    /// `password`, `client_credentials` or `refresh_token`.
    grant_type: String,
    /// The resource owner (password grant).
    username: Option<String>,
    /// Its password (password grant).
    password: Option<String>,
    /// Scopes asked for, space separated.
    scope: Option<String>,
    /// The refresh token (refresh_token grant).
    refresh_token: Option<String>,
    /// Seconds the token should live, within the client's bounds.
    validity_period: Option<i64>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

/// A revocation request (RFC 7009 §2.1).
#[derive(ToSchema)]
pub struct RevokeForm {
    /// The access or refresh token; its whole family is revoked.
    token: String,
    /// `access_token` or `refresh_token`.
    token_type_hint: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

/// An introspection request (RFC 7662 §2.1).
#[derive(ToSchema)]
pub struct IntrospectForm {
    /// The token asked about.
    token: String,
    /// `access_token` or `refresh_token`.
    token_type_hint: Option<String>,
}

/// An introspection answer (RFC 7662 §2.2): `{"active":false}` alone for a token that may
/// not be used now.
#[derive(ToSchema)]
pub struct IntrospectionAnswer {
    active: bool,
    /// Granted scopes, space separated.
    scope: Option<String>,
    /// The consumer key it was issued to.
    client_id: Option<String>,
    /// The end user.
    username: Option<String>,
    /// `Bearer`.
    token_type: Option<String>,
    /// Expiry, Unix seconds.
    exp: Option<i64>,
    /// Issued at, Unix seconds.
    iat: Option<i64>,
    /// The end user, as a JWT's `sub`.
    sub: Option<String>,
    /// The token's id, which revocations name.
    jti: Option<String>,
    /// The store application of the consumer key.
    application_id: Option<String>,
    /// `PRODUCTION` or `SANDBOX`.
    key_type: Option<String>,
}

/// An OAuth 2.0 error (RFC 6749 §5.2).
#[derive(ToSchema)]
#[schema(as = OAuthError)]
pub struct OAuthErrorBody {
    error: String,
    error_description: String,
}

/// A JSON Web Key Set (RFC 7517 §5) of Ed25519 public keys (RFC 8037).
#[derive(ToSchema)]
pub struct JwkSet {
    keys: Vec<Jwk>,
}

/// A public key: Ed25519 (RFC 8037 §2) for access tokens, RSA (RFC 7518 §6.3) for
/// id_tokens.
#[derive(ToSchema)]
pub struct Jwk {
    /// `OKP` or `RSA`.
    kty: String,
    /// `Ed25519`, of an `OKP` key.
    crv: Option<String>,
    /// The public key, base64url, of an `OKP` key.
    x: Option<String>,
    /// The modulus, base64url, of an `RSA` key.
    n: Option<String>,
    /// The exponent, base64url, of an `RSA` key.
    e: Option<String>,
    kid: Option<String>,
    /// `EdDSA` or `RS256`.
    alg: Option<String>,
    /// `sig`.
    #[schema(rename = "use")]
    use_: Option<String>,
}

/// The newest manifest version, the answer to a gateway's long poll.
#[derive(ToSchema)]
pub struct LatestVersion {
    latest: u64,
}

/// A page of the manifest a gateway pulled and could not take.
#[derive(ToSchema)]
pub struct PageReport {
    /// The version the page was to follow (the pull's `after`).
    after: u64,
    /// Whether the page was part of a snapshot.
    snapshot: bool,
    /// Why it was not taken.
    reason: String,
    /// The reporting gateway's environment.
    environment: Option<String>,
}

/// What one gateway process has counted, per minute, API and application.
#[derive(ToSchema)]
#[schema(as = AnalyticsReport)]
pub struct AnalyticsReport {
    /// The gateway's id.
    gateway: String,
    /// The gateway process, random per start.
    boot: String,
    /// Its totals so far.
    rows: Vec<MinuteCounts>,
}

/// One process's totals of one (minute, API, application).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MinuteCounts {
    /// Unix minute.
    minute: i64,
    api_id: String,
    /// Empty for requests without an application.
    application_id: String,
    requests: u64,
    client_errors: u64,
    server_errors: u64,
    /// Microseconds.
    latency_sum_us: u64,
    /// Requests per latency bucket.
    latency_buckets: Vec<u64>,
}

/// The answer of the health endpoints.
#[derive(ToSchema)]
pub struct Status {
    /// `alive`, `ready` or `unavailable`.
    status: String,
}
