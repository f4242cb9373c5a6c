//! CSRF tokens of the pages' forms: a random cookie (`SameSite=Strict`) and, in each form,
//! its HMAC under a key derived from the gateway secret (which every control plane of a
//! platform shares), so that a form from one control plane is taken by another and a
//! cookie planted by a sibling site does not come with a matching token. A form sent
//! from another site (`Sec-Fetch-Site: cross-site`, or an `Origin` naming another host)
//! is refused whatever it carries.

use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::cookies::{self, Attributes};

/// The cookie holding the browser's CSRF secret.
pub const COOKIE: &str = "apim_csrf";
/// The form field holding its token.
pub const FIELD: &str = "csrf_token";

/// Random bytes of a browser's secret.
const SECRET_BYTES: usize = 32;

/// The token a form carries, and the cookie to set when the browser had none.
pub struct Prepared {
    /// For the form's hidden field.
    pub token: String,
    /// `Set-Cookie`, when a new secret was made.
    pub set_cookie: Option<HeaderValue>,
}

/// The token for a form of this request's page: from the browser's secret, or a new one.
pub fn prepare(headers: &HeaderMap, key_material: &str, secure: bool) -> Prepared {
    if let Some(secret) = cookies::read(headers, COOKIE).filter(|s| well_formed(s)) {
        return Prepared {
            token: token_for(key_material, secret),
            set_cookie: None,
        };
    }
    let secret = URL_SAFE_NO_PAD.encode(rand::random::<[u8; SECRET_BYTES]>());
    let attributes = Attributes {
        strict: true,
        secure,
        max_age: None,
    };
    Prepared {
        token: token_for(key_material, &secret),
        set_cookie: Some(cookies::set(COOKIE, &secret, attributes)),
    }
}

/// Whether a form sent with `headers` carries the token of the browser's secret, and
/// comes from this site.
pub fn check(headers: &HeaderMap, key_material: &str, token: Option<&str>) -> bool {
    let Some(secret) = cookies::read(headers, COOKIE).filter(|s| well_formed(s)) else {
        return false;
    };
    let Some(token) = token else {
        return false;
    };
    let expected = token_for(key_material, secret);
    let same_token: bool = expected.as_bytes().ct_eq(token.as_bytes()).into();
    same_token && from_this_site(headers)
}

/// Whether the browser says the form came from this site: not `cross-site`, and an
/// `Origin`, when sent, naming the host the request was sent to (`null`, which a browser
/// sends under a strict referrer policy, says nothing either way).
fn from_this_site(headers: &HeaderMap) -> bool {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if text("sec-fetch-site") == Some("cross-site") {
        return false;
    }
    match (text(header::ORIGIN.as_str()), text(header::HOST.as_str())) {
        (None | Some("null"), _) => true,
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
    }
}

fn well_formed(secret: &str) -> bool {
    secret.len() == 43
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn token_for(key_material: &str, secret: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key_material.as_bytes()).expect("any key length");
    mac.update(b"apim web form\0");
    mac.update(secret.as_bytes());
    URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(prepared: &Prepared) -> HeaderMap {
        let set = prepared.set_cookie.as_ref().unwrap().to_str().unwrap();
        let pair = set.split(';').next().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(pair).unwrap());
        headers
    }

    #[test]
    fn a_form_needs_the_token_of_its_cookie_from_this_site() {
        let prepared = prepare(&HeaderMap::new(), "key", false);
        let mut headers = with_cookie(&prepared);
        assert!(check(&headers, "key", Some(&prepared.token)));
        assert!(!check(&headers, "key", None));
        assert!(!check(&headers, "key", Some("forged")));
        assert!(!check(&headers, "another key", Some(&prepared.token)));
        assert!(!check(&HeaderMap::new(), "key", Some(&prepared.token)));
        // The same browser keeps its secret.
        assert!(prepare(&headers, "key", false).set_cookie.is_none());
        headers.insert(header::HOST, HeaderValue::from_static("cp:9763"));
        headers.insert(header::ORIGIN, HeaderValue::from_static("http://cp:9763"));
        assert!(check(&headers, "key", Some(&prepared.token)));
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://evil.example"),
        );
        assert!(!check(&headers, "key", Some(&prepared.token)));
        headers.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(check(&headers, "key", Some(&prepared.token)));
        headers.remove(header::ORIGIN);
        headers.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!check(&headers, "key", Some(&prepared.token)));
    }
}
