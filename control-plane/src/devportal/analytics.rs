//! An application's analytics in the developer portal: its requests, errors and latency
//! percentiles over the last hour, day or week, drawn on the server as SVG (no script),
//! with the same figures as tables, from the store's
//! `GET /applications/{applicationId}/analytics`.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::visits::{Peer, call, chrome, encoded, not_found, peer_of, signed_in, to_sign_in};
use crate::http::STORE;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::charts::{AnalyticsPage, range_of};
use crate::web::{Page, field, form_pairs, with_cookie};

pub fn router() -> Routes {
    Routes::new().route(
        "/devportal/applications/{application_id}/analytics",
        get(analytics_page),
    )
}

/// `GET /devportal/applications/{applicationId}/analytics`: the application's analytics
/// over `range`.
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
    let (range, from) = range_of(field(&pairs, "range"));
    let here = format!("/devportal/applications/{id}/analytics?range={range}");
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(&here);
    };
    let session = Some(session);
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
    let (chrome, cookie) = chrome(&state, &headers, &session, &here);
    let title = format!("Analytics of {}", body["name"].as_str().unwrap_or_default());
    let application_page = format!("/devportal/applications/{id}");
    let page = AnalyticsPage::of(
        (title, chrome),
        (
            format!("{application_page}/analytics"),
            (application_page, "Back to the application"),
            range,
        ),
        &body,
        error,
        ("API", "apis", api_name),
    );
    with_cookie(Page::render(StatusCode::OK, &page).into_response(), cookie)
}

/// An API of the breakdown, by name and version.
fn api_name(api: &Value) -> String {
    match (api["name"].as_str(), api["version"].as_str()) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        _ => api["apiId"].as_str().unwrap_or_default().to_string(),
    }
}

/// This page in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(analytics_page))]
pub struct Api;
