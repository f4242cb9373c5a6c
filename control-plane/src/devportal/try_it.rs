//! The developer portal's try-it console: its script (`/devportal/console.js`, the one
//! script of the portal, run only on an API's page for a signed-in user) and the token it
//! asks for (`POST /devportal/try-it/token`): an access token of one of the user's
//! applications, which the script sends with its request straight to the gateway.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::DEVPORTAL;
use super::visits::{Peer, call, encoded, peer_of};
use crate::http::STORE;
use crate::http::routes::{Routes, get, post};
use crate::state::AppState;
use crate::web::calls::{Call, PublicApi};
use crate::web::{csrf, field, form_pairs, signin};

/// The console's script, built into the binary.
const SCRIPT: &str = include_str!("../../assets/devportal.js");

pub fn router() -> Routes {
    Routes::new()
        .route("/devportal/console.js", get(script))
        .route("/devportal/try-it/token", post(token))
}

/// `GET /devportal/console.js`: the try-it console's script.
#[utoipa::path(
    get,
    path = "/devportal/console.js",
    tag = "Pages",
    responses((status = 200, description = "The try-it console's script", content_type = "text/javascript", body = String))
)]
async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        SCRIPT,
    )
        .into_response()
}

/// `POST /devportal/try-it/token`: an access token (client credentials) of one of the
/// signed-in user's applications, for the console; the form's CSRF token required.
#[utoipa::path(
    post,
    path = "/devportal/try-it/token",
    tag = "Pages",
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "application_id, key_type, csrf_token"),
    responses(
        (status = 200, description = "The token", content_type = "application/json", body = Value),
        (status = 400, description = "No token: why", content_type = "application/json", body = Value),
        (status = 401, description = "Not signed in", content_type = "application/json", body = Value),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "application/json", body = Value),
    )
)]
async fn token(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    body: axum::body::Bytes,
) -> Response {
    let pairs = form_pairs(&body);
    let Some(session) = signin::session(&state, &DEVPORTAL, &headers) else {
        return refused(
            StatusCode::UNAUTHORIZED,
            "Sign in again: your session has ended.",
        );
    };
    if !csrf::check(&headers, &state.gateway_secret, field(&pairs, csrf::FIELD)) {
        return refused(StatusCode::FORBIDDEN, "Reload the page and try again.");
    }
    let key_type = match field(&pairs, "key_type") {
        Some(kind @ ("PRODUCTION" | "SANDBOX")) => kind,
        _ => {
            return refused(
                StatusCode::BAD_REQUEST,
                "Choose production or sandbox keys.",
            );
        }
    };
    let application = encoded(field(&pairs, "application_id").unwrap_or_default());
    let peer = peer_of(peer);
    let target = format!("{STORE}/applications/{application}/keys/{key_type}");
    let keys = call(&state, &Some(session), peer, Call::get(target))
        .await
        .json::<Value>()
        .unwrap_or_default();
    let (Some(key), Some(secret)) = (
        keys["consumerKey"].as_str(),
        keys["consumerSecret"].as_str(),
    ) else {
        let why = format!(
            "This application has no {} keys yet.",
            key_type.to_lowercase()
        );
        return refused(StatusCode::BAD_REQUEST, &why);
    };
    let issued = state
        .shared::<PublicApi>()
        .send(
            Call::new(axum::http::Method::POST, "/oauth2/token")
                .from(peer)
                .form(&[
                    ("grant_type", "client_credentials"),
                    ("client_id", key),
                    ("client_secret", secret),
                ]),
        )
        .await;
    match issued.json::<Value>() {
        Some(tokens) => answer(
            StatusCode::OK,
            json!({"access_token": tokens["access_token"], "expires_in": tokens["expires_in"]}),
        ),
        None => refused(StatusCode::BAD_REQUEST, &issued.error_message()),
    }
}

/// A JSON answer the console reads, never cached.
fn answer(status: StatusCode, body: Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The console's refusal, saying why.
fn refused(status: StatusCode, why: &str) -> Response {
    answer(status, json!({ "error": why }))
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(script, token))]
pub struct Api;
