//! The publisher console, `/publisher`: WSO2's Publisher in the browser, for providers
//! and administrators. Like the developer portal its pages render on the server and are
//! made from the public publisher API's answers, called with the signed-in user's token
//! (`web::calls`): a page offers an action only when the user's token carries its scope,
//! and the API decides every action as it does for a script.

pub(crate) mod actions;
pub(crate) mod administration;
pub(crate) mod analytics;
pub(crate) mod create;
pub(crate) mod documents;
pub(crate) mod edit;
pub(crate) mod implementation;
pub(crate) mod pages;
pub(crate) mod resources;
mod views;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use crate::scopes::Scope;
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::portal::Chrome;
use crate::web::signin::{self, Session, WebApp};
use crate::web::uploads;
use crate::web::visit::{FORM_EXPIRED, call, encoded, posted, unless_from_this_site};
use crate::web::{field, form_pairs, redirect};

/// The console as an OAuth client of the control plane.
pub const PUBLISHER_CONSOLE: WebApp = WebApp {
    client_id: "apim-publisher",
    name: "Publisher",
    base: "/publisher",
    cookie: "apim_publisher",
    pending_cookie: "apim_publisher_signin",
};

/// The scopes the console asks for; the token carries those the user's roles allow.
const SCOPES: [Scope; 8] = [
    Scope::ApiView,
    Scope::ApiCreate,
    Scope::ApiPublish,
    Scope::TierView,
    Scope::SubscriptionView,
    Scope::SubscriptionBlock,
    Scope::ApiWorkflow,
    Scope::Admin,
];

/// The console's main navigation, each link with the scope it needs.
const NAV: [(&str, &str, Scope); 3] = [
    ("", "APIs", Scope::ApiView),
    ("/apis/new", "Create an API", Scope::ApiCreate),
    ("/administration", "Administration", Scope::Admin),
];

/// The signed-in user, when there is one.
fn signed_in(state: &AppState, headers: &HeaderMap) -> Option<Session> {
    signin::session(state, &PUBLISHER_CONSOLE, headers)
}

/// Whether the signed-in `session` may do what `scope` allows.
fn may(state: &AppState, session: &Option<Session>, scope: Scope) -> bool {
    session
        .as_ref()
        .is_some_and(|s| s.has_scope(&state.scopes.name(scope)))
}

/// To the sign-in, back to `here` after.
fn to_sign_in(here: &str) -> Response {
    redirect(StatusCode::SEE_OTHER, &PUBLISHER_CONSOLE.sign_in_link(here))
}

/// The frame of a page of the console at `here`.
fn chrome(
    state: &AppState,
    headers: &HeaderMap,
    session: &Option<Session>,
    here: &str,
) -> (Chrome, Option<HeaderValue>) {
    let nav: Vec<(&str, &str)> = NAV
        .iter()
        .filter(|(path, _, scope)| path.is_empty() || may(state, session, *scope))
        .map(|(path, label, _)| (*path, *label))
        .collect();
    Chrome::of(
        state,
        &PUBLISHER_CONSOLE,
        &nav,
        headers,
        session.as_ref(),
        here.to_string(),
    )
}

/// What a finished form says on the page it leads to (`?done=`): fixed sentences.
fn done_message(query: Option<&str>) -> Option<&'static str> {
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    match field(&pairs, "done")? {
        "created" => Some("The API is created. Publish it to put it on the gateways."),
        "lifecycle" => Some("The API's lifecycle state is changed."),
        "saved" => Some("The API is saved; the gateways have it within moments."),
        "blocked" => Some("The subscription is blocked."),
        "unblocked" => Some("The subscription is unblocked."),
        "settings" => Some("The approvals are saved."),
        "decided" => Some("The request is decided."),
        "document" => Some("The document is added."),
        "document-deleted" => Some("The document is deleted."),
        "thumbnail" => Some("The image is saved."),
        "wsdl" => Some("The WSDL is saved."),
        "certificate" => Some("The certificate is added; the gateways trust it within moments."),
        "certificate-deleted" => Some("The certificate is deleted."),
        _ => None,
    }
}

/// After a form: back to `back` saying `done` when the API did it, else a page saying
/// why.
fn after_form(
    state: &AppState,
    headers: &HeaderMap,
    answer: &crate::web::calls::Answer,
    back: &str,
    done: &str,
) -> Response {
    if answer.status.is_success() {
        return redirect(StatusCode::SEE_OTHER, &format!("{back}?done={done}"));
    }
    refused_form(state, headers, &answer.error_message(), back)
}

/// A 400 page saying why a form was refused, with the way back to `back`.
fn refused_form(state: &AppState, headers: &HeaderMap, message: &str, back: &str) -> Response {
    let session = signed_in(state, headers);
    let (chrome, cookie) = chrome(state, headers, &session, back);
    crate::web::portal::refused_form(chrome, cookie, message, back)
}

/// The largest file a form takes: a document, an image, a WSDL or a certificate (the
/// publisher API's own caps decide too).
const MAX_FILE_BYTES: usize = 4 << 20;

/// A multipart form a signed-in user sent from this site, with its file: their session
/// and the form; a refusal otherwise (to the sign-in, 403, or 400 for a form that does
/// not read).
pub(super) async fn upload_form(
    state: &AppState,
    headers: &HeaderMap,
    request: Request,
    back: &str,
) -> Result<(Session, uploads::Posted), Box<Response>> {
    let Some(session) = signed_in(state, headers) else {
        return Err(Box::new(to_sign_in(back)));
    };
    let form = uploads::read(state, request, "file", MAX_FILE_BYTES)
        .await
        .map_err(|why| Box::new(refused_form(state, headers, &why, back)))?;
    if let Some(refused) = unless_from_this_site(state, headers, &form.fields, FORM_EXPIRED) {
        return Err(Box::new(refused));
    }
    Ok((session, form))
}

/// The console's page of the API `api_id`.
pub(super) fn api_page(api_id: &str) -> String {
    format!("/publisher/apis/{}", encoded(api_id))
}

/// A form that deletes what `target` names through the publisher API: back to `back`
/// saying `done`, or a page saying why not.
async fn delete_by_form(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<std::net::SocketAddr>,
    body: &[u8],
    back: &str,
    (target, done): (String, &str),
) -> Response {
    let (session, _) = match posted(state, &PUBLISHER_CONSOLE, headers, body, back) {
        Ok(posted) => posted,
        Err(refused) => return *refused,
    };
    let request = Call::new(axum::http::Method::DELETE, target);
    let answer = call(state, &Some(session), peer, request).await;
    after_form(state, headers, &answer, back, done)
}
