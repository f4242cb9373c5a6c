//! Audience-restricted access tokens (RFC 8707). A token issued with a `resource`
//! parameter carries that URL in `aud`, and is admitted only to the API the URL names: an
//! `http(s)` URL at one of the gateways' public base URLs (same scheme, host and port,
//! default ports normalised, under the base URL's path if it has one), whose path is the
//! API's `<context>/<version>` or below it at a segment boundary, or, for a call that
//! reached a default-version API without its version, the API's `<context>` alone. A
//! token without `aud` is admitted as before.
//!
//! URLs are read in place, without allocating; anything that does not read as such a URL
//! (a query, a fragment, user information, dot segments, spaces or control characters)
//! names no API.

use apim_manifest::ApiRoute;

/// How a request named its API: `/<context>/<version>/...`, or `/<context>/...` for the
/// default version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressed {
    /// With its version.
    Versioned,
    /// By its context alone (a default version).
    Unversioned,
}

impl Addressed {
    /// How a request for `path` that routed to `api` with `resource` left over named it.
    pub fn of(path: &str, resource: &str, api: &ApiRoute) -> Self {
        let prefix = path.len().saturating_sub(resource.len());
        if api.default_version && prefix == api.context.len() {
            Self::Unversioned
        } else {
            Self::Versioned
        }
    }
}

/// Whether some value of a token's `aud` names `api`, as the request `addressed` it, at one
/// of `gateway_urls`.
pub fn names_api(
    aud: &[String],
    gateway_urls: &[String],
    api: &ApiRoute,
    addressed: Addressed,
) -> bool {
    let unversioned = addressed == Addressed::Unversioned;
    aud.iter().any(|value| {
        HttpUrl::parse(value).is_some_and(|url| {
            gateway_urls
                .iter()
                .filter_map(|base| HttpUrl::parse(base))
                .filter_map(|base| url.path_under(&base))
                .any(|path| names_path(path, &api.context, &api.version, unversioned))
        })
    })
}

/// Whether an audience's path (below the gateway's base path) names the API of `context`
/// and `version`: its versioned root or below it, or, `unversioned`, its context alone.
fn names_path(path: &str, context: &str, version: &str, unversioned: bool) -> bool {
    let Some(after_context) = path.strip_prefix(context) else {
        return false;
    };
    if unversioned && matches!(after_context, "" | "/") {
        return true;
    }
    after_context
        .strip_prefix('/')
        .and_then(|rest| rest.strip_prefix(version))
        .is_some_and(|below| below.is_empty() || below.starts_with('/'))
}

/// An absolute `http` or `https` URL without query, fragment or user information, read in
/// place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpUrl<'a> {
    /// `https`, else `http`.
    pub https: bool,
    /// The host as written (compared without regard to ASCII case).
    pub host: &'a str,
    /// The port, the scheme's when none is written.
    pub port: u16,
    /// The path, `""` when there is none.
    pub path: &'a str,
}

impl<'a> HttpUrl<'a> {
    /// The URL `text` is, if it is one.
    pub fn parse(text: &'a str) -> Option<Self> {
        let (https, rest) = if let Some(rest) = strip_prefix_ignoring_case(text, "https://") {
            (true, rest)
        } else {
            (false, strip_prefix_ignoring_case(text, "http://")?)
        };
        let authority_end = rest.find('/').unwrap_or(rest.len());
        let (authority, path) = rest.split_at(authority_end);
        let (host, port) = split_port(authority)?;
        let port = match port {
            None => default_port(https),
            Some(port) => parse_port(port)?,
        };
        (is_host(host) && is_plain_path(path)).then_some(HttpUrl {
            https,
            host,
            port,
            path,
        })
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.https { "https" } else { "http" }
    }

    /// Whether both have the same scheme, host and port.
    pub fn same_origin(&self, other: &HttpUrl<'_>) -> bool {
        self.https == other.https
            && self.port == other.port
            && self.host.eq_ignore_ascii_case(other.host)
    }

    /// The rest of this URL's path below `base` (same origin, under its path at a segment
    /// boundary), if it is there.
    pub fn path_under(&self, base: &HttpUrl<'_>) -> Option<&'a str> {
        if !self.same_origin(base) {
            return None;
        }
        let rest = self.path.strip_prefix(base.path.trim_end_matches('/'))?;
        (rest.is_empty() || rest.starts_with('/')).then_some(rest)
    }
}

/// `text` without `prefix`, compared without regard to ASCII case.
fn strip_prefix_ignoring_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// An authority's host and written port; `None` for user information or an unclosed
/// IPv6 literal.
fn split_port(authority: &str) -> Option<(&str, Option<&str>)> {
    if authority.contains('@') {
        return None;
    }
    if authority.starts_with('[') {
        let close = authority.find(']')?;
        let (host, rest) = authority.split_at(close + 1);
        return match rest {
            "" => Some((host, None)),
            _ => Some((host, Some(rest.strip_prefix(':')?))),
        };
    }
    match authority.split_once(':') {
        Some((host, port)) => Some((host, Some(port))),
        None => Some((authority, None)),
    }
}

/// A written port: 1 to 5 digits, at most 65535.
fn parse_port(port: &str) -> Option<u16> {
    let digits = !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| port.parse().ok()).flatten()
}

fn default_port(https: bool) -> u16 {
    if https { 443 } else { 80 }
}

/// A registered name, an IPv4 address or a bracketed IPv6 literal, as far as characters go.
fn is_host(host: &str) -> bool {
    if let Some(literal) = host.strip_prefix('[') {
        let inner = literal.strip_suffix(']').unwrap_or_default();
        return !inner.is_empty()
            && inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
    }
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
}

/// A path of visible ASCII without query, fragment or dot segments (written plainly or
/// percent-encoded): one that names exactly what it reads as.
fn is_plain_path(path: &str) -> bool {
    path.bytes()
        .all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#')
        && !path.contains("%2e")
        && !path.contains("%2E")
        && !path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_read_with_default_ports_and_without_anything_ambiguous() {
        let url = HttpUrl::parse("HTTPS://GW.example.com/pizza/1.0.0").unwrap();
        assert_eq!(
            (url.https, url.host, url.port, url.path),
            (true, "GW.example.com", 443, "/pizza/1.0.0")
        );
        let url = HttpUrl::parse("http://[::1]:8280").unwrap();
        assert_eq!((url.host, url.port, url.path), ("[::1]", 8280, ""));
        assert!(
            HttpUrl::parse("https://gw:443/a")
                .unwrap()
                .same_origin(&HttpUrl::parse("https://GW").unwrap())
        );
        assert!(
            !HttpUrl::parse("http://gw:443")
                .unwrap()
                .same_origin(&HttpUrl::parse("https://gw").unwrap())
        );
        for garbage in [
            "",
            "pizza",
            "ftp://gw/pizza",
            "http://",
            "http:///pizza",
            "http://user@gw/pizza",
            "http://gw:/pizza",
            "http://gw:99999/pizza",
            "http://gw:8x/pizza",
            "http://gw/pizza?x=1",
            "http://gw/pizza#top",
            "http://gw/pizza/../admin",
            "http://gw/pizza/%2E%2e/admin",
            "http://gw/pi zza",
            "http://gw/pizza\n",
            "http://g w/pizza",
            "http://[::1/pizza",
            "http://[]/pizza",
            "http://gw/pizzé",
            "https://gw.example.com\u{0}/pizza",
        ] {
            assert_eq!(HttpUrl::parse(garbage), None, "{garbage:?}");
        }
    }

    #[test]
    fn paths_name_an_api_at_segment_boundaries() {
        let names = |path| names_path(path, "/pizza", "1.0.0", false);
        assert!(names("/pizza/1.0.0"));
        assert!(names("/pizza/1.0.0/"));
        assert!(names("/pizza/1.0.0/mcp"));
        assert!(!names("/pizza/1.0.01"));
        assert!(!names("/pizza/1.0.0x/mcp"));
        assert!(!names("/pizza"));
        assert!(!names("/pizzas/1.0.0"));
        assert!(!names("/pizza/2.0.0"));
        assert!(!names(""));
        // The context alone only for a call without the version.
        let unversioned = |path| names_path(path, "/pizza", "1.0.0", true);
        assert!(unversioned("/pizza"));
        assert!(unversioned("/pizza/"));
        assert!(unversioned("/pizza/1.0.0/mcp"));
        assert!(!unversioned("/pizza/2.0.0"));
        assert!(!unversioned("/pizzas"));
    }

    #[test]
    fn base_paths_are_kept_to_at_segment_boundaries() {
        let base = HttpUrl::parse("https://gw.example.com/gateway/").unwrap();
        let under = |text| HttpUrl::parse(text).unwrap().path_under(&base);
        assert_eq!(
            under("https://gw.example.com/gateway/pizza/1"),
            Some("/pizza/1")
        );
        assert_eq!(under("https://gw.example.com/gatewayx/pizza/1"), None);
        assert_eq!(under("https://gw.example.com/pizza/1"), None);
        assert_eq!(under("https://other.example.com/gateway/pizza/1"), None);
    }
}
