//! The operations listener (`APIM_OPS_ADDR`, off by default): `/healthz`, `/readyz` and
//! `/metrics` for orchestrators and Prometheus, apart from the management API so that
//! neither its clients nor the internet see them, and none of its layers (body limits,
//! the gateway secret, request counting) apply to them.

pub mod health;
pub mod metrics;
pub mod trace;

use axum::Router;
use axum::routing::get;
use sqlx::AnyPool;
use tokio::net::TcpListener;

pub use metrics::{Metrics, metrics};

/// The operations listener's routes.
pub fn router(db: AnyPool) -> Router {
    Router::new()
        .route("/healthz", get(health::alive))
        .route("/readyz", get(health::ready))
        .route("/metrics", get(metrics::scrape))
        .fallback(health::not_found)
        .with_state(db)
}

/// Serves the operations routes on `listener` until the process ends (it has nothing to
/// drain: every answer is immediate).
pub fn spawn(listener: TcpListener, db: AnyPool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, router(db)).await {
            tracing::error!("the operations listener failed: {err}");
        }
    })
}

/// The operations listener's routes in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(health::alive, health::ready, metrics::scrape))]
pub struct Api;
