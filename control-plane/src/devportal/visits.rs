//! A visit to the developer portal: the kit's visit (`web::visit`) with the portal's
//! navigation, its frame, and the fixed sentences a finished form leaves on the next page.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::DEVPORTAL;
use crate::state::AppState;
use crate::web::portal::Chrome;
use crate::web::signin::{self, Session};
use crate::web::{field, form_pairs, redirect};

pub(super) use crate::web::visit::{Peer, call, encoded, not_found, peer_of};

/// The portal's main navigation.
pub(super) const NAV: &[(&str, &str)] = &[("", "APIs"), ("/applications", "Applications")];

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
        "keys-saved" => Some("The keys' grant types and callback URL are saved."),
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
