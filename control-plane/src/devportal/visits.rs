//! A visit to the developer portal, what every page of it does: who is signed in and
//! from where, the store API called as them, the page's frame, and the fixed sentences a
//! finished form leaves on the next page.

use std::net::SocketAddr;

use axum::Extension;
use axum::extract::ConnectInfo;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::DEVPORTAL;
use crate::state::AppState;
use crate::web::calls::{Answer, Call, PublicApi};
use crate::web::portal::Chrome;
use crate::web::signin::{self, Session};
use crate::web::{MessagePage, Page, csrf, field, form_pairs, redirect};

/// The portal's main navigation.
pub(super) const NAV: &[(&str, &str)] = &[("", "APIs"), ("/applications", "Applications")];

/// The browser's address, when the listener gave it (per-address limits count it).
pub(super) type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

/// The address in `peer`.
pub(super) fn peer_of(peer: Peer) -> Option<SocketAddr> {
    peer.map(|Extension(ConnectInfo(addr))| addr)
}

/// Sends `call` with the signed-in user's token, if any.
pub(super) async fn call(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<SocketAddr>,
    call: Call<'_>,
) -> Answer {
    let token = session.as_ref().map(|s| s.access_token.as_str());
    state
        .shared::<PublicApi>()
        .send(call.bearer(token).from(peer))
        .await
}

/// `text` percent-encoded for a path segment or a query value.
pub(super) fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// What a finished form says on the page it leads to (`?done=`): fixed sentences, so
/// that no one can make a page say what they like.
pub(super) fn done_message(query: Option<&str>) -> Option<&'static str> {
    let pairs = form_pairs(query.unwrap_or_default().as_bytes());
    match field(&pairs, "done")? {
        "created" => Some("The application is created."),
        "saved" => Some("The application is saved."),
        "deleted" => Some("The application is deleted."),
        "subscribed" => {
            Some("Subscribed. If the plan needs an approval, the subscription waits for it.")
        }
        "unsubscribed" => Some("Unsubscribed."),
        _ => None,
    }
}

/// The signed-in user, when there is one.
pub(super) fn signed_in(state: &AppState, headers: &HeaderMap) -> Option<Session> {
    signin::session(state, &DEVPORTAL, headers)
}

/// To the sign-in, back to `here` after.
pub(super) fn to_sign_in(here: &str) -> Response {
    redirect(StatusCode::SEE_OTHER, &DEVPORTAL.sign_in_link(here))
}

/// A 404 page saying `message`.
pub(super) fn not_found(message: &str) -> Response {
    Page::render(
        StatusCode::NOT_FOUND,
        &MessagePage::saying("Not found", message, true),
    )
    .into_response()
}

/// The frame of a page of the portal at `here`.
pub(super) fn chrome(
    state: &AppState,
    headers: &HeaderMap,
    session: &Option<Session>,
    here: &str,
) -> (Chrome, Option<axum::http::HeaderValue>) {
    Chrome::of(
        state,
        &DEVPORTAL,
        NAV,
        headers,
        session.as_ref(),
        here.to_string(),
    )
}

/// A 403 page saying `title` and `message` when the form `pairs` did not come with this
/// browser's CSRF token from this site; `None` when it did.
pub(super) fn unless_from_this_site(
    state: &AppState,
    headers: &HeaderMap,
    pairs: &[(String, String)],
    (title, message): (&str, &str),
) -> Option<Response> {
    if csrf::check(headers, &state.gateway_secret, field(pairs, csrf::FIELD)) {
        return None;
    }
    let page = MessagePage::saying(title, message, true);
    Some(Page::render(StatusCode::FORBIDDEN, &page).into_response())
}
