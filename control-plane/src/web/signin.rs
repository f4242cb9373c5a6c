//! How the control plane's web applications sign their users in: as any browser client
//! does, by the authorization code flow with PKCE (S256) as a registered public client,
//! through the sign-in and consent pages and the token endpoint, called in process
//! ([`super::calls`]). The user's tokens then live in an HttpOnly cookie sealed with the
//! data key (never readable by a script, never stored), and every page calls the
//! management API with them.

use std::net::SocketAddr;

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::calls::{Call, PublicApi};
use super::cookies::{self, Attributes};
use super::{MessagePage, Page, field, redirect, with_cookie};
use crate::secrets::Field;
use crate::state::AppState;

/// How long a signed-in browser keeps its session cookie, seconds (the sign-in pages'
/// own session lasts as long).
const SESSION_SECS: i64 = 8 * 3600;
/// How long a sign-in may take from the application's redirect to its callback.
const PENDING_SECS: i64 = 600;
/// Random bytes of a PKCE verifier and of a `state`.
const RANDOM_BYTES: usize = 32;

/// One of the control plane's web applications, as an OAuth client.
pub struct WebApp {
    /// Its registered client id.
    pub client_id: &'static str,
    /// Its name, on the consent page.
    pub name: &'static str,
    /// Where it is served (`/devportal`).
    pub base: &'static str,
    /// The cookie holding a signed-in user's tokens.
    pub cookie: &'static str,
    /// The cookie holding a sign-in under way.
    pub pending_cookie: &'static str,
}

impl WebApp {
    /// Where the authorization server sends the browser back: under the issuer, the one
    /// address every control plane of a platform is reached at.
    pub fn redirect_uri(&self, issuer: &str) -> String {
        format!("{}{}/callback", issuer.trim_end_matches('/'), self.base)
    }

    /// Where signing in starts, to come back to `here` after.
    pub fn sign_in_link(&self, here: &str) -> String {
        let next: String = url::form_urlencoded::byte_serialize(here.as_bytes()).collect();
        format!("{}/login?next={next}", self.base)
    }

    /// `next` when it is a page of this application, else its first page.
    fn page_or_home<'n>(&self, next: Option<&'n str>) -> &'n str
    where
        'static: 'n,
    {
        next.filter(|n| {
            (*n == self.base
                || n.starts_with(&format!("{}/", self.base))
                || n.starts_with(&format!("{}?", self.base)))
                && !n.contains("//")
                && !n.contains('\\')
        })
        .unwrap_or(self.base)
    }
}

/// A signed-in user, as the session cookie holds them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// The user's name (`sub`).
    pub user: String,
    /// Their access token for the management API.
    pub access_token: String,
    /// Their refresh token.
    pub refresh_token: Option<String>,
    /// When the access token expires, Unix seconds.
    pub expires_at: i64,
    /// The scopes the user was granted, space-separated: what the pages offer to do.
    #[serde(default)]
    pub scope: String,
}

impl Session {
    /// Whether the user's token carries the scope `name`.
    pub fn has_scope(&self, name: &str) -> bool {
        self.scope.split(' ').any(|s| s == name)
    }
}

/// A sign-in under way: what the callback must find.
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    verifier: String,
    next: String,
}

/// The signed-in user of this request, if their session is intact and unexpired.
pub fn session(state: &AppState, app: &WebApp, headers: &HeaderMap) -> Option<Session> {
    let session: Session = open_cookie(state, headers, app.cookie)?;
    (session.expires_at > crate::db::now()).then_some(session)
}

/// Starts a sign-in: a new PKCE verifier and `state` in the pending cookie, and the
/// browser sent to the authorization endpoint; back at `next` once signed in.
pub fn start(state: &AppState, app: &WebApp, next: Option<&str>, scope: &str) -> Response {
    let pending = Pending {
        state: random_text(),
        verifier: random_text(),
        next: app.page_or_home(next).to_string(),
    };
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(pending.verifier.as_bytes()));
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", app.client_id),
            ("redirect_uri", &app.redirect_uri(&state.issuer)),
            ("scope", scope),
            ("state", &pending.state),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ])
        .finish();
    let cookie = seal_cookie(state, app.pending_cookie, &pending, PENDING_SECS);
    with_cookie(
        redirect(StatusCode::FOUND, &format!("/oauth2/authorize?{query}")),
        cookie,
    )
}

/// The callback: the code exchanged (with the verifier) for the user's tokens, which go
/// into the session cookie; the browser sent on to the page it started from. A callback
/// that does not answer the sign-in this browser started (another `state`, another
/// issuer, none at all) signs no one in.
pub async fn finish(
    state: &AppState,
    app: &WebApp,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    query: &[(String, String)],
) -> Response {
    let Some(pending) = open_cookie::<Pending>(state, headers, app.pending_cookie) else {
        return refused("This sign-in has expired or was started elsewhere. Please sign in again.");
    };
    let same_state: bool = field(query, "state")
        .unwrap_or_default()
        .as_bytes()
        .ct_eq(pending.state.as_bytes())
        .into();
    if !same_state || field(query, "iss") != Some(state.issuer.as_str()) {
        return refused("This sign-in was not the one this browser started. Please sign in again.");
    }
    if let Some(error) = field(query, "error") {
        let message = match error {
            "access_denied" => "You did not allow the application to act for you.".to_string(),
            _ => format!("The sign-in did not complete ({error})."),
        };
        return refused(&message);
    }
    let Some(code) = field(query, "code") else {
        return refused("The sign-in did not complete.");
    };
    let api = state.shared::<PublicApi>();
    let redirect_uri = app.redirect_uri(&state.issuer);
    let exchanged = api
        .send(Call::new(Method::POST, "/oauth2/token").from(peer).form(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", &redirect_uri),
            ("client_id", app.client_id),
            ("code_verifier", &pending.verifier),
        ]))
        .await;
    let Some(tokens) = exchanged.json::<Tokens>() else {
        tracing::warn!(status = %exchanged.status, "a web application's code exchange failed");
        return refused("The sign-in did not complete. Please sign in again.");
    };
    let Some(user) = api
        .send(Call::get("/oauth2/userinfo").bearer(Some(&tokens.access_token)))
        .await
        .json::<UserInfo>()
    else {
        return refused("The sign-in did not complete. Please sign in again.");
    };
    let session = Session {
        user: user.sub,
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        expires_at: crate::db::now() + tokens.expires_in.min(SESSION_SECS),
        scope: tokens.scope,
    };
    let mut response = redirect(StatusCode::SEE_OTHER, &pending.next);
    let secure = super::secure_cookies(state);
    let headers = response.headers_mut();
    headers.append(
        axum::http::header::SET_COOKIE,
        cookies::clear(app.pending_cookie, secure),
    );
    with_cookie(
        response,
        seal_cookie(state, app.cookie, &session, SESSION_SECS),
    )
}

/// Signs the user out: their tokens revoked, the session cookie removed.
pub async fn end(
    state: &AppState,
    app: &WebApp,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
) -> Response {
    if let Some(session) = open_cookie::<Session>(state, headers, app.cookie) {
        let api = state.shared::<PublicApi>();
        for token in session.refresh_token.iter().chain([&session.access_token]) {
            api.send(
                Call::new(Method::POST, "/oauth2/revoke")
                    .from(peer)
                    .form(&[("token", token), ("client_id", app.client_id)]),
            )
            .await;
        }
    }
    with_cookie(
        redirect(StatusCode::SEE_OTHER, app.base),
        Some(cookies::clear(app.cookie, super::secure_cookies(state))),
    )
}

/// The web applications whose users' sessions are renewed, as the app lists them.
pub struct SignedInApps(pub Vec<&'static WebApp>);

/// Renews the session of a page's user whose access token has expired, with their
/// refresh token (the token endpoint's `refresh_token` grant, as the application's public
/// client), before the page runs: the page sees the renewed session and the browser gets
/// its cookie. A session that cannot be renewed is left as it is, and the page sends the
/// user to sign in again.
pub async fn renew_sessions(
    axum::extract::State(state): axum::extract::State<AppState>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    let app = state
        .shared::<SignedInApps>()
        .0
        .iter()
        .copied()
        // Before every request of the management API: nothing allocated for the others.
        .find(|app| {
            path.strip_prefix(app.base)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                && !path.ends_with("/logout")
        });
    let Some(app) = app else {
        return next.run(request).await;
    };
    let expired = open_cookie::<Session>(&state, request.headers(), app.cookie)
        .filter(|session| session.expires_at <= crate::db::now());
    let Some(session) = expired else {
        return next.run(request).await;
    };
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    let Some(renewed) = renewed(&state, app, &session, peer).await else {
        return next.run(request).await;
    };
    let Some(value) = sealed(&state, app.cookie, &renewed) else {
        return next.run(request).await;
    };
    let cookie = session_cookie(&state, app.cookie, &value, SESSION_SECS);
    cookies::replace_in_request(request.headers_mut(), app.cookie, &value);
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .append(axum::http::header::SET_COOKIE, cookie);
    response
}

/// `session` with new tokens from its refresh token, when the token endpoint gives them.
async fn renewed(
    state: &AppState,
    app: &WebApp,
    session: &Session,
    peer: Option<SocketAddr>,
) -> Option<Session> {
    let refresh_token = session.refresh_token.as_deref()?;
    let answer = state
        .shared::<PublicApi>()
        .send(Call::new(Method::POST, "/oauth2/token").from(peer).form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", app.client_id),
        ]))
        .await;
    let tokens = answer.json::<Tokens>()?;
    Some(Session {
        user: session.user.clone(),
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token.or(session.refresh_token.clone()),
        expires_at: crate::db::now() + tokens.expires_in.min(SESSION_SECS),
        scope: if tokens.scope.is_empty() {
            session.scope.clone()
        } else {
            tokens.scope
        },
    })
}

/// What the token endpoint answers.
#[derive(Deserialize)]
struct Tokens {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: i64,
    #[serde(default)]
    scope: String,
}

/// What the userinfo endpoint answers.
#[derive(Deserialize)]
struct UserInfo {
    sub: String,
}

/// An error page saying why no one was signed in, with the way back.
fn refused(message: &str) -> Response {
    Page::render(
        StatusCode::BAD_REQUEST,
        &MessagePage::saying("Sign-in failed", message, true),
    )
    .into_response()
}

/// `value` sealed with the data key into the cookie `name`, for `max_age` seconds.
fn seal_cookie(
    state: &AppState,
    name: &str,
    value: &impl Serialize,
    max_age: i64,
) -> Option<HeaderValue> {
    let sealed = sealed(state, name, value)?;
    Some(session_cookie(state, name, &sealed, max_age))
}

/// The cookie `name` holding the `sealed` value, for `max_age` seconds.
fn session_cookie(state: &AppState, name: &str, sealed: &str, max_age: i64) -> HeaderValue {
    let attributes = Attributes {
        strict: false,
        secure: super::secure_cookies(state),
        max_age: Some(max_age),
    };
    cookies::set(name, sealed, attributes)
}

/// `value` sealed with the data key, bound to the cookie `name`.
fn sealed(state: &AppState, name: &str, value: &impl Serialize) -> Option<String> {
    let text = serde_json::to_string(value).ok()?;
    Some(state.data_keys.seal(Field::BrowserCookie, name, &text))
}

/// The value of the cookie `name`, when it opens with a data key and reads as `T`.
fn open_cookie<T: DeserializeOwned>(
    state: &AppState,
    headers: &HeaderMap,
    name: &str,
) -> Option<T> {
    let sealed = cookies::read(headers, name)?;
    let text = state
        .data_keys
        .open_presented(Field::BrowserCookie, name, sealed)?;
    serde_json::from_str(&text).ok()
}

/// 32 random bytes, base64url.
fn random_text() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; RANDOM_BYTES]>())
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: WebApp = WebApp {
        client_id: "apim-test",
        name: "Test",
        base: "/portal",
        cookie: "apim_test",
        pending_cookie: "apim_test_signin",
    };

    #[test]
    fn a_sign_in_comes_back_only_to_a_page_of_its_application() {
        for page in ["/portal", "/portal/apis/1", "/portal?q=tag%3Aa"] {
            assert_eq!(APP.page_or_home(Some(page)), page);
        }
        for elsewhere in [
            "https://evil.example/",
            "//evil.example/portal",
            "/portalx",
            "/portal//evil.example",
            "/portal/\\evil.example",
            "/oauth2/authorize",
            "",
        ] {
            assert_eq!(APP.page_or_home(Some(elsewhere)), "/portal", "{elsewhere}");
        }
        assert_eq!(APP.page_or_home(None), "/portal");
    }

    #[test]
    fn the_redirect_uri_and_sign_in_link_sit_under_the_issuer_and_application() {
        assert_eq!(
            APP.redirect_uri("https://apim.example.com/"),
            "https://apim.example.com/portal/callback"
        );
        assert_eq!(
            APP.sign_in_link("/portal/apis/1?x=y"),
            "/portal/login?next=%2Fportal%2Fapis%2F1%3Fx%3Dy"
        );
    }
}
