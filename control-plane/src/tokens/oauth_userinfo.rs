//! OpenID Connect's UserInfo endpoint (Core §5.3): who an access token with `openid`
//! acts for.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::jwt::Claims;
use super::opaque;
use crate::http::auth::bearer_token;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::users::queries::is_active;

pub fn router() -> Routes {
    Routes::new().route("/oauth2/userinfo", get(userinfo).post(userinfo_posted))
}

/// The claims UserInfo returns.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct UserInfo {
    sub: String,
    preferred_username: String,
}

/// The user an access token with `openid` acts for.
#[utoipa::path(
    get,
    path = "/oauth2/userinfo",
    tag = "OAuth 2.0",
    responses(
        (status = 200, description = "The user", body = UserInfo),
        (status = 401, description = "No valid access token (`WWW-Authenticate` says why)"),
        (status = 403, description = "The token lacks the `openid` scope")
    ),
    security(("bearer" = []))
)]
async fn userinfo(State(state): State<AppState>, headers: HeaderMap) -> Response {
    answer(&state, &headers).await
}

/// The same, asked by POST (Core §5.3.1).
#[utoipa::path(
    post,
    path = "/oauth2/userinfo",
    tag = "OAuth 2.0",
    responses(
        (status = 200, description = "The user", body = UserInfo),
        (status = 401, description = "No valid access token (`WWW-Authenticate` says why)"),
        (status = 403, description = "The token lacks the `openid` scope")
    ),
    security(("bearer" = []))
)]
async fn userinfo_posted(State(state): State<AppState>, headers: HeaderMap) -> Response {
    answer(&state, &headers).await
}

async fn answer(state: &AppState, headers: &HeaderMap) -> Response {
    let state = state.clone();
    let claims = match bearer_token(headers) {
        Some(token) => active_claims(&state, token).await,
        None => return challenge(StatusCode::UNAUTHORIZED, None),
    };
    match claims {
        Ok(Some(claims)) if claims.has_scope("openid") => Json(UserInfo {
            preferred_username: claims.sub.clone(),
            sub: claims.sub,
        })
        .into_response(),
        Ok(Some(_)) => challenge(StatusCode::FORBIDDEN, Some("insufficient_scope")),
        Ok(None) => challenge(StatusCode::UNAUTHORIZED, Some("invalid_token")),
        Err(err) => crate::error::Error::from(err).into_response(),
    }
}

/// The claims of an access token that is active now (as introspection finds it), its
/// user still active.
async fn active_claims(state: &AppState, token: &str) -> sqlx::Result<Option<Claims>> {
    let Some(claims) = opaque::active_claims(state, token).await? else {
        return Ok(None);
    };
    let live = is_active(&state.db, &claims.sub, claims.issued_ms()).await?;
    Ok(live.then_some(claims))
}

/// A refusal with RFC 6750 §3's `WWW-Authenticate`.
fn challenge(status: StatusCode, error: Option<&str>) -> Response {
    let value = match error {
        Some(error) => format!("Bearer error=\"{error}\""),
        None => "Bearer".to_string(),
    };
    let mut response = status.into_response();
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(userinfo, userinfo_posted))]
pub struct Api;
