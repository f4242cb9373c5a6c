//! Token introspection (RFC 7662) for gateways: `POST /oauth2/introspect` with a form
//! `token=...`, the gateway secret as bearer token (checked from the head, before the
//! body is read: `fleet::require_gateway_secret`). Gateways ask it about opaque tokens,
//! which they cannot verify offline; it answers about JWTs too, as the RFC wants.

use std::collections::HashMap;

use apim_manifest::Introspection;
use apim_manifest::paths::CONTROL_PLANE_INTROSPECT;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::response::Response;
use axum::{Form, Json};

use super::jwt::Claims;
use super::oauth::no_store;
use super::opaque;
use crate::http::error::OAuthError;
use crate::http::routes::{Routes, post};
use crate::state::AppState;

pub fn router() -> Routes {
    Routes::new().route(CONTROL_PLANE_INTROSPECT, post(introspect))
}

/// RFC 7662 §2: the token's claims while it is active, else `{"active":false}` (unknown,
/// malformed, expired, revoked, or of a deleted application alike, so the answer tells a
/// guesser nothing). A request without `token` is 400 `invalid_request`.
#[utoipa::path(
    post,
    path = "/oauth2/introspect",
    tag = "OAuth 2.0",
    summary = "Says whether a token is active and what it grants (RFC 7662), for gateways",
    request_body(content = crate::openapi::shapes::IntrospectForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The token's claims, or `{\"active\":false}`", body = crate::openapi::shapes::IntrospectionAnswer),
        (status = 401, description = "Not a gateway: no or a wrong gateway secret", body = crate::http::error::ErrorBody),
        (status = "default", description = "An OAuth 2.0 error (RFC 6749 §5.2)", body = crate::openapi::shapes::OAuthErrorBody)
    ),
    security(("gateway_secret" = []))
)]
async fn introspect(
    State(state): State<AppState>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Result<Response, OAuthError> {
    let Form(params) = form.map_err(|e| OAuthError::invalid_request(e.body_text()))?;
    let token = params
        .get("token")
        .filter(|token| !token.is_empty())
        .ok_or_else(|| OAuthError::invalid_request("Missing parameter: token"))?;
    let answer = match opaque::active_claims(&state, token).await? {
        Some(claims) => active(claims),
        None => Introspection::default(),
    };
    crate::ops::metrics::metrics().token_introspected(answer.active);
    Ok(no_store(Json(answer)))
}

/// The answer for an active token.
fn active(claims: Claims) -> Introspection {
    Introspection {
        active: true,
        scope: Some(claims.scope),
        client_id: Some(claims.client_id),
        username: Some(claims.sub.clone()),
        token_type: Some("Bearer".into()),
        exp: Some(claims.exp),
        iat: Some(claims.iat),
        sub: Some(claims.sub),
        jti: Some(claims.jti),
        application_id: claims.application_id,
        key_type: claims.key_type,
        aud: (!claims.aud.is_empty()).then_some(claims.aud),
    }
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(introspect))]
pub struct Api;
