//! URLs the OAuth endpoints take from clients: redirect URIs (RFC 6749 §3.1.2), resource
//! indicators (RFC 8707 §2) and the issuer's own (RFC 8414 §2), read as browsers read them.

use url::Url;

/// Longest URL taken from a client: longer ones are refused rather than stored.
pub const MAX_URL_BYTES: usize = 2048;

/// Schemes a redirect may never use: a browser would run or read them rather than leave.
const UNSAFE_SCHEMES: &[&str] = &["javascript", "data", "vbscript", "file", "blob", "about"];

/// `text` as an absolute URL, if it is one without a fragment, spaces or control
/// characters, and not longer than [`MAX_URL_BYTES`].
fn absolute(text: &str) -> Option<Url> {
    let plain = text.len() <= MAX_URL_BYTES
        && !text.is_empty()
        && !text.contains('#')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control());
    plain.then(|| Url::parse(text).ok()).flatten()
}

/// Whether `text` may be registered or named as a redirect URI: absolute, no fragment,
/// no script-running scheme (native apps' private schemes are fine, RFC 8252 §7.1).
pub fn is_redirect_uri(text: &str) -> bool {
    absolute(text).is_some_and(|url| !UNSAFE_SCHEMES.contains(&url.scheme()))
}

/// Whether `text` is a resource indicator: an absolute `http` or `https` URL without a
/// fragment (RFC 8707 §2).
pub fn is_resource(text: &str) -> bool {
    absolute(text).is_some_and(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
}

/// The origin (`scheme://host[:port]`) of an `http` or `https` URL, as a CSP source.
pub fn origin(text: &str) -> Option<String> {
    let url = absolute(text)?;
    matches!(url.scheme(), "http" | "https")
        .then(|| url.origin().ascii_serialization())
        .filter(|origin| origin != "null")
}

/// The path of an issuer URL without its trailing slash (`""` for a root issuer).
pub fn issuer_path(issuer: &str) -> String {
    Url::parse(issuer)
        .map(|url| url.path().trim_end_matches('/').to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_absolute_and_leave_the_page() {
        for good in [
            "https://app.example/cb",
            "http://127.0.0.1:8/cb?x=1",
            "com.example.app:/cb",
        ] {
            assert!(is_redirect_uri(good), "{good}");
        }
        let long = format!("https://a/{}", "x".repeat(MAX_URL_BYTES));
        for bad in [
            "",
            "/cb",
            "cb",
            "https://app/cb#x",
            "https://app/c b",
            "https://app/\ncb",
            "javascript:alert(1)",
            "JAVASCRIPT:alert(1)",
            "data:text/html,x",
            long.as_str(),
        ] {
            assert!(!is_redirect_uri(bad), "{bad:?}");
        }
    }

    #[test]
    fn resources_are_http_urls_and_origins_are_csp_sources() {
        assert!(is_resource("https://gw.example/pizza/1.0.0"));
        assert!(!is_resource("urn:x:y") && !is_resource("https://gw/x#f") && !is_resource("/x"));
        assert_eq!(
            origin("https://app.example:8443/cb?x").as_deref(),
            Some("https://app.example:8443")
        );
        assert_eq!(
            origin("http://app.example:80/cb").as_deref(),
            Some("http://app.example")
        );
        assert_eq!(origin("com.example.app:/cb"), None);
        assert_eq!(issuer_path("http://127.0.0.1:9763"), "");
        assert_eq!(
            issuer_path("http://127.0.0.1:9763/oauth2/token"),
            "/oauth2/token"
        );
        assert_eq!(issuer_path("https://idp.example/apim/"), "/apim");
    }
}
