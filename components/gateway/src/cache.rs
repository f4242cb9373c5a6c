//! Response caching (`responseCaching` Enabled, `cacheTimeout` seconds) in the shared store.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::host::{Host, Response};

#[derive(Serialize, Deserialize)]
struct Entry {
    expires_ms: i64,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

/// The store key of a cached GET response.
pub fn key(api_id: &str, environment: &str, path_with_query: &str) -> String {
    format!("apim:cache:{api_id}:{environment}:{path_with_query}")
}

/// A fresh cached response.
pub fn lookup(host: &dyn Host, key: &str, now_ms: i64) -> Option<Response> {
    let bytes = host.kv_get(key).ok()??;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    if entry.expires_ms <= now_ms {
        let _ = host.kv_delete(key);
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

/// Caches a successful response for `ttl_secs`.
pub fn store(host: &dyn Host, key: &str, response: &Response, ttl_secs: u64, now_ms: i64) {
    if response.status != 200 || ttl_secs == 0 {
        return;
    }
    let entry = Entry {
        expires_ms: now_ms + (ttl_secs as i64) * 1000,
        status: response.status,
        headers: response
            .headers
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case("set-cookie"))
            .map(|(n, v)| (n.clone(), STANDARD.encode(v)))
            .collect(),
        body: STANDARD.encode(&response.body),
    };
    if let Ok(bytes) = serde_json::to_vec(&entry) {
        let _ = host.kv_set(key, &bytes);
    }
}
