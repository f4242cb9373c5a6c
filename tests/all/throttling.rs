//! Throttling across edge-gateway nodes that share Redis: each node counts in
//! grants Redis makes only within what the limit leaves (`edge-gateway/src/counters.rs`),
//! so three nodes taking turns admit exactly what one would.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harness::stack::Stack;
use harness::{Client, Reply, ServerProcess, eventually};
use reqwest::Method;
use serde_json::json;
use tokio::task::JoinSet;

/// Gateway nodes sharing one Redis.
const NODES: usize = 3;
/// Requests a minute the application tier `50PerMin` admits.
const PER_MINUTE: usize = 50;
/// The API's `maxTps` for production keys.
const PER_SECOND: usize = 5;

/// Milliseconds since the epoch, the clock the gateways' windows follow.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
}

/// Sleeps until the next window of `length_ms` has begun when fewer than `room_ms` of
/// this one are left (every node counts in windows of the wall clock).
async fn room_in_window(length_ms: u64, room_ms: u64) {
    let into = now_ms() % length_ms;
    if into + room_ms > length_ms {
        tokio::time::sleep(Duration::from_millis(length_ms - into + 20)).await;
    }
}

/// `count` calls of `path` with `token` at once, the `k`th to node `k % NODES`; each
/// node's name and its answer, and the window (of `length_ms`) the first call was sent
/// in and the one the last answer came in.
async fn burst(
    nodes: &[Client],
    path: &str,
    token: &str,
    count: usize,
    length_ms: u64,
) -> (Vec<(usize, Reply)>, u64, u64) {
    let first = now_ms() / length_ms;
    let mut calls = JoinSet::new();
    for k in 0..count {
        let (node, path, token) = (
            nodes[k % NODES].clone(),
            path.to_string(),
            token.to_string(),
        );
        calls.spawn(async move { (k % NODES, node.get(&path, &token).await) });
    }
    let mut answers = Vec::new();
    while let Some(answer) = calls.join_next().await {
        answers.push(answer.expect("call"));
    }
    (answers, first, now_ms() / length_ms)
}

/// How many answers each node gave of each status, as `node-N: status x count`.
fn tally(answers: &[(usize, Reply)]) -> BTreeMap<(usize, u16), usize> {
    let mut tally = BTreeMap::new();
    for (node, reply) in answers {
        *tally.entry((node + 1, reply.status)).or_default() += 1;
    }
    tally
}

/// A connection to the shared Redis the nodes use.
async fn shared_redis() -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open("redis://127.0.0.1:6379/0").unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

/// Empties the nodes' Redis namespace.
async fn forget_namespace(namespace: &str) {
    let mut conn = shared_redis().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{namespace}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    if !keys.is_empty() {
        let _: () = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

/// Three edge-gateway nodes on one Redis (a namespace of the test's own), called in turn
/// and at once: an application of the `50PerMin` tier gets exactly 50 calls through in
/// its minute, whichever nodes they reached, and 429 (900803) for the rest; an API of
/// `maxTps` 5 admits exactly 5 calls in a second and answers 503 (900801) to the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_sharing_redis_admit_exactly_the_limit() {
    let test = "three_nodes_sharing_redis_admit_exactly_the_limit";
    if !harness::services::available(harness::services::Service::Redis, test) {
        return;
    }
    let namespace = format!("apim-e2e-throttling-{}", uuid::Uuid::new_v4().simple());
    let redis = [
        ("APIM_KV_URL", "redis://127.0.0.1:6379/0".to_string()),
        ("APIM_KV_NAMESPACE", namespace.clone()),
    ];
    let stack = Stack::start_with(&["gateway_id=node-1"], &redis).await;
    let control_plane = stack.control_plane.as_ref().expect("control plane");
    let mut others: Vec<ServerProcess> = Vec::new();
    for id in ["gateway_id=node-2", "gateway_id=node-3"] {
        others.push(
            harness::start_edge_gateway_with(
                control_plane,
                &stack.data_dir,
                "127.0.0.1:0",
                &[id],
                &redis,
            )
            .await,
        );
    }
    let mut nodes = vec![stack.gw.clone()];
    nodes.extend(others.iter().map(|node| Client::new(&node.url)));

    // The metered application first, so that once a node knows the one made after it, it
    // knows the metered one's subscription too (versions land in order).
    let api = stack.api("Metered", json!({}), &["Publish"]).await;
    let (_, key, secret, _) = stack.application("Metered", "50PerMin", &[&api]).await;
    let metered = stack.app_token(&key, &secret, &[]).await;
    let tps_api = stack
        .api(
            "Paced",
            json!({"maxTps": {"production": PER_SECOND, "sandbox": PER_SECOND}}),
            &["Publish"],
        )
        .await;
    let (_, key, secret, _) = stack
        .application("Paced", "Unlimited", &[&api, &tps_api])
        .await;
    let paced = stack.app_token(&key, &secret, &[]).await;
    let (metered_path, tps_path) = ("/metered/v1.0.0/devs/alice", "/paced/v1.0.0/devs/alice");
    // Every node serves both APIs (the unmetered application warms their instances up).
    for node in &nodes {
        for _ in 0..3 {
            eventually(node, Method::GET, metered_path, &paced, |r| r.status == 200).await;
        }
        eventually(node, Method::GET, tps_path, &paced, |r| r.status == 200).await;
    }

    // The application tier: 3 × 50 calls in one minute, 50 admitted.
    room_in_window(60_000, 15_000).await;
    let hits_before = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let (answers, first, last) =
        burst(&nodes, metered_path, &metered, NODES * PER_MINUTE, 60_000).await;
    assert_eq!(first, last, "the calls straddled a minute");
    let admitted = answers.iter().filter(|(_, r)| r.status == 200).count();
    let hits = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst) - hits_before;
    eprintln!(
        "application tier {PER_MINUTE}/min, {} calls over {NODES} nodes: {admitted} admitted, {hits} reached the backend; by node and status: {:?}",
        answers.len(),
        tally(&answers)
    );
    assert_eq!(admitted, PER_MINUTE, "{:?}", tally(&answers));
    assert_eq!(hits, PER_MINUTE);
    for (_, reply) in answers.iter().filter(|(_, r)| r.status != 200) {
        assert_eq!(
            (reply.status, reply.fault_code()),
            (429, "900803"),
            "{}",
            reply.body
        );
    }
    // Still refused on every node for the rest of the minute.
    for node in &nodes {
        let reply = node.get(metered_path, &metered).await;
        assert_eq!((reply.status, reply.fault_code()), (429, "900803"));
    }

    // maxTps: 3 × 5 calls in one second, 5 admitted. A burst that straddled a second is
    // tried again. Windows slide, so each burst starts a second after anything before it
    // (the previous second weighs in).
    let mut tries = 0;
    let answers = loop {
        tries += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
        room_in_window(1_000, 1_000).await;
        let (answers, first, last) =
            burst(&nodes, tps_path, &paced, NODES * PER_SECOND, 1_000).await;
        if first == last {
            break answers;
        }
        assert!(tries < 5, "every burst straddled a second");
    };
    let admitted = answers.iter().filter(|(_, r)| r.status == 200).count();
    eprintln!(
        "maxTps {PER_SECOND}/s, {} calls over {NODES} nodes ({tries} tries): {admitted} admitted; by node and status: {:?}",
        answers.len(),
        tally(&answers)
    );
    assert_eq!(admitted, PER_SECOND, "{:?}", tally(&answers));
    for (_, reply) in answers.iter().filter(|(_, r)| r.status != 200) {
        assert_eq!(
            (reply.status, reply.fault_code()),
            (503, "900801"),
            "{}",
            reply.body
        );
    }

    for node in others {
        node.stop().await;
    }
    stack.gateway.stop().await;
    if let Some(control_plane) = stack.control_plane {
        control_plane.stop().await;
    }
    forget_namespace(&namespace).await;
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}

/// On the component's own forwarding path (as on Spin) with Redis as the store, every
/// call is written to its counters, also far from the limit where a SQLite store's are
/// batched: 201 calls under a `Gold` subscription (5,000 a minute) add exactly 201 to its
/// counter (batches would add multiples of their size).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_component_counts_every_call_on_redis() {
    let test = "the_component_counts_every_call_on_redis";
    if !harness::services::available(harness::services::Service::Redis, test) {
        return;
    }
    let namespace = format!("apim-e2e-exact-{}", uuid::Uuid::new_v4().simple());
    let settings = [
        ("APIM_KV_URL", "redis://127.0.0.1:6379/0".to_string()),
        ("APIM_KV_NAMESPACE", namespace.clone()),
        ("APIM_HOST_FORWARDING", "false".to_string()),
    ];
    let stack = Stack::start_with(&[], &settings).await;
    let api = stack
        .api(
            "Counted",
            json!({"tiers": ["Gold", "Unlimited"]}),
            &["Publish"],
        )
        .await;
    let steps = stack.steps();
    let application = steps
        .create_application("Golden", "Unlimited")
        .await
        .unwrap();
    steps.subscribe(&application, &api, "Gold").await.unwrap();
    let keys = steps
        .generate_keys(&application, &harness::steps::keys_request())
        .await
        .unwrap();
    let token = stack.app_token(&keys.key, &keys.secret, &[]).await;
    let path = "/counted/v1.0.0/devs/alice";
    eventually(&stack.gw, Method::GET, path, &token, |r| r.status == 200).await;

    let before = window_counts(&namespace).await;
    for _ in 0..201 {
        stack.gw.get(path, &token).await.expect(200);
    }
    let after = window_counts(&namespace).await;
    // The subscription tier's minute windows (a per-second window's first write deletes
    // the one two seconds back, so those cannot be summed this way).
    let added: BTreeMap<&String, i64> = after
        .iter()
        .filter(|(family, _)| family.contains(":window:thr:sub:"))
        .map(|(family, count)| (family, count - before.get(family).copied().unwrap_or(0)))
        .collect();
    assert_eq!(added.len(), 1, "one subscription counter: {after:?}");
    assert!(added.values().all(|added| *added == 201), "{added:?}");
    forget_namespace(&namespace).await;
    stack.gateway.stop().await;
}

/// The sum of each sliding window's counters in the namespace, by counter family (the key
/// without its window number).
async fn window_counts(namespace: &str) -> BTreeMap<String, i64> {
    let mut conn = shared_redis().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{namespace}:*:window:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut counts = BTreeMap::new();
    for key in keys {
        let value: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let count = value.and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        let family = key
            .rsplit_once(':')
            .map_or(key.clone(), |(family, _)| family.to_string());
        *counts.entry(family).or_default() += count;
    }
    counts
}

/// WSO2's legacy throttling (`APIM_ADVANCED_THROTTLING=false`): an operation names a
/// subscription tier, here one of 2 calls a minute made with `POST /tiers/api`, and the
/// gateway limits the resource to it over all callers (429 900802); a resource tier of
/// advanced throttling is then refused at create; a change of the tier reaches the
/// gateway as any other does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_throttling_limits_resources_by_subscription_tiers() {
    let legacy = [("APIM_ADVANCED_THROTTLING", "false".to_string())];
    let stack = Stack::start_configured(&[], &[], &legacy).await;
    let admin = stack
        .mgmt
        .login(
            "admin",
            harness::ADMIN_PASSWORD,
            harness::stack::TIER_SCOPES,
        )
        .await;
    let tiers = format!("{}/tiers/api", harness::PUBLISHER);
    let trickle = |requests| harness::steps::tier_record("Trickle", requests, 60_000);
    stack
        .mgmt
        .post_json(&tiers, &admin, &trickle(2))
        .await
        .expect(201);
    let named = |tier: &str| {
        let operation = json!({"x-auth-type": "Application & Application User",
                               "x-throttling-tier": tier});
        let definition =
            json!({"swagger": "2.0", "paths": {"/devs/{username}": {"get": operation}}});
        json!({"tiers": ["Unlimited"], "apiDefinition": definition.to_string()})
    };
    let mut resource_tier = harness::stack::api_record("Advanced", "http://127.0.0.1:1/");
    for (key, value) in named("10KPerMin").as_object().unwrap() {
        resource_tier[key] = value.clone();
    }
    stack
        .mgmt
        .post_json(
            &format!("{}/apis", harness::PUBLISHER),
            &stack.admin,
            &resource_tier,
        )
        .await
        .expect_error(400, "not a known subscription tier");

    let api = stack.api("Trickled", named("Trickle"), &["Publish"]).await;
    let (_, key, secret, _) = stack.application("Callers", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/trickled/v1.0.0/devs/alice";
    room_in_window(60_000, 20_000).await;
    eventually(&stack.gw, Method::GET, path, &token, |r| r.status == 200).await;
    stack.gw.get(path, &token).await.expect(200);
    let over = stack.gw.get(path, &token).await.expect(429);
    assert_eq!(over.fault_code(), "900802", "{}", over.body);

    // Four a minute now: the two counted leave room for two more (a refused call counts
    // against none).
    stack
        .mgmt
        .put_json(&format!("{tiers}/Trickle"), &admin, &trickle(4))
        .await
        .expect(200);
    eventually(&stack.gw, Method::GET, path, &token, |r| r.status == 200).await;
    stack.gw.get(path, &token).await.expect(200);
    let over = stack.gw.get(path, &token).await.expect(429);
    assert_eq!(over.fault_code(), "900802", "{}", over.body);
    stack.gateway.stop().await;
}
