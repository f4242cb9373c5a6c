//! Each API as an OAuth protected resource, so that a client that meets a 401 (an MCP
//! agent, say) can find where to sign in: its metadata document (RFC 9728) at
//! `/.well-known/oauth-protected-resource/<context>/<version>` (or `/<context>` for a
//! default version), and the `WWW-Authenticate: Bearer` challenge naming it on every 401
//! of an API call (RFC 6750 §3, RFC 9728 §5.1).
//!
//! The resource is the API's root at a gateway base URL: the one of the manifest's
//! `gateway_urls` whose scheme is the request's, else the first; with none configured,
//! the request's own scheme and `Host`. A call made without the version names the
//! unversioned root, so that the resource is a prefix of the URL the client called.

use apim_http::Scheme;
use apim_manifest::{ApiRoute, ApiType, Meta};
use serde_json::{Value, json};

use crate::audience::{Addressed, HttpUrl};
use crate::host::{Request, Response, header};

/// Where the metadata documents are: this, then the resource's path.
pub const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// How long clients and caches may keep a document, seconds.
const METADATA_MAX_AGE_SECS: u32 = 300;

/// The path of the resource whose metadata a request for `path` asks for (`""` for the
/// prefix alone), if it asks for metadata.
pub fn metadata_target(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(METADATA_PREFIX)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// The base URL (scheme and authority, and a path if the configured one has one, without
/// a trailing `/`) that `request` reached the gateways at.
pub fn base_url(gateway_urls: &[String], request: &Request) -> Option<String> {
    let scheme = match request.scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    let parsed = || {
        gateway_urls
            .iter()
            .filter(|url| HttpUrl::parse(url).is_some())
    };
    let configured = parsed()
        .find(|url| HttpUrl::parse(url).is_some_and(|u| u.scheme() == scheme))
        .or_else(|| parsed().next());
    match configured {
        Some(url) => Some(url.trim_end_matches('/').to_string()),
        None => {
            let host = header(&request.headers, "host").map(str::trim)?;
            let own = apim_http::joined([scheme, "://", host]);
            HttpUrl::parse(&own)
                .is_some_and(|url| url.path.is_empty())
                .then_some(own)
        }
    }
}

/// The API's path as the resource names it: `<context>/<version>`, or `<context>` for a
/// call made without the version.
fn resource_path(api: &ApiRoute, addressed: Addressed) -> String {
    match addressed {
        Addressed::Versioned => apim_http::joined([api.context.as_str(), "/", &api.version]),
        Addressed::Unversioned => api.context.clone(),
    }
}

/// The URL of the API's metadata document at `base`.
pub fn metadata_url(base: &str, api: &ApiRoute, addressed: Addressed) -> String {
    apim_http::joined([base, METADATA_PREFIX, &resource_path(api, addressed)])
}

/// The API's metadata document (RFC 9728 §2) at `base`, answered to anyone: it says
/// nothing the API's callers cannot already learn.
pub fn metadata(base: &str, api: &ApiRoute, addressed: Addressed, meta: &Meta) -> Response {
    let resource = apim_http::joined([base, &resource_path(api, addressed)]);
    let mut document = json!({
        "resource": resource,
        "authorization_servers": [meta.token_issuer],
        "bearer_methods_supported": bearer_methods(api),
        "resource_name": api.name,
    });
    if !api.scopes.is_empty() {
        document["scopes_supported"] = Value::from(api.scopes.clone());
    }
    Response::json(200, &document)
        .with_header(
            "cache-control",
            format!("public, max-age={METADATA_MAX_AGE_SECS}"),
        )
        .with_header("access-control-allow-origin", "*")
}

/// How the API takes a token: in the `Authorization` header; a WebSocket API in the
/// `access_token` query parameter too, since browsers cannot set headers on a handshake.
fn bearer_methods(api: &ApiRoute) -> &'static [&'static str] {
    match api.api_type {
        ApiType::Http => &["header"],
        ApiType::Ws => &["header", "query"],
    }
}

/// What a `Bearer` challenge says went wrong (RFC 6750 §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem<'a> {
    /// The request sent no credentials: no error is named.
    NoToken,
    /// The token is unknown, expired or revoked.
    InvalidToken,
    /// The token lacks this scope, which a client (an MCP SDK) can then ask for.
    InsufficientScope(&'a str),
}

/// The `WWW-Authenticate` challenge of a refusal: `Bearer`, with the metadata document's
/// URL when there is one that can be quoted, and the `problem`'s error (and scope, when
/// it can be quoted).
pub fn challenge(metadata_url: Option<&str>, problem: Problem) -> String {
    let mut params = Vec::new();
    if let Some(url) = metadata_url.and_then(quoted) {
        params.push(format!("resource_metadata={url}"));
    }
    match problem {
        Problem::NoToken => {}
        Problem::InvalidToken => params.push("error=\"invalid_token\"".to_string()),
        Problem::InsufficientScope(scope) => {
            params.push("error=\"insufficient_scope\"".to_string());
            if let Some(scope) = quoted(scope) {
                params.push(format!("scope={scope}"));
            }
        }
    }
    if params.is_empty() {
        "Bearer".to_string()
    } else {
        format!("Bearer {}", params.join(", "))
    }
}

/// `value` as an HTTP quoted-string (RFC 9110 §5.6.4), `"` and `\` escaped; `None` for a
/// value with control or non-ASCII characters, which no quoted-string should carry.
fn quoted(value: &str) -> Option<String> {
    if value.bytes().any(|b| b.is_ascii_control() || !b.is_ascii()) {
        return None;
    }
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for c in value.chars() {
        if matches!(c, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    Some(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(scheme: Scheme, host: Option<&str>) -> Request {
        Request {
            method: "GET".into(),
            path_with_query: "/".into(),
            headers: host
                .map(|host| ("host".to_string(), host.as_bytes().to_vec()))
                .into_iter()
                .collect(),
            body: Vec::new(),
            scheme,
        }
    }

    #[test]
    fn metadata_paths_are_the_prefix_then_a_path() {
        assert_eq!(
            metadata_target("/.well-known/oauth-protected-resource/pizza/1"),
            Some("/pizza/1")
        );
        assert_eq!(
            metadata_target("/.well-known/oauth-protected-resource"),
            Some("")
        );
        assert_eq!(
            metadata_target("/.well-known/oauth-protected-resourcex/pizza"),
            None
        );
        assert_eq!(metadata_target("/pizza/1"), None);
    }

    #[test]
    fn the_base_url_follows_the_requests_scheme_then_the_first_then_its_host() {
        let urls = vec![
            "http://gw.example.com:8280/".to_string(),
            "https://gw.example.com:8243".to_string(),
        ];
        let on = |scheme, urls: &[String], host| base_url(urls, &request(scheme, host));
        assert_eq!(
            on(Scheme::Https, &urls, None).as_deref(),
            Some("https://gw.example.com:8243")
        );
        assert_eq!(
            on(Scheme::Http, &urls, None).as_deref(),
            Some("http://gw.example.com:8280")
        );
        let plain = &urls[..1];
        assert_eq!(
            on(Scheme::Https, plain, Some("x")).as_deref(),
            Some("http://gw.example.com:8280")
        );
        assert_eq!(
            on(Scheme::Https, &[], Some("gw:8443")).as_deref(),
            Some("https://gw:8443")
        );
        for hostile in ["gw\"x", "gw/evil", "a@gw", "gw\\", "", "gw x"] {
            assert_eq!(on(Scheme::Http, &[], Some(hostile)), None, "{hostile:?}");
        }
        assert_eq!(on(Scheme::Http, &[], None), None);
    }

    #[test]
    fn challenges_quote_the_url_and_name_only_what_went_wrong() {
        let url = "http://gw/.well-known/oauth-protected-resource/pizza/1.0.0";
        assert_eq!(
            challenge(Some(url), Problem::NoToken),
            format!("Bearer resource_metadata=\"{url}\"")
        );
        assert_eq!(
            challenge(Some(url), Problem::InvalidToken),
            format!("Bearer resource_metadata=\"{url}\", error=\"invalid_token\"")
        );
        assert_eq!(
            challenge(None, Problem::InvalidToken),
            "Bearer error=\"invalid_token\""
        );
        assert_eq!(challenge(None, Problem::NoToken), "Bearer");
        assert_eq!(
            challenge(Some("http://gw/a\"b\\c"), Problem::NoToken),
            "Bearer resource_metadata=\"http://gw/a\\\"b\\\\c\""
        );
        for unsafe_url in [
            "http://gw/a\r\nX-Evil: 1",
            "http://gw/\u{7f}",
            "http://gw/é",
        ] {
            assert_eq!(
                challenge(Some(unsafe_url), Problem::NoToken),
                "Bearer",
                "{unsafe_url:?}"
            );
        }
        assert_eq!(
            challenge(Some(url), Problem::InsufficientScope("pets:read")),
            format!(
                "Bearer resource_metadata=\"{url}\", error=\"insufficient_scope\", scope=\"pets:read\""
            )
        );
        assert_eq!(
            challenge(None, Problem::InsufficientScope("a\r\nb")),
            "Bearer error=\"insufficient_scope\""
        );
    }
}
