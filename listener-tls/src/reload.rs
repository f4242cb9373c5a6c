//! Certificates renewed on disk are presented from the next handshake on: the files are
//! looked at every [`CHECK_EVERY`] (size and modification time; a handful of `stat`s), and
//! read at once on SIGHUP. Open connections keep the session they negotiated. A renewal
//! that does not load (a key written before its certificate, say) leaves the certificates
//! in force, and is tried again at the next change.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::Tls;

/// How often the files are looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What a file looks like from outside: changed when this changes.
type Look = Option<(u64, SystemTime)>;

fn look(path: &Path) -> Look {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.len(), metadata.modified().ok()?))
}

fn looks(tls: &Tls) -> Vec<(Look, Look)> {
    tls.pairs()
        .iter()
        .map(|pair| (look(&pair.cert), look(&pair.key)))
        .collect()
}

/// Watches `tls`'s files (and SIGHUP) for as long as the runtime runs.
pub fn spawn(tls: Arc<Tls>) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|err| anyhow::anyhow!("cannot handle SIGHUP: {err}"))?;
    Ok(tokio::spawn(async move {
        let mut seen = looks(&tls);
        let mut ticks = tokio::time::interval(CHECK_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            #[cfg(unix)]
            let asked = tokio::select! {
                _ = ticks.tick() => false,
                _ = hangup.recv() => true,
            };
            #[cfg(not(unix))]
            let asked = {
                ticks.tick().await;
                false
            };
            let now = looks(&tls);
            if !asked && now == seen {
                continue;
            }
            seen = now;
            match tls.reload() {
                Ok(()) => tracing::info!(
                    certificates = tls.pairs().len(),
                    "TLS certificates reloaded; new connections get them"
                ),
                Err(err) => tracing::error!(
                    "TLS certificates not reloaded, the previous ones stay in force: {err:#}"
                ),
            }
        }
    }))
}
