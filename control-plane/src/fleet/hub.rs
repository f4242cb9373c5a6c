//! Keeps gateways current: compiles what each change touched (everything at start, once a
//! minute for expired revocations and other control planes' changes, and after changes
//! that do not say what they touched), and brings each configured gateway from the
//! version it holds to the newest with signed pages, presenting the gateway secret. Pages
//! a gateway refused (pushed, or pulled and reported) are kept here for operators and
//! counted. With spans exported, a compile names the requests whose changes it took in,
//! and a delivery the compile that made its version ([`crate::ops::trace`]).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use apim_manifest::{PageReport, Position};
use opentelemetry::trace::SpanContext;
use serde::Serialize;
use sqlx::AnyPool;
use tokio::sync::{Notify, watch};

use crate::manifest::{self, Compiler, Touched};
use crate::signing::KeyRing;

/// A full compile runs at least this often, changes or not.
const COMPILE_EVERY: Duration = Duration::from_secs(60);
/// Touched rows past which a full compile is cheaper than one per row.
const MAX_TOUCHED: usize = 1_000;
/// First wait after a failed delivery; it doubles up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
/// Longest wait between two attempts to reach a gateway.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);
/// Refused pages kept, newest last: enough to see what goes on, bounded whatever
/// gateways send.
const MAX_REFUSED_PAGES: usize = 64;
/// Characters of a refusal's reason kept.
const MAX_REASON_CHARS: usize = 1_024;
/// Compiles whose spans deliveries can name as their parent.
const MAX_TRACED_COMPILES: usize = 64;

/// Where handlers report changes and push loops learn of new versions.
pub struct ManifestHub {
    latest: watch::Sender<u64>,
    /// Raised when the control plane stops: long polls answer at once rather than hold
    /// the shutdown for their whole wait.
    closing: watch::Sender<bool>,
    changed: Notify,
    pending: Mutex<Pending>,
    refused: Mutex<VecDeque<RefusedPage>>,
    /// The latest compiles' spans, by the version each made (when spans are exported).
    compiles: Mutex<VecDeque<(u64, SpanContext)>>,
}

/// A page a gateway could not take, as the control plane learnt of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedPage {
    /// Who refused it: a configured gateway's base URL (a push), or `pull` for a gateway
    /// that pulled it and reported.
    pub gateway: String,
    /// When the control plane learnt of it, Unix seconds.
    pub at: i64,
    /// The page and why it was refused.
    pub report: PageReport,
}

/// Changes reported since the last compile began.
#[derive(Debug, Default)]
struct Pending {
    /// Something changed that did not say what: compile everything.
    everything: bool,
    touched: HashSet<Touched>,
    /// The spans of the requests that made these changes (when spans are exported).
    requests: Vec<SpanContext>,
}

impl Pending {
    /// Notes the request being handled as one whose change the next compile takes in.
    fn note_request(&mut self) {
        if self.requests.len() <= crate::ops::trace::MAX_LINKED_REQUESTS
            && let Some(request) = crate::ops::trace::current_request()
        {
            self.requests.push(request);
        }
    }
}

impl ManifestHub {
    /// A hub with no manifest yet.
    pub fn new() -> Arc<Self> {
        Arc::new(ManifestHub {
            latest: watch::Sender::new(0),
            closing: watch::Sender::new(false),
            changed: Notify::new(),
            pending: Mutex::default(),
            refused: Mutex::default(),
            compiles: Mutex::default(),
        })
    }

    /// The newest compiled version, as this control plane learns of it.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.latest.subscribe()
    }

    /// Whether the control plane is stopping, as it learns it.
    pub fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// The control plane is stopping: long polls answer now.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// A version is compiled (here, or by another control plane sharing the database):
    /// pushes and long polls move on once it is newer than the newest known.
    pub fn observe(&self, version: u64) {
        self.latest.send_if_modified(|latest| {
            let newer = version > *latest;
            *latest = (*latest).max(version);
            newer
        });
    }

    /// A gateway could not take a page: logged, and kept among the latest refusals.
    pub fn page_refused(&self, gateway: &str, mut report: PageReport) {
        if let Some((cut, _)) = report.reason.char_indices().nth(MAX_REASON_CHARS) {
            report.reason.truncate(cut);
        }
        tracing::warn!(
            gateway,
            after = report.after,
            snapshot = report.snapshot,
            environment = report.environment.as_deref().unwrap_or_default(),
            reason = %report.reason,
            "a gateway could not take a manifest page"
        );
        crate::ops::metrics::metrics().page_refused(gateway);
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        if refused.len() == MAX_REFUSED_PAGES {
            refused.pop_front();
        }
        refused.push_back(RefusedPage {
            gateway: gateway.to_string(),
            at: crate::db::now(),
            report,
        });
    }

    /// The latest pages gateways could not take, oldest first.
    pub fn refused_pages(&self) -> Vec<RefusedPage> {
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.iter().cloned().collect()
    }

    /// Something gateways care about may have changed: compile everything now (changes
    /// reported while a compile runs are taken in by the next one).
    pub fn request_recompile(&self) {
        let mut pending = self.pending();
        pending.everything = true;
        pending.note_request();
        drop(pending);
        self.changed.notify_one();
    }

    /// The compile that made `version` has the span `span`.
    fn compile_traced(&self, version: u64, span: SpanContext) {
        let mut compiles = self.compiles.lock().unwrap_or_else(|p| p.into_inner());
        if compiles.len() == MAX_TRACED_COMPILES {
            compiles.pop_front();
        }
        compiles.push_back((version, span));
    }

    /// The span of the compile that made the newest version after `after` up to `upto`.
    pub fn compile_of(&self, after: u64, upto: u64) -> Option<SpanContext> {
        let compiles = self.compiles.lock().unwrap_or_else(|p| p.into_inner());
        compiles
            .iter()
            .rev()
            .find(|(version, _)| (after + 1..=upto).contains(version))
            .map(|(_, span)| span.clone())
    }

    /// These rows changed: compile them now. The request is noted even when its rows are
    /// already pending (a create, then at once a publish of the same API): the compile
    /// takes its change in too.
    pub fn touch(&self, touched: impl IntoIterator<Item = Touched>) {
        let mut pending = self.pending();
        let before = pending.touched.len();
        let mut any = false;
        for row in touched {
            any = true;
            pending.touched.insert(row);
        }
        if any {
            pending.note_request();
        }
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
    /// Presented to gateways as a bearer token (the one they pull with), so that only
    /// this control plane can move them.
    pub gateway_secret: String,
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
            secret: pusher.gateway_secret.clone(),
            hub: hub.clone(),
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
        let began = SystemTime::now();
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
            Ok(Some(compiled)) => {
                crate::ops::metrics::metrics().compile_took(compiled.elapsed.as_secs_f64());
                let traced = crate::ops::trace::compiled(
                    &pending.requests,
                    began,
                    compiled.version,
                    compiled.changes,
                );
                if let Some(span) = traced {
                    hub.compile_traced(compiled.version, span);
                }
                tracing::info!(
                    version = compiled.version,
                    changes = compiled.changes,
                    entries = compiled.entries,
                    elapsed_ms = compiled.elapsed.as_secs_f64() * 1e3,
                    "route manifest compiled"
                )
            }
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
        hub.observe(compiler.version());
        crate::ops::metrics::metrics().manifest_state(compiler.entries(), compiler.version());
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
    /// The gateway secret, sent as a bearer token.
    secret: String,
    /// Where refused pages are kept.
    hub: Arc<ManifestHub>,
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
        let response = self
            .client
            .get(&self.url)
            .bearer_auth(&self.secret)
            .send()
            .await?;
        let status = response.status();
        if !status.is_success() {
            anyhow::bail!("gateway answered {status} when asked for its version");
        }
        Ok((response.json().await?, 0))
    }

    /// Sends the page after `position`; where the gateway is afterwards, and the newest
    /// version the page said the database has.
    async fn push_next(&self, position: Position) -> anyhow::Result<(Position, u64)> {
        let started = SystemTime::now();
        let (after, snapshot) = position.next_after();
        let Some(page) = manifest::read_page(&self.db, after, snapshot).await? else {
            return Ok((position, 0));
        };
        let (version, changes, latest) = (page.upto, page.changes.len(), page.latest);
        let sent = (page.after, page.snapshot);
        let jws = manifest::sign(&self.keys, &page)?;
        let response = self
            .client
            .post(&self.url)
            .bearer_auth(&self.secret)
            .header("content-type", "application/jwt")
            .body(jws)
            .send()
            .await?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        let held: Option<Position> = serde_json::from_str(&body).ok();
        match (status.as_u16(), held) {
            (200, Some(held)) => {
                let compile = self.hub.compile_of(sent.0, version);
                crate::ops::trace::delivered(compile, &self.base, version, started);
                if held.snapshot.is_none() {
                    tracing::info!(gateway = %self.base, version, served = held.version, changes, "manifest delivered");
                }
                Ok((held, latest))
            }
            // Not where we thought (a pull, or another node, moved it): carry on from
            // there. A gateway that pulled the version itself has it delivered all the same.
            (409, Some(held)) if held != position => {
                if held.snapshot.is_none() && held.version >= version {
                    tracing::info!(gateway = %self.base, version = held.version, served = held.version, changes = 0, via = "pull", "manifest delivered");
                }
                Ok((held, latest))
            }
            (400 | 413, _) => {
                let reason = format!("gateway answered {status}: {body}");
                let report = PageReport {
                    after: sent.0,
                    snapshot: sent.1,
                    reason: reason.clone(),
                    environment: None,
                };
                self.hub.page_refused(&self.base, report);
                anyhow::bail!(reason)
            }
            _ => anyhow::bail!("gateway answered {status}: {body}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::get;

    fn report(after: u64, reason: &str) -> PageReport {
        PageReport {
            after,
            snapshot: false,
            reason: reason.to_string(),
            environment: None,
        }
    }

    #[test]
    fn the_latest_refused_pages_are_kept() {
        let hub = ManifestHub::new();
        for after in 0..(MAX_REFUSED_PAGES as u64 + 5) {
            hub.page_refused("pull", report(after, &"r".repeat(5 * MAX_REASON_CHARS)));
        }
        let refused = hub.refused_pages();
        assert_eq!(refused.len(), MAX_REFUSED_PAGES);
        assert_eq!(refused[0].report.after, 5, "oldest dropped first");
        assert!(
            refused
                .iter()
                .all(|r| r.report.reason.len() == MAX_REASON_CHARS)
        );
    }

    /// A gateway that wants the secret on `/_apim/manifest`, tells position 0, and refuses
    /// every page as too large; the authorization of every request it was sent.
    async fn gateway_refusing_pages() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
        let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let authorized = {
            let seen = seen.clone();
            move |headers: &HeaderMap| {
                let presented = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let ok = presented.as_deref() == Some("Bearer s3cret");
                seen.lock().unwrap().push(presented);
                ok
            }
        };
        let on_get = authorized.clone();
        let app = axum::Router::new().route(
            apim_manifest::paths::GATEWAY_PUSH,
            get(move |headers: HeaderMap| async move {
                match on_get(&headers) {
                    true => (StatusCode::OK, r#"{"version":0}"#),
                    false => (StatusCode::UNAUTHORIZED, ""),
                }
            })
            .post(move |headers: HeaderMap| async move {
                match authorized(&headers) {
                    true => (StatusCode::PAYLOAD_TOO_LARGE, "too large"),
                    false => (StatusCode::UNAUTHORIZED, ""),
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (base, seen)
    }

    #[tokio::test]
    async fn pushes_carry_the_gateway_secret_and_refused_pages_are_kept() {
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        let dir = std::env::temp_dir().join(format!("apim-push-{}", uuid::Uuid::new_v4()));
        let keys = Arc::new(KeyRing::load_or_create(&dir).unwrap());
        let mut compiler = Compiler::new(
            db.clone(),
            keys.clone(),
            "issuer".into(),
            crate::manifest::test_credentials(),
        );
        compiler.compile().await.unwrap();
        let (base, seen) = gateway_refusing_pages().await;
        let hub = ManifestHub::new();
        let delivery = Delivery {
            db,
            keys,
            client: reqwest::Client::new(),
            url: format!("{base}{}", apim_manifest::paths::GATEWAY_PUSH),
            base: base.clone(),
            secret: "s3cret".into(),
            hub: hub.clone(),
        };

        let (position, _) = delivery.position().await.unwrap();
        assert_eq!(position, Position::default());
        let err = delivery.push_next(position).await.unwrap_err();
        assert!(err.to_string().contains("413"), "{err}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, vec![Some("Bearer s3cret".to_string()); 2]);
        let refused = hub.refused_pages();
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].gateway, base);
        assert_eq!(
            (refused[0].report.after, refused[0].report.snapshot),
            (0, true)
        );
    }
}
