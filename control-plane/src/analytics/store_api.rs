//! A consumer's own analytics: `GET /api/am/store/v0.14/applications/{applicationId}/analytics`
//! (ours: WSO2 2.6 shows consumers their usage in its analytics dashboards, never through
//! the store API), the requests, errors and latency of the calls made with one of the
//! caller's applications, per API and per slot. Someone else's application is refused
//! (403) and a missing one is 404, as the store's other application resources answer.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::queries;
use super::records::{Figures, SlotFigures, Summed, summed};
use super::rules::{Window, time_text};
use crate::applications::{StoreUser, owned_application};
use crate::error::Result;
use crate::http::STORE;
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, get};
use crate::state::AppState;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{STORE}/applications/{{application_id}}/analytics"),
        get(application_analytics),
    )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnalyticsQuery {
    from: Option<String>,
    to: Option<String>,
    interval: Option<String>,
}

/// One API's figures for the application.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct ApiFigures {
    api_id: String,
    /// Its name and version, while the API exists.
    name: Option<String>,
    version: Option<String>,
    #[serde(flatten)]
    figures: Figures,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct ApplicationAnalytics {
    application_id: String,
    name: String,
    from: String,
    to: String,
    interval: &'static str,
    /// The whole range.
    #[serde(flatten)]
    figures: Figures,
    /// Per API, most requests first.
    apis: Vec<ApiFigures>,
    /// Per slot, every slot of the range, in order.
    series: Vec<SlotFigures>,
}

/// `GET /applications/{applicationId}/analytics?from=&to=&interval=`: the calls made with
/// the caller's application over the range, in all, per API and per slot.
#[utoipa::path(
    get,
    path = "/api/am/store/v0.14/applications/{applicationId}/analytics",
    tag = "Store",
    params(
        ("applicationId" = String, Path, description = "The application's id"),
        ("from" = Option<String>, Query, description = "Start of the range, RFC 3339 (default: an hour before `to`)"),
        ("to" = Option<String>, Query, description = "End of the range, RFC 3339 (default: now)"),
        ("interval" = Option<String>, Query, description = "Slot length: 1m, 5m, 15m, 30m, 1h, 6h, 12h, 1d or 7d (default: the smallest giving at most a set number of slots)"),
    ),
    responses((status = 200, description = "The application's requests, errors and latency over the range", body = ApplicationAnalytics)),
    security(("bearer" = []))
)]
async fn application_analytics(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path(application_id): Path<String>,
    QueryParams(query): QueryParams<AnalyticsQuery>,
) -> Result<Json<ApplicationAnalytics>> {
    let application = owned_application(&state, &caller, &application_id).await?;
    let window = Window::parse(
        query.from.as_deref(),
        query.to.as_deref(),
        query.interval.as_deref(),
        OffsetDateTime::now_utc(),
        state.config.analytics_retention_days,
    )?;
    let range = (window.from, window.to, window.slot_minutes);
    let rows = queries::application_totals(&state.db, &application.id, range).await?;
    let Summed {
        whole,
        groups,
        series,
    } = summed(&window, &rows);
    let mut apis = Vec::with_capacity(groups.len());
    for (api_id, figures) in groups {
        let found = crate::apis::find(&state.db, &api_id).await?;
        apis.push(ApiFigures {
            name: found.as_ref().map(|api| api.name.clone()),
            version: found.map(|api| api.version),
            api_id,
            figures,
        });
    }
    Ok(Json(ApplicationAnalytics {
        application_id: application.id,
        name: application.name,
        from: time_text(window.from),
        to: time_text(window.to),
        interval: window.interval,
        figures: whole,
        apis,
        series,
    }))
}

/// This operation in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(application_analytics))]
pub struct Api;
