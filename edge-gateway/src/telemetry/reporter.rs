//! Sends the per-API analytics ([`super::analytics`]) to the control plane: every
//! interval, the totals that changed since the last acknowledged report, `POST`ed to
//! `/internal/gateway/analytics` with the gateway secret, at most
//! [`MAX_ROWS_PER_REPORT`] rows a request. What is not acknowledged is sent again at the
//! next interval (as totals, so the control plane never counts it twice); a report the
//! control plane refuses as malformed (400) is not.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use apim_manifest::analytics::{AnalyticsReport, MAX_ROWS_PER_REPORT};
use bytes::Bytes;
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::task::JoinHandle;

use super::analytics::Analytics;
use crate::backend_tls::ControlPlaneConnector;
use crate::manifest_watch::Watch;

/// Longest a report may take before it is given up (and sent again later).
const REPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends one process's analytics to the control plane `watch` names.
#[derive(Clone)]
pub struct Reporter {
    analytics: Arc<Analytics>,
    watch: Watch,
    /// This process, so that a restarted gateway adds to what it reported before.
    boot: String,
    client: Client<ControlPlaneConnector, Full<Bytes>>,
}

impl Reporter {
    /// A reporter of `analytics` to the control plane of `watch`, reached through
    /// `connector`.
    pub fn new(analytics: Arc<Analytics>, watch: Watch, connector: ControlPlaneConnector) -> Self {
        Self {
            analytics,
            watch,
            boot: uuid::Uuid::new_v4().to_string(),
            client: Client::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// Reports every `interval`; abort the returned task to stop it.
    pub fn spawn(self, interval: Duration) -> JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                self.report().await;
            }
        })
    }

    /// Sends what changed; forgets the minutes that are over and acknowledged.
    pub async fn report(&self) {
        for batch in self.analytics.changed().split(MAX_ROWS_PER_REPORT) {
            match self.send(&batch.rows).await {
                Ok(()) => self.analytics.acknowledged(&batch),
                Err(Refused::ForGood(status)) => {
                    let rows = batch.rows.len();
                    tracing::warn!(%status, rows, "the control plane refused analytics; dropped");
                    self.analytics.acknowledged(&batch);
                }
                Err(Refused::ForNow(reason)) => {
                    tracing::debug!(%reason, "analytics not reported; sent again later");
                    break;
                }
            }
        }
        self.analytics.forget_done(SystemTime::now());
    }

    async fn send(&self, rows: &[apim_manifest::analytics::MinuteCounts]) -> Result<(), Refused> {
        let report = AnalyticsReport {
            gateway: self.watch.gateway_id.clone(),
            boot: self.boot.clone(),
            rows: rows.to_vec(),
        };
        let body = serde_json::to_vec(&report).map_err(|e| Refused::ForNow(e.to_string()))?;
        let path = apim_manifest::paths::CONTROL_PLANE_ANALYTICS;
        let uri: Uri = format!("{}{path}", self.watch.control_plane)
            .parse()
            .map_err(|e| Refused::ForNow(format!("control plane URL: {e}")))?;
        let request = Request::post(uri)
            .header(
                http::header::AUTHORIZATION,
                self.watch.authorization.clone(),
            )
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Refused::ForNow(e.to_string()))?;
        let answered = tokio::time::timeout(REPORT_TIMEOUT, async {
            let response = self.client.request(request).await?;
            let status = response.status();
            // Read to the end, so that the connection is kept for the next report.
            let _ = response.into_body().collect().await;
            Ok::<_, hyper_util::client::legacy::Error>(status)
        })
        .await
        .map_err(|_| Refused::ForNow("timed out".into()))?
        .map_err(|e| Refused::ForNow(format!("control plane unreachable: {e}")))?;
        match answered {
            status if status.is_success() => Ok(()),
            StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => {
                Err(Refused::ForGood(answered))
            }
            status => Err(Refused::ForNow(format!("control plane answered {status}"))),
        }
    }
}

/// Why a report was not stored.
enum Refused {
    /// Malformed: sending it again would not help.
    ForGood(StatusCode),
    /// The control plane is away, busy or not yet configured alike: sent again later.
    ForNow(String),
}
