//! What the host tells operators: Prometheus metrics ([`metrics`]), readiness, and the
//! operations listener that serves them with `/healthz` ([`ops`]).

pub mod access;
pub mod metrics;
pub mod ops;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

pub use access::AccessLog;
pub use metrics::{Metrics, Outcome};

/// Everything the gateways of one process report to, shared with the operations listener.
pub struct Telemetry {
    /// The metrics.
    pub metrics: Metrics,
    /// The access log, when on.
    pub access_log: Option<Arc<AccessLog>>,
    /// The components are compiled (and ready to instantiate).
    compiled: AtomicBool,
    /// The manifest version the main gateway holds; -1 before its first sync.
    manifest: AtomicI64,
    /// Readiness waits for a manifest (the host syncs); without syncing, compiling is
    /// enough, since manifests then come only by push.
    needs_manifest: AtomicBool,
}

impl Default for Telemetry {
    fn default() -> Self {
        Self {
            metrics: Metrics::new(),
            access_log: None,
            compiled: AtomicBool::new(false),
            manifest: AtomicI64::new(-1),
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

    /// The main gateway holds everything up to `version`.
    pub fn manifest_held(&self, version: u64) {
        let version = i64::try_from(version).unwrap_or(i64::MAX);
        self.manifest.store(version, Ordering::Release);
        self.metrics.manifest_version(version);
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

        let pushed_only = Telemetry::default();
        pushed_only.needs_manifest(false);
        pushed_only.compiled();
        assert!(pushed_only.is_ready());
    }
}
