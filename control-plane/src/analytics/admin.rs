//! Per-API analytics as administrators read them: an API's administrators and provider
//! read the gateways' totals (`GET /api/am/admin/v0.14/analytics/apis/{apiId}`,
//! HTTP Basic, as the rest of the administration API).
//!
//! Who may read an API's analytics follows WSO2's analytics, where the publisher shows an
//! API's usage to the publishers of its tenant and the admin dashboard to administrators:
//! the administrators of the API's tenant (the super tenant's: every tenant's) and the
//! user who provides it. Another tenant's API answers as a missing one does (404).

use apim_manifest::analytics::NO_APPLICATION;
use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::queries::{self, Selection};
use super::records::{Figures, SlotFigures, SlotTotals, Summed, summed};
use super::rules::{Window, check_application_id, time_text};
use crate::apis::StoredApi;
use crate::error::{Error, Result};
use crate::http::ADMIN;
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::users::AdminUser;
use crate::users::User;
pub fn router() -> Routes {
    Routes::new().route(
        &format!("{ADMIN}/analytics/apis/{{api_id}}"),
        get(api_analytics),
    )
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnalyticsQuery {
    from: Option<String>,
    to: Option<String>,
    interval: Option<String>,
    application_id: Option<String>,
}

/// One application's figures; `applicationId` null for requests without one.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct ApplicationFigures {
    application_id: Option<String>,
    #[serde(flatten)]
    figures: Figures,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct ApiAnalytics {
    api_id: String,
    name: String,
    version: String,
    provider: String,
    from: String,
    to: String,
    interval: &'static str,
    /// The whole range.
    #[serde(flatten)]
    figures: Figures,
    /// Per application, most requests first.
    applications: Vec<ApplicationFigures>,
    /// Per slot, every slot of the range, in order.
    series: Vec<SlotFigures>,
}

/// `GET /analytics/apis/{apiId}?from=&to=&interval=&applicationId=`: the API's requests,
/// errors and latency over the range, in all, per application and per slot; with
/// `applicationId`, that application's only.
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/analytics/apis/{apiId}",
    tag = "Administration",
    params(
        ("apiId" = String, Path, description = "The API's id"),
        ("from" = Option<String>, Query, description = "Start of the range, RFC 3339 (default: an hour before `to`)"),
        ("to" = Option<String>, Query, description = "End of the range, RFC 3339 (default: now)"),
        ("interval" = Option<String>, Query, description = "Slot length: 1m, 5m, 15m, 30m, 1h, 6h, 12h, 1d or 7d (default: the smallest giving at most a set number of slots)"),
        ("applicationId" = Option<String>, Query, description = "Only this application's calls")
    ),
    responses((status = 200, description = "The API's requests, errors and latency over the range", body = ApiAnalytics)),
    security(("basic" = []), ("bearer" = []))
)]
async fn api_analytics(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    Path(api_id): Path<String>,
    QueryParams(query): QueryParams<AnalyticsQuery>,
) -> Result<Json<ApiAnalytics>> {
    let api = readable_api(&state, &user, &api_id).await?;
    if let Some(application) = &query.application_id {
        check_application_id(application)?;
    }
    let window = Window::parse(
        query.from.as_deref(),
        query.to.as_deref(),
        query.interval.as_deref(),
        OffsetDateTime::now_utc(),
        state.config.analytics_retention_days,
    )?;
    let selection = Selection {
        api_id: &api.id,
        application_id: query.application_id.as_deref(),
        from: window.from,
        to: window.to,
        slot_minutes: window.slot_minutes,
    };
    let rows = queries::totals(&state.db, &selection).await?;
    Ok(Json(answer(api, &window, &rows)))
}

/// The API if `user` may read its analytics: 404 when it is missing or another tenant's,
/// 403 for a user of its tenant who neither administers the tenant nor provides it.
async fn readable_api(state: &AppState, user: &User, api_id: &str) -> Result<StoredApi> {
    let api = crate::apis::find(&state.db, api_id)
        .await?
        .filter(|api| user.is_platform_admin() || api.tenant == user.tenant)
        .ok_or_else(|| Error::NotFound("API", api_id.to_string()))?;
    if user.has_role("admin") || api.provider == user.username {
        Ok(api)
    } else {
        Err(Error::Forbidden(
            "Only the API's provider and its tenant's administrators may read its analytics".into(),
        ))
    }
}

/// The answer: totals added up over the whole range, per application and per slot.
fn answer(api: StoredApi, window: &Window, rows: &[SlotTotals]) -> ApiAnalytics {
    let Summed {
        whole,
        groups,
        series,
    } = summed(window, rows);
    let applications = groups
        .into_iter()
        .map(|(application, figures)| ApplicationFigures {
            application_id: (application != NO_APPLICATION).then_some(application),
            figures,
        })
        .collect();
    ApiAnalytics {
        api_id: api.id,
        name: api.name,
        version: api.version,
        provider: api.provider,
        from: time_text(window.from),
        to: time_text(window.to),
        interval: window.interval,
        figures: whole,
        applications,
        series,
    }
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(api_analytics))]
pub struct Api;
