//! The platform under its own faults: what a gateway does when Redis,
//! which its nodes share counters and cached answers through, is down at start or goes
//! away while it serves; a gateway restarted under load (SIGTERM with a hand-over of its
//! socket, and `kill -9`); the control plane killed during concurrent writes. `cargo run --release -p tools --bin faults` runs these
//! and the longer cases at full scale (RELIABILITY.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::Backend;
use harness::redis::Redis;
use harness::stack::Stack;
use serde_json::json;
use tools::faults::load::{Load, MakeRequest};
use tools::faults::rig::Rig;
use tools::faults::writes::{gateway_converges, verify, write_through_a_kill};

/// A gateway restarted under load (two keep-alive clients calling back to back) on a
/// listening socket the harness holds, as a supervisor does: a new gateway started beside
/// the old one, which then gets SIGTERM and drains, loses no request at all; after a
/// `kill -9`, only the request each connection carried at the kill fails, those made while
/// no gateway accepts wait in the backlog, and the new gateway (its component from the compilation
/// cache, its manifest pulled before it serves) serves within a second of its start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_restarted_under_load_loses_nothing_on_sigterm_and_only_in_flight_on_kill() {
    let mut rig = Rig::start(Backend::Sqlite, &[]).await;
    let (path, token) = rig.steady_api().await;
    let (url, bearer) = (format!("{}{path}", rig.gw.base), token.clone());
    let make: MakeRequest = Arc::new(move |http, _, _| http.get(&url).bearer_auth(&bearer));
    let clients = 2;

    let load = Load::start(
        clients,
        Duration::ZERO,
        Duration::from_secs(5),
        make.clone(),
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let hand_over = rig.hand_over_gateway().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let samples = load.finish().await;
    assert!(
        hand_over.exit.is_some_and(|e| e.success()),
        "{:?}",
        hand_over.exit
    );
    let across = samples.between(hand_over.started, hand_over.exited);
    assert!(across.ok() > 0, "no request during the hand-over");
    assert!(
        samples.failed().is_empty(),
        "SIGTERM hand-over: {}",
        samples.outcomes()
    );

    let load = Load::start(clients, Duration::ZERO, Duration::from_secs(5), make);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let killed = Instant::now();
    rig.kill_gateway().await;
    let start_took = rig.start_gateway().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let samples = load.finish().await;
    assert!(
        start_took < Duration::from_secs(1),
        "the new gateway served {start_took:?} after its start"
    );
    // Each client loses at most the request its connection carried at the kill (in
    // flight, or sent on it before the client saw it close); nothing else fails.
    let failed = samples.failed();
    assert!(failed.len() <= clients, "kill -9: {}", samples.outcomes());
    assert!(
        failed.0.iter().all(|s| s.at < killed + start_took),
        "kill -9: a request failed after the new gateway served: {}",
        samples.outcomes()
    );
    assert!(samples.between(killed + start_took, Instant::now()).ok() > 0);
    rig.shut_down().await;
}

/// `kill -9` of the control plane (SQLite) during 200 writes from 16 concurrent clients
/// (API creates and publishes), started again on the same data: every write answered 2xx
/// is there, every API there is whole (its record and its route), only the writes in
/// flight at the kill went unanswered, and the attached gateway routes exactly the
/// published APIs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_control_plane_during_writes_loses_nothing_acknowledged() {
    let mut rig = Rig::start(Backend::Sqlite, &[]).await;
    let (total, writers) = (200, 16);
    let writes = write_through_a_kill(&mut rig, total, writers, 80).await;
    assert_eq!(writes.sent, total);
    assert!(writes.acknowledged_before_kill >= 80);
    assert!(writes.unacknowledged() <= writers, "{:?}", writes.outcomes);
    let verdict = verify(&rig, &writes).await;
    assert!(verdict.held(), "{verdict:?}");
    assert!(!verdict.published_contexts.is_empty());
    gateway_converges(&rig, &verdict, Duration::from_secs(15))
        .await
        .expect("the gateway did not converge within 15 s");
    rig.shut_down().await;
}

/// A gateway whose Redis is down when it starts serves from its own manifest, counting
/// on its own; once Redis is up it counts there; when Redis goes away it goes on serving,
/// and when Redis is back it counts there again, without a restart. A revocation made
/// while Redis is down applies at once: the manifest never depends on Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_serves_whether_redis_is_up_or_not() {
    let mut redis = Redis::on_free_port();
    let stack = Stack::start_with(&[], &[("APIM_KV_URL", redis.url())]).await;
    // maxTps keeps a shared counter per request; far above what the test sends.
    let api = stack
        .api(
            "Counted",
            json!({"maxTps": {"production": 100000, "sandbox": 100000}}),
            &["Publish"],
        )
        .await;
    let (_, key, secret, _) = stack.application("counted", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/counted/v1.0.0/devs/alice";
    let serves = async |what: &str| {
        harness::wait_until(what, Duration::from_secs(5), async || {
            stack.gw.get(path, &token).await.status == 200
        })
        .await;
    };

    serves("the API, Redis down since the gateway started").await;
    harness::wait_until("the outage logged", Duration::from_secs(10), async || {
        stack.gateway.output().contains("Redis is unreachable")
    })
    .await;

    redis.start().await;
    harness::wait_until("counters in Redis", Duration::from_secs(10), async || {
        stack.gw.get(path, &token).await.expect(200);
        !redis.keys().await.is_empty()
    })
    .await;

    redis.stop().await;
    for _ in 0..20 {
        stack.gw.get(path, &token).await.expect(200);
    }

    // Redis is down: a revocation still reaches the gateway and applies.
    stack
        .mgmt
        .token_at(
            "/oauth2/revoke",
            &key,
            &secret,
            &[("token", token.as_str())],
        )
        .await
        .expect(200);
    harness::wait_until(
        "the revocation, Redis down",
        Duration::from_secs(5),
        async || stack.gw.get(path, &token).await.status == 401,
    )
    .await;
    let token = stack.app_token(&key, &secret, &[]).await;
    stack.gw.get(path, &token).await.expect(200);

    // Back: counted there again, no restart.
    redis.start().await;
    harness::wait_until(
        "counters in Redis again",
        Duration::from_secs(10),
        async || {
            stack.gw.get(path, &token).await.expect(200);
            !redis.keys().await.is_empty()
        },
    )
    .await;
    redis.stop().await;
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}

/// Under a service manager speaking systemd's notify protocol (`NOTIFY_SOCKET`, a unit of
/// `Type=notify`), edge-gateway says `READY=1` once every listener serves, its manifest
/// pulled, and `STOPPING=1` when SIGTERM starts its drain; without the variable it says
/// nothing (every other test's gateway).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervised_gateway_says_when_it_is_ready_and_when_it_stops() {
    let path = std::env::temp_dir().join(format!("apim-notify-{}.sock", uuid::Uuid::new_v4()));
    let supervisor = std::os::unix::net::UnixDatagram::bind(&path).expect("notify socket");
    supervisor
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let notify = [("NOTIFY_SOCKET", path.display().to_string())];
    let stack = Stack::start_with(&[], &notify).await;
    let told = |supervisor: &std::os::unix::net::UnixDatagram| {
        let mut message = [0u8; 256];
        let length = supervisor.recv(&mut message).expect("a notification");
        String::from_utf8_lossy(&message[..length]).into_owned()
    };
    assert_eq!(told(&supervisor).trim(), "READY=1");
    // Ready means serving: a call is answered (no API yet: WSO2's 404).
    assert_eq!(stack.gw.get("/nothing/v1/here", "").await.status, 404);
    stack.gateway.stop().await;
    assert_eq!(told(&supervisor).trim(), "STOPPING=1");
    let _ = std::fs::remove_file(&path);
}
