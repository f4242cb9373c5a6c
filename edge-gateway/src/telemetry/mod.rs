//! What the host tells operators: Prometheus metrics ([`metrics`]), readiness, the
//! operations listener that serves them with `/healthz` ([`ops`]), the access log
//! ([`access_log`]) and traces ([`spans`]); and what it tells API providers: per-API
//! analytics ([`analytics`]), reported to the control plane ([`reporter`]). Each reads
//! what a request came to from the component's verdict once ([`called`]).

pub mod access_log;
pub mod analytics;
pub mod called;
pub mod metrics;
pub mod ops;
pub mod reporter;
pub mod spans;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

pub use access_log::AccessLog;
pub use analytics::Analytics;
pub use called::Called;
pub use metrics::{Metrics, Outcome};
pub use spans::Tracing;

/// Everything the gateways of one process report to, shared with the operations listener.
pub struct Telemetry {
    /// The metrics.
    pub metrics: Metrics,
    /// The access log, when on.
    pub access_log: Option<Arc<AccessLog>>,
    /// Where spans go, if anywhere.
    pub tracing: Tracing,
    /// Per-API analytics, when reported.
    pub analytics: Option<Arc<Analytics>>,
    /// The components are compiled (and ready to instantiate).
    compiled: AtomicBool,
    /// The manifest version the main gateway holds; -1 before its first sync.
    manifest: AtomicI64,
    /// The newest version the control plane announced; -1 before it did.
    announced: AtomicI64,
    /// Readiness waits for a manifest (the host syncs); without syncing, compiling is
    /// enough, since manifests then come only by push.
    needs_manifest: AtomicBool,
}

impl Default for Telemetry {
    fn default() -> Self {
        Self {
            metrics: Metrics::new(),
            access_log: None,
            tracing: Tracing::default(),
            analytics: None,
            compiled: AtomicBool::new(false),
            manifest: AtomicI64::new(-1),
            announced: AtomicI64::new(-1),
            needs_manifest: AtomicBool::new(true),
        }
    }
}

impl Telemetry {
    /// With an access log written to standard output.
    pub fn with_access_log() -> std::io::Result<Self> {
        let log = Arc::new(AccessLog::new());
        AccessLog::spawn_writer(log.clone())?;
        Ok(Self {
            access_log: Some(log),
            ..Self::default()
        })
    }

    /// Exports spans as `tracing` says.
    pub fn with_tracing(self, tracing: Tracing) -> Self {
        Self { tracing, ..self }
    }

    /// Also counting per-API analytics.
    pub fn with_analytics(self) -> Self {
        Self {
            analytics: Some(Arc::default()),
            ..self
        }
    }

    /// Writes out what the access log holds (at exit).
    pub fn flush(&self) {
        if let Some(log) = &self.access_log {
            log.flush();
        }
    }

    /// Every component is compiled.
    pub fn compiled(&self) {
        self.compiled.store(true, Ordering::Release);
    }

    /// Whether readiness waits for a manifest.
    pub fn needs_manifest(&self, needed: bool) {
        self.needs_manifest.store(needed, Ordering::Release);
    }

    /// A sync brought the main gateway up to `version`, everything the control plane had.
    pub fn manifest_held(&self, version: u64) {
        let version = i64::try_from(version).unwrap_or(i64::MAX);
        self.manifest.store(version, Ordering::Release);
        self.metrics.manifest_version(version);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        self.metrics.synced(i64::try_from(now).unwrap_or(i64::MAX));
        self.update_lag();
    }

    /// The control plane announced `latest` as its newest version.
    pub fn announced(&self, latest: u64) {
        let latest = i64::try_from(latest).unwrap_or(i64::MAX);
        self.announced.store(latest, Ordering::Release);
        self.update_lag();
    }

    /// Versions held behind those announced (0 until the control plane announces one).
    fn update_lag(&self) {
        let announced = self.announced.load(Ordering::Acquire);
        let held = self.manifest.load(Ordering::Acquire).max(0);
        self.metrics.manifest_lag((announced - held).max(0));
    }

    /// Ready to serve API calls: compiled, and holding a manifest where one is pulled.
    pub fn is_ready(&self) -> bool {
        self.compiled.load(Ordering::Acquire)
            && (!self.needs_manifest.load(Ordering::Acquire)
                || self.manifest.load(Ordering::Acquire) >= 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_compiled_and_holding_a_manifest() {
        let telemetry = Telemetry::default();
        assert!(!telemetry.is_ready());
        telemetry.manifest_held(0);
        assert!(!telemetry.is_ready(), "not compiled yet");
        telemetry.compiled();
        assert!(telemetry.is_ready());

        telemetry.announced(5);
        assert!(
            telemetry
                .metrics
                .encode(apim_metrics_exposition::Format::Prometheus)
                .contains("apim_gateway_manifest_lag 5")
        );
        telemetry.manifest_held(5);
        assert!(
            telemetry
                .metrics
                .encode(apim_metrics_exposition::Format::Prometheus)
                .contains("apim_gateway_manifest_lag 0")
        );

        let pushed_only = Telemetry::default();
        pushed_only.needs_manifest(false);
        pushed_only.compiled();
        assert!(pushed_only.is_ready());
    }
}
