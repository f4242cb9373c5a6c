//! Concurrent writes through the REST API while the control plane is killed (`kill -9`)
//! and started again on the same data, and what the database holds afterwards.
//!
//! Each writer creates an API and then publishes it, again and again, until the writes
//! are used up: a create writes the API's row and claims its routes in one transaction;
//! a publish changes its status and makes it part of the gateways' manifest. A write is
//! acknowledged when it was answered 2xx. Writers whose control plane died wait until it
//! is back and go on with their next write.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::Connection as _;
use tokio::sync::{Mutex, watch};

use super::rig::Rig;
use harness::stack::api_record;
use harness::{Backend, PUBLISHER};

/// What the writers sent and what came back.
#[derive(Debug, Default)]
pub struct Writes {
    /// Writes sent (creates and publishes).
    pub sent: usize,
    /// Creates answered 201: name → id.
    pub created: HashMap<String, String>,
    /// Creates not answered 2xx (in flight when the control plane died, or refused):
    /// name → how they ended.
    pub unacknowledged_creates: HashMap<String, String>,
    /// Publishes answered 200: ids.
    pub published: HashSet<String>,
    /// Publishes not answered 2xx: id → how they ended.
    pub unacknowledged_publishes: HashMap<String, String>,
    /// How the writes ended, counted (`201`, `connection refused`, ...).
    pub outcomes: BTreeMap<String, usize>,
    /// How long the control plane took to listen again after the kill.
    pub restart_took: Duration,
    /// Writes acknowledged before the kill.
    pub acknowledged_before_kill: usize,
    /// When the restarted control plane listened.
    pub restarted_at: Option<Instant>,
    /// When the last write ended.
    pub finished_at: Option<Instant>,
}

impl Writes {
    /// Writes answered 2xx.
    pub fn acknowledged(&self) -> usize {
        self.created.len() + self.published.len()
    }

    /// Writes not answered 2xx.
    pub fn unacknowledged(&self) -> usize {
        self.unacknowledged_creates.len() + self.unacknowledged_publishes.len()
    }
}

/// Sends `total` writes from `writers` concurrent clients; once `kill_after` of them are
/// acknowledged, kills the control plane (`kill -9`), starts it again on the same data,
/// and lets the writers finish against it.
pub async fn write_through_a_kill(
    rig: &mut Rig,
    total: usize,
    writers: usize,
    kill_after: usize,
) -> Writes {
    let shared = Arc::new(Shared {
        slots: AtomicUsize::new(0),
        acknowledged: AtomicUsize::new(0),
        total,
        writes: Mutex::new(Writes::default()),
    });
    let (up, _) = watch::channel(true);
    let up = Arc::new(up);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(writers)
        .build()
        .expect("client");
    let base = rig.mgmt.base.clone();
    let endpoint = format!("{}/", rig.backend.url);
    let mut tasks = Vec::new();
    for index in 0..writers {
        let (shared, up, http) = (shared.clone(), up.subscribe(), http.clone());
        let (base, endpoint, token) = (base.clone(), endpoint.clone(), rig.admin.clone());
        tasks.push(tokio::spawn(async move {
            let writer = Writer {
                shared,
                up,
                http,
                base,
                token,
            };
            writer.run(index, &endpoint).await;
        }));
    }
    // The kill, once enough writes are acknowledged (or all of them are sent).
    loop {
        let acknowledged = shared.acknowledged.load(Ordering::SeqCst);
        if acknowledged >= kill_after || shared.slots.load(Ordering::SeqCst) >= total {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // Writers start nothing new from here: what fails is what was in flight at the kill.
    up.send_replace(false);
    let acknowledged_before_kill = shared.acknowledged.load(Ordering::SeqCst);
    rig.kill_control_plane().await;
    let restart_took = rig.start_control_plane().await;
    let restarted_at = Instant::now();
    up.send_replace(true);
    for task in tasks {
        task.await.expect("writer");
    }
    let mut writes = std::mem::take(&mut *shared.writes.lock().await);
    writes.restart_took = restart_took;
    writes.acknowledged_before_kill = acknowledged_before_kill;
    writes.restarted_at = Some(restarted_at);
    writes.finished_at = Some(Instant::now());
    writes
}

struct Shared {
    slots: AtomicUsize,
    acknowledged: AtomicUsize,
    total: usize,
    writes: Mutex<Writes>,
}

struct Writer {
    shared: Arc<Shared>,
    up: watch::Receiver<bool>,
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Writer {
    async fn run(mut self, index: usize, endpoint: &str) {
        for n in 0.. {
            let name = format!("W{index}n{n}");
            let record = api_record(&name, endpoint);
            let Some(outcome) = self
                .write(
                    self.http
                        .post(format!("{}{PUBLISHER}/apis", self.base))
                        .json(&record),
                )
                .await
            else {
                return;
            };
            let id = {
                let mut writes = self.shared.writes.lock().await;
                match outcome {
                    Ok((201, body)) => {
                        let id = body["id"].as_str().unwrap_or_default().to_string();
                        writes.created.insert(name, id.clone());
                        Some(id)
                    }
                    Ok((status, _)) => {
                        writes
                            .unacknowledged_creates
                            .insert(name, status.to_string());
                        None
                    }
                    Err(how) => {
                        writes.unacknowledged_creates.insert(name, how);
                        None
                    }
                }
            };
            let Some(id) = id else { continue };
            let path = format!("{PUBLISHER}/apis/change-lifecycle?apiId={id}&action=Publish");
            let Some(outcome) = self
                .write(self.http.post(format!("{}{path}", self.base)))
                .await
            else {
                return;
            };
            let mut writes = self.shared.writes.lock().await;
            match outcome {
                Ok((200, _)) => {
                    writes.published.insert(id);
                }
                Ok((status, _)) => {
                    writes
                        .unacknowledged_publishes
                        .insert(id, status.to_string());
                }
                Err(how) => {
                    writes.unacknowledged_publishes.insert(id, how);
                }
            }
        }
    }

    /// Sends one write if any is left (`None` when they are used up), once the control
    /// plane is up; its status and body, or how it failed.
    async fn write(
        &mut self,
        request: reqwest::RequestBuilder,
    ) -> Option<Result<(u16, Value), String>> {
        if self.shared.slots.fetch_add(1, Ordering::SeqCst) >= self.shared.total {
            return None;
        }
        let _ = self.up.wait_for(|up| *up).await;
        let outcome = match request.bearer_auth(&self.token).send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                match response.text().await {
                    Ok(text) => Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null))),
                    Err(err) => Err(failure(&err)),
                }
            }
            Err(err) => Err(failure(&err)),
        };
        let label = match &outcome {
            Ok((status, _)) => status.to_string(),
            Err(how) => how.clone(),
        };
        if matches!(outcome, Ok((200..=299, _))) {
            self.shared.acknowledged.fetch_add(1, Ordering::SeqCst);
        }
        let mut writes = self.shared.writes.lock().await;
        writes.sent += 1;
        *writes.outcomes.entry(label).or_default() += 1;
        Some(outcome)
    }
}

fn failure(err: &reqwest::Error) -> String {
    if err.is_connect() {
        "connection refused".into()
    } else if err.is_timeout() {
        "timeout".into()
    } else {
        "connection broken".into()
    }
}

/// What the restarted control plane holds, against what was acknowledged.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Acknowledged creates whose API does not answer 200 (or is not the one created).
    pub lost_creates: Vec<String>,
    /// Acknowledged publishes whose API is not PUBLISHED.
    pub lost_publishes: Vec<String>,
    /// APIs listed that no writer sent (names).
    pub unknown: Vec<String>,
    /// Names listed more than once.
    pub duplicates: Vec<String>,
    /// APIs that are there but not whole: the record incomplete through the REST API,
    /// or (read from the database) a row without its route or a route without its row.
    pub half_applied: Vec<String>,
    /// Unacknowledged creates that were committed nonetheless (whole).
    pub unacknowledged_present: usize,
    /// Unacknowledged publishes that took effect nonetheless.
    pub unacknowledged_published: usize,
    /// Contexts of the APIs the control plane says are PUBLISHED.
    pub published_contexts: Vec<String>,
    /// Contexts of the APIs it says are CREATED.
    pub created_contexts: Vec<String>,
}

impl Verdict {
    /// Nothing acknowledged was lost and nothing is half there.
    pub fn held(&self) -> bool {
        self.lost_creates.is_empty()
            && self.lost_publishes.is_empty()
            && self.unknown.is_empty()
            && self.duplicates.is_empty()
            && self.half_applied.is_empty()
    }

    /// Acknowledged writes lost.
    pub fn lost(&self) -> usize {
        self.lost_creates.len() + self.lost_publishes.len()
    }
}

/// Checks every write through the REST API of the (restarted) control plane, and the
/// database's rows for APIs without routes and routes without APIs.
pub async fn verify(rig: &Rig, writes: &Writes) -> Verdict {
    let mut verdict = Verdict::default();
    let listed = rig
        .mgmt
        .get(&format!("{PUBLISHER}/apis?limit=1000000"), &rig.admin)
        .await
        .expect(200);
    let list = listed.body["list"].as_array().cloned().unwrap_or_default();
    let mut seen = HashSet::new();
    for api in &list {
        let name = api["name"].as_str().unwrap_or_default().to_string();
        let id = api["id"].as_str().unwrap_or_default().to_string();
        if !seen.insert(name.clone()) {
            verdict.duplicates.push(name.clone());
        }
        let acknowledged = writes.created.get(&name) == Some(&id);
        if !acknowledged && !writes.unacknowledged_creates.contains_key(&name) {
            verdict.unknown.push(name.clone());
        }
        if !acknowledged {
            verdict.unacknowledged_present += 1;
        }
        // Every API there, acknowledged or not, must be whole.
        let fetched = rig
            .mgmt
            .get(&format!("{PUBLISHER}/apis/{id}"), &rig.admin)
            .await;
        let context = fetched.body["context"].as_str().unwrap_or_default();
        let whole = fetched.status == 200
            && fetched.body["name"] == name.as_str()
            && context == format!("/{}", name.to_lowercase())
            && fetched.body["version"] == "v1.0.0"
            && fetched.body["endpointConfig"].is_string()
            && fetched.body["apiDefinition"].is_string();
        if !whole {
            verdict.half_applied.push(format!(
                "{name} ({id}): {} {}",
                fetched.status, fetched.body
            ));
            continue;
        }
        match fetched.body["status"].as_str() {
            Some("PUBLISHED") => {
                if writes.unacknowledged_publishes.contains_key(&id) {
                    verdict.unacknowledged_published += 1;
                }
                verdict.published_contexts.push(context.to_string());
            }
            Some("CREATED") => verdict.created_contexts.push(context.to_string()),
            other => verdict
                .half_applied
                .push(format!("{name} ({id}): status {other:?}")),
        }
        if writes.published.contains(&id) && fetched.body["status"] != "PUBLISHED" {
            verdict.lost_publishes.push(id.clone());
        }
    }
    for (name, id) in &writes.created {
        let listed_as_created = list
            .iter()
            .any(|api| api["id"] == id.as_str() && api["name"] == name.as_str());
        let fetched = rig
            .mgmt
            .get(&format!("{PUBLISHER}/apis/{id}"), &rig.admin)
            .await;
        if fetched.status != 200 || !listed_as_created {
            verdict.lost_creates.push(format!("{name} ({id})"));
        }
    }
    for id in &writes.published {
        let gone = !list.iter().any(|api| api["id"] == id.as_str());
        if gone && !verdict.lost_publishes.contains(id) {
            verdict.lost_publishes.push(id.clone());
        }
    }
    verdict
        .half_applied
        .extend(orphans(&rig.database, &rig.data_dir).await);
    verdict
}

/// APIs without a route and routes without an API, read from the database itself.
pub async fn orphans(database: &Backend, data_dir: &std::path::Path) -> Vec<String> {
    let url = match database {
        Backend::Sqlite => format!("sqlite://{}?mode=ro", data_dir.join("apim.db").display()),
        Backend::Postgres { url, .. } => url.clone(),
    };
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("open the database {url}: {e}"));
    let mut found = Vec::new();
    // language=SQL
    let without_routes: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM apis a WHERE NOT EXISTS (SELECT 1 FROM api_routes r WHERE r.api_id = a.id)",
    )
    .fetch_all(&mut conn)
    .await
    .expect("query apis");
    found.extend(
        without_routes
            .into_iter()
            .map(|(id,)| format!("API {id} without its route (database)")),
    );
    // language=SQL
    let without_apis: Vec<(String,)> = sqlx::query_as(
        "SELECT prefix FROM api_routes r WHERE NOT EXISTS (SELECT 1 FROM apis a WHERE a.id = r.api_id)",
    )
    .fetch_all(&mut conn)
    .await
    .expect("query routes");
    found.extend(
        without_apis
            .into_iter()
            .map(|(prefix,)| format!("route {prefix} without its API (database)")),
    );
    let _ = conn.close().await;
    found
}

/// Waits until the gateway routes every published context (401 without a token, where an
/// unknown route is 404) and none of the unpublished ones; how long that took from now,
/// or `None` if not within `within`.
pub async fn gateway_converges(rig: &Rig, verdict: &Verdict, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let mut pending: Vec<(&String, u16)> = verdict
        .published_contexts
        .iter()
        .map(|c| (c, 401))
        .chain(verdict.created_contexts.iter().map(|c| (c, 404)))
        .collect();
    loop {
        let mut still = Vec::new();
        for (context, expected) in pending {
            let url = format!("{}{context}/v1.0.0/devs/alice", rig.gw.base);
            let status = http.get(url).send().await.map(|r| r.status().as_u16());
            if status.ok() != Some(expected) {
                still.push((context, expected));
            }
        }
        if still.is_empty() {
            return Some(started.elapsed());
        }
        if started.elapsed() > within {
            return None;
        }
        pending = still;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
