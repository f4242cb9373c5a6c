//! The OAuth 2.0 token service (spec 2.2, 4.2, 5): token, revocation (RFC 7009) and JWKS.
//! The gateway listener exposes these as `{gateway_url}/token` and `/revoke`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::auth::basic_credentials;
use super::error::OAuthError;
use super::{AppState, Touches};
use crate::clients::{OAuthClient, Principal};
use crate::db::now;
use crate::manifest::Touched;
use crate::scopes::APPLICATION_SCOPE;
use crate::token::{self, Claims};
use crate::users::{self, User};

/// Longest validity a client may ask for with `validity_period`: one year.
const MAX_VALIDITY_SECS: i64 = 365 * 24 * 3600;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/oauth2/token", post(token_endpoint))
        .route("/oauth2/revoke", post(revoke_endpoint))
        .route("/oauth2/jwks", get(jwks))
}

/// A successful token response (RFC 6749 §5.1).
#[derive(Debug, Serialize)]
pub struct TokenResponse {
    /// The JWT.
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

async fn token_endpoint(
    State(state): State<AppState>,
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
        "password" => password_grant(&state, client, &params, validity).await?,
        "client_credentials" => {
            let owner = principal.owner.as_ref().ok_or_else(|| {
                OAuthError::invalid_client("The owner of this client no longer exists")
            })?;
            let scope = params.get("scope").map(String::as_str).unwrap_or_default();
            issue(&state, client, owner, scope, validity, false).await?
        }
        _ => refresh_grant(&state, client, &params, validity).await?,
    };
    Ok(no_store(Json(response)))
}

async fn password_grant(
    state: &AppState,
    client: &OAuthClient,
    params: &Params,
    validity: i64,
) -> Result<TokenResponse, OAuthError> {
    let username = param(params, "username")?;
    let password = param(params, "password")?;
    let user = state
        .logins
        .authenticate(&state.db, username, password)
        .await?
        .ok_or_else(|| {
            OAuthError::invalid_grant(format!("Authentication failed for {username}"))
        })?;
    let scope = params.get("scope").map(String::as_str).unwrap_or_default();
    issue(state, client, &user, scope, validity, true).await
}

/// Exchanges a refresh token for new tokens; the old refresh token is used up.
async fn refresh_grant(
    state: &AppState,
    client: &OAuthClient,
    params: &Params,
    validity: i64,
) -> Result<TokenResponse, OAuthError> {
    let presented = param(params, "refresh_token")?;
    let invalid = || OAuthError::invalid_grant("Persisted access token data not found");
    let mut tx = state.db.begin().await?;
    let record = take_refresh_token(&mut tx, presented)
        .await?
        .ok_or_else(invalid)?;
    if record.client_id != client.client_id || record.expires_at <= now() {
        return Err(invalid());
    }
    tx.commit().await?;
    // The old access token is revoked now, which gateways must learn.
    state
        .manifests
        .touch([Touched::Revocation(record.access_jti.clone())]);
    let (username, original_scope) = (record.username, record.scope);
    let user = users::find(&state.db, &username)
        .await?
        .ok_or_else(invalid)?;
    // A refresh may narrow the scope, never widen it.
    let scope = match params.get("scope") {
        Some(asked) => asked
            .split_whitespace()
            .filter(|s| original_scope.split_whitespace().any(|o| o == *s))
            .collect::<Vec<_>>()
            .join(" "),
        None => original_scope,
    };
    issue(state, client, &user, &scope, validity, true).await
}

/// Issues an access token (and a refresh token when asked) to `client` acting for `user`.
pub async fn issue(
    state: &AppState,
    client: &OAuthClient,
    user: &User,
    requested_scope: &str,
    validity: i64,
    with_refresh: bool,
) -> Result<TokenResponse, OAuthError> {
    let mut scopes = state.scopes.grant(requested_scope, &user.roles);
    if !with_refresh && !scopes.iter().any(|s| s == APPLICATION_SCOPE) {
        // WSO2 adds the application scope to client_credentials tokens.
        scopes.push(APPLICATION_SCOPE.to_string());
    }
    let iat = now();
    let claims = Claims {
        iss: state.issuer.clone(),
        sub: user.username.clone(),
        iat,
        exp: iat + validity,
        jti: uuid::Uuid::new_v4().to_string(),
        scope: scopes.join(" "),
        client_id: client.client_id.clone(),
        application_id: client.application_id.clone(),
        key_type: client.key_type.clone(),
    };
    let access_token = token::sign(&state.keys, &claims)?;
    let refresh_token = if with_refresh {
        Some(store_refresh_token(state, &claims).await?)
    } else {
        None
    };
    Ok(TokenResponse {
        access_token,
        refresh_token,
        scope: claims.scope,
        token_type: "Bearer",
        expires_in: validity,
    })
}

async fn store_refresh_token(state: &AppState, claims: &Claims) -> sqlx::Result<String> {
    let refresh_token = uuid::Uuid::new_v4().to_string();
    // language=SQL
    sqlx::query(
        "INSERT INTO refresh_tokens (token_hash, client_id, username, scope, expires_at, access_jti, access_exp)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(hash(&refresh_token))
    .bind(&claims.client_id)
    .bind(&claims.sub)
    .bind(&claims.scope)
    .bind(now() + state.config.refresh_token_validity_secs)
    .bind(&claims.jti)
    .bind(claims.exp)
    .execute(&state.db)
    .await?;
    Ok(refresh_token)
}

/// RFC 7009: revokes an access or refresh token of the authenticated client. Unknown
/// tokens and other clients' tokens are answered 200 too, so revocation reveals nothing.
async fn revoke_endpoint(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<Params>, FormRejection>,
) -> Result<Response, OAuthError> {
    let (principal, params) = authenticated_form(&state, &headers, form).await?;
    let client = &principal.client;
    let presented = param(&params, "token")?;
    let revoked = match revoke_refresh_token(&state, client, presented).await? {
        RefreshRevocation::Revoked { access_jti } => Some(access_jti),
        RefreshRevocation::NotOurs => None,
        RefreshRevocation::NotARefreshToken => {
            match token::verify(&state.keys, &state.issuer, presented, true) {
                Ok(claims) if claims.client_id == client.client_id => {
                    revoke_access_token(&state, &claims.jti, claims.exp).await?;
                    Some(claims.jti)
                }
                _ => None,
            }
        }
    };
    let touched = Touches(revoked.into_iter().map(Touched::Revocation).collect());
    Ok((touched, no_store(())).into_response())
}

/// What presenting a token for revocation did, if it was a refresh token.
enum RefreshRevocation {
    /// Not a refresh token we know.
    NotARefreshToken,
    /// Another client's refresh token: left alone, and nothing said.
    NotOurs,
    /// Revoked, with the access token issued with it.
    Revoked { access_jti: String },
}

async fn revoke_refresh_token(
    state: &AppState,
    client: &OAuthClient,
    presented: &str,
) -> sqlx::Result<RefreshRevocation> {
    let mut tx = state.db.begin().await?;
    match take_refresh_token(&mut tx, presented).await? {
        Some(record) if record.client_id != client.client_id => Ok(RefreshRevocation::NotOurs),
        Some(record) => {
            tx.commit().await?;
            Ok(RefreshRevocation::Revoked {
                access_jti: record.access_jti,
            })
        }
        None => Ok(RefreshRevocation::NotARefreshToken),
    }
}

/// A stored refresh token.
struct RefreshRecord {
    client_id: String,
    username: String,
    scope: String,
    expires_at: i64,
    /// The access token issued with it, revoked with it.
    access_jti: String,
}

/// Deletes a refresh token and revokes the access token issued with it, in the caller's
/// transaction; committing makes it take effect, dropping the transaction undoes it.
async fn take_refresh_token(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    presented: &str,
) -> sqlx::Result<Option<RefreshRecord>> {
    // language=SQL
    let row: Option<(String, String, String, i64, String, i64)> = sqlx::query_as(
        "SELECT client_id, username, scope, expires_at, access_jti, access_exp
         FROM refresh_tokens WHERE token_hash = $1",
    )
    .bind(hash(presented))
    .fetch_optional(&mut **tx)
    .await?;
    let Some((client_id, username, scope, expires_at, access_jti, access_exp)) = row else {
        return Ok(None);
    };
    // language=SQL
    sqlx::query("DELETE FROM refresh_tokens WHERE token_hash = $1")
        .bind(hash(presented))
        .execute(&mut **tx)
        .await?;
    insert_revocation(&mut **tx, &access_jti, access_exp).await?;
    Ok(Some(RefreshRecord {
        client_id,
        username,
        scope,
        expires_at,
        access_jti,
    }))
}

/// Records a revoked access token until it would have expired anyway.
pub async fn revoke_access_token(state: &AppState, jti: &str, exp: i64) -> sqlx::Result<()> {
    insert_revocation(&state.db, jti, exp).await?;
    // Expired revocations protect nothing; drop them while we are here.
    // language=SQL
    sqlx::query("DELETE FROM revoked_tokens WHERE expires_at < $1")
        .bind(now())
        .execute(&state.db)
        .await?;
    Ok(())
}

async fn insert_revocation<'e>(
    db: impl sqlx::Executor<'e, Database = sqlx::Any>,
    jti: &str,
    exp: i64,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO revoked_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING",
    )
    .bind(jti)
    .bind(exp)
    .execute(db)
    .await
    .map(|_| ())
}

/// The public signing keys, for gateways to verify tokens offline.
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
    match state.clients.get(&state.db, &id).await? {
        Some(principal) if principal.client.secret_matches(&secret) => Ok((principal, params)),
        _ => Err(OAuthError::invalid_client("Client Authentication failed.")),
    }
}

fn validity(state: &AppState, client: &OAuthClient, params: &Params) -> Result<i64, OAuthError> {
    match params.get("validity_period") {
        None => Ok(client
            .validity_secs
            .unwrap_or(state.config.token_validity_secs)),
        Some(v) => match v.trim().parse::<i64>() {
            Ok(secs) if (1..=MAX_VALIDITY_SECS).contains(&secs) => Ok(secs),
            _ => Err(OAuthError::invalid_request(format!(
                "validity_period must be a whole number of seconds from 1 to {MAX_VALIDITY_SECS}"
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

fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn no_store(body: impl IntoResponse) -> Response {
    let mut response = body.into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}
