//! The OAuth 2.0 token service (spec 2.2, 4.2, 5): token, revocation (RFC 7009) and JWKS.
//! The gateway listener exposes these as `{gateway_url}/token` and `/revoke`.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};

use super::issue::{
    Params, TokenResponse, claims, family_jti, family_of_refresh_token, granted_scopes, issue,
    lifetime, new_refresh_token, param, respond, revoke_family,
};
use super::jwt::{self as token, Claims};
use super::opaque;
use super::queries::{self, Redemption, hash};
use crate::clients::{ClientCache, OAuthClient, Principal};
use crate::http::auth::{ClientAddress, basic_credentials};
use crate::http::error::OAuthError;
use crate::http::routes::{Routes, get, post};
use crate::manifest::Touched;
use crate::manifest::Touches;
use crate::state::AppState;
use crate::users::{self, VerifiedLogins};

pub fn router() -> Routes {
    Routes::new()
        .route("/oauth2/token", post(token_endpoint))
        .route("/oauth2/revoke", post(revoke_endpoint))
        .route("/oauth2/jwks", get(jwks))
}

#[utoipa::path(
    post,
    path = "/oauth2/token",
    tag = "OAuth 2.0",
    summary = "Issues an access token (RFC 6749): authorization_code (PKCE), password, client_credentials and refresh_token grants",
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
    if !matches!(
        grant,
        "password" | "client_credentials" | "refresh_token" | "authorization_code"
    ) {
        return Err(OAuthError::unsupported_grant_type(grant));
    }
    let public_may = !client.is_public() || matches!(grant, "authorization_code" | "refresh_token");
    if !client.allows_grant(grant) || !public_may {
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
        "authorization_code" => {
            super::oauth_code::authorization_code_grant(&state, client, &params, validity).await?
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
    let audience = redeemed
        .audience
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let claims = claims(state, client, &user, &scopes, lifetime, jti, audience);
    if claims.scope != redeemed.scope {
        queries::set_family_scope(&state.db, &family, &claims.scope).await?;
    }
    respond(state, &claims, Some(refresh_token)).await
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
    if let Ok(claims) = token::verify(&state.keys, &state.issuers, presented, true) {
        return Ok(Some(claims));
    }
    if !opaque::looks_opaque(presented) {
        return Ok(None);
    }
    let stored = opaque::find(&state.db, &hash(presented)).await?;
    Ok(stored.map(|token| token.claims(&state.issuer)))
}

/// The public signing keys, for gateways to verify tokens offline.
#[utoipa::path(
    get,
    path = "/oauth2/jwks",
    tag = "OAuth 2.0",
    responses((status = 200, description = "The keys that verify access tokens", body = crate::openapi::shapes::JwkSet))
)]
async fn jwks(State(state): State<AppState>) -> impl IntoResponse {
    let mut set = state.keys.jwks();
    set.keys.extend(state.id_token_keys.jwks().keys);
    Json(set)
}

/// The form parameters and the client they authenticate (with its owner), by HTTP Basic
/// or by the `client_id`/`client_secret` form fields.
async fn authenticated_form(
    state: &AppState,
    headers: &HeaderMap,
    form: Result<Form<Params>, FormRejection>,
) -> Result<(Arc<Principal>, Params), OAuthError> {
    let Form(params) = form.map_err(|e| OAuthError::invalid_request(e.body_text()))?;
    let credentials = basic_credentials(headers).or_else(|| {
        Some((
            params.get("client_id")?.clone(),
            params.get("client_secret")?.clone(),
        ))
    });
    let clients = state.shared::<ClientCache>();
    match credentials {
        Some((id, secret)) => match clients.get(&state.db, &id).await? {
            Some(principal)
                if !principal.client.is_public() && principal.client.secret_matches(&secret) =>
            {
                Ok((principal, params))
            }
            _ => Err(OAuthError::invalid_client("Client Authentication failed.")),
        },
        // A public client names itself alone (RFC 6749 §3.2.1); no other client may.
        None => {
            let id = params
                .get("client_id")
                .ok_or_else(|| OAuthError::invalid_client("Client authentication required"))?;
            match clients.get(&state.db, id).await? {
                Some(principal) if principal.client.is_public() => Ok((principal, params)),
                _ => Err(OAuthError::invalid_client("Client Authentication failed.")),
            }
        }
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
