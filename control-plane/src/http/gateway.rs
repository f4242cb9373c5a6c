//! What gateways read from the control plane: pages of the manifest (for a gateway that
//! starts, or catches up after missed pushes) and the public key pages are signed with.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::AppState;
use super::auth::bearer_token;
use super::error::{ApiError, ApiResult};
use super::extract::QueryParams;
use crate::manifest;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            apim_manifest::paths::CONTROL_PLANE_MANIFEST,
            get(manifest_page),
        )
        .route("/internal/gateway/manifest-key", get(manifest_key))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// The version the gateway holds (or its snapshot has reached); 0 or absent: none.
    after: Option<u64>,
    /// Whether `after` is the progress of a snapshot.
    snapshot: Option<bool>,
}

/// The page after `?after=`, as a compact JWS; needs the gateway secret (entries carry
/// backend credentials).
async fn manifest_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    QueryParams(query): QueryParams<PageQuery>,
) -> ApiResult<Response> {
    let presented = bearer_token(&headers).unwrap_or_default();
    if !bool::from(presented.as_bytes().ct_eq(state.gateway_secret.as_bytes())) {
        return Err(ApiError::Unauthenticated);
    }
    let page = manifest::read_page(
        &state.db,
        query.after.unwrap_or(0),
        query.snapshot.unwrap_or(false),
    )
    .await?;
    let Some(page) = page else {
        return Ok((StatusCode::SERVICE_UNAVAILABLE, "manifest not compiled yet").into_response());
    };
    let jws = manifest::sign(&state.manifest_keys, &page)?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/jwt".to_string()),
            (
                header::HeaderName::from_static("x-manifest-version"),
                page.upto.to_string(),
            ),
        ],
        jws,
    )
        .into_response())
}

/// The manifest signing key as a JWK set (public; gateways are configured with its `x`).
async fn manifest_key(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.manifest_keys.jwks())
}
