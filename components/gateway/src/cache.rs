//! Response caching (`responseCaching` Enabled, `cacheTimeout` seconds) in the shared store.
//!
//! A cached answer is only ever given to whoever could have received it from the backend:
//! the key names the API, the environment, the caller (the application, whose key type
//! the environment already says, or nobody for an open operation) and the canonical
//! resource path with its query; the request headers the backend's `Vary` names must
//! match those the answer was made for. Answers that are private (`Cache-Control:
//! private`, `no-store`, `no-cache`), set cookies, or vary on `*` or on credentials are not
//! kept. Every entry's key expires at `cacheTimeout` ([`apim_http::expiry`]).

use apim_http::expiry;
use apim_manifest::ApiRoute;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::auth::{Admitted, Environment};
use crate::host::{Headers, Host, Response, header};

#[derive(Serialize, Deserialize)]
struct Entry {
    expires_ms: i64,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    /// The request headers the answer varies on (lower-case) and the values it was made for.
    #[serde(default)]
    vary: Vec<(String, Option<String>)>,
}

/// The store key of a cached GET response for this caller.
pub fn key(
    api: &ApiRoute,
    environment: Environment,
    caller: Option<&Admitted>,
    resource_with_query: &str,
    ttl_secs: u64,
) -> String {
    let who = caller.map_or("-", Admitted::application_id);
    let rest = format!(
        "cache:{}:{}:{}:{who}:{resource_with_query}",
        api.id,
        environment.name(),
        who.len()
    );
    expiry::key(ttl_secs, &rest)
}

/// A fresh cached response for a request with these headers.
pub fn lookup(host: &dyn Host, key: &str, now_ms: i64, request: &Headers) -> Option<Response> {
    let bytes = host.kv_get(key).ok()??;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    if entry.expires_ms <= now_ms {
        let _ = host.kv_delete(key);
        return None;
    }
    let same_variant = entry
        .vary
        .iter()
        .all(|(name, value)| header(request, name) == value.as_deref());
    if !same_variant {
        return None;
    }
    Some(Response {
        status: entry.status,
        headers: entry
            .headers
            .into_iter()
            .filter_map(|(n, v)| Some((n, STANDARD.decode(v).ok()?)))
            .collect(),
        body: STANDARD.decode(entry.body).ok()?,
    })
}

/// Caches a successful, shareable response to a request with these headers for `ttl_secs`.
pub fn store(
    host: &dyn Host,
    key: &str,
    response: &Response,
    ttl_secs: u64,
    now_ms: i64,
    request: &Headers,
) {
    if response.status != 200 || ttl_secs == 0 || !shareable(&response.headers) {
        return;
    }
    let Some(vary) = vary_names(&response.headers) else {
        return;
    };
    let entry = Entry {
        expires_ms: now_ms + (ttl_secs as i64) * 1000,
        status: response.status,
        headers: response
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), STANDARD.encode(v)))
            .collect(),
        body: STANDARD.encode(&response.body),
        vary: vary
            .into_iter()
            .map(|name| {
                let value = header(request, &name).map(str::to_string);
                (name, value)
            })
            .collect(),
    };
    if let Ok(bytes) = serde_json::to_vec(&entry) {
        let _ = host.kv_set(key, &bytes);
    }
}

/// Whether an answer may be kept for others: not private, not to be stored or
/// revalidated, setting no cookie.
fn shareable(headers: &Headers) -> bool {
    let private = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("cache-control"))
        .filter_map(|(_, value)| std::str::from_utf8(value).ok())
        .flat_map(|value| value.split(','))
        .map(|directive| directive.split('=').next().unwrap_or_default().trim())
        .any(|directive| {
            ["private", "no-store", "no-cache"]
                .iter()
                .any(|d| d.eq_ignore_ascii_case(directive))
        });
    !private
        && !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
}

/// The request headers an answer varies on, lower-case; `None` when it cannot be cached
/// (`Vary: *`, or varying on the credentials, which the gateway replaces).
fn vary_names(headers: &Headers) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for (_, value) in headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("vary"))
    {
        for name in String::from_utf8_lossy(value).split(',') {
            let name = name.trim().to_ascii_lowercase();
            match name.as_str() {
                "" => {}
                "*" | "authorization" | "cookie" => return None,
                _ => names.push(name),
            }
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&str, &str)]) -> Headers {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn private_answers_are_not_shared() {
        assert!(shareable(&headers(&[(
            "cache-control",
            "public, max-age=60"
        )])));
        assert!(!shareable(&headers(&[(
            "Cache-Control",
            "max-age=60, Private"
        )])));
        assert!(!shareable(&headers(&[("cache-control", "no-store")])));
        assert!(!shareable(&headers(&[("cache-control", "no-cache=\"x\"")])));
        assert!(!shareable(&headers(&[("set-cookie", "s=1")])));
    }

    #[test]
    fn vary_names_the_request_headers() {
        assert_eq!(
            vary_names(&headers(&[
                ("vary", "Accept, X-Tenant"),
                ("Vary", "origin")
            ])),
            Some(vec!["accept".into(), "x-tenant".into(), "origin".into()])
        );
        assert_eq!(vary_names(&headers(&[("vary", "*")])), None);
        assert_eq!(vary_names(&headers(&[("vary", "Authorization")])), None);
        assert_eq!(vary_names(&headers(&[])), Some(vec![]));
    }
}
