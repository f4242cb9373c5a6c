//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, which MCP's
//! clients of 2026-07-28 use beside registration): a client that names itself by an HTTPS
//! URL, where a JSON document says its name and redirect URIs. The document is fetched
//! under the egress policy (the name resolved, every address checked, and the connection
//! pinned to them), at most [`MAX_DOCUMENT_BYTES`] within [`FETCH_TIMEOUT`], a few at a
//! time, and kept as long as its `Cache-Control` says (a minute to a day). Such a client
//! is public: it has no secret, and takes the authorization code flow with PKCE only.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;

use crate::http::egress_fetch::{Fetch, Outbound};
use crate::http::urls;

/// Largest document taken, bytes (the draft's suggestion).
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// Longest a fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Fetches in flight at once; more are refused rather than queued.
const MAX_FETCHES: usize = 8;
/// How long a document is kept: its `max-age`, within these bounds, else the default.
const MIN_KEPT: Duration = Duration::from_secs(60);
const MAX_KEPT: Duration = Duration::from_secs(24 * 3600);
const DEFAULT_KEPT: Duration = Duration::from_secs(300);

/// Whether `client_id` names a metadata document: an `https` URL with a path, without a
/// fragment, credentials or dot segments (the draft's §3).
pub fn is_metadata_url(client_id: &str) -> bool {
    if !client_id.starts_with("https://") || !urls::is_resource(client_id) {
        return false;
    }
    let Ok(url) = url::Url::parse(client_id) else {
        return false;
    };
    let raw_path = client_id["https://".len()..]
        .split_once('/')
        .map_or("", |(_, path)| path);
    url.username().is_empty()
        && url.password().is_none()
        && url.path() != "/"
        && !raw_path
            .split(['/', '?'])
            .any(|segment| matches!(segment, "." | ".." | "%2e" | "%2E" | "%2e%2e" | "%2E%2E"))
}

/// What fetches documents: where the control plane may fetch from, and the bound on
/// fetches at once.
pub struct MetadataFetcher {
    outbound: Arc<Outbound>,
    in_flight: Arc<Semaphore>,
}

/// A client as its document describes it: a public client of the authorization code flow.
pub struct Described {
    /// The document's URL.
    pub client_id: String,
    /// What the pages call it: its `client_name` with its host, so that a document cannot
    /// pass for another site's client.
    pub name: String,
    /// Its redirect URIs.
    pub redirect_uris: Vec<String>,
}

/// A client read from its document, and how long it may be kept.
pub struct Fetched {
    pub client: Described,
    pub kept_for: Duration,
}

impl MetadataFetcher {
    /// A fetcher under `outbound`'s policy, trusting its roots.
    pub fn new(outbound: Arc<Outbound>) -> Self {
        MetadataFetcher {
            outbound,
            in_flight: Arc::new(Semaphore::new(MAX_FETCHES)),
        }
    }

    /// The client whose id is the document's URL, or why not (in words, for a log).
    pub async fn fetch(&self, url: &str) -> Result<Fetched, String> {
        let _permit = self
            .in_flight
            .try_acquire()
            .map_err(|_| "too many client metadata documents are being fetched".to_string())?;
        let (host, _) =
            apim_http::egress::host_and_port(url).ok_or_else(|| format!("{url} names no host"))?;
        let fetch = Fetch {
            outbound: &self.outbound,
            accept: "application/json",
            max_bytes: MAX_DOCUMENT_BYTES,
            timeout: FETCH_TIMEOUT,
        };
        let fetched = fetch.get(url).await?;
        let document: Value =
            serde_json::from_slice(&fetched.body).map_err(|e| format!("{url} is not JSON: {e}"))?;
        Ok(Fetched {
            client: client_of(url, &host, &document)?,
            kept_for: kept_for(&fetched.headers),
        })
    }
}

/// The client a document describes, if it is one this server takes: its `client_id` is
/// its URL, its redirect URIs are absolute, and it asks for no secret.
fn client_of(url: &str, host: &str, document: &Value) -> Result<Described, String> {
    if document["client_id"].as_str() != Some(url) {
        return Err(format!("the document at {url} names another client_id"));
    }
    if document.get("client_secret").is_some() {
        return Err("a client metadata document may not hold a secret".into());
    }
    match document["token_endpoint_auth_method"].as_str() {
        None | Some("none") => {}
        Some(other) => {
            return Err(format!(
                "token_endpoint_auth_method {other} is not supported: only none"
            ));
        }
    }
    let redirect_uris: Vec<&str> = document["redirect_uris"]
        .as_array()
        .map(|uris| uris.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if redirect_uris.is_empty()
        || redirect_uris.len() > 16
        || !redirect_uris.iter().all(|u| urls::is_redirect_uri(u))
    {
        return Err("redirect_uris must be 1 to 16 absolute URIs without fragments".into());
    }
    if let Some(grants) = document["grant_types"].as_array() {
        let grants: Vec<&str> = grants.iter().filter_map(Value::as_str).collect();
        if !grants.contains(&"authorization_code") {
            return Err("grant_types must include authorization_code".into());
        }
    }
    let name = document["client_name"]
        .as_str()
        .map(|name| {
            name.chars()
                .filter(|c| !c.is_control())
                .take(100)
                .collect::<String>()
        })
        .filter(|name| !name.trim().is_empty());
    Ok(Described {
        client_id: url.to_string(),
        name: match name {
            Some(name) => format!("{name} ({host})"),
            None => host.to_string(),
        },
        redirect_uris: redirect_uris.iter().map(|uri| uri.to_string()).collect(),
    })
}

/// How long an answer with these headers may be kept.
fn kept_for(headers: &reqwest::header::HeaderMap) -> Duration {
    let directives = headers
        .get(reqwest::header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if directives
        .split(',')
        .any(|d| matches!(d.trim(), "no-store" | "no-cache"))
    {
        return MIN_KEPT;
    }
    directives
        .split(',')
        .filter_map(|d| d.trim().strip_prefix("max-age="))
        .find_map(|secs| secs.parse::<u64>().ok())
        .map_or(DEFAULT_KEPT, |secs| {
            Duration::from_secs(secs).clamp(MIN_KEPT, MAX_KEPT)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_are_https_with_a_path() {
        assert!(is_metadata_url("https://app.example/oauth/client.json"));
        assert!(is_metadata_url("https://app.example:8443/c?v=1"));
        for not in [
            "http://app.example/client.json",
            "https://app.example",
            "https://app.example/",
            "https://app.example/c#f",
            "https://user:pw@app.example/c",
            "https://app.example/a/../c",
            "https://app.example/a/%2e%2e/c",
            "abc123",
        ] {
            assert!(!is_metadata_url(not), "{not}");
        }
    }

    #[test]
    fn documents_name_themselves_and_keep_no_secret() {
        let url = "https://app.example/client.json";
        let good = serde_json::json!({"client_id": url, "client_name": "Agent",
            "redirect_uris": ["http://127.0.0.1:33418/callback"], "token_endpoint_auth_method": "none"});
        let client = client_of(url, "app.example", &good).unwrap();
        assert_eq!(client.name, "Agent (app.example)");
        assert_eq!(client.redirect_uris, ["http://127.0.0.1:33418/callback"]);
        let mut other = good.clone();
        other["client_id"] = "https://evil.example/client.json".into();
        assert!(client_of(url, "app.example", &other).is_err());
        let mut secret = good.clone();
        secret["client_secret"] = "x".into();
        assert!(client_of(url, "app.example", &secret).is_err());
        let mut basic = good.clone();
        basic["token_endpoint_auth_method"] = "client_secret_basic".into();
        assert!(client_of(url, "app.example", &basic).is_err());
        let mut bad_uri = good;
        bad_uri["redirect_uris"] = serde_json::json!(["javascript:alert(1)"]);
        assert!(client_of(url, "app.example", &bad_uri).is_err());
    }

    #[test]
    fn documents_are_kept_as_their_cache_control_says_within_bounds() {
        let with = |value: &str| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(reqwest::header::CACHE_CONTROL, value.parse().unwrap());
            kept_for(&headers)
        };
        assert_eq!(kept_for(&reqwest::header::HeaderMap::new()), DEFAULT_KEPT);
        assert_eq!(with("public, max-age=600"), Duration::from_secs(600));
        assert_eq!(with("max-age=1"), MIN_KEPT);
        assert_eq!(with("max-age=99999999"), MAX_KEPT);
        assert_eq!(with("no-store"), MIN_KEPT);
    }
}
