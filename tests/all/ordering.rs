//! Two control planes on one PostgreSQL database, each followed by an edge gateway of its
//! own, written to at once: the manifest log keeps one total order whichever
//! control plane a change went through, and both gateways converge on what the database
//! holds.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use harness::stack::{ALL_SCOPES, api_record};
use harness::{Backend, Client, EchoBackend, PUBLISHER, STORE, ServerProcess};
use serde_json::{Value, json};
use sqlx::Connection as _;
use tokio::task::JoinSet;

/// APIs created and published through each control plane.
const APIS_PER_CONTROL_PLANE: usize = 20;
/// How long the gateways may take to agree with the database once the writes are done.
const CONVERGENCE_BOUND: Duration = Duration::from_secs(10);

/// What becomes of an API after its publish, through the other control plane unless
/// said otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Left published.
    Published,
    /// Deleted.
    Deleted,
    /// Demoted to CREATED.
    Demoted,
    /// Subscribed to by this application (index into the applications).
    Subscribed(usize),
    /// Subscribed to by this application, then unsubscribed through its own control plane.
    Unsubscribed(usize),
}

impl Fate {
    /// The fate of the `i`th API made through control plane `own`.
    fn of(own: usize, i: usize) -> Self {
        match i % 5 {
            0 => Fate::Published,
            1 => Fate::Deleted,
            2 => Fate::Demoted,
            3 => Fate::Subscribed(1 - own),
            _ if i % 10 == 9 => Fate::Unsubscribed(own),
            _ => Fate::Subscribed(own),
        }
    }

    /// Whether the gateways route it.
    fn deployed(self) -> bool {
        !matches!(self, Fate::Deleted | Fate::Demoted)
    }
}

/// One control plane, the gateway following it and an administrator's token for it.
struct Side {
    control_plane: ServerProcess,
    gateway: ServerProcess,
    mgmt: Client,
    gw: Client,
    admin: String,
}

/// An API as written: name, id, what became of it.
type Written = (String, String, Fate);

/// Creates and publishes an API through `own`, then gives it its fate through `other`.
async fn write_api(
    own: (Client, String),
    other: (Client, String),
    (name, endpoint): (String, String),
    fate: Fate,
    applications: [String; 2],
) -> Written {
    let (mgmt, admin) = own;
    let id = mgmt
        .post_json(
            &format!("{PUBLISHER}/apis"),
            &admin,
            &api_record(&name, &endpoint),
        )
        .await
        .expect(201)
        .str("id");
    let lifecycle = |action: &str| {
        format!(
            "{PUBLISHER}/apis/change-lifecycle?apiId={id}&action={}",
            action.replace(' ', "+")
        )
    };
    mgmt.post_empty(&lifecycle("Publish"), &admin)
        .await
        .expect(200);
    let (other_mgmt, other_admin) = other;
    match fate {
        Fate::Published => {}
        Fate::Deleted => {
            other_mgmt
                .delete(&format!("{PUBLISHER}/apis/{id}"), &other_admin)
                .await
                .expect(200);
        }
        Fate::Demoted => {
            other_mgmt
                .post_empty(&lifecycle("Demote to Created"), &other_admin)
                .await
                .expect(200);
        }
        Fate::Subscribed(app) | Fate::Unsubscribed(app) => {
            let body = json!({"tier": "Unlimited", "apiIdentifier": id, "applicationId": applications[app]});
            let subscription = other_mgmt
                .post_json(&format!("{STORE}/subscriptions"), &other_admin, &body)
                .await
                .expect(201)
                .str("subscriptionId");
            if matches!(fate, Fate::Unsubscribed(_)) {
                mgmt.delete(&format!("{STORE}/subscriptions/{subscription}"), &admin)
                    .await
                    .expect(200);
            }
        }
    }
    (name, id, fate)
}

/// A gateway call and the status the database's state calls for.
#[derive(Debug, Clone)]
struct Check {
    gateway: usize,
    path: String,
    token: String,
    caller: &'static str,
    expected: u16,
}

/// What each gateway should answer for the APIs written, without a token and with each
/// application's token.
fn checks(written: &[Written], tokens: &[String; 2]) -> Vec<Check> {
    let mut checks = Vec::new();
    for gateway in 0..2 {
        for (name, _, fate) in written {
            let path = format!("/{}/v1.0.0/devs/alice", name.to_lowercase());
            let check = |token: &str, caller, expected| Check {
                gateway,
                path: path.clone(),
                token: token.to_string(),
                caller,
                expected,
            };
            if !fate.deployed() {
                checks.push(check("", "nobody", 404));
                continue;
            }
            // The route is known: a call without a token needs one.
            checks.push(check("", "nobody", 401));
            for (app, caller) in [(0, "application A"), (1, "application B")] {
                let expected = if *fate == Fate::Subscribed(app) {
                    200
                } else {
                    403
                };
                checks.push(check(&tokens[app], caller, expected));
            }
        }
    }
    checks
}

/// The checks whose answer differs from the expected one, with what was answered.
async fn mismatches(gateways: &[Client; 2], checks: &[Check]) -> Vec<(Check, u16)> {
    let mut calls = JoinSet::new();
    for check in checks {
        let (gw, check) = (gateways[check.gateway].clone(), check.clone());
        calls.spawn(async move {
            let status = gw.get(&check.path, &check.token).await.status;
            (check, status)
        });
    }
    let mut wrong = Vec::new();
    while let Some(answer) = calls.join_next().await {
        let (check, status) = answer.expect("gateway call");
        if status != check.expected {
            wrong.push((check, status));
        }
    }
    wrong
}

/// A page of the manifest as the control plane signs it for gateways, its payload
/// decoded.
async fn page(mgmt: &Client, secret: &str, after: u64, snapshot: bool) -> Value {
    let reply = mgmt
        .get(
            &format!("/internal/gateway/manifest?after={after}&snapshot={snapshot}"),
            secret,
        )
        .await
        .expect(200);
    let jws = reply.body.as_str().expect("a compact JWS").to_string();
    let payload = jws.split('.').nth(1).expect("a signed page");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64url")).expect("JSON")
}

fn number(page: &Value, field: &str) -> u64 {
    page[field]
        .as_u64()
        .unwrap_or_else(|| panic!("no {field} in {page}"))
}

/// Every page from version 0 (a snapshot), without the time each was read, after
/// checking that they chain: each starts where the one before ended, versions strictly
/// increase up to the newest, and no entry comes twice.
async fn snapshot_pages(mgmt: &Client, secret: &str) -> Vec<Value> {
    let (mut pages, mut keys) = (Vec::new(), BTreeSet::new());
    let mut after = 0;
    loop {
        let mut page = page(mgmt, secret, after, after > 0).await;
        assert_eq!(number(&page, "after"), after, "pages chain: {page}");
        assert_eq!(page["snapshot"], true, "{page}");
        let (upto, latest) = (number(&page, "upto"), number(&page, "latest"));
        assert!(upto > after && upto <= latest, "versions increase: {page}");
        for change in page["changes"].as_array().expect("changes") {
            let key = change["key"].as_str().expect("key").to_string();
            assert!(keys.insert(key.clone()), "{key} comes twice in the log");
        }
        page.as_object_mut().unwrap().remove("issued_at");
        pages.push(page);
        if upto == latest {
            return pages;
        }
        after = upto;
    }
}

/// The live entries the pages carry, by key.
fn live_entries(pages: &[Value]) -> BTreeMap<String, Value> {
    let mut entries = BTreeMap::new();
    for page in pages {
        apply(&mut entries, page);
    }
    entries
}

fn apply(entries: &mut BTreeMap<String, Value>, page: &Value) {
    for change in page["changes"].as_array().expect("changes") {
        let key = change["key"].as_str().expect("key").to_string();
        match &change["value"] {
            Value::Null => entries.remove(&key),
            value => entries.insert(key, value.clone()),
        };
    }
}

/// Follows a control plane's log as a gateway does, from nothing, then page by page
/// after the version it holds, until `stop` is set and it holds the newest; the entries
/// it ends with and the pages it read.
async fn follow(
    mgmt: Client,
    secret: String,
    stop: Arc<AtomicBool>,
) -> (BTreeMap<String, Value>, usize) {
    let (mut entries, mut pages) = (BTreeMap::new(), 0);
    let (mut after, mut snapshot) = (0, false);
    loop {
        let page = page(&mgmt, &secret, after, snapshot).await;
        pages += 1;
        let (from, upto, latest) = (
            number(&page, "after"),
            number(&page, "upto"),
            number(&page, "latest"),
        );
        if page["snapshot"] == true && from == 0 {
            entries.clear();
        } else {
            assert_eq!(
                from, after,
                "a page after {after} starts where asked: {page}"
            );
        }
        assert!(upto >= from, "{page}");
        apply(&mut entries, &page);
        let last = upto >= latest;
        (after, snapshot) = (upto, page["snapshot"] == true && !last);
        if last {
            if stop.load(Ordering::SeqCst) {
                return (entries, pages);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The versions a control plane's compiles recorded, from its JSON log.
fn recorded_versions(control_plane: &ServerProcess) -> Vec<u64> {
    control_plane
        .output()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["fields"]["message"] == "route manifest compiled")
        .map(|event| event["fields"]["version"].as_u64().expect("version"))
        .collect()
}

/// Twenty APIs created and published through each control plane at once, then some
/// deleted, demoted, subscribed to and unsubscribed from through the other: both gateways
/// agree with the database within the bound, the pages from both control planes are the
/// same chain of versions, a reader following either log page by page meanwhile ends
/// with what a fresh snapshot holds, and every version was recorded by exactly one
/// control plane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_control_planes_on_postgres_produce_one_order() {
    let test = "two_control_planes_on_postgres_produce_one_order";
    if !harness::services::available(harness::services::Service::Postgres, test) {
        return;
    }
    harness::gateway_component();
    let database = Backend::fresh_postgres().await;
    // One data directory: the token signing keys, the manifest signing key, the data keys
    // and the gateway secret are the same for both. So is the token issuer, derived from
    // the configured address (127.0.0.1:0): the meta entry names one issuer.
    let data_dir = harness::temp_dir();
    let backend = EchoBackend::start().await;
    let mut sides = Vec::new();
    for id in ["order-a", "order-b"] {
        let gateway_addr = format!("127.0.0.1:{}", harness::free_port());
        let settings = [
            ("APIM_GATEWAYS", format!("http://{gateway_addr}")),
            ("APIM_LOG_JSON", "true".into()),
            ("RUST_LOG", "warn,control_plane::fleet::hub=info".into()),
        ];
        let control_plane = harness::start_control_plane(&database, &data_dir, &settings).await;
        let gateway_id = format!("gateway_id={id}");
        let gateway =
            harness::start_edge_gateway(&control_plane, &data_dir, &gateway_addr, &[&gateway_id])
                .await;
        let mgmt = Client::new(&control_plane.url);
        let admin = mgmt
            .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
            .await;
        let gw = Client::new(&gateway.url);
        sides.push(Side {
            control_plane,
            gateway,
            mgmt,
            gw,
            admin,
        });
    }
    let secret = std::fs::read_to_string(data_dir.join("gateway-secret")).expect("secret");
    let secret = secret.trim().to_string();

    // An application on each side, with keys and a token from its gateway.
    let mut applications = Vec::new();
    let mut tokens = Vec::new();
    for (side, name) in sides.iter().zip(["OrderA", "OrderB"]) {
        let app = side
            .mgmt
            .post_json(
                &format!("{STORE}/applications"),
                &side.admin,
                &json!({"name": name, "throttlingTier": "Unlimited"}),
            )
            .await
            .expect(201)
            .str("applicationId");
        let keys = side
            .mgmt
            .post_json(
                &format!("{STORE}/applications/generate-keys?applicationId={app}"),
                &side.admin,
                &json!({"validityTime": "3600", "keyType": "PRODUCTION", "accessAllowDomains": ["ALL"], "scopes": ["default"]}),
            )
            .await
            .expect(200);
        let form = [
            ("grant_type", "password"),
            ("username", "admin"),
            ("password", harness::ADMIN_PASSWORD),
            ("scope", "default"),
        ];
        let token = side
            .gw
            .token_at(
                "/token",
                &keys.str("consumerKey"),
                &keys.str("consumerSecret"),
                &form,
            )
            .await
            .expect(200)
            .str("access_token");
        applications.push(app);
        tokens.push(token);
    }
    let applications: [String; 2] = applications.try_into().unwrap();
    let tokens: [String; 2] = tokens.try_into().unwrap();

    // Readers following each control plane's log while it is written.
    let stop = Arc::new(AtomicBool::new(false));
    let followers: Vec<_> = sides
        .iter()
        .map(|side| tokio::spawn(follow(side.mgmt.clone(), secret.clone(), stop.clone())))
        .collect();

    // The writes, all at once, through both control planes.
    let started = Instant::now();
    let mut writes = JoinSet::new();
    for i in 0..APIS_PER_CONTROL_PLANE {
        for own in 0..2 {
            let name = format!("Order{}{i:02}", ["A", "B"][own]);
            let at = |side: &Side| (side.mgmt.clone(), side.admin.clone());
            writes.spawn(write_api(
                at(&sides[own]),
                at(&sides[1 - own]),
                (name, format!("{}/", backend.url)),
                Fate::of(own, i),
                applications.clone(),
            ));
        }
    }
    let mut written = Vec::new();
    while let Some(done) = writes.join_next().await {
        written.push(done.expect("write"));
    }
    let written_at = Instant::now();
    eprintln!(
        "{} APIs written through two control planes in {:?}",
        written.len(),
        written_at - started
    );

    // The database holds what was written.
    let Backend::Postgres { url, .. } = &database else {
        unreachable!()
    };
    let mut db = sqlx::PgConnection::connect(url).await.expect("database");
    let statuses: BTreeMap<String, String> = sqlx::query_as("SELECT id, status FROM apis")
        .fetch_all(&mut db)
        .await
        .expect("apis")
        .into_iter()
        .collect();
    let subscriptions: BTreeSet<(String, String)> =
        sqlx::query_as("SELECT application_id, api_id FROM subscriptions")
            .fetch_all(&mut db)
            .await
            .expect("subscriptions")
            .into_iter()
            .collect();
    for (name, id, fate) in &written {
        let status = statuses.get(id).map(String::as_str);
        let expected = match fate {
            Fate::Deleted => None,
            Fate::Demoted => Some("CREATED"),
            _ => Some("PUBLISHED"),
        };
        assert_eq!(status, expected, "{name} ({fate:?})");
        for (app, application) in applications.iter().enumerate() {
            let subscribed = subscriptions.contains(&(application.clone(), id.clone()));
            assert_eq!(
                subscribed,
                *fate == Fate::Subscribed(app),
                "{name} ({fate:?})"
            );
        }
    }
    let _ = db.close().await;

    // Both gateways agree with it, within the bound.
    let gateways = [sides[0].gw.clone(), sides[1].gw.clone()];
    let checks = checks(&written, &tokens);
    loop {
        let wrong = mismatches(&gateways, &checks).await;
        if wrong.is_empty() {
            break;
        }
        assert!(
            written_at.elapsed() < CONVERGENCE_BOUND,
            "the gateways did not converge within {CONVERGENCE_BOUND:?}; {} of {} calls still \
             answer otherwise, e.g. {}",
            wrong.len(),
            checks.len(),
            wrong
                .iter()
                .take(5)
                .map(|(check, status)| format!(
                    "gateway {} answered {status} to {} at {}, not {}",
                    ["A", "B"][check.gateway],
                    check.caller,
                    check.path,
                    check.expected
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let converged = written_at.elapsed();
    eprintln!(
        "both gateways agree with the database {converged:?} after the last write ({} calls checked)",
        checks.len()
    );

    // One log: the same pages from both control planes, chained without gaps.
    let pages = snapshot_pages(&sides[0].mgmt, &secret).await;
    assert_eq!(
        pages,
        snapshot_pages(&sides[1].mgmt, &secret).await,
        "both control planes serve the same log"
    );
    let latest = number(pages.last().unwrap(), "latest");
    let entries = live_entries(&pages);
    for (name, id, fate) in &written {
        let route = format!("route:/{}/v1.0.0", name.to_lowercase());
        for key in [format!("api:{id}"), route] {
            assert_eq!(
                entries.contains_key(&key),
                fate.deployed(),
                "{key} of {name} ({fate:?})"
            );
        }
    }

    // Readers that followed either log as it was written end where a snapshot does.
    stop.store(true, Ordering::SeqCst);
    for (follower, side) in followers.into_iter().zip(["A", "B"]) {
        let (followed, read) = follower.await.expect("follower");
        let differing: Vec<&String> = followed
            .keys()
            .chain(entries.keys())
            .filter(|key| followed.get(*key) != entries.get(*key))
            .collect();
        assert!(
            differing.is_empty(),
            "a reader of control plane {side} ended elsewhere than the snapshot: {differing:?}"
        );
        eprintln!("a reader of control plane {side} followed the log in {read} pages");
    }

    // Every version was recorded by exactly one control plane, none skipped. The logs are
    // read from pipes, which may trail the answers: wait a little for the last lines.
    let expected: Vec<u64> = (1..=latest).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let (by_side, all) = loop {
        let by_side: Vec<Vec<u64>> = sides
            .iter()
            .map(|side| recorded_versions(&side.control_plane))
            .collect();
        let mut all: Vec<u64> = by_side.concat();
        all.sort_unstable();
        if all == expected || tokio::time::Instant::now() >= deadline {
            break (by_side, all);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        all, expected,
        "versions recorded by A: {:?}, by B: {:?}",
        by_side[0], by_side[1]
    );
    eprintln!(
        "{latest} versions in one order: {} recorded by A, {} by B; {} pages, {} live entries",
        by_side[0].len(),
        by_side[1].len(),
        pages.len(),
        entries.len()
    );

    for side in sides {
        side.gateway.stop().await;
        side.control_plane.stop().await;
    }
    database.cleanup().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}
