//! Endpoint types, timeouts and suspension: `load_balance` and `failover`
//! lists with WSO2's endpoint `config`, executed by the host's forwarding path and by
//! the component's `wasi:http` path; and the bound on a list's length.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use harness::stack::{Launch, Stack, api_record};
use harness::{Backend, PUBLISHER};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

pub async fn load_balance_and_failover_on_the_host_path(database: Backend) {
    load_balance_and_failover(database, &[]).await;
}

pub async fn load_balance_and_failover_on_the_component_path(database: Backend) {
    load_balance_and_failover(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

pub async fn load_balance_and_failover_on_the_p3_artefact(database: Backend) {
    load_balance_and_failover(database, &harness::p3_settings()).await;
}

pub async fn timeouts_and_suspension_on_the_host_path(database: Backend) {
    timeouts_and_suspension(database, &[]).await;
}

pub async fn timeouts_and_suspension_on_the_component_path(database: Backend) {
    timeouts_and_suspension(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

pub async fn timeouts_and_suspension_on_the_p3_artefact(database: Backend) {
    timeouts_and_suspension(database, &harness::p3_settings()).await;
}

/// A backend of the test's own that can be killed outright (its open connections too,
/// which a pooling gateway would otherwise keep using) and started again on its port;
/// it counts the connections it accepts and the requests it answers, or hangs.
struct TestBackend {
    port: u16,
    hang: bool,
    accepted: Arc<AtomicUsize>,
    hits: Arc<AtomicUsize>,
    task: Option<JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TestBackend {
    async fn start(hang: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut backend = TestBackend {
            port: listener.local_addr().unwrap().port(),
            hang,
            accepted: Arc::default(),
            hits: Arc::default(),
            task: None,
            stop: None,
        };
        backend.serve(listener);
        backend
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn serve(&mut self, listener: TcpListener) {
        let (accepted, hits, hang) = (self.accepted.clone(), self.hits.clone(), self.hang);
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        self.stop = Some(stop);
        self.task = Some(tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    accept = listener.accept() => {
                        let Ok((stream, _)) = accept else { break };
                        accepted.fetch_add(1, Ordering::SeqCst);
                        connections.spawn(answer(stream, hits.clone(), hang));
                    }
                }
            }
            // Every connection closed before `kill` returns: a kept-alive one must not
            // answer once more after the test has "killed" the backend.
            connections.shutdown().await;
        }));
    }

    /// Stops listening and cuts every connection, both done when it returns.
    async fn kill(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Listens again on the same port.
    async fn restart(&mut self) {
        let address = format!("127.0.0.1:{}", self.port);
        let deadline = Instant::now() + Duration::from_secs(5);
        let listener = loop {
            match TcpListener::bind(&address).await {
                Ok(listener) => break listener,
                Err(err) if Instant::now() > deadline => panic!("rebind {address}: {err}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        self.serve(listener);
    }
}

impl Drop for TestBackend {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Answers each request of a keep-alive connection (heads only: the tests send GETs)
/// with 200 `ok`, or never when `hang`.
async fn answer(mut stream: TcpStream, hits: Arc<AtomicUsize>, hang: bool) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Ok(n) = stream.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
        while let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            buffer.drain(..end + 4);
            if hang {
                std::future::pending::<()>().await;
            }
            hits.fetch_add(1, Ordering::SeqCst);
            let reply =
                b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok";
            if stream.write_all(reply).await.is_err() {
                return;
            }
        }
    }
}

/// An `endpointConfig` of `endpoint_type` with these production `endpoints` (and, for
/// failover, `failovers`), each `{url, config}`.
fn endpoint_config(endpoint_type: &str, endpoints: Value, failovers: Value) -> Value {
    let config = json!({"endpoint_type": endpoint_type, "production_endpoints": endpoints,
                        "production_failovers": failovers});
    json!({"endpointConfig": config.to_string(), "endpointSecurity": null})
}

fn endpoint(backend: &TestBackend, config: Value) -> Value {
    json!({"url": backend.url(), "config": config})
}

/// A published API with these `changes`, subscribed, and a token that calls it.
async fn api_and_token(stack: &Stack, name: &str, changes: Value) -> String {
    let api = stack.api(name, changes, &["Publish"]).await;
    let (_, key, secret, _) = stack.application(name, "Unlimited", &[&api]).await;
    stack.app_token(&key, &secret, &[]).await
}

/// Whether a call got past the gateway's own checks: its API routed, and its
/// subscription in (an API's entry may reach the gateway before its subscription's).
fn past_the_checks(reply: &harness::Reply) -> bool {
    !matches!(reply.status, 401 | 403 | 404)
}

/// Calls `path` `times` times, each expected to answer `status`.
async fn calls(stack: &Stack, path: &str, token: &str, times: usize, status: u16) {
    for _ in 0..times {
        let reply = stack.gw.get(path, token).await;
        assert_eq!(reply.status, status, "{path}: {:?}", reply.body);
    }
}

/// A load-balanced API spreads calls evenly over three backends, counted at the
/// backends, and stops sending to one that is killed (the call that found it dead goes
/// on to the next); a failover API keeps answering when its primary is killed and
/// returns to it once the primary's suspension is over.
async fn load_balance_and_failover(database: Backend, settings: &[(&'static str, String)]) {
    let stack = Launch {
        database,
        gateway: settings,
        ..Default::default()
    }
    .start()
    .await;
    let mut three = Vec::new();
    for _ in 0..3 {
        three.push(TestBackend::start(false).await);
    }
    let suspend = json!({"suspendDuration": "60000", "factor": "1"});
    let list: Vec<Value> = three.iter().map(|b| endpoint(b, suspend.clone())).collect();
    let changes = endpoint_config("load_balance", json!(list), Value::Null);
    let token = api_and_token(&stack, "Spread", changes).await;
    let path = "/spread/v1.0.0/devs/alice";
    harness::eventually(&stack.gw, reqwest::Method::GET, path, &token, |r| {
        r.status == 200
    })
    .await;
    let before: Vec<usize> = three.iter().map(TestBackend::hits).collect();
    calls(&stack, path, &token, 30, 200).await;
    let spread: Vec<usize> = three
        .iter()
        .zip(&before)
        .map(|(b, n)| b.hits() - n)
        .collect();
    assert_eq!(spread, [10, 10, 10], "round robin over three backends");

    three[1].kill().await;
    calls(&stack, path, &token, 20, 200).await;
    let dead = three[1].hits();
    calls(&stack, path, &token, 20, 200).await;
    assert_eq!(three[1].hits(), dead, "no call goes to a suspended backend");
    let live = three[0].hits() + three[2].hits();
    calls(&stack, path, &token, 10, 200).await;
    assert_eq!(three[0].hits() + three[2].hits(), live + 10);

    // Failover: the primary while it lives; the failover while it is suspended; the
    // primary again after its suspension (1.5 s).
    let mut primary = TestBackend::start(false).await;
    let failover = TestBackend::start(false).await;
    let short = json!({"suspendDuration": 1500, "suspendMaxDuration": 1500});
    let changes = endpoint_config(
        "failover",
        endpoint(&primary, short.clone()),
        json!([endpoint(&failover, short)]),
    );
    let token = api_and_token(&stack, "Standby", changes).await;
    let path = "/standby/v1.0.0/devs/alice";
    harness::eventually(&stack.gw, reqwest::Method::GET, path, &token, |r| {
        r.status == 200
    })
    .await;
    calls(&stack, path, &token, 5, 200).await;
    assert_eq!(failover.hits(), 0, "the primary answers while it lives");
    primary.kill().await;
    calls(&stack, path, &token, 5, 200).await;
    assert_eq!(
        failover.hits(),
        5,
        "the failover answers for the dead primary"
    );
    primary.restart().await;
    let served = primary.hits();
    tokio::time::sleep(Duration::from_millis(1_700)).await;
    calls(&stack, path, &token, 3, 200).await;
    assert_eq!(
        primary.hits(),
        served + 3,
        "back on the primary after its suspension"
    );
    assert_eq!(failover.hits(), 5);
    stack.gateway.stop().await;
}

/// A backend that hangs gets 504 (101504) in its `actionDuration`; it is then suspended,
/// and while every endpoint is suspended calls get 503 (101503) at once, without a
/// connection to the backend; with `actionSelect` `discard` the call is dropped without
/// a fault and goes no further. A list past the bound is refused at create (400) next to
/// one at the bound, which is taken; so is a `config` that does not read.
async fn timeouts_and_suspension(database: Backend, settings: &[(&'static str, String)]) {
    let stack = Launch {
        database,
        gateway: settings,
        ..Default::default()
    }
    .start()
    .await;
    let hanging = TestBackend::start(true).await;
    let config = json!({"actionDuration": "700", "actionSelect": "fault",
                        "suspendDuration": "60000"});
    let changes = endpoint_config("http", endpoint(&hanging, config), Value::Null);
    let token = api_and_token(&stack, "Sluggish", changes).await;
    let path = "/sluggish/v1.0.0/devs/alice";
    harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        path,
        &token,
        past_the_checks,
    )
    .await;
    // The call above reached the backend and timed out; so the endpoint is suspended:
    // another hanging endpoint shows the timeout's length.
    let slow = TestBackend::start(true).await;
    let changes = endpoint_config(
        "failover",
        endpoint(
            &slow,
            json!({"actionDuration": 700, "suspendDuration": 60000}),
        ),
        Value::Null,
    );
    let slow_token = api_and_token(&stack, "Slower", changes).await;
    let slow_path = "/slower/v1.0.0/devs/alice";
    harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        slow_path,
        &slow_token,
        past_the_checks,
    )
    .await;
    let timed = TestBackend::start(true).await;
    let changes = endpoint_config(
        "http",
        endpoint(&timed, json!({"actionDuration": 700})),
        Value::Null,
    );
    let timed_token = api_and_token(&stack, "Timed", changes).await;
    let timed_path = "/timed/v1.0.0/devs/alice";
    let first = harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        timed_path,
        &timed_token,
        past_the_checks,
    )
    .await;
    // The first call that routes is the first to reach the backend.
    assert_eq!(first.status, 504, "{:?}", first.body);
    assert_eq!(first.fault_code(), "101504", "{:?}", first.body);

    // Every endpoint suspended: 503 at once, no connection attempted.
    let accepted = timed.accepted();
    let started = Instant::now();
    let reply = stack.gw.get(timed_path, &timed_token).await;
    assert_eq!(reply.status, 503, "{:?}", reply.body);
    assert_eq!(reply.fault_code(), "101503", "{:?}", reply.body);
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(timed.accepted(), accepted, "no connection while suspended");
    let reply = stack.gw.get(slow_path, &slow_token).await;
    assert_eq!((reply.status, reply.fault_code()), (503, "101503"));
    assert_eq!(slow.accepted(), 1);
    let reply = stack.gw.get(path, &token).await;
    assert_eq!((reply.status, reply.fault_code()), (503, "101503"));
    assert_eq!(hanging.accepted(), 1);

    // A timed call answers within its actionDuration, not the gateway's own timeout.
    let fresh = TestBackend::start(true).await;
    let changes = endpoint_config(
        "http",
        endpoint(&fresh, json!({"actionDuration": 700, "suspendDuration": 0})),
        Value::Null,
    );
    let fresh_token = api_and_token(&stack, "Measured", changes).await;
    let fresh_path = "/measured/v1.0.0/devs/alice";
    harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        fresh_path,
        &fresh_token,
        past_the_checks,
    )
    .await;
    let started = Instant::now();
    let reply = stack.gw.get(fresh_path, &fresh_token).await;
    let took = started.elapsed();
    assert_eq!((reply.status, reply.fault_code()), (504, "101504"));
    assert!(
        took >= Duration::from_millis(650) && took < Duration::from_millis(3_000),
        "{took:?}"
    );

    // actionSelect discard: the timed-out call is dropped (an empty 504, no fault) and not
    // sent on to the failover, which would have answered.
    let dropping = TestBackend::start(true).await;
    let standby = TestBackend::start(false).await;
    let discard = json!({"actionDuration": 700, "actionSelect": "discard", "suspendDuration": 0});
    let changes = endpoint_config(
        "failover",
        endpoint(&dropping, discard),
        json!([endpoint(&standby, Value::Null)]),
    );
    let dropped_token = api_and_token(&stack, "Dropped", changes).await;
    let dropped_path = "/dropped/v1.0.0/devs/alice";
    let reply = harness::eventually(
        &stack.gw,
        reqwest::Method::GET,
        dropped_path,
        &dropped_token,
        past_the_checks,
    )
    .await;
    assert_eq!(
        (reply.status, reply.fault_code()),
        (504, ""),
        "{:?}",
        reply.body
    );
    assert_eq!(standby.hits(), 0);

    lists_are_bounded(&stack).await;
    stack.gateway.stop().await;
}

/// 16 endpoints in a list are taken, 17 refused with 400 and nothing created; failovers
/// count with their primary; a `config` that does not read is refused likewise.
async fn lists_are_bounded(stack: &Stack) {
    let url = |i: usize| format!("http://127.0.0.1:{}/", 20_000 + i);
    let list = |n: usize| -> Value { (0..n).map(|i| json!({"url": url(i)})).collect() };
    let create = async |name: &str, config: Value| {
        let mut record = api_record(name, &url(0));
        record["endpointConfig"] = json!(config.to_string());
        let reply = stack
            .mgmt
            .post_json(&format!("{PUBLISHER}/apis"), &stack.admin, &record)
            .await;
        (reply.status, reply.body.to_string())
    };
    let (status, body) = create(
        "Bounded",
        json!({"endpoint_type": "load_balance", "production_endpoints": list(16)}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    for (name, config) in [
        (
            "Past",
            json!({"endpoint_type": "load_balance", "production_endpoints": list(17)}),
        ),
        (
            "PastFailover",
            json!({"endpoint_type": "failover", "sandbox_endpoints": list(1),
                   "sandbox_failovers": list(16)}),
        ),
        (
            "Unreadable",
            json!({"endpoint_type": "failover", "production_endpoints":
                   {"url": url(1), "config": {"factor": "fast"}}}),
        ),
        (
            "NoScheme",
            json!({"endpoint_type": "failover", "production_endpoints": list(1),
                   "production_failovers": [{"url": "ftp://127.0.0.1/"}]}),
        ),
    ] {
        let (status, body) = create(name, config).await;
        assert_eq!(status, 400, "{name}: {body}");
        let listed = stack
            .mgmt
            .get(&format!("{PUBLISHER}/apis?query=name:{name}"), &stack.admin)
            .await;
        assert_eq!(listed.body["count"], 0, "{name}: {}", listed.body);
    }
}
