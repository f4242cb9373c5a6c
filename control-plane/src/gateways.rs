//! Keeps gateways current: compiles what each change touched (everything at start, once a
//! minute for expired revocations and other control planes' changes, and after changes
//! that do not say what they touched), and brings each configured gateway from the
//! version it holds to the newest with signed pages.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apim_manifest::Position;
use sqlx::AnyPool;
use tokio::sync::{Notify, watch};

use crate::keys::KeyRing;
use crate::manifest::{self, Compiler, Touched};

/// A full compile runs at least this often, changes or not.
const COMPILE_EVERY: Duration = Duration::from_secs(60);
/// Touched rows past which a full compile is cheaper than one per row.
const MAX_TOUCHED: usize = 1_000;
/// First wait after a failed delivery; it doubles up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
/// Longest wait between two attempts to reach a gateway.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);

/// Where handlers report changes and push loops learn of new versions.
pub struct ManifestHub {
    latest: watch::Sender<u64>,
    changed: Notify,
    pending: Mutex<Pending>,
}

/// Changes reported since the last compile began.
#[derive(Debug, Default)]
struct Pending {
    /// Something changed that did not say what: compile everything.
    everything: bool,
    touched: HashSet<Touched>,
}

impl ManifestHub {
    /// A hub with no manifest yet.
    pub fn new() -> Arc<Self> {
        Arc::new(ManifestHub {
            latest: watch::Sender::new(0),
            changed: Notify::new(),
            pending: Mutex::default(),
        })
    }

    /// Something gateways care about may have changed: compile everything now (changes
    /// reported while a compile runs are taken in by the next one).
    pub fn request_recompile(&self) {
        self.pending().everything = true;
        self.changed.notify_one();
    }

    /// These rows changed: compile them now.
    pub fn touch(&self, touched: impl IntoIterator<Item = Touched>) {
        let mut pending = self.pending();
        let before = pending.touched.len();
        pending.touched.extend(touched);
        if pending.touched.len() > before {
            self.changed.notify_one();
        }
    }

    fn take(&self) -> Pending {
        std::mem::take(&mut *self.pending())
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What pushing needs besides the database.
pub struct Pusher {
    /// The key pages are signed with.
    pub manifest_keys: Arc<KeyRing>,
    /// Base URLs of the gateways.
    pub gateways: Vec<String>,
}

/// Starts compiling (now, after every change, and periodically) and pushing.
pub fn spawn(hub: Arc<ManifestHub>, db: AnyPool, compiler: Compiler, pusher: Pusher) {
    tokio::spawn(compile_loop(hub.clone(), compiler));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("HTTP client");
    for gateway in pusher.gateways {
        let base = gateway.trim_end_matches('/');
        let delivery = Delivery {
            db: db.clone(),
            keys: pusher.manifest_keys.clone(),
            client: client.clone(),
            url: format!("{base}{}", apim_manifest::paths::GATEWAY_PUSH),
            base: base.to_string(),
        };
        tokio::spawn(push_loop(hub.latest.subscribe(), delivery));
    }
}

async fn compile_loop(hub: Arc<ManifestHub>, mut compiler: Compiler) {
    let mut everything = true;
    let mut loaded = false;
    let mut last_full = Instant::now();
    loop {
        let started = Instant::now();
        everything |= last_full.elapsed() >= COMPILE_EVERY;
        if everything {
            last_full = started;
        }
        let pending = hub.take();
        let compiled = if everything || pending.everything || pending.touched.len() > MAX_TOUCHED {
            compiler.compile().await
        } else if pending.touched.is_empty() {
            Ok(None)
        } else {
            compiler.compile_touched(&pending.touched).await
        };
        match compiled {
            Ok(Some(compiled)) => tracing::info!(
                version = compiled.version,
                changes = compiled.changes,
                entries = compiled.entries,
                elapsed_ms = compiled.elapsed.as_secs_f64() * 1e3,
                "route manifest compiled"
            ),
            Ok(None) => {}
            Err(err) => {
                tracing::error!(error = ?err, "could not compile the route manifest; retrying");
                // What was taken is covered by compiling everything.
                everything = true;
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        }
        everything = false;
        if !loaded {
            // The first compile of a process compiles every API: the full manifest's cost.
            loaded = true;
            tracing::info!(
                version = compiler.version(),
                apis = compiler.apis(),
                entries = compiler.entries(),
                elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
                "route manifest loaded"
            );
        }
        let version = compiler.version();
        hub.latest.send_if_modified(|latest| {
            let newer = version > *latest;
            *latest = (*latest).max(version);
            newer
        });
        let next_full = tokio::time::Instant::from_std(last_full + COMPILE_EVERY);
        tokio::select! {
            () = hub.changed.notified() => {}
            () = tokio::time::sleep_until(next_full) => {}
        }
    }
}

/// One gateway and how to reach it.
struct Delivery {
    db: AnyPool,
    keys: Arc<KeyRing>,
    client: reqwest::Client,
    /// The gateway's base URL, as configured.
    base: String,
    /// Where it takes pages and tells its position.
    url: String,
}

/// Brings one gateway up to the newest version and keeps it there: asks where it is, then
/// sends the pages after that, one at a time; a failure is retried with backoff.
async fn push_loop(mut latest: watch::Receiver<u64>, delivery: Delivery) {
    let mut known: Option<Position> = None;
    // The newest version a page said the database has (the compiler may not have seen it
    // yet: another control plane's, or one moved forward to meet this gateway).
    let mut floor = 0;
    let mut delay = FIRST_RETRY_DELAY;
    loop {
        let newest = (*latest.borrow_and_update()).max(floor);
        // Ahead is not current: the gateway holds versions this database never made.
        let current = known.is_some_and(|p| p.snapshot.is_none() && p.version == newest);
        if newest == 0 || current {
            if latest.changed().await.is_err() {
                return;
            }
            continue;
        }
        let step = match known {
            None => delivery.position().await,
            Some(position) => delivery.push_next(position).await,
        };
        match step {
            Ok((position, database_latest)) => {
                known = Some(position);
                floor = floor.max(database_latest);
                delay = FIRST_RETRY_DELAY;
            }
            Err(err) => {
                tracing::warn!(gateway = %delivery.base, version = newest, error = %err, "manifest push failed; will retry");
                known = None;
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_RETRY_DELAY);
            }
        }
    }
}

impl Delivery {
    /// What the gateway holds (and 0, as no page was read).
    async fn position(&self) -> anyhow::Result<(Position, u64)> {
        let response = self.client.get(&self.url).send().await?;
        let status = response.status();
        if !status.is_success() {
            anyhow::bail!("gateway answered {status} when asked for its version");
        }
        Ok((response.json().await?, 0))
    }

    /// Sends the page after `position`; where the gateway is afterwards, and the newest
    /// version the page said the database has.
    async fn push_next(&self, position: Position) -> anyhow::Result<(Position, u64)> {
        let (after, snapshot) = position.next_after();
        let Some(page) = manifest::read_page(&self.db, after, snapshot).await? else {
            return Ok((position, 0));
        };
        let (version, changes, latest) = (page.upto, page.changes.len(), page.latest);
        let jws = manifest::sign(&self.keys, &page)?;
        let response = self
            .client
            .post(&self.url)
            .header("content-type", "application/jwt")
            .body(jws)
            .send()
            .await?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        let held: Option<Position> = serde_json::from_str(&body).ok();
        match (status.as_u16(), held) {
            (200, Some(held)) => {
                if held.snapshot.is_none() {
                    tracing::info!(gateway = %self.base, version, served = held.version, changes, "manifest delivered");
                }
                Ok((held, latest))
            }
            // Not where we thought (another node or a pull moved it): carry on from there.
            (409, Some(held)) if held != position => Ok((held, latest)),
            _ => anyhow::bail!("gateway answered {status}: {body}"),
        }
    }
}
