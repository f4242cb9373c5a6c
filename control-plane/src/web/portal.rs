//! What every page of a web application shows around its content: the application's
//! name and navigation, who is signed in with the form that signs them out (and its CSRF
//! token), or the way to sign in back to this page.

use askama::Template;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::csrf;
use super::signin::{Session, WebApp};
use super::{Page, with_cookie};
use crate::state::AppState;

/// The frame of a page ([`portal.html`]'s `chrome`).
pub struct Chrome {
    pub app_name: &'static str,
    pub base: &'static str,
    /// Links of the main navigation: where, and what.
    pub nav: Vec<(String, &'static str)>,
    /// The signed-in user.
    pub user: Option<String>,
    /// The sign-out form's token.
    pub csrf_token: String,
    /// Where signing in starts, back to this page after.
    pub sign_in: String,
    /// Whether the page loads the application's script (`<base>.js`).
    pub script: bool,
}

impl Chrome {
    /// The frame of the page at `here` for the browser of `headers`, with the CSRF
    /// cookie to set when it had none.
    pub fn of(
        state: &AppState,
        app: &WebApp,
        nav: &[(&str, &'static str)],
        headers: &HeaderMap,
        session: Option<&Session>,
        here: String,
    ) -> (Self, Option<HeaderValue>) {
        let prepared = csrf::prepare(headers, &state.gateway_secret, super::secure_cookies(state));
        let chrome = Chrome {
            app_name: app.name,
            base: app.base,
            nav: nav
                .iter()
                .map(|(path, label)| (format!("{}{path}", app.base), *label))
                .collect(),
            user: session.map(|s| s.user.clone()),
            csrf_token: prepared.token,
            sign_in: app.sign_in_link(&here),
            script: false,
        };
        (chrome, prepared.set_cookie)
    }
}

#[derive(Template)]
#[template(path = "outcome.html")]
struct OutcomePage<'a> {
    title: &'static str,
    chrome: Chrome,
    message: &'a str,
    back: &'a str,
}

/// A 400 page in `chrome` saying why a form was refused (`message`), with the way back
/// to `back`; setting `cookie` when there is one.
pub fn refused_form(
    chrome: Chrome,
    cookie: Option<HeaderValue>,
    message: &str,
    back: &str,
) -> Response {
    let page = OutcomePage {
        title: "That did not work",
        chrome,
        message,
        back,
    };
    with_cookie(
        Page::render(StatusCode::BAD_REQUEST, &page).into_response(),
        cookie,
    )
}
