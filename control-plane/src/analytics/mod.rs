//! Per-API analytics for providers: the gateways' per-minute totals of requests, errors
//! and latencies per API and application (`store`, `records`), what a report and a query
//! may be (`rules`), and the resources that take reports and answer queries (`handlers`).

mod handlers;
mod records;
mod rules;
mod store;

pub use handlers::{router, spawn_retention};

/// This room's operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(handlers::receive_report, handlers::api_analytics))]
pub struct Api;
