//! The console's forms on an API's page: a lifecycle action (with WSO2's checklist on a
//! first publish), and a subscription blocked or unblocked. Each is one call of the
//! publisher API with the user's token, then back to the API's page.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;

use crate::http::PUBLISHER;
use crate::http::routes::{Routes, post};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::field;
use crate::web::visit::{Peer, call, encoded, peer_of};

pub fn router() -> Routes {
    Routes::new()
        .route("/publisher/apis/{api_id}/lifecycle", post(change_lifecycle))
        .route(
            "/publisher/apis/{api_id}/subscriptions/{subscription_id}/block",
            post(block),
        )
        .route(
            "/publisher/apis/{api_id}/subscriptions/{subscription_id}/unblock",
            post(unblock),
        )
}

/// `POST /publisher/apis/{apiId}/lifecycle`: the API moved by `action`.
#[utoipa::path(
    post,
    operation_id = "console_actions_change_lifecycle",
    path = "/publisher/apis/{api_id}/lifecycle",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token, action, and on a first publish deprecate_old_versions and require_resubscription"),
    responses(
        (status = 303, description = "Done (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn change_lifecycle(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let target = |pairs: &[(String, String)]| {
        let checked = |name: &str| field(pairs, name) == Some("on");
        let checklist = format!(
            "Deprecate Old Versions:{},Require Re-Subscription:{}",
            checked("deprecate_old_versions"),
            checked("require_resubscription")
        );
        format!(
            "{PUBLISHER}/apis/change-lifecycle?apiId={}&action={}&lifecycleChecklist={}",
            encoded(&api_id),
            encoded(field(pairs, "action").unwrap_or_default()),
            encoded(&checklist)
        )
    };
    let form = (api_id.as_str(), &body[..], "lifecycle");
    posted_and_sent(&state, &headers, peer_of(peer), form, target).await
}

/// `POST /publisher/apis/{apiId}/subscriptions/{subscriptionId}/block`: the
/// subscription blocked (`state`: `BLOCKED`, or `PROD_ONLY_BLOCKED` to keep sandbox).
#[utoipa::path(
    post,
    operation_id = "console_actions_block",
    path = "/publisher/apis/{api_id}/subscriptions/{subscription_id}/block",
    tag = "Pages",
    params(
        ("api_id" = String, Path, description = "The API's id"),
        ("subscription_id" = String, Path, description = "The subscription's id"),
    ),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token, state"),
    responses(
        (status = 303, description = "Done (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn block(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path((api_id, subscription_id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let target = |pairs: &[(String, String)]| {
        format!(
            "{PUBLISHER}/subscriptions/block-subscription?subscriptionId={}&blockState={}",
            encoded(&subscription_id),
            encoded(field(pairs, "state").unwrap_or("BLOCKED"))
        )
    };
    let form = (api_id.as_str(), &body[..], "blocked");
    posted_and_sent(&state, &headers, peer_of(peer), form, target).await
}

/// `POST /publisher/apis/{apiId}/subscriptions/{subscriptionId}/unblock`.
#[utoipa::path(
    post,
    operation_id = "console_actions_unblock",
    path = "/publisher/apis/{api_id}/subscriptions/{subscription_id}/unblock",
    tag = "Pages",
    params(
        ("api_id" = String, Path, description = "The API's id"),
        ("subscription_id" = String, Path, description = "The subscription's id"),
    ),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token"),
    responses(
        (status = 303, description = "Done (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn unblock(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path((api_id, subscription_id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let target = |_: &[(String, String)]| {
        format!(
            "{PUBLISHER}/subscriptions/unblock-subscription?subscriptionId={}",
            encoded(&subscription_id)
        )
    };
    let form = (api_id.as_str(), &body[..], "unblocked");
    posted_and_sent(&state, &headers, peer_of(peer), form, target).await
}

/// A form on the page of the API `api_id` (`form`: the API, the form's body, what the
/// next page says when done), sent by its user from this site, as one `POST` of the
/// publisher API to `target` (made from the form's fields); then back to the API's page.
async fn posted_and_sent(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<std::net::SocketAddr>,
    (api_id, body, done): (&str, &[u8], &str),
    target: impl Fn(&[(String, String)]) -> String,
) -> Response {
    let back = api_page(api_id);
    let (session, pairs) = match posted(state, headers, body, &back) {
        Ok(posted) => posted,
        Err(refused) => return *refused,
    };
    let call_of = Call::new(Method::POST, target(&pairs));
    let answer = call(state, &Some(session), peer, call_of).await;
    super::after_form(state, headers, &answer, &back, done)
}

/// The console's page of the API `api_id`.
fn api_page(api_id: &str) -> String {
    format!("/publisher/apis/{}", encoded(api_id))
}

/// A form a signed-in user sent from this site (`web::visit::posted`).
fn posted(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
    back: &str,
) -> Result<crate::web::visit::Posted, Box<Response>> {
    crate::web::visit::posted(state, &super::PUBLISHER_CONSOLE, headers, body, back)
}

/// These forms in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(change_lifecycle, block, unblock))]
pub struct Api;
