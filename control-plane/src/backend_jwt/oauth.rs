//! `GET /oauth2/backend-jwks`: the public keys that verify the backend JWTs gateways
//! sign, for backends (every key still on the ring, so a rotation breaks no assertion
//! in flight).

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;

use crate::http::routes::{Routes, get};
use crate::state::AppState;

pub fn router() -> Routes {
    Routes::new().route("/oauth2/backend-jwks", get(backend_jwks))
}

/// The keys that verify `X-JWT-Assertion` headers.
#[utoipa::path(
    get,
    path = "/oauth2/backend-jwks",
    tag = "OAuth 2.0",
    responses((status = 200, description = "The keys that verify the backend JWTs gateways send", body = crate::openapi::shapes::JwkSet))
)]
async fn backend_jwks(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.backend_jwt_keys.jwks())
}

/// This operation in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(backend_jwks))]
pub struct Api;
