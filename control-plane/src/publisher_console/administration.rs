//! The console's administration page (`/publisher/administration`), for users whose token
//! carries the admin scope: the tenant's approval switches, what waits for an approval
//! with its approve and reject buttons, and, for the platform's administrators, the
//! gateways with how far each lags. Everything through the administration and publisher
//! APIs with the user's token.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{PUBLISHER_CONSOLE, chrome, done_message, may, signed_in, to_sign_in};
use crate::http::routes::{Routes, get, post};
use crate::http::{ADMIN, PUBLISHER};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::portal::Chrome;
use crate::web::visit::{Peer, call, encoded, peer_of, posted};
use crate::web::{MessagePage, Page, field, with_cookie};

/// The page's address.
const HERE: &str = "/publisher/administration";
/// Waiting requests the page lists at most.
const MAX_WAITING: usize = 100;

/// The approval switches: the API's name, and what the page calls it.
const SWITCHES: [(&str, &str); 4] = [
    ("applicationCreation", "Creating an application"),
    ("subscriptionCreation", "Subscribing to an API"),
    ("productionKeyGeneration", "Generating production keys"),
    ("sandboxKeyGeneration", "Generating sandbox keys"),
];

pub fn router() -> Routes {
    Routes::new()
        .route(HERE, get(administration))
        .route("/publisher/administration/settings", post(save_settings))
        .route(
            "/publisher/administration/workflows/{reference}",
            post(decide),
        )
}

/// A request waiting for a decision, as the page lists it.
struct WaitingRow {
    reference: String,
    kind: &'static str,
    subject: String,
    created: String,
}

/// A gateway, as the page lists it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GatewayRow {
    id: String,
    environment: String,
    version: i64,
    lag: i64,
    silent_for: i64,
}

#[derive(Template)]
#[template(path = "publisher/administration.html")]
struct AdministrationPage {
    title: &'static str,
    chrome: Chrome,
    done: Option<&'static str>,
    /// Each switch: its field, its label, whether it is on.
    switches: Vec<(&'static str, &'static str, bool)>,
    waiting: Vec<WaitingRow>,
    may_decide: bool,
    /// `None` when the user is not one of the platform's administrators.
    gateways: Option<Vec<GatewayRow>>,
    latest: i64,
}

/// `GET /publisher/administration`: the tenant's switches, what waits, the gateways.
#[utoipa::path(
    get,
    operation_id = "console_administration_administration",
    path = "/publisher/administration",
    tag = "Pages",
    params(("done" = Option<String>, Query, description = "What the last form did")),
    responses(
        (status = 200, description = "The administration page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 403, description = "The user is no administrator", content_type = "text/html", body = String),
    )
)]
async fn administration(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(HERE);
    };
    let session = Some(session);
    if !may(&state, &session, Scope::Admin) {
        return no_administrator();
    }
    let peer = peer_of(peer);
    let settings = call(
        &state,
        &session,
        peer,
        Call::get(format!("{ADMIN}/workflows/settings")),
    )
    .await
    .json::<Value>()
    .unwrap_or_default();
    let switches = SWITCHES
        .iter()
        .map(|(name, label)| (*name, *label, settings[*name].as_bool() == Some(true)))
        .collect();
    let waiting = call(
        &state,
        &session,
        peer,
        Call::get(format!("{ADMIN}/workflows?limit={MAX_WAITING}")),
    )
    .await
    .json::<Value>()
    .map(|list| waiting_rows(&list))
    .unwrap_or_default();
    let gateways = call(
        &state,
        &session,
        peer,
        Call::get(format!("{ADMIN}/gateways")),
    )
    .await
    .json::<Value>();
    let latest = gateways
        .as_ref()
        .and_then(|g| g["latest"].as_i64())
        .unwrap_or_default();
    let gateways = gateways.map(|g| serde_json::from_value(g["list"].clone()).unwrap_or_default());
    let (chrome, cookie) = chrome(&state, &headers, &session, HERE);
    let page = AdministrationPage {
        title: "Administration",
        chrome,
        done: done_message(query.as_deref()),
        switches,
        waiting,
        may_decide: may(&state, &session, Scope::ApiWorkflow),
        gateways,
        latest,
    };
    with_cookie(Page::render(StatusCode::OK, &page).into_response(), cookie)
}

/// The rows of the administration API's list of waiting requests.
fn waiting_rows(list: &Value) -> Vec<WaitingRow> {
    let items = list["list"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .take(MAX_WAITING)
        .filter_map(|item| {
            let kind = match item["workflowType"].as_str()? {
                "AM_APPLICATION_CREATION" => "Application",
                "AM_SUBSCRIPTION_CREATION" => "Subscription",
                "AM_APPLICATION_REGISTRATION_PRODUCTION" => "Production keys",
                "AM_APPLICATION_REGISTRATION_SANDBOX" => "Sandbox keys",
                _ => "Request",
            };
            let properties = item["properties"].as_object()?;
            let subject = properties
                .values()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ");
            let created = item["createdTime"]
                .as_i64()
                .and_then(|secs| time::OffsetDateTime::from_unix_timestamp(secs).ok())
                .and_then(|t| {
                    t.format(&time::format_description::well_known::Rfc3339)
                        .ok()
                })
                .unwrap_or_default();
            Some(WaitingRow {
                reference: item["referenceId"].as_str()?.to_string(),
                kind,
                subject,
                created,
            })
        })
        .collect()
}

/// `POST /publisher/administration/settings`: the tenant's approval switches as the
/// form's checkboxes say.
#[utoipa::path(
    post,
    operation_id = "console_administration_save_settings",
    path = "/publisher/administration/settings",
    tag = "Pages",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token, and each switch that is on (applicationCreation, subscriptionCreation, productionKeyGeneration, sandboxKeyGeneration)"),
    responses(
        (status = 303, description = "Saved (or not signed in): to the page (or the sign-in)"),
        (status = 400, description = "The administration API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn save_settings(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    body: axum::body::Bytes,
) -> Response {
    let (session, pairs) = match posted(&state, &PUBLISHER_CONSOLE, &headers, &body, HERE) {
        Ok(posted) => posted,
        Err(refused) => return *refused,
    };
    let mut settings = json!({});
    for (name, _) in SWITCHES {
        settings[name] = json!(field(&pairs, name) == Some("on"));
    }
    let target = format!("{ADMIN}/workflows/settings");
    let request = Call::new(Method::PUT, target).json(&settings);
    let answer = call(&state, &Some(session), peer_of(peer), request).await;
    super::after_form(&state, &headers, &answer, HERE, "settings")
}

/// `POST /publisher/administration/workflows/{reference}`: the waiting request approved
/// or rejected (`decision`).
#[utoipa::path(
    post,
    operation_id = "console_administration_decide",
    path = "/publisher/administration/workflows/{reference}",
    tag = "Pages",
    params(("reference" = String, Path, description = "The workflow's reference")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token, decision (APPROVED or REJECTED)"),
    responses(
        (status = 303, description = "Decided (or not signed in): to the page (or the sign-in)"),
        (status = 400, description = "The publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn decide(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(reference): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let (session, pairs) = match posted(&state, &PUBLISHER_CONSOLE, &headers, &body, HERE) {
        Ok(posted) => posted,
        Err(refused) => return *refused,
    };
    let decision = field(&pairs, "decision").unwrap_or_default();
    let target = format!(
        "{PUBLISHER}/workflows/update-workflow-status?workflowReferenceId={}",
        encoded(&reference)
    );
    let request = Call::new(Method::POST, target).json(&json!({"status": decision}));
    let answer = call(&state, &Some(session), peer_of(peer), request).await;
    super::after_form(&state, &headers, &answer, HERE, "decided")
}

/// The 403 page of a user who is no administrator.
fn no_administrator() -> Response {
    let page = MessagePage::saying(
        "Administrators only",
        "Your account has no administrator role.",
        true,
    );
    Page::render(StatusCode::FORBIDDEN, &page).into_response()
}

/// These pages in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(administration, save_settings, decide))]
pub struct Api;
