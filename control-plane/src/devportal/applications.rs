//! The signed-in user's applications in the developer portal: the list and the form that
//! creates one (`/devportal/applications`), each application's page (its keys, its
//! subscriptions with what their status means, the form that edits it), generating keys
//! (the secret shown once), deleting; subscribing from an API's page and unsubscribing.
//! Each form is a CSRF-protected POST that the store API carries out with the user's
//! token, so that workflows, tiers and ownership apply as they do to scripts.

use std::net::SocketAddr;

use askama::Template;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::views::{self, ApplicationView, KeyView, SubscriptionView};
use super::visits::{
    Peer, call, chrome, done_message, encoded, not_found, peer_of, signed_in, to_sign_in,
};
use crate::http::STORE;
use crate::http::routes::{Routes, get, post};
use crate::state::AppState;
use crate::web::calls::{Answer, Call};
use crate::web::portal::Chrome;
use crate::web::signin::Session;
use crate::web::{Page, field, form_pairs, redirect, with_cookie};

/// Applications a user's list shows at most.
const MAX_APPLICATIONS: usize = 200;

pub fn router() -> Routes {
    Routes::new()
        .route(
            "/devportal/applications",
            get(applications_page).post(create_application),
        )
        .route(
            "/devportal/applications/{application_id}",
            get(application_page).post(update_application),
        )
        .route(
            "/devportal/applications/{application_id}/delete",
            post(delete_application),
        )
        .route(
            "/devportal/applications/{application_id}/keys",
            post(generate_keys),
        )
        .route("/devportal/subscriptions", post(subscribe))
        .route(
            "/devportal/subscriptions/{subscription_id}/delete",
            post(unsubscribe),
        )
}

#[derive(Template)]
#[template(path = "devportal/applications.html")]
struct ApplicationsPage {
    title: &'static str,
    chrome: Chrome,
    done: Option<&'static str>,
    error: Option<String>,
    applications: Vec<ApplicationView>,
    tiers: Vec<String>,
}

#[derive(Template)]
#[template(path = "devportal/application.html")]
struct ApplicationPage {
    title: String,
    chrome: Chrome,
    done: Option<&'static str>,
    app: ApplicationView,
    keys: Vec<KeyView>,
    subscriptions: Vec<SubscriptionView>,
    tiers: Vec<String>,
    grant_types: &'static [(&'static str, &'static str)],
}

#[derive(Template)]
#[template(path = "devportal/keys.html")]
pub(super) struct KeysPage {
    pub(super) title: &'static str,
    pub(super) chrome: Chrome,
    pub(super) application_id: String,
    pub(super) consumer_key: String,
    pub(super) consumer_secret: String,
}

/// `GET /devportal/applications`: the user's applications and the form that creates one.
#[utoipa::path(
    get,
    path = "/devportal/applications",
    tag = "Pages",
    responses(
        (status = 200, description = "The signed-in user's applications", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
    )
)]
async fn applications_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    RawQuery(query): RawQuery,
) -> Response {
    let here = "/devportal/applications".to_string();
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(&here);
    };
    let done = done_message(query.as_deref());
    list_page(
        &state,
        &headers,
        peer_of(peer),
        &session,
        done,
        None,
        StatusCode::OK,
    )
    .await
}

/// The applications page, with `error` when a form failed.
async fn list_page(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    session: &Session,
    done: Option<&'static str>,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    let session = Some(session.clone());
    let target = format!("{STORE}/applications?limit={MAX_APPLICATIONS}");
    let answer = call(state, &session, peer, Call::get(target)).await;
    let applications = views::applications(&answer);
    let tiers = tier_names(state, &session, peer, "application").await;
    let (chrome, cookie) = chrome(state, headers, &session, "/devportal/applications");
    let page = ApplicationsPage {
        title: "Applications",
        chrome,
        done,
        error,
        applications,
        tiers,
    };
    with_cookie(Page::render(status, &page).into_response(), cookie)
}

/// `POST /devportal/applications`: creates an application.
#[utoipa::path(
    post,
    path = "/devportal/applications",
    tag = "Pages",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "name, tier, description, token_type (OAUTH or JWT), csrf_token"),
    responses(
        (status = 303, description = "Created: to its page"),
        (status = 400, description = "Refused, with why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn create_application(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    body: axum::body::Bytes,
) -> Response {
    let peer = peer_of(peer);
    let (session, pairs) = match posted(&state, &headers, &body, "/devportal/applications") {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let application = json!({
        "name": field(&pairs, "name").unwrap_or_default().trim(),
        "throttlingTier": field(&pairs, "tier").unwrap_or_default(),
        "description": field(&pairs, "description").unwrap_or_default(),
        "tokenType": field(&pairs, "token_type").unwrap_or("OAUTH"),
    });
    let answer = send_json(
        &state,
        &session,
        peer,
        Method::POST,
        format!("{STORE}/applications"),
        application,
    )
    .await;
    match answer.string_member("applicationId") {
        Some(id) => redirect(
            StatusCode::SEE_OTHER,
            &format!("/devportal/applications/{}?done=created", encoded(&id)),
        ),
        None => {
            let error = Some(answer.error_message());
            list_page(
                &state,
                &headers,
                peer,
                &session,
                None,
                error,
                StatusCode::BAD_REQUEST,
            )
            .await
        }
    }
}

/// `GET /devportal/applications/{applicationId}`: an application's page.
#[utoipa::path(
    get,
    path = "/devportal/applications/{application_id}",
    tag = "Pages",
    params(("application_id" = String, Path, description = "The application's id")),
    responses(
        (status = 200, description = "The application's page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 404, description = "No application of the user has this id", content_type = "text/html", body = String),
    )
)]
async fn application_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(application_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let peer = peer_of(peer);
    let id = encoded(&application_id);
    let here = format!("/devportal/applications/{id}");
    let Some(session) = signed_in(&state, &headers) else {
        return to_sign_in(&here);
    };
    let session = Some(session);
    let answer = call(
        &state,
        &session,
        peer,
        Call::get(format!("{STORE}/applications/{id}")),
    )
    .await;
    let Some(application) = answer.json::<Value>() else {
        return not_found("There is no application of yours with this id.");
    };
    let subscriptions = call(
        &state,
        &session,
        peer,
        Call::get(format!(
            "{STORE}/subscriptions?applicationId={id}&limit=500"
        )),
    )
    .await;
    let tiers = tier_names(&state, &session, peer, "application").await;
    let (chrome, cookie) = chrome(&state, &headers, &session, &here);
    let app = ApplicationView::of(&application);
    let page = ApplicationPage {
        title: app.name.clone(),
        chrome,
        done: done_message(query.as_deref()),
        keys: views::keys(&application),
        subscriptions: views::subscriptions(&subscriptions),
        app,
        tiers,
        grant_types: &views::GRANT_TYPES,
    };
    with_cookie(Page::render(StatusCode::OK, &page).into_response(), cookie)
}

/// `POST /devportal/applications/{applicationId}`: saves its name, plan and description.
#[utoipa::path(
    post,
    path = "/devportal/applications/{application_id}",
    tag = "Pages",
    params(("application_id" = String, Path, description = "The application's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "name, tier, description, token_type (OAUTH or JWT), csrf_token"),
    responses(
        (status = 303, description = "Saved: to its page"),
        (status = 400, description = "Refused, with why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn update_application(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(application_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let peer = peer_of(peer);
    let id = encoded(&application_id);
    let here = format!("/devportal/applications/{id}");
    let (session, pairs) = match posted(&state, &headers, &body, &here) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let target = format!("{STORE}/applications/{id}");
    let current = call(
        &state,
        &Some(session.clone()),
        peer,
        Call::get(target.clone()),
    )
    .await;
    let Some(mut application) = current.json::<Value>() else {
        return not_found("There is no application of yours with this id.");
    };
    application["name"] = json!(field(&pairs, "name").unwrap_or_default().trim());
    application["throttlingTier"] = json!(field(&pairs, "tier").unwrap_or_default());
    application["description"] = json!(field(&pairs, "description").unwrap_or_default());
    if let Some(token_type) = field(&pairs, "token_type") {
        application["tokenType"] = json!(token_type);
    }
    if let Some(fields) = application.as_object_mut() {
        // What the store answers beside the application's own fields.
        fields.remove("keys");
    }
    let answer = send_json(&state, &session, peer, Method::PUT, target, application).await;
    finished(
        &state,
        &headers,
        &answer,
        &format!("{here}?done=saved"),
        &here,
    )
}

/// `POST /devportal/applications/{applicationId}/delete`: deletes it.
#[utoipa::path(
    post,
    path = "/devportal/applications/{application_id}/delete",
    tag = "Pages",
    params(("application_id" = String, Path, description = "The application's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token"),
    responses(
        (status = 303, description = "Deleted: to the applications"),
        (status = 400, description = "Refused, with why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn delete_application(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(application_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let id = encoded(&application_id);
    let here = format!("/devportal/applications/{id}");
    let (session, _) = match posted(&state, &headers, &body, &here) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let target = format!("{STORE}/applications/{id}");
    let answer = call(
        &state,
        &Some(session),
        peer_of(peer),
        Call::new(Method::DELETE, target),
    )
    .await;
    finished(
        &state,
        &headers,
        &answer,
        "/devportal/applications?done=deleted",
        &here,
    )
}

/// `POST /devportal/applications/{applicationId}/keys`: generates the keys of a key type
/// and shows the consumer secret once.
#[utoipa::path(
    post,
    path = "/devportal/applications/{application_id}/keys",
    tag = "Pages",
    params(("application_id" = String, Path, description = "The application's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "key_type (PRODUCTION or SANDBOX), csrf_token"),
    responses(
        (status = 200, description = "The new keys, the secret shown this once", content_type = "text/html", body = String),
        (status = 400, description = "Refused, with why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn generate_keys(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(application_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let id = encoded(&application_id);
    let here = format!("/devportal/applications/{id}");
    let (session, pairs) = match posted(&state, &headers, &body, &here) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let key_type = match field(&pairs, "key_type") {
        Some(kind @ ("PRODUCTION" | "SANDBOX")) => kind,
        _ => {
            return outcome(
                &state,
                &headers,
                "Choose production or sandbox keys.",
                &here,
            );
        }
    };
    let request = json!({
        "keyType": key_type,
        "validityTime": "3600",
        "accessAllowDomains": ["ALL"],
        "scopes": ["am_application_scope", "default"],
        "supportedGrantTypes": ["client_credentials", "refresh_token", "password"],
    });
    let target = format!("{STORE}/applications/generate-keys?applicationId={id}");
    let answer = send_json(
        &state,
        &session,
        peer_of(peer),
        Method::POST,
        target,
        request,
    )
    .await;
    let keys = answer.json::<Value>().unwrap_or_default();
    let (Some(consumer_key), Some(consumer_secret)) = (
        keys["consumerKey"].as_str(),
        keys["consumerSecret"].as_str(),
    ) else {
        let message = if answer.status.is_success() {
            "The keys wait for an administrator's approval.".to_string()
        } else {
            answer.error_message()
        };
        return outcome(&state, &headers, &message, &here);
    };
    let (mut chrome, cookie) = chrome(&state, &headers, &Some(session), &here);
    // The buttons that copy the key and the secret.
    chrome.script = true;
    let page = KeysPage {
        title: "Your new keys",
        chrome,
        application_id: application_id.clone(),
        consumer_key: consumer_key.to_string(),
        consumer_secret: consumer_secret.to_string(),
    };
    let page = Page::render(StatusCode::OK, &page).with_scripts_calling(Vec::new());
    with_cookie(page.into_response(), cookie)
}

/// `POST /devportal/subscriptions`: subscribes an application to an API on a plan.
#[utoipa::path(
    post,
    path = "/devportal/subscriptions",
    tag = "Pages",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "api_id, application_id, tier, csrf_token"),
    responses(
        (status = 303, description = "Subscribed: back to the API's page"),
        (status = 400, description = "Refused, with why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn subscribe(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    body: axum::body::Bytes,
) -> Response {
    let pairs = form_pairs(&body);
    let api_id = field(&pairs, "api_id").unwrap_or_default();
    let here = format!("/devportal/apis/{}", encoded(api_id));
    let (session, pairs) = match posted(&state, &headers, &body, &here) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let subscription = json!({
        "apiIdentifier": api_id,
        "applicationId": field(&pairs, "application_id").unwrap_or_default(),
        "tier": field(&pairs, "tier").unwrap_or_default(),
    });
    let target = format!("{STORE}/subscriptions");
    let answer = send_json(
        &state,
        &session,
        peer_of(peer),
        Method::POST,
        target,
        subscription,
    )
    .await;
    finished(
        &state,
        &headers,
        &answer,
        &format!("{here}?done=subscribed"),
        &here,
    )
}

/// `POST /devportal/subscriptions/{subscriptionId}/delete`: unsubscribes.
#[utoipa::path(
    post,
    path = "/devportal/subscriptions/{subscription_id}/delete",
    tag = "Pages",
    params(("subscription_id" = String, Path, description = "The subscription's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "application_id, csrf_token"),
    responses(
        (status = 303, description = "Unsubscribed: back to the application's page"),
        (status = 400, description = "Refused, with why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn unsubscribe(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(subscription_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let pairs = form_pairs(&body);
    let application = encoded(field(&pairs, "application_id").unwrap_or_default());
    let here = format!("/devportal/applications/{application}");
    let (session, _) = match posted(&state, &headers, &body, &here) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let target = format!("{STORE}/subscriptions/{}", encoded(&subscription_id));
    let answer = call(
        &state,
        &Some(session),
        peer_of(peer),
        Call::new(Method::DELETE, target),
    )
    .await;
    finished(
        &state,
        &headers,
        &answer,
        &format!("{here}?done=unsubscribed"),
        &here,
    )
}

/// A form a signed-in user sent from this site (`web::visit::posted`).
pub(super) fn posted(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
    here: &str,
) -> Result<crate::web::visit::Posted, Box<Response>> {
    crate::web::visit::posted(state, &super::DEVPORTAL, headers, body, here)
}

/// Sends `body` as JSON with the user's token.
async fn send_json(
    state: &AppState,
    session: &Session,
    peer: Option<SocketAddr>,
    method: Method,
    target: String,
    body: Value,
) -> Answer {
    call(
        state,
        &Some(session.clone()),
        peer,
        Call::new(method, target).json(&body),
    )
    .await
}

/// After a form: on to `then` when the store API did it, else a page saying why with the
/// way back to `back`.
fn finished(
    state: &AppState,
    headers: &HeaderMap,
    answer: &Answer,
    then: &str,
    back: &str,
) -> Response {
    if answer.status.is_success() {
        redirect(StatusCode::SEE_OTHER, then)
    } else {
        outcome(state, headers, &answer.error_message(), back)
    }
}

/// A page saying why a form was refused, with the way back to `back`.
pub(super) fn outcome(
    state: &AppState,
    headers: &HeaderMap,
    message: &str,
    back: &str,
) -> Response {
    let session = signed_in(state, headers);
    let (chrome, cookie) = chrome(state, headers, &session, back);
    crate::web::portal::refused_form(chrome, cookie, message, back)
}

/// The names of the tiers of `level` the user may choose.
async fn tier_names(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<SocketAddr>,
    level: &str,
) -> Vec<String> {
    call(
        state,
        session,
        peer,
        Call::get(format!("{STORE}/tiers/{level}?limit=100")),
    )
    .await
    .names_in_list()
    .unwrap_or_default()
}

/// These pages in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    applications_page,
    create_application,
    application_page,
    update_application,
    delete_application,
    generate_keys,
    subscribe,
    unsubscribe
))]
pub struct Api;
