//! The link to Redis, where the keys every node must count together live (throttling
//! windows, cached answers: the keys with a lifetime). It never stops the gateway:
//!
//! - at start-up it gives the first connection attempt a moment, then connects in the
//!   background, retrying every second, so a gateway starts and serves while Redis is
//!   down;
//! - once connected, the connection manager reconnects by itself; after a failed command,
//!   or one not answered within [`COMMAND_BUDGET`], the link rests for [`REST`], and the
//!   keys it would have carried are kept on this node meanwhile (fail open: each node then
//!   counts and caches on its own), so an outage costs a request at most that budget,
//!   once per rest;
//! - the manifest never goes through it (see [`super::KvStore`]), so an outage loses
//!   nothing of it.

use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::redis_store::RedisStore;
use super::store::KvError;

/// How long the link is left alone after a failed command.
const REST: Duration = Duration::from_secs(1);
/// Longest a request waits for Redis before it counts on this node instead (a healthy
/// Redis answers in well under a millisecond, a loaded machine's in a few; a reconnecting
/// one may take seconds).
pub const COMMAND_BUDGET: Duration = Duration::from_millis(500);
/// How long start-up waits for the first connection attempt before serving without it.
const FIRST_CONNECT_WAIT: Duration = Duration::from_secs(3);
/// Wait between connection attempts while Redis cannot be reached at start-up.
const CONNECT_RETRY: Duration = Duration::from_secs(1);

/// Redis, when it can be used.
pub struct RedisLink {
    /// The connection, once made.
    store: RwLock<Option<RedisStore>>,
    /// Milliseconds since `epoch` until which the link rests after a failure.
    resting_until_ms: AtomicU64,
    /// Whether the last command failed (for logging the way back once).
    down: AtomicBool,
    epoch: Instant,
}

impl RedisLink {
    /// Connects to `url` in the background, waiting for the first attempt (at most
    /// [`FIRST_CONNECT_WAIT`]) so that a gateway whose Redis is up counts there from its
    /// first request; the link is unusable (every key stays local) until a connection is
    /// made.
    pub async fn connect(url: String, namespace: String) -> std::sync::Arc<Self> {
        let link = std::sync::Arc::new(Self {
            store: RwLock::new(None),
            resting_until_ms: AtomicU64::new(0),
            down: AtomicBool::new(false),
            epoch: Instant::now(),
        });
        let connecting = link.clone();
        let (tried, first_try) = tokio::sync::oneshot::channel::<()>();
        let mut tried = Some(tried);
        tokio::spawn(async move {
            let mut warned = false;
            loop {
                let attempt = RedisStore::connect(&url, &namespace).await;
                if let Ok(store) = &attempt {
                    *connecting.store.write().unwrap_or_else(|e| e.into_inner()) =
                        Some(store.clone());
                }
                // Start-up goes on after the first attempt (and its connection, if it
                // made one), whatever it gave.
                if let Some(tried) = tried.take() {
                    let _ = tried.send(());
                }
                match attempt {
                    Ok(_) => {
                        tracing::info!(
                            "connected to Redis: counters and cached answers are shared"
                        );
                        return;
                    }
                    Err(err) if !warned => {
                        warned = true;
                        tracing::warn!(
                            error = %format!("{err:#}"),
                            "Redis is unreachable; serving with counters and cached answers on this node until it is"
                        );
                    }
                    Err(_) => {}
                }
                tokio::time::sleep(CONNECT_RETRY).await;
            }
        });
        let _ = tokio::time::timeout(FIRST_CONNECT_WAIT, first_try).await;
        link
    }

    /// The connection, unless there is none yet or the link is resting.
    pub fn usable(&self) -> Option<RedisStore> {
        if self.now_ms() < self.resting_until_ms.load(Ordering::Relaxed) {
            return None;
        }
        self.store.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Ends a rest at once (for tests of what happens when Redis is back).
    #[cfg(test)]
    pub fn rest_over(&self) {
        self.resting_until_ms.store(0, Ordering::Relaxed);
    }

    /// Whether a connection has been made.
    pub fn connected(&self) -> bool {
        self.store
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// A command went through.
    pub fn worked(&self) {
        if self.down.load(Ordering::Relaxed) && self.down.swap(false, Ordering::Relaxed) {
            tracing::info!("Redis is reachable again: counters and cached answers are shared");
        }
    }

    /// A command failed: rest the link, and say so the first time.
    pub fn failed(&self, err: &KvError) {
        let until = self.now_ms() + REST.as_millis() as u64;
        self.resting_until_ms.store(until, Ordering::Relaxed);
        if !self.down.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                error = ?err,
                "Redis failed; counters and cached answers stay on this node until it answers again"
            );
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
}
