//! The OAuth 2.0 token service (spec 2.2, 4.2, 5): token, revocation (RFC 7009) and JWKS.
//! The gateway listener exposes these as `{gateway_url}/token` and `/revoke`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use serde::Serialize;

use super::jwt::{self as token, Claims};
use super::opaque;
use super::queries::{self, Redemption, hash};
use crate::clients::{ClientCache, OAuthClient, Principal};
use crate::db::{now, now_ms};
use crate::http::auth::{ClientAddress, basic_credentials};
use crate::http::error::OAuthError;
use crate::http::routes::{Routes, get, post};
use crate::manifest::Touched;
use crate::manifest::Touches;
use crate::scopes::{self, APPLICATION_SCOPE};
use crate::state::AppState;
use crate::users::{self, User, VerifiedLogins};

pub fn router() -> Routes {
    Routes::new()
        .route("/oauth2/token", post(token_endpoint))
        .route("/oauth2/revoke", post(revoke_endpoint))
        .route("/oauth2/jwks", get(jwks))
}

/// A successful token response (RFC 6749 §5.1).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokenResponse {
    /// A JWT, or an opaque token for an application whose `tokenType` is not `JWT`.
    pub access_token: String,
    /// For grants that may be refreshed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Granted scopes, space separated.
    pub scope: String,
    /// Always Bearer.
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: i64,
}

type Params = HashMap<String, String>;

#[utoipa::path(
    post,
    path = "/oauth2/token",
    tag = "OAuth 2.0",
    summary = "Issues an access token (RFC 6749): password, client_credentials and refresh_token grants",
    request_body(content = crate::openapi::shapes::TokenForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The token", body = TokenResponse),
        (status = "default", description = "An OAuth 2.0 error (RFC 6749 §5.2)", body = crate::openapi::shapes::OAuthErrorBody)
    ),
    security(("basic" = []))
)]
async fn token_endpoint(
    State(state): State<AppState>,
    ClientAddress(from): ClientAddress,
    headers: HeaderMap,
    form: Result<Form<Params>, FormRejection>,
) -> Result<Response, OAuthError> {
    let (principal, params) = authenticated_form(&state, &headers, form).await?;
    let client = &principal.client;
    let grant = param(&params, "grant_type")?;
    if !matches!(grant, "password" | "client_credentials" | "refresh_token") {
        return Err(OAuthError::unsupported_grant_type(grant));
    }
    if !client.allows_grant(grant) {
        return Err(OAuthError::unauthorized_client(grant));
    }
    let validity = validity(&state, client, &params)?;
    let response = match grant {
        "password" => password_grant(&state, client, &params, validity, from).await?,
        "client_credentials" => {
            let owner = principal.owner.as_ref().ok_or_else(|| {
                OAuthError::invalid_client("The owner of this client no longer exists")
            })?;
            let scope = params.get("scope").map(String::as_str).unwrap_or_default();
            issue(&state, client, owner, scope, validity, false).await?
        }
        _ => refresh_grant(&state, client, &params, validity).await?,
    };
    crate::ops::metrics::metrics().token_issued(grant);
    Ok(no_store(Json(response)))
}

async fn password_grant(
    state: &AppState,
    client: &OAuthClient,
    params: &Params,
    validity: i64,
    from: IpAddr,
) -> Result<TokenResponse, OAuthError> {
    let username = param(params, "username")?;
    let password = param(params, "password")?;
    let user = state
        .shared::<VerifiedLogins>()
        .authenticate(&state.db, username, password, from)
        .await?
        .ok_or_else(|| {
            OAuthError::invalid_grant(format!("Authentication failed for {username}"))
        })?;
    let scope = params.get("scope").map(String::as_str).unwrap_or_default();
    issue(state, client, &user, scope, validity, true).await
}

/// Exchanges a refresh token for new tokens of the same family. One conditional UPDATE
/// replaces the family's refresh token and access token, so that of concurrent refreshes
/// with one token exactly one succeeds; the access token it replaces is revoked.
async fn refresh_grant(
    state: &AppState,
    client: &OAuthClient,
    params: &Params,
    validity: i64,
) -> Result<TokenResponse, OAuthError> {
    let presented = param(params, "refresh_token")?;
    let invalid = || OAuthError::invalid_grant("Persisted access token data not found");
    let family = family_of_refresh_token(presented);
    let refresh_token = new_refresh_token(&family);
    let lifetime = lifetime(validity);
    let (iat, exp) = (lifetime.iat, lifetime.exp);
    let jti = family_jti(&family);
    let redeemed = queries::redeem(
        &state.db,
        Redemption {
            presented_hash: hash(presented),
            family: &family,
            client_id: &client.client_id,
            now: iat,
            token_hash: hash(&refresh_token),
            access_jti: &jti,
            access_exp: exp,
            expires_at: iat.saturating_add(state.config.refresh_token_validity_secs),
        },
    )
    .await?;
    let redeemed = redeemed.ok_or_else(invalid)?;
    queries::insert_revocation(&state.db, &redeemed.spent_jti, redeemed.spent_exp).await?;
    // The replaced access token is revoked now, which gateways must learn.
    state
        .shared::<crate::fleet::ManifestHub>()
        .touch([Touched::Revocation(redeemed.spent_jti.clone())]);
    let Some(user) = users::find(&state.db, &redeemed.username).await? else {
        revoke_family(state, &client.client_id, &family, "").await?;
        return Err(invalid());
    };
    // A refresh may narrow the scope, never widen it.
    let asked = match params.get("scope") {
        Some(asked) => asked
            .split_whitespace()
            .filter(|s| redeemed.scope.split_whitespace().any(|o| o == *s))
            .collect::<Vec<_>>()
            .join(" "),
        None => redeemed.scope.clone(),
    };
    let scopes = granted_scopes(state, client, &user, &asked).await?;
    let claims = claims(state, client, &user, &scopes, lifetime, jti);
    if claims.scope != redeemed.scope {
        queries::set_family_scope(&state.db, &family, &claims.scope).await?;
    }
    respond(state, &claims, Some(refresh_token)).await
}

/// Issues an access token (and a refresh token starting a family, when asked) to
/// `client` acting for `user`.
pub async fn issue(
    state: &AppState,
    client: &OAuthClient,
    user: &User,
    requested_scope: &str,
    validity: i64,
    with_refresh: bool,
) -> Result<TokenResponse, OAuthError> {
    let mut scopes = granted_scopes(state, client, user, requested_scope).await?;
    if !with_refresh && !scopes.iter().any(|s| s == APPLICATION_SCOPE) {
        // WSO2 adds the application scope to client_credentials tokens.
        scopes.push(APPLICATION_SCOPE.to_string());
    }
    let lifetime = lifetime(validity);
    if !with_refresh {
        let claims = claims(state, client, user, &scopes, lifetime, new_id());
        return respond(state, &claims, None).await;
    }
    let family = new_id();
    let claims = claims(state, client, user, &scopes, lifetime, family_jti(&family));
    let refresh_token = new_refresh_token(&family);
    let expires_at = claims
        .iat
        .saturating_add(state.config.refresh_token_validity_secs);
    queries::insert_family(
        &state.db,
        &family,
        &hash(&refresh_token),
        &claims,
        expires_at,
    )
    .await?;
    respond(state, &claims, Some(refresh_token)).await
}

/// The scopes a token for `client` acting for `user` gets of those requested: by the
/// user's roles for a registered (management) client; for an application's consumer key
/// only application scopes, never management ones.
async fn granted_scopes(
    state: &AppState,
    client: &OAuthClient,
    user: &User,
    requested: &str,
) -> sqlx::Result<Vec<String>> {
    let Some(application_id) = &client.application_id else {
        return Ok(state.scopes.grant(requested, &user.roles));
    };
    let needs_api_scopes = requested
        .split_whitespace()
        .any(|s| !scopes::is_open(s) && !state.scopes.is_management(s));
    let api_scopes = if needs_api_scopes {
        crate::subscriptions::subscribed_api_scopes(
            &state.db,
            application_id,
            client.key_type.as_deref(),
        )
        .await?
    } else {
        Vec::new()
    };
    Ok(state
        .scopes
        .grant_application(requested, &user.roles, &api_scopes))
}

/// When a token is issued and when it expires.
#[derive(Debug, Clone, Copy)]
struct Lifetime {
    /// Issued at, Unix milliseconds.
    issued_ms: i64,
    /// Issued at, Unix seconds.
    iat: i64,
    /// Expires at, Unix seconds.
    exp: i64,
}

/// The lifetime of a token valid for `validity` seconds from now.
fn lifetime(validity: i64) -> Lifetime {
    let issued_ms = now_ms();
    let iat = issued_ms / 1000;
    Lifetime {
        issued_ms,
        iat,
        exp: iat.saturating_add(validity),
    }
}

fn claims(
    state: &AppState,
    client: &OAuthClient,
    user: &User,
    scopes: &[String],
    lifetime: Lifetime,
    jti: String,
) -> Claims {
    Claims {
        iss: state.issuer.clone(),
        sub: user.username.clone(),
        iat: lifetime.iat,
        iat_ms: Some(lifetime.issued_ms),
        exp: lifetime.exp,
        jti,
        scope: scopes.join(" "),
        client_id: client.client_id.clone(),
        application_id: client.application_id.clone(),
        key_type: client.key_type.clone(),
    }
}

/// Issues the access token `claims` describe and answers with it: an opaque token,
/// stored, for an application whose `tokenType` is not `JWT` (WSO2's default is `OAUTH`),
/// else a signed JWT (registered clients' management tokens always are).
async fn respond(
    state: &AppState,
    claims: &Claims,
    refresh_token: Option<String>,
) -> Result<TokenResponse, OAuthError> {
    let access_token = if issues_opaque_tokens(state, claims).await? {
        let token = opaque::new_token();
        opaque::insert(&state.db, &hash(&token), claims).await?;
        token
    } else {
        token::sign(&state.keys, claims)?
    };
    Ok(TokenResponse {
        access_token,
        refresh_token,
        scope: claims.scope.clone(),
        token_type: "Bearer",
        expires_in: claims.exp - claims.iat,
    })
}

/// Whether the application the token is for (if any) has opaque tokens.
async fn issues_opaque_tokens(state: &AppState, claims: &Claims) -> sqlx::Result<bool> {
    let Some(application_id) = &claims.application_id else {
        return Ok(false);
    };
    let application = crate::applications::find(&state.db, application_id).await?;
    Ok(application.is_some_and(|app| app.token_type != "JWT"))
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A refresh token: its family, a dot, and a secret (opaque, as WSO2's, and 65
/// characters: naming its family lets any refresh token of a family, spent ones too,
/// revoke it).
fn new_refresh_token(family: &str) -> String {
    format!("{family}.{}", new_id())
}

/// The `jti` of an access token of a family: the family, a dot, and its own id.
fn family_jti(family: &str) -> String {
    format!("{family}.{}", new_id())
}

/// The family a refresh token names (tokens from before families were their own family,
/// named by their hash).
fn family_of_refresh_token(token: &str) -> String {
    match token.split_once('.') {
        Some((family, _)) => family.to_string(),
        None => hash(token),
    }
}

/// RFC 7009: revokes an access or refresh token of the authenticated client, and with
/// it the whole family (the refresh token and the access token in use). Unknown tokens
/// and other clients' tokens are answered 200 too, so revocation reveals nothing.
#[utoipa::path(
    post,
    path = "/oauth2/revoke",
    tag = "OAuth 2.0",
    summary = "Revokes a token and its family (RFC 7009)",
    request_body(content = crate::openapi::shapes::RevokeForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The token is revoked, or was not one"),
        (status = "default", description = "An OAuth 2.0 error (RFC 6749 §5.2)", body = crate::openapi::shapes::OAuthErrorBody)
    ),
    security(("basic" = []))
)]
async fn revoke_endpoint(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<Params>, FormRejection>,
) -> Result<Response, OAuthError> {
    let (principal, params) = authenticated_form(&state, &headers, form).await?;
    let client_id = &principal.client.client_id;
    let presented = param(&params, "token")?;
    let revoked = match presented_access_token(&state, presented).await? {
        Some(claims) if claims.client_id == *client_id => {
            queries::insert_revocation(&state.db, &claims.jti, claims.exp).await?;
            let family = claims.jti.split_once('.').map_or("", |(family, _)| family);
            let mut revoked = revoke_family(&state, client_id, family, &claims.jti).await?;
            revoked.push(claims.jti);
            revoked
        }
        Some(_) => Vec::new(),
        None => {
            let family = family_of_refresh_token(presented);
            revoke_family(&state, client_id, &family, "").await?
        }
    };
    queries::prune_revocations(&state.db).await?;
    let touched = Touches(revoked.into_iter().map(Touched::Revocation).collect());
    Ok((touched, no_store(())).into_response())
}

/// The claims of an access token this service issued, expired or not: a JWT it signed or
/// an opaque token it stored.
async fn presented_access_token(state: &AppState, presented: &str) -> sqlx::Result<Option<Claims>> {
    if let Ok(claims) = token::verify(&state.keys, &state.issuer, presented, true) {
        return Ok(Some(claims));
    }
    if !opaque::looks_opaque(presented) {
        return Ok(None);
    }
    let stored = opaque::find(&state.db, &hash(presented)).await?;
    Ok(stored.map(|token| token.claims(&state.issuer)))
}

/// Revokes a family of `client_id`'s: the one named, or the one whose access token in use
/// is `access_jti`. Returns the access tokens revoked.
async fn revoke_family(
    state: &AppState,
    client_id: &str,
    family: &str,
    access_jti: &str,
) -> sqlx::Result<Vec<String>> {
    let rows = queries::delete_families(&state.db, client_id, family, access_jti).await?;
    let mut revoked = Vec::new();
    for row in rows {
        for (jti, exp) in [
            (row.access_jti, row.access_exp),
            (row.spent_jti, row.spent_exp),
        ] {
            if !jti.is_empty() && exp > now() {
                queries::insert_revocation(&state.db, &jti, exp).await?;
                revoked.push(jti);
            }
        }
    }
    Ok(revoked)
}

/// The public signing keys, for gateways to verify tokens offline.
#[utoipa::path(
    get,
    path = "/oauth2/jwks",
    tag = "OAuth 2.0",
    responses((status = 200, description = "The keys that verify access tokens", body = crate::openapi::shapes::JwkSet))
)]
async fn jwks(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.keys.jwks())
}

/// The form parameters and the client they authenticate (with its owner), by HTTP Basic
/// or by the `client_id`/`client_secret` form fields.
async fn authenticated_form(
    state: &AppState,
    headers: &HeaderMap,
    form: Result<Form<Params>, FormRejection>,
) -> Result<(Arc<Principal>, Params), OAuthError> {
    let Form(params) = form.map_err(|e| OAuthError::invalid_request(e.body_text()))?;
    let (id, secret) = basic_credentials(headers)
        .or_else(|| {
            Some((
                params.get("client_id")?.clone(),
                params.get("client_secret")?.clone(),
            ))
        })
        .ok_or_else(|| OAuthError::invalid_client("Client authentication required"))?;
    match state.shared::<ClientCache>().get(&state.db, &id).await? {
        Some(principal) if principal.client.secret_matches(&secret) => Ok((principal, params)),
        _ => Err(OAuthError::invalid_client("Client Authentication failed.")),
    }
}

/// The access token's validity: `validity_period` when given (1 to APIM_MAX_TOKEN_VALIDITY
/// seconds, else 400), else the key's own, else the configured default; a key stored with
/// a longer validity than the maximum gets the maximum.
fn validity(state: &AppState, client: &OAuthClient, params: &Params) -> Result<i64, OAuthError> {
    let max = state.config.max_token_validity_secs;
    match params.get("validity_period") {
        None => Ok(client
            .validity_secs
            .unwrap_or(state.config.token_validity_secs)
            .clamp(1, max)),
        Some(v) => match v.trim().parse::<i64>() {
            Ok(secs) if (1..=max).contains(&secs) => Ok(secs),
            _ => Err(OAuthError::invalid_request(format!(
                "validity_period must be a whole number of seconds from 1 to {max}"
            ))),
        },
    }
}

fn param<'a>(params: &'a Params, name: &str) -> Result<&'a str, OAuthError> {
    params
        .get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OAuthError::invalid_request(format!("Missing parameter: {name}")))
}

pub(super) fn no_store(body: impl IntoResponse) -> Response {
    let mut response = body.into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(token_endpoint, revoke_endpoint, jwks))]
pub struct Api;
