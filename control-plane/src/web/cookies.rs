//! Cookies of the pages: read from a request, written with the attributes they need.

use axum::http::{HeaderMap, HeaderValue, header};

/// The value of the cookie `name` a request carries (the first, if several).
pub fn read<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// How a cookie is sent back.
#[derive(Debug, Clone, Copy)]
pub struct Attributes {
    /// `SameSite=Strict` rather than `Lax`.
    pub strict: bool,
    /// Only over HTTPS.
    pub secure: bool,
    /// Seconds it lives; `None` for the browser's session.
    pub max_age: Option<i64>,
}

/// A `Set-Cookie` value: never readable by scripts, for the whole site.
pub fn set(name: &str, value: &str, attributes: Attributes) -> HeaderValue {
    let mut cookie = format!(
        "{name}={value}; Path=/; HttpOnly; SameSite={}",
        if attributes.strict { "Strict" } else { "Lax" }
    );
    if attributes.secure {
        cookie.push_str("; Secure");
    }
    if let Some(max_age) = attributes.max_age {
        cookie.push_str(&format!("; Max-Age={max_age}"));
    }
    HeaderValue::from_str(&cookie)
        .unwrap_or_else(|_| HeaderValue::from_static("invalid=; Max-Age=0"))
}

/// A `Set-Cookie` value that removes the cookie `name`.
pub fn clear(name: &str, secure: bool) -> HeaderValue {
    set(
        name,
        "",
        Attributes {
            strict: false,
            secure,
            max_age: Some(0),
        },
    )
}

/// Puts `value` as the cookie `name` into a request's `Cookie` headers (added when it has
/// none), so that what runs next reads it as the browser would send it next time.
pub fn replace_in_request(headers: &mut HeaderMap, name: &str, value: &str) {
    let mut pairs: Vec<String> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .filter(|pair| pair.split_once('=').map(|(n, _)| n.trim()) != Some(name))
        .map(str::to_string)
        .collect();
    pairs.push(format!("{name}={value}"));
    headers.remove(header::COOKIE);
    if let Ok(joined) = HeaderValue::from_str(&pairs.join("; ")) {
        headers.insert(header::COOKIE, joined);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_by_name_and_written_http_only() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; apim_session=xyz; b=2"),
        );
        assert_eq!(read(&headers, "apim_session"), Some("xyz"));
        assert_eq!(read(&headers, "apim"), None);
        let written = set(
            "s",
            "v",
            Attributes {
                strict: false,
                secure: true,
                max_age: Some(5),
            },
        );
        assert_eq!(
            written.to_str().unwrap(),
            "s=v; Path=/; HttpOnly; SameSite=Lax; Secure; Max-Age=5"
        );
    }

    #[test]
    fn a_cookie_is_replaced_in_the_request_and_the_others_kept() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; apim_x=old; b=2"),
        );
        replace_in_request(&mut headers, "apim_x", "new");
        assert_eq!(read(&headers, "apim_x"), Some("new"));
        assert_eq!(read(&headers, "a"), Some("1"));
        assert_eq!(read(&headers, "b"), Some("2"));
        let mut empty = HeaderMap::new();
        replace_in_request(&mut empty, "apim_x", "v");
        assert_eq!(read(&empty, "apim_x"), Some("v"));
    }
}
