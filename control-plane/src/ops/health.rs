//! Liveness and readiness. Both answer a fixed body that tells nothing about the
//! deployment: which check failed is logged, not answered.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use sqlx::AnyPool;

/// Longest the readiness query may take: an orchestrator probes every few seconds, and a
/// database that takes longer than this to answer `SELECT 1` serves no one well either.
pub const READY_QUERY_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /healthz`: the process serves.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "Operations",
    responses((status = 200, description = "The process serves", body = crate::openapi::shapes::Status))
)]
pub async fn alive() -> Json<Value> {
    Json(json!({ "status": "alive" }))
}

/// `GET /readyz`: 200 when the database answers a cheap query within
/// [`READY_QUERY_TIMEOUT`], 503 otherwise.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "Operations",
    responses(
        (status = 200, description = "The database answers", body = crate::openapi::shapes::Status),
        (status = 503, description = "The database does not answer in time", body = crate::openapi::shapes::Status)
    )
)]
pub async fn ready(State(db): State<AnyPool>) -> (StatusCode, Json<Value>) {
    if database_answers(&db, READY_QUERY_TIMEOUT).await {
        (StatusCode::OK, Json(json!({ "status": "ready" })))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "unavailable" })),
        )
    }
}

/// Whether `db` answers `SELECT 1` within `within` (a connection from the pool included).
pub async fn database_answers(db: &AnyPool, within: Duration) -> bool {
    let query = sqlx::query("SELECT 1").execute(db);
    match tokio::time::timeout(within, query).await {
        Ok(Ok(_)) => true,
        Ok(Err(err)) => {
            tracing::warn!("not ready: the database refused the readiness query: {err}");
            false
        }
        Err(_) => {
            tracing::warn!("not ready: the database did not answer within {within:?}");
            false
        }
    }
}

/// Anything else on the operations listener.
pub async fn not_found() -> StatusCode {
    StatusCode::NOT_FOUND
}
