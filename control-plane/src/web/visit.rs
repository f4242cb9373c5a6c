//! What every page of a web application does on a visit: who is signed in and from
//! where, the management API called as them, the refusal of a form that did not come from
//! this site, and a fresh sign-in once their token is refused.

use std::net::SocketAddr;

use axum::Extension;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::calls::{Answer, Call, PublicApi};
use super::signin::{self, Session, WebApp};
use super::{MessagePage, Page, csrf, field, form_pairs, redirect, with_cookie};
use crate::state::AppState;

/// The browser's address, when the listener gave it (per-address limits count it).
pub type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

/// The address in `peer`.
pub fn peer_of(peer: Peer) -> Option<SocketAddr> {
    peer.map(|Extension(ConnectInfo(addr))| addr)
}

/// Sends `call` with the signed-in user's token, if any.
pub async fn call(
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
pub fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A 404 page saying `message`.
pub fn not_found(message: &str) -> Response {
    Page::render(
        StatusCode::NOT_FOUND,
        &MessagePage::saying("Not found", message, true),
    )
    .into_response()
}

/// What a form refused for a missing or wrong CSRF token says.
pub const FORM_EXPIRED: (&str, &str) = (
    "This form has expired",
    "Go back, reload the page and try again.",
);

/// A 403 page saying `title` and `message` when the form `pairs` did not come with this
/// browser's CSRF token from this site; `None` when it did.
pub fn unless_from_this_site(
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

/// When the user's token was refused (revoked, or their account changed): a fresh
/// sign-in to `app`, back to `here`.
pub fn ended_session(
    state: &AppState,
    app: &WebApp,
    session: &Option<Session>,
    answer: &Answer,
    here: &str,
) -> Option<Response> {
    (session.is_some() && answer.status == StatusCode::UNAUTHORIZED).then(|| {
        let login = app.sign_in_link(here);
        let cleared = super::cookies::clear(app.cookie, super::secure_cookies(state));
        with_cookie(redirect(StatusCode::SEE_OTHER, &login), Some(cleared))
    })
}

/// The sign-out form of `app`: the user signed out when it came with this browser's
/// CSRF token, else a 403 page.
pub async fn sign_out(
    state: &AppState,
    app: &WebApp,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    body: &[u8],
) -> Response {
    let pairs = form_pairs(body);
    let expired = (
        "Sign-out failed",
        "This form has expired. Go back, reload the page and try again.",
    );
    if let Some(refused) = unless_from_this_site(state, headers, &pairs, expired) {
        return refused;
    }
    signin::end(state, app, headers, peer).await
}

/// A signed-in user's form: their session and the form's fields.
pub type Posted = (Session, Vec<(String, String)>);

/// A form a signed-in user of `app` sent from this site: their session and its fields;
/// a refusal (to the sign-in, back to `here`, or 403 for a missing or wrong CSRF token)
/// otherwise.
pub fn posted(
    state: &AppState,
    app: &WebApp,
    headers: &HeaderMap,
    body: &[u8],
    here: &str,
) -> Result<Posted, Box<Response>> {
    let pairs = form_pairs(body);
    let Some(session) = signin::session(state, app, headers) else {
        let login = app.sign_in_link(here);
        return Err(Box::new(redirect(StatusCode::SEE_OTHER, &login)));
    };
    if let Some(refused) = unless_from_this_site(state, headers, &pairs, FORM_EXPIRED) {
        return Err(Box::new(refused));
    }
    Ok((session, pairs))
}
