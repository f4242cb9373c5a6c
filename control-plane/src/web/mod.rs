//! The page kit every room that answers browsers uses: templates (askama, escaped by
//! default), the headers every page carries (a strict Content-Security-Policy, no framing,
//! no caching, no referrer), cookies, and CSRF tokens. Pages load nothing from another
//! host and run no script of their own.

pub(crate) mod calls;
pub(crate) mod charts;
pub(crate) mod cookies;
pub(crate) mod csrf;
pub(crate) mod markup;
pub(crate) mod portal;
pub(crate) mod signin;
pub(crate) mod uploads;
pub(crate) mod visit;

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::http::routes::{Routes, get};

/// A page that says one thing (an error, a result), with a form when it asks for a click.
#[derive(Template)]
#[template(path = "message.html")]
pub struct MessagePage<'a> {
    pub title: &'a str,
    pub message: &'a str,
    /// Announced at once (`role="alert"`): an error.
    pub alert: bool,
    /// Where its form posts, when it has one.
    pub action: Option<&'a str>,
    pub button: &'a str,
    /// The form's hidden fields.
    pub hidden: Vec<(&'static str, String)>,
    pub csrf_token: String,
}

impl<'a> MessagePage<'a> {
    /// A page that says `message`, with no form; announced when it is an error (`alert`).
    pub fn saying(title: &'a str, message: &'a str, alert: bool) -> Self {
        MessagePage {
            title,
            message,
            alert,
            action: None,
            button: "",
            hidden: Vec::new(),
            csrf_token: String::new(),
        }
    }
}

/// A form's (or a query's) parameters in order, repeated ones kept.
pub fn form_pairs(bytes: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

/// The first value of the parameter `name`.
pub fn field<'p>(pairs: &'p [(String, String)], name: &str) -> Option<&'p str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A redirect (302 after a GET, 303 after a form) to `location`, with the pages' headers.
pub fn redirect(status: StatusCode, location: &str) -> Response {
    let mut response = status.into_response();
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    secure_headers(response.headers_mut());
    response
}

/// `response` setting `cookie`, when there is one.
pub fn with_cookie(mut response: Response, cookie: Option<HeaderValue>) -> Response {
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Where the pages' one stylesheet is served.
pub const STYLESHEET: &str = "/assets/apim.css";

/// The stylesheet, built into the binary.
const STYLESHEET_TEXT: &str = include_str!("../../templates/apim.css");

/// A page to answer with: its HTML and the origins its forms may end up at (a form that
/// signs someone in redirects, in the end, to the client's redirect URI, which
/// `form-action` must allow or the browser stops it).
pub struct Page {
    status: StatusCode,
    html: String,
    form_targets: Vec<String>,
    /// The origins the page's own scripts may call, when it runs any (this host's).
    scripts_connect_to: Option<Vec<String>>,
}

impl Page {
    /// `template` rendered, answered with `status`.
    pub fn render(status: StatusCode, template: &impl Template) -> Self {
        let html = template.render().unwrap_or_else(|err| {
            tracing::error!(%err, "a page did not render");
            "<!doctype html><title>Error</title><p>This page could not be shown.".to_string()
        });
        Page {
            status,
            html,
            form_targets: Vec::new(),
            scripts_connect_to: None,
        }
    }

    /// Lets the page run this host's scripts, which may call this host and `origins`.
    pub fn with_scripts_calling(mut self, origins: Vec<String>) -> Self {
        self.scripts_connect_to = Some(origins);
        self
    }

    /// Lets the page's forms end up at `origin` too (a redirect after the form is sent).
    pub fn with_form_target(mut self, origin: Option<String>) -> Self {
        self.form_targets.extend(origin);
        self
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let mut policy = content_security_policy(&self.form_targets);
        if let Some(origins) = &self.scripts_connect_to {
            policy.push_str("; script-src 'self'; connect-src 'self'");
            for origin in origins {
                policy.push(' ');
                policy.push_str(origin);
            }
        }
        let mut response = (self.status, self.html).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        if let Ok(policy) = HeaderValue::from_str(&policy) {
            headers.insert(header::CONTENT_SECURITY_POLICY, policy);
        }
        secure_headers(headers);
        response
    }
}

/// The policy of every page: nothing but this host's stylesheet and images, forms sent
/// here (and to `form_targets`), never framed, no base or plugin.
fn content_security_policy(form_targets: &[String]) -> String {
    let mut form_action = String::from("'self'");
    for origin in form_targets {
        form_action.push(' ');
        form_action.push_str(origin);
    }
    format!(
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action {form_action}; \
         frame-ancestors 'none'; base-uri 'none'"
    )
}

/// Headers every answer to a browser carries: not framed, not sniffed, not cached, and no
/// referrer to another site (a page's URL may hold an authorization request).
pub fn secure_headers(headers: &mut axum::http::HeaderMap) {
    for (name, value) in [
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// The kit's own route: the stylesheet.
pub fn router() -> Routes {
    Routes::new().route(STYLESHEET, get(stylesheet))
}

/// The pages' stylesheet.
#[utoipa::path(
    get,
    path = "/assets/apim.css",
    tag = "Pages",
    responses((status = 200, description = "The sign-in pages' stylesheet", content_type = "text/css", body = String))
)]
async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        STYLESHEET_TEXT,
    )
        .into_response()
}

/// The kit's operation in the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(stylesheet))]
pub struct Api;

/// Whether the pages' cookies are `Secure`: the control plane is reached over HTTPS (its
/// own TLS, or a proxy's in front of an `https://` issuer).
pub fn secure_cookies(state: &crate::state::AppState) -> bool {
    state.issuer.starts_with("https://") || !state.config.tls_certs.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_nothing_from_elsewhere() {
        let policy = content_security_policy(&["https://app.example".to_string()]);
        assert!(policy.starts_with("default-src 'none';"));
        assert!(policy.contains("form-action 'self' https://app.example;"));
        assert!(policy.contains("frame-ancestors 'none'"));
        assert!(!policy.contains("unsafe"));
    }
}
