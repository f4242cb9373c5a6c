//! Gateways report their per-minute totals (`POST /internal/gateway/analytics`, behind the
//! gateway secret).

use apim_manifest::analytics::AnalyticsReport;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use time::OffsetDateTime;

use super::queries;
use super::retention::retained_from;
use super::rules::{check_report, minute_of};
use crate::error::Result;
use crate::http::extract::parse_json;
use crate::http::routes::{Routes, post};
use crate::state::AppState;

pub fn router() -> Routes {
    Routes::new().route(
        apim_manifest::paths::CONTROL_PLANE_ANALYTICS,
        post(receive_report),
    )
}

/// A gateway's report: stored, 204 (the gateway then forgets what it sent). The secret
/// was checked from the head (`fleet::require_gateway_secret`).
#[utoipa::path(
    post,
    path = "/internal/gateway/analytics",
    tag = "Gateways",
    request_body = crate::openapi::shapes::AnalyticsReport,
    responses((status = 204, description = "The report is stored (a repeated one counts once)")),
    security(("gateway_secret" = []))
)]
async fn receive_report(State(state): State<AppState>, body: Bytes) -> Result<StatusCode> {
    let report: AnalyticsReport = parse_json(&body)?;
    let now = OffsetDateTime::now_utc();
    let report = check_report(report, minute_of(now), retained_from(&state, now))?;
    queries::store_report(&state.db, &report).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// This operation in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(receive_report))]
pub struct Api;
