//! Access tokens: EdDSA-signed JWTs that gateways verify against the published JWKS.

use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::signing::KeyRing;

/// Claims of an access token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// The user the token acts for.
    pub sub: String,
    /// Issued at, Unix seconds.
    pub iat: i64,
    /// Issued at, Unix milliseconds: account changes end the tokens issued before them
    /// to the millisecond (`iat` alone would spare those of the same second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat_ms: Option<i64>,
    /// Expires at, Unix seconds.
    pub exp: i64,
    /// Token id, the handle for revocation.
    pub jti: String,
    /// Granted scopes, space separated.
    pub scope: String,
    /// The OAuth client (registered client or application consumer key).
    pub client_id: String,
    /// The store application, for tokens issued to its consumer key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    /// PRODUCTION or SANDBOX, for tokens issued to an application's consumer key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,
    /// The resources (RFC 8707) the token is for, when the client named any: gateways
    /// admit it to those APIs only. Absent, it is for every API, as before resources.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub aud: Vec<String>,
}

/// `aud` as RFC 7519 §4.1.3 has it: one string or an array of them.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

impl Claims {
    /// When the token was issued, Unix milliseconds (the start of its `iat` second for
    /// tokens issued before `iat_ms` was).
    pub fn issued_ms(&self) -> i64 {
        self.iat_ms.unwrap_or(self.iat.saturating_mul(1000))
    }

    /// The audience as stored beside a refresh family or an opaque token.
    pub fn audience(&self) -> String {
        self.aud.join(" ")
    }

    /// Whether the token carries this scope.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scope.split_whitespace().any(|s| s == scope)
    }
}

/// Signs claims with the active key, naming it in the `kid` header.
pub fn sign(keys: &KeyRing, claims: &Claims) -> anyhow::Result<String> {
    let key = keys.active();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(key.kid.clone());
    Ok(jsonwebtoken::encode(&header, claims, &key.encoding)?)
}

/// Why a token was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Past its `exp`.
    #[error("token expired")]
    Expired,
    /// Malformed, unknown key, bad signature or wrong issuer.
    #[error("invalid token")]
    Invalid,
}

/// Verifies signature and issuer (`issuers`: the one tokens are issued under, then those
/// still accepted); checks expiry unless `allow_expired`. The audience is the caller's to
/// check: a token for an API is taken by its gateways, and refused by the management API.
pub fn verify(
    keys: &KeyRing,
    issuers: &[String],
    token: &str,
    allow_expired: bool,
) -> Result<Claims, TokenError> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Invalid)?;
    let key = header
        .kid
        .as_deref()
        .and_then(|kid| keys.by_kid(kid))
        .ok_or(TokenError::Invalid)?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.leeway = 0;
    validation.validate_exp = !allow_expired;
    validation.set_issuer(issuers);
    validation.validate_aud = false;
    validation.set_required_spec_claims(&["exp", "iss", "sub"]);
    jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation)
        .map(|data| data.claims)
        .map_err(|err| match err.kind() {
            jsonwebtoken::errors::ErrorKind::ExpiredSignature => TokenError::Expired,
            _ => TokenError::Invalid,
        })
}
