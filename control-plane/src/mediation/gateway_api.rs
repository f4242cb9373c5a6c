//! Tenants' WebAssembly policies as gateways fetch them: by digest, behind the gateway
//! secret (`fleet::gateway_api::require_gateway_secret` refuses other callers from the
//! head), so the manifest names each policy without carrying its bytes.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::queries;
use crate::error::{Error, Result};
use crate::http::routes::{Routes, get};
use crate::state::AppState;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{}{{digest}}", apim_manifest::paths::CONTROL_PLANE_POLICIES),
        get(policy_bytes),
    )
}

/// The policy's bytes, `application/wasm`; 404 for a digest no policy has.
#[utoipa::path(
    get,
    path = "/internal/gateway/policies/{digest}",
    tag = "Gateways",
    params(("digest" = String, Path, description = "The policy's SHA-256, lower-case hex")),
    responses(
        (status = 200, description = "The policy's bytes", content_type = "application/wasm", body = Vec<u8>),
        (status = 404, description = "No policy has this digest")
    ),
    security(("gateway_secret" = []))
)]
async fn policy_bytes(
    State(state): State<AppState>,
    Path(digest): Path<String>,
) -> Result<Response> {
    if !apim_policy_world::is_digest(&digest) {
        return Err(Error::NotFound("WebAssembly policy", digest));
    }
    let bytes = queries::wasm_bytes(&state.db, &digest)
        .await?
        .ok_or_else(|| Error::NotFound("WebAssembly policy", digest))?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/wasm"),
            (
                header::CACHE_CONTROL,
                "private, max-age=31536000, immutable",
            ),
        ],
        bytes,
    )
        .into_response())
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(policy_bytes))]
pub struct Api;
