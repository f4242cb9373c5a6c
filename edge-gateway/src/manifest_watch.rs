//! Keeping the gateway current: the component pulls the pages it misses from the control
//! plane ([`Gateway::sync`]), then a long poll of the control plane's
//! `/internal/gateway/changes` that answers as soon as the manifest moves past the
//! version the component holds, and a sync again.
//!
//! The gateway connects out, so nothing depends on the control plane reaching it (pushes
//! to `APIM_GATEWAYS` only accelerate): one that starts, restarts or reconnects is current
//! within [`MAX_RETRY_DELAY`] of reaching the control plane. Without a control plane
//! URL, it syncs every interval instead.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apim_manifest::paths;
use bytes::Bytes;
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::backend_tls::ControlPlaneConnector;
use tokio::task::JoinHandle;

use crate::dispatch::Gateway;

/// How long the control plane holds a long poll while nothing changes.
const LONG_POLL_SECS: u64 = 25;
/// Longest a long poll may take before it is given up as lost.
const LONG_POLL_TIMEOUT: Duration = Duration::from_secs(LONG_POLL_SECS + 10);
/// First wait after a failed sync or poll; it doubles up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
/// Longest wait between attempts to reach the control plane.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(1);

/// Where and as whom the gateway asks the control plane for changes.
#[derive(Debug, Clone)]
pub struct Watch {
    /// The control plane's base URL, without a trailing `/`.
    pub control_plane: String,
    /// `Bearer <gateway_secret>`.
    pub authorization: HeaderValue,
    /// This gateway's id (`gateway_id`).
    pub gateway_id: String,
    /// Its environment (`gateway_environment`).
    pub environment: String,
}

/// Starts keeping the gateway current, reaching the control plane through `connector`;
/// abort the returned task to stop it.
pub fn spawn(
    gateway: Arc<Gateway>,
    local: SocketAddr,
    interval: Duration,
    watch: Option<Watch>,
    connector: ControlPlaneConnector,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let client = Client::builder(TokioExecutor::new()).build(connector);
        let mut delay = FIRST_RETRY_DELAY;
        loop {
            let held = gateway.sync(local).await;
            let Some(watch) = &watch else {
                tokio::time::sleep(interval).await;
                continue;
            };
            let polled = match held {
                Some(version) => watch.changes_after(&client, version).await,
                None => Err("the component could not sync".to_string()),
            };
            match polled {
                Ok(latest) => {
                    tracing::debug!(latest, "control plane announced a version");
                    gateway.announced(latest);
                    delay = FIRST_RETRY_DELAY;
                }
                Err(reason) => {
                    tracing::debug!(%reason, retry_in = ?delay, "waiting for the control plane");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(MAX_RETRY_DELAY);
                }
            }
        }
    })
}

impl Watch {
    /// Holds a request open at the control plane until the manifest is past `version`
    /// (or its wait runs out); the newest version it reports.
    async fn changes_after(
        &self,
        client: &Client<ControlPlaneConnector, Empty<Bytes>>,
        version: u64,
    ) -> Result<u64, String> {
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("after", &version.to_string())
            .append_pair("wait", &LONG_POLL_SECS.to_string())
            .append_pair("gateway", &self.gateway_id)
            .append_pair("environment", &self.environment)
            .finish();
        let uri: Uri = format!(
            "{}{}?{query}",
            self.control_plane,
            paths::CONTROL_PLANE_CHANGES
        )
        .parse()
        .map_err(|e| format!("control plane URL: {e}"))?;
        let request = Request::get(uri)
            .header(http::header::AUTHORIZATION, self.authorization.clone())
            .body(Empty::new())
            .map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(LONG_POLL_TIMEOUT, client.request(request))
            .await
            .map_err(|_| "long poll timed out".to_string())?
            .map_err(|e| format!("control plane unreachable: {e}"))?;
        let status = response.status();
        let body = tokio::time::timeout(LONG_POLL_TIMEOUT, response.into_body().collect())
            .await
            .map_err(|_| "long poll body timed out".to_string())?
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("control plane answered {status}"));
        }
        latest_of(&body).ok_or_else(|| "control plane answer without \"latest\"".into())
    }
}

/// The newest version the control plane's long poll announces: `{"latest": n}`.
fn latest_of(body: &[u8]) -> Option<u64> {
    serde_json::from_slice::<serde_json::Value>(body).ok()?["latest"].as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announced_versions_are_read_safely() {
        assert_eq!(latest_of(br#"{"latest": 42}"#), Some(42));
        assert_eq!(latest_of(br#"{"version": 7}"#), None);
        assert_eq!(latest_of(b"nope"), None);
        assert_eq!(latest_of(br#"{"latest": -1}"#), None);
    }
}
