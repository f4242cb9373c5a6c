//! What gateways read from the control plane: the current signed manifest (for a gateway
//! that starts or missed pushes) and the public key manifests are signed with.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use subtle::ConstantTimeEq;

use super::AppState;
use super::auth::bearer_token;
use super::error::{ApiError, ApiResult};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            apim_manifest::paths::CONTROL_PLANE_MANIFEST,
            get(current_manifest),
        )
        .route("/internal/gateway/manifest-key", get(manifest_key))
}

/// The current manifest as a compact JWS; needs the gateway secret (it carries backend
/// credentials).
async fn current_manifest(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let presented = bearer_token(&headers).unwrap_or_default();
    if !bool::from(presented.as_bytes().ct_eq(state.gateway_secret.as_bytes())) {
        return Err(ApiError::Unauthenticated);
    }
    let Some(manifest) = state.manifests.current() else {
        return Ok((StatusCode::SERVICE_UNAVAILABLE, "manifest not compiled yet").into_response());
    };
    Ok((
        [
            (header::CONTENT_TYPE, "application/jwt".to_string()),
            (
                header::HeaderName::from_static("x-manifest-version"),
                manifest.version.to_string(),
            ),
        ],
        manifest.jws.clone(),
    )
        .into_response())
}

/// The manifest signing key as a JWK set (public; gateways are configured with its `x`).
async fn manifest_key(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.manifest_keys.jwks())
}
