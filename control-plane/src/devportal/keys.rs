//! An application's keys after they are made: a new consumer secret (shown once, the old
//! one refused at once), and the grant types and callback URL the keys allow. Each through
//! the store API with the user's token.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::applications::{KeysPage, outcome, posted};
use super::visits::{Peer, call, chrome, encoded, peer_of};
use crate::http::STORE;
use crate::http::routes::{Routes, post};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::{Page, field, redirect, with_cookie};

pub fn router() -> Routes {
    Routes::new()
        .route(
            "/devportal/applications/{application_id}/keys/{key_type}/secret",
            post(regenerate_secret),
        )
        .route(
            "/devportal/applications/{application_id}/keys/{key_type}/grants",
            post(update_grants),
        )
}

/// `POST /devportal/applications/{applicationId}/keys/{keyType}/secret`: a new consumer
/// secret, shown this once.
#[utoipa::path(
    post,
    path = "/devportal/applications/{application_id}/keys/{key_type}/secret",
    tag = "Pages",
    params(
        ("application_id" = String, Path, description = "The application's id"),
        ("key_type" = String, Path, description = "PRODUCTION or SANDBOX"),
    ),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token"),
    responses(
        (status = 200, description = "The new secret, shown this once", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in"),
        (status = 400, description = "Refused, with why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn regenerate_secret(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path((application_id, key_type)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let here = format!("/devportal/applications/{}", encoded(&application_id));
    let (session, _) = match posted(&state, &headers, &body, &here) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let session = Some(session);
    let peer = peer_of(peer);
    let target = format!(
        "{STORE}/applications/{}/keys/{}",
        encoded(&application_id),
        encoded(&key_type)
    );
    let key = call(&state, &session, peer, Call::get(target)).await;
    let Some(consumer_key) = key.string_member("consumerKey") else {
        return outcome(&state, &headers, &key.error_message(), &here);
    };
    let target = format!("{STORE}/applications/regenerate-consumersecret");
    let request = Call::new(Method::POST, target).json(&json!({"consumerKey": consumer_key}));
    let answer = call(&state, &session, peer, request).await;
    let Some(consumer_secret) = answer.string_member("consumerSecret") else {
        return outcome(&state, &headers, &answer.error_message(), &here);
    };
    let (mut chrome, cookie) = chrome(&state, &headers, &session, &here);
    // The buttons that copy the key and the secret.
    chrome.script = true;
    let page = KeysPage {
        title: "Your new consumer secret",
        chrome,
        application_id,
        consumer_key,
        consumer_secret,
    };
    let page = Page::render(StatusCode::OK, &page).with_scripts_calling(Vec::new());
    with_cookie(page.into_response(), cookie)
}

/// `POST /devportal/applications/{applicationId}/keys/{keyType}/grants`: the grant types
/// and callback URL the keys allow.
#[utoipa::path(
    post,
    path = "/devportal/applications/{application_id}/keys/{key_type}/grants",
    tag = "Pages",
    params(
        ("application_id" = String, Path, description = "The application's id"),
        ("key_type" = String, Path, description = "PRODUCTION or SANDBOX"),
    ),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token, grant_types (repeated), callback_url"),
    responses(
        (status = 303, description = "Saved (or not signed in): to the application (or the sign-in)"),
        (status = 400, description = "Refused, with why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn update_grants(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path((application_id, key_type)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let here = format!("/devportal/applications/{}", encoded(&application_id));
    let (session, pairs) = match posted(&state, &headers, &body, &here) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let grants: Vec<Value> = pairs
        .iter()
        .filter(|(name, _)| name == "grant_types")
        .map(|(_, grant)| json!(grant))
        .collect();
    let update = json!({
        "supportedGrantTypes": grants,
        "callbackUrl": field(&pairs, "callback_url").unwrap_or_default().trim(),
    });
    let target = format!(
        "{STORE}/applications/{}/keys/{}",
        encoded(&application_id),
        encoded(&key_type)
    );
    let answer = call(
        &state,
        &Some(session),
        peer_of(peer),
        Call::new(Method::PUT, target).json(&update),
    )
    .await;
    if answer.status.is_success() {
        return redirect(StatusCode::SEE_OTHER, &format!("{here}?done=keys-saved"));
    }
    outcome(&state, &headers, &answer.error_message(), &here)
}

/// These forms in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(regenerate_secret, update_grants))]
pub struct Api;
