//! An API's analytics in the console (`/publisher/apis/{apiId}/analytics`): its requests,
//! errors and latency percentiles over the last hour, day or week, per application, from
//! the administration API's `GET /analytics/apis/{apiId}` with the user's token (the
//! admin scope), drawn by the page kit.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::{chrome, signed_in, to_sign_in};
use crate::http::ADMIN;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::charts::{AnalyticsPage, range_of};
use crate::web::visit::{Peer, call, encoded, not_found, peer_of};
use crate::web::{Page, field, form_pairs, with_cookie};

pub fn router() -> Routes {
    Routes::new().route("/publisher/apis/{api_id}/analytics", get(analytics_page))
}

/// `GET /publisher/apis/{apiId}/analytics`: the API's analytics over `range`.
#[utoipa::path(
    get,
    operation_id = "console_analytics_analytics_page",
    path = "/publisher/apis/{api_id}/analytics",
    tag = "Pages",
    params(
        ("api_id" = String, Path, description = "The API's id"),
        ("range" = Option<String>, Query, description = "1h, 1d or 7d (default 1h)"),
    ),
    responses(
        (status = 200, description = "The API's analytics", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 404, description = "No API the user may see has this id", content_type = "text/html", body = String),
    )
)]
async fn analytics_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let id = encoded(&api_id);
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    let (range, from) = range_of(field(&pairs, "range"));
    let here = format!("/publisher/apis/{id}/analytics?range={range}");
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(&here);
    };
    let session = Some(session);
    let target = format!("{ADMIN}/analytics/apis/{id}?from={}", encoded(&from));
    let answer = call(&state, &session, peer_of(peer), Call::get(target)).await;
    if answer.status == StatusCode::NOT_FOUND {
        return not_found("There is no API with this id that you may see.");
    }
    let (body, error) = match answer.json::<Value>() {
        Some(body) => (body, None),
        None => (Value::Null, Some(answer.error_message())),
    };
    let (chrome, cookie) = chrome(&state, &headers, &session, &here);
    let title = match (body["name"].as_str(), body["version"].as_str()) {
        (Some(name), Some(version)) => format!("Analytics of {name} {version}"),
        _ => "Analytics".to_string(),
    };
    let api_page = format!("/publisher/apis/{id}");
    let page = AnalyticsPage::of(
        (title, chrome),
        (
            format!("{api_page}/analytics"),
            (api_page, "Back to the API"),
            range,
        ),
        &body,
        error,
        ("Application", "applications", application_name),
    );
    with_cookie(Page::render(StatusCode::OK, &page).into_response(), cookie)
}

/// An application of the breakdown: its id, or what its requests were without one.
fn application_name(application: &Value) -> String {
    application["applicationId"]
        .as_str()
        .map_or_else(|| "Without an application".to_string(), str::to_string)
}

/// This page in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(analytics_page))]
pub struct Api;
