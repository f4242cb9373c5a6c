//! The operations listener (`APIM_OPS_ADDR`, off by default): `/healthz`, `/readyz` and
//! `/metrics` for orchestrators and Prometheus, apart from the management API so that
//! neither its clients nor the internet see them, and none of its layers (body limits,
//! the gateway secret, request counting) apply to them.

pub mod health;
pub mod metrics;
pub mod trace;

use apim_metrics_exposition::Format;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sqlx::AnyPool;
use tokio::net::TcpListener;

use metrics::{FleetGauge, metrics};

/// The operations listener's routes.
pub fn router(db: AnyPool) -> Router {
    Router::new()
        .route("/healthz", get(health::alive))
        .route("/readyz", get(health::ready))
        .route("/metrics", get(scrape))
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
#[openapi(paths(health::alive, health::ready, scrape))]
pub struct Api;

/// `GET /metrics`: the fleet read from the database (left as last drawn when it does not
/// answer), then every metric, in the text format the scraper's `Accept` asks for.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "Operations",
    responses((status = 200, description = "The metrics: the Prometheus text format (0.0.4), or OpenMetrics 1.0 when `Accept` prefers it", 
        content((String = "text/plain; version=0.0.4; charset=utf-8"),
                (String = "application/openmetrics-text; version=1.0.0; charset=utf-8"))))
)]
pub async fn scrape(State(db): State<AnyPool>, headers: HeaderMap) -> Response {
    match fleet_state(&db).await {
        Ok(gauges) => metrics().fleet(&gauges),
        Err(err) => tracing::debug!("metrics: could not read the fleet: {err}"),
    }
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::asked_by(accept);
    let mut response = metrics().encode(&db, format).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    response
}

/// Every gateway that checked in, and the newest manifest version.
async fn fleet_state(db: &AnyPool) -> sqlx::Result<Vec<FleetGauge>> {
    let latest = crate::manifest::latest_version(db).await?;
    let latest = i64::try_from(latest).unwrap_or(i64::MAX);
    let now = crate::db::now();
    let gateways = crate::fleet::list(db).await?;
    Ok(gateways
        .iter()
        .map(|gateway| FleetGauge {
            gateway: gateway.id.clone(),
            environment: gateway.environment.clone(),
            lag: gateway.lag(latest),
            silent_for: gateway.silent_for(now),
        })
        .collect())
}
