//! Response caching (`responseCaching` Enabled, `cacheTimeout` seconds) in the shared store.
//!
//! A cached answer is only ever given to whoever could have received it from the backend:
//! the key names the API, the environment, the caller (the application, whose key type
//! the environment already says, or nobody for an open operation) and the canonical
//! resource path with its query; what may be kept, and the request headers an answer
//! varies on, are [`apim_http::cache`]'s rules, which edge-gateway applies too when it
//! stores what it forwards. Every entry's key expires at `cacheTimeout`
//! ([`apim_http::expiry`]).

use apim_http::cache::{self as entries, Lookup};
use apim_http::expiry;
use apim_manifest::ApiRoute;

use crate::auth::{Admitted, Environment};
use crate::host::{Headers, Host, Response};

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
    match entries::decode(&bytes, request, now_ms) {
        Lookup::Fresh(response) => Some(response),
        Lookup::Expired => {
            let _ = host.kv_delete(key);
            None
        }
        Lookup::Miss => None,
    }
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
    if let Some(bytes) = entries::encode(response, request, ttl_secs, now_ms) {
        let _ = host.kv_set(key, &bytes);
    }
}
