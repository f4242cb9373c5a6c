//! An application's analytics in the developer portal: its requests, errors and latency
//! percentiles over the last hour, day or week, drawn on the server as SVG (no script),
//! with the same figures as tables, from the store's
//! `GET /applications/{applicationId}/analytics`.

use askama::Template;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::views::{self, ChartView, FiguresRow};
use super::visits::{Peer, call, chrome, encoded, not_found, peer_of, signed_in, to_sign_in};
use crate::http::STORE;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::{Page, field, form_pairs, with_cookie};

/// The ranges a page offers: its value, its label, its minutes.
const RANGES: [(&str, &str, i64); 3] = [
    ("1h", "Last hour", 60),
    ("1d", "Last 24 hours", 24 * 60),
    ("7d", "Last 7 days", 7 * 24 * 60),
];

pub fn router() -> Routes {
    Routes::new().route(
        "/devportal/applications/{application_id}/analytics",
        get(analytics_page),
    )
}

#[derive(Template)]
#[template(path = "devportal/analytics.html")]
struct AnalyticsPage {
    title: String,
    chrome: crate::web::portal::Chrome,
    application_id: String,
    ranges: Vec<(&'static str, &'static str)>,
    range: &'static str,
    error: Option<String>,
    summary: String,
    interval: String,
    from: String,
    to: String,
    chart: ChartView,
    apis: Vec<FiguresRow>,
    rows: Vec<FiguresRow>,
}

/// `GET /devportal/applications/{applicationId}/analytics?range=`: the application's
/// analytics over the range (`1h`, `1d` or `7d`).
#[utoipa::path(
    get,
    path = "/devportal/applications/{application_id}/analytics",
    tag = "Pages",
    params(
        ("application_id" = String, Path, description = "The application's id"),
        ("range" = Option<String>, Query, description = "1h, 1d or 7d (default 1h)"),
    ),
    responses(
        (status = 200, description = "The application's analytics", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 404, description = "No application of the user has this id", content_type = "text/html", body = String),
    )
)]
async fn analytics_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(application_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let id = encoded(&application_id);
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    let (range, _, minutes) = RANGES
        .iter()
        .find(|(value, _, _)| field(&pairs, "range") == Some(value))
        .copied()
        .unwrap_or(RANGES[0]);
    let here = format!("/devportal/applications/{id}/analytics?range={range}");
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(&here);
    };
    let session = Some(session);
    let from = (OffsetDateTime::now_utc() - time::Duration::minutes(minutes))
        .format(&Rfc3339)
        .unwrap_or_default();
    let target = format!(
        "{STORE}/applications/{id}/analytics?from={}",
        encoded(&from)
    );
    let answer = call(&state, &session, peer_of(peer), Call::get(target)).await;
    if answer.status == StatusCode::NOT_FOUND {
        return not_found("There is no application of yours with this id.");
    }
    let (body, error) = match answer.json::<Value>() {
        Some(body) => (body, None),
        None => (Value::Null, Some(answer.error_message())),
    };
    let series = body["series"].as_array().cloned().unwrap_or_default();
    let apis = body["apis"]
        .as_array()
        .map(|apis| {
            apis.iter()
                .map(|api| {
                    let name = match (api["name"].as_str(), api["version"].as_str()) {
                        (Some(name), Some(version)) => format!("{name} {version}"),
                        _ => api["apiId"].as_str().unwrap_or_default().to_string(),
                    };
                    FiguresRow::of(name, api)
                })
                .collect()
        })
        .unwrap_or_default();
    let total = FiguresRow::of(String::new(), &body);
    let summary = format!(
        "{} requests, {} errors; latency p50 {} ms, p95 {} ms, p99 {} ms.",
        total.requests, total.errors, total.p50, total.p95, total.p99
    );
    let (chrome, cookie) = chrome(&state, &headers, &session, &here);
    let text = |name: &str| body[name].as_str().unwrap_or_default().to_string();
    let page = AnalyticsPage {
        title: format!("Analytics of {}", text("name")),
        chrome,
        application_id,
        ranges: RANGES
            .iter()
            .map(|(value, label, _)| (*value, *label))
            .collect(),
        range,
        error,
        summary,
        interval: text("interval"),
        from: text("from"),
        to: text("to"),
        chart: views::chart(&series),
        apis,
        rows: series
            .iter()
            .map(|slot| FiguresRow::of(slot["time"].as_str().unwrap_or_default().to_string(), slot))
            .collect(),
    };
    with_cookie(Page::render(StatusCode::OK, &page).into_response(), cookie)
}

/// This page in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(analytics_page))]
pub struct Api;
