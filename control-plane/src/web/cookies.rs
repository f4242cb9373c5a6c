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
}
