//! RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): a page that asks before
//! it signs the browser out (a link alone must not), then back to the client when it
//! named one of its redirect URIs.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::id_token;
use crate::clients::ClientCache;
use crate::error::Result;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::web::{MessagePage, Page, cookies, csrf, field, form_pairs, redirect, with_cookie};

pub fn router() -> Routes {
    Routes::new().route("/oauth2/logout", get(ask).post(sign_out))
}

/// The parameters a logout carries through its page.
const PARAMETERS: &[&str] = &[
    "id_token_hint",
    "client_id",
    "post_logout_redirect_uri",
    "state",
];

/// Asks whether to sign out.
#[utoipa::path(
    get,
    path = "/oauth2/logout",
    tag = "OAuth 2.0",
    summary = "RP-initiated logout: the page that asks",
    params(
        ("id_token_hint" = Option<String>, Query, description = "An id_token issued to the client"),
        ("client_id" = Option<String>, Query, description = "The client"),
        ("post_logout_redirect_uri" = Option<String>, Query, description = "One of the client's redirect URIs"),
        ("state" = Option<String>, Query, description = "Returned as given"),
    ),
    responses((status = 200, description = "The page", content_type = "text/html", body = String))
)]
async fn ask(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let pairs = carried(query.as_deref().unwrap_or_default().as_bytes());
    let prepared = csrf::prepare(
        &headers,
        &state.gateway_secret,
        crate::web::secure_cookies(&state),
    );
    let page = MessagePage {
        title: "Sign out",
        message: "Do you want to sign out of API Manager?",
        alert: false,
        action: Some("/oauth2/logout"),
        button: "Sign out",
        hidden: pairs,
        csrf_token: prepared.token,
    };
    with_cookie(
        Page::render(StatusCode::OK, &page).into_response(),
        prepared.set_cookie,
    )
}

/// Signs the browser out, then sends it back to the client if it named where.
#[utoipa::path(
    post,
    path = "/oauth2/logout",
    tag = "OAuth 2.0",
    summary = "RP-initiated logout: the page's form",
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Signed out", content_type = "text/html", body = String),
        (status = 303, description = "Signed out, back to the client"),
        (status = "default", description = "The form refused", content_type = "text/html", body = String)
    )
)]
async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let pairs = form_pairs(&body);
    let field = |name: &str| field(&pairs, name);
    if !csrf::check(&headers, &state.gateway_secret, field(csrf::FIELD)) {
        let page = message("This sign-out form has expired. Nothing was changed.", true);
        return Ok(Page::render(StatusCode::FORBIDDEN, &page).into_response());
    }
    crate::sessions::delete(&state.db, &headers).await?;
    let back = back_to_client(
        &state,
        field("id_token_hint"),
        field("client_id"),
        field("post_logout_redirect_uri"),
    )
    .await?;
    let mut response = match back {
        Some(uri) => {
            let mut location = url::Url::parse(&uri).map_err(|e| anyhow::anyhow!(e))?;
            if let Some(given) = field("state") {
                location.query_pairs_mut().append_pair("state", given);
            }
            redirect(StatusCode::SEE_OTHER, location.as_str())
        }
        None => {
            Page::render(StatusCode::OK, &message("You are signed out.", false)).into_response()
        }
    };
    let secure = crate::web::secure_cookies(&state);
    response.headers_mut().append(
        header::SET_COOKIE,
        cookies::clear(crate::sessions::COOKIE, secure),
    );
    Ok(response)
}

/// Where to send the browser after signing out: the redirect URI named, when it is one the
/// client (named, or the audience of the hint) registered; else nowhere.
async fn back_to_client(
    state: &AppState,
    hint: Option<&str>,
    client_id: Option<&str>,
    uri: Option<&str>,
) -> Result<Option<String>> {
    let Some(uri) = uri else {
        return Ok(None);
    };
    let hinted = hint
        .and_then(|hint| id_token::verify_hint(state, hint))
        .map(|claims| claims.aud);
    let Some(client_id) = client_id.map(str::to_string).or(hinted) else {
        return Ok(None);
    };
    let Some(principal) = state
        .shared::<ClientCache>()
        .get(&state.db, &client_id)
        .await?
    else {
        return Ok(None);
    };
    let registered = principal.client.redirect_uris().any(|r| r == uri);
    Ok((registered && crate::http::urls::is_redirect_uri(uri)).then(|| uri.to_string()))
}

fn message(message: &str, alert: bool) -> MessagePage<'_> {
    MessagePage::saying("Sign out", message, alert)
}

/// The logout parameters of a query, to carry through the page's form.
fn carried(bytes: &[u8]) -> Vec<(&'static str, String)> {
    url::form_urlencoded::parse(bytes)
        .filter_map(|(name, value)| {
            let known = PARAMETERS.iter().find(|p| **p == name)?;
            (value.len() <= crate::http::urls::MAX_URL_BYTES * 2)
                .then(|| (*known, value.into_owned()))
        })
        .collect()
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(ask, sign_out))]
pub struct Api;
