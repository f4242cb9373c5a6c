//! `GET /api/am/openapi.json`: the document, unauthenticated (it describes the interface,
//! never its data).

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use super::document::{PATH, serialized};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route(PATH, get(openapi_document))
}

/// The control plane's OpenAPI 3.1 document.
#[utoipa::path(
    get,
    path = "/api/am/openapi.json",
    tag = "OpenAPI",
    responses((status = 200, description = "This document", body = serde_json::Value))
)]
async fn openapi_document() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], serialized())
}

/// This room's operation in the document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(openapi_document))]
pub struct Api;
