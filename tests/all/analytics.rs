//! Per-API analytics: gateways report per-minute totals to the control plane,
//! which answers an API's requests, errors and latency per application and over time at
//! `GET /api/am/admin/v0.14/analytics/apis/{apiId}`. Reports add up across gateways and
//! gateway processes, never twice for one report; queries are bounded and confined to the
//! API's tenant, administrators and provider.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harness::stack::{Launch, Stack, api_record};
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, Backend, Reply, eventually};
use reqwest::Method;
use serde_json::{Value, json};

use crate::InProcess;

const ANALYTICS: &str = "/internal/gateway/analytics";
/// Latency bucket bounds, microseconds (`apim_manifest::analytics::LATENCY_BOUNDS_US`).
const BOUNDS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// The path of an API's analytics, with a query.
fn analytics_path(api: &str, query: &str) -> String {
    format!("/api/am/admin/v0.14/analytics/apis/{api}{query}")
}

/// An API's analytics as `user` reads them.
async fn read(api: &harness::Client, user: (&str, &str), path: &str) -> Reply {
    api.basic(Method::GET, path, user, None).await
}

/// The Unix minute now.
fn minute_now() -> i64 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    i64::try_from(secs / 60).unwrap()
}

/// A report row: `latencies` (bucket, count) make up its requests.
fn row(
    minute: i64,
    api: &str,
    application: &str,
    errors: (u64, u64),
    latencies: &[(usize, u64)],
) -> Value {
    let mut buckets = [0u64; 17];
    for (bucket, count) in latencies {
        buckets[*bucket] += count;
    }
    let requests: u64 = buckets.iter().sum();
    json!({
        "minute": minute, "apiId": api, "applicationId": application, "requests": requests,
        "clientErrors": errors.0, "serverErrors": errors.1,
        "latencySumUs": requests * 500, "latencyBuckets": buckets,
    })
}

/// Posts a report as gateway process `boot` of `gateway`, with `secret` as bearer token.
async fn report(env: &InProcess, secret: &str, gateway: &str, boot: &str, rows: Vec<Value>) -> u16 {
    let body = json!({"gateway": gateway, "boot": boot, "rows": rows});
    env.api
        .send(env.api.request(Method::POST, ANALYTICS, secret).json(&body))
        .await
        .status
}

/// Reports add up across gateways and processes and never count twice; the figures are
/// the provider's and the tenant's administrators' only; hostile queries and reports are
/// refused with WSO2's error body while the legitimate ones are answered.
pub async fn reports_add_up_once_and_queries_are_bounded(env: InProcess) {
    let api = &env.api;
    api.add_user("alice", "alice-pw", &["creator", "publisher"])
        .await;
    api.add_user("bob", "bob-pw", &["creator", "publisher"])
        .await;
    api.add_user("root@acme.com", "root-pw", &["admin"]).await;
    let alice = api
        .login("alice", "alice-pw", harness::stack::ALL_SCOPES)
        .await;
    let charted = Steps::new(api, &alice)
        .create_api(&api_record("Charted", "http://127.0.0.1:9/"))
        .await
        .unwrap();
    let secret = std::fs::read_to_string(env.data_dir.join("gateway-secret")).unwrap();
    let secret = secret.trim();
    let minute = minute_now() - 5;

    // One gateway's totals so far: app-1 three fast and one slower, one of them 4xx; and
    // two refusals without an application.
    let first = vec![
        row(minute, &charted, "app-1", (1, 0), &[(3, 3), (6, 1)]),
        row(minute, &charted, "", (2, 0), &[(0, 2)]),
    ];
    assert_eq!(
        report(&env, secret, "gw-a", "boot-1", first.clone()).await,
        204
    );
    // Sent again (an acknowledgement lost): nothing more.
    assert_eq!(report(&env, secret, "gw-a", "boot-1", first).await, 204);
    // An older total arriving late: nothing less.
    let late = vec![row(minute, &charted, "app-1", (0, 0), &[(3, 2)])];
    assert_eq!(report(&env, secret, "gw-a", "boot-1", late).await, 204);
    // Another gateway, and the first one restarted: they add up.
    let other = vec![row(minute + 1, &charted, "app-1", (0, 1), &[(3, 5)])];
    assert_eq!(report(&env, secret, "gw-b", "boot-9", other).await, 204);
    let restarted = vec![row(minute, &charted, "app-1", (0, 0), &[(3, 1)])];
    assert_eq!(report(&env, secret, "gw-a", "boot-2", restarted).await, 204);

    let admin = ("admin", ADMIN_PASSWORD);
    let all = read(api, admin, &analytics_path(&charted, ""))
        .await
        .expect(200);
    let body = &all.body;
    assert_eq!(
        (
            &body["requests"],
            &body["errors"],
            &body["clientErrors"],
            &body["serverErrors"]
        ),
        (&json!(12), &json!(4), &json!(3), &json!(1)),
        "{body}"
    );
    assert_eq!(body["name"], "Charted");
    assert_eq!(body["provider"], "alice");
    assert_eq!(body["interval"], "1m");
    let per_application: BTreeMap<String, (u64, u64)> = body["applications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let id = a["applicationId"].as_str().unwrap_or("(none)").to_string();
            (
                id,
                (
                    a["requests"].as_u64().unwrap(),
                    a["errors"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(
        per_application,
        BTreeMap::from([("app-1".into(), (10, 2)), ("(none)".into(), (2, 2))])
    );
    let series = body["series"].as_array().unwrap();
    assert_eq!(series.len(), 60);
    let counted: Vec<u64> = series
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .filter(|n| *n > 0)
        .collect();
    assert_eq!(counted, [7, 5], "{series:?}");
    // 2 requests in bucket 0, 9 in bucket 3 (500 µs..1 ms), 1 in bucket 6 (5..10 ms): the
    // 6th (p50) lies in bucket 3, the 11.4th (p95) and the 11.88th (p99) in bucket 6.
    let latency = |figure: &str| body["latencyMs"][figure].as_f64().unwrap();
    let within = |figure: &str, bucket: usize| {
        let (low, high) = (
            BOUNDS_US[bucket - 1] as f64 / 1e3,
            BOUNDS_US[bucket] as f64 / 1e3,
        );
        let value = latency(figure);
        assert!(
            low <= value && value <= high,
            "{figure} {value} not in {low}..{high}"
        );
    };
    within("p50", 3);
    within("p95", 6);
    within("p99", 6);

    let one = read(
        api,
        admin,
        &analytics_path(&charted, "?applicationId=app-1"),
    )
    .await
    .expect(200);
    assert_eq!(
        (&one.body["requests"], &one.body["errors"]),
        (&json!(10), &json!(2))
    );
    assert_eq!(one.body["applications"].as_array().unwrap().len(), 1);

    who_may_read(api, &charted).await;
    hostile_queries_are_refused(api, &charted).await;
    hostile_reports_are_refused(&env, secret, &charted).await;
    // None of the refused reports counted.
    let still = read(api, admin, &analytics_path(&charted, ""))
        .await
        .expect(200);
    assert_eq!(still.body["requests"], 12);
}

/// The provider and the administrators of the API's tenant read it; another publisher of
/// the tenant is refused; another tenant's administrator is told it does not exist.
async fn who_may_read(api: &harness::Client, charted: &str) {
    let path = analytics_path(charted, "");
    read(api, ("alice", "alice-pw"), &path).await.expect(200);
    read(api, ("admin", ADMIN_PASSWORD), &path)
        .await
        .expect(200);
    read(api, ("bob", "bob-pw"), &path)
        .await
        .expect_error(403, "provider");
    read(api, ("root@acme.com", "root-pw"), &path)
        .await
        .expect_error(404, charted);
    read(api, ("admin", "wrong"), &path).await.expect(401);
    let missing = analytics_path("no-such-api", "");
    read(api, ("admin", ADMIN_PASSWORD), &missing)
        .await
        .expect_error(404, "no-such-api");
}

/// Bad ranges, ranges too long or too finely cut, bad ids and unknown parameters: 400.
async fn hostile_queries_are_refused(api: &harness::Client, charted: &str) {
    let admin = ("admin", ADMIN_PASSWORD);
    for (query, says) in [
        ("?from=yesterday", "RFC 3339"),
        (
            "?from=2026-02-02T00:00:00Z&to=2026-02-01T00:00:00Z",
            "before",
        ),
        (
            "?from=2000-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&interval=7d",
            "at most",
        ),
        (
            "?from=2026-02-01T00:00:00Z&to=2026-02-03T00:00:00Z&interval=1m",
            "points",
        ),
        ("?interval=2m", "interval"),
        ("?applicationId=%27%20OR%201%3D1", "applicationId"),
        ("?apiId=x", "Invalid query"),
    ] {
        read(api, admin, &analytics_path(charted, query))
            .await
            .expect_error(400, says);
    }
    // The legitimate twin of the longest: a day in minutes.
    let day = "?from=2026-02-01T00:00:00Z&to=2026-02-02T00:00:00Z&interval=1m";
    let answered = read(api, admin, &analytics_path(charted, day))
        .await
        .expect(200);
    assert_eq!(answered.body["series"].as_array().unwrap().len(), 1_440);
}

/// Reports without the secret are 401; reports that cannot be a gateway's are 400.
async fn hostile_reports_are_refused(env: &InProcess, secret: &str, charted: &str) {
    let minute = minute_now();
    let good = || vec![row(minute, charted, "app-1", (0, 0), &[(0, 1)])];
    assert_eq!(report(env, "", "gw-x", "b", good()).await, 401);
    assert_eq!(
        report(env, "not-the-secret", "gw-x", "b", good()).await,
        401
    );
    let mut unbalanced = row(minute, charted, "app-1", (0, 0), &[(0, 1)]);
    unbalanced["requests"] = json!(5);
    let too_many_errors = row(minute, charted, "app-1", (2, 0), &[(0, 1)]);
    let mut negative = row(minute, charted, "app-1", (0, 0), &[(0, 1)]);
    negative["requests"] = json!(-1);
    let future = row(minute + 24 * 60, charted, "app-1", (0, 0), &[(0, 1)]);
    let thousand_and_one = vec![row(minute, charted, "app-1", (0, 0), &[(0, 1)]); 1_001];
    for rows in [
        vec![unbalanced],
        vec![too_many_errors],
        vec![negative],
        vec![future],
        thousand_and_one,
    ] {
        assert_eq!(report(env, secret, "gw-x", "b", rows).await, 400);
    }
    assert_eq!(
        report(env, secret, "", "b", good()).await,
        400,
        "no gateway id"
    );
    // The legitimate twin, to another API so that the figures above stay.
    assert_eq!(
        report(
            env,
            secret,
            "gw-x",
            "b",
            vec![row(minute, "elsewhere", "app-1", (0, 0), &[(0, 1)])]
        )
        .await,
        204
    );
}

/// Calls the API `Warm` through `gateway` until admitted: published and subscribed to
/// last, it shows the gateway holds every change made before (changes reach gateways in
/// order), while the APIs under test have not been called.
async fn warmed_up(gateway: &harness::Client, token: &str) {
    eventually(
        gateway,
        Method::GET,
        "/warm/v1.0.0/devs/alice",
        token,
        |r| r.status == 200,
    )
    .await;
}

/// The analytics of `api` once its total reaches `requests` (reports come every 100 ms).
async fn analytics_reaching(stack: &Stack, api: &str, requests: u64) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = read(
            &stack.mgmt,
            ("admin", ADMIN_PASSWORD),
            &analytics_path(api, ""),
        )
        .await
        .expect(200);
        let counted = answer.body["requests"].as_u64().unwrap();
        if counted >= requests {
            return answer.body;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", answer.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One application's requests and errors in an answer (`None`: without application).
fn of_application(body: &Value, application: Option<&str>) -> (u64, u64, u64) {
    let found = body["applications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["applicationId"].as_str() == application)
        .unwrap_or_else(|| panic!("{application:?} not in {body}"));
    let n = |k: &str| found[k].as_u64().unwrap();
    (n("requests"), n("clientErrors"), n("serverErrors"))
}

/// A known sequence through a real gateway (admitted calls until the application's tier
/// throttles, two refused tokens, an unknown resource, a call to no API, a backend that
/// cannot be reached) gives exactly its counts per API and application, with percentiles
/// in the buckets the gateway's own histogram puts them; a second gateway's calls add up.
pub async fn gateway_traffic_is_charted_per_api_and_application(backend: Backend) {
    let reporting = [
        ("APIM_ANALYTICS_REPORT_MS", "100".to_string()),
        ("APIM_OPS_ADDR", "127.0.0.1:0".to_string()),
    ];
    let stack = Launch {
        database: backend,
        gateway: &reporting,
        ..Launch::default()
    }
    .start()
    .await;
    let charted = stack.api("Charted", json!({}), &["Publish"]).await;
    let dead = api_record("Broken", "http://127.0.0.1:1/")["endpointConfig"].clone();
    let broken = stack
        .api("Broken", json!({"endpointConfig": dead}), &["Publish"])
        .await;
    let (app, key, secret, _) = stack.application("Charting", "10PerMin", &[&charted]).await;
    let (other_app, other_key, other_secret, _) = stack
        .application("Unbounded", "Unlimited", &[&charted, &broken])
        .await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let other_token = stack.app_token(&other_key, &other_secret, &[]).await;
    let warm = stack.api("Warm", json!({}), &["Publish"]).await;
    stack
        .steps()
        .subscribe(&other_app, &warm, "Unlimited")
        .await
        .unwrap();
    warmed_up(&stack.gw, &other_token).await;

    let path = "/charted/v1.0.0/devs/alice";
    let mut admitted = 0;
    loop {
        let reply = stack.gw.get(path, &token).await;
        if reply.status == 429 {
            break;
        }
        assert_eq!(reply.status, 200, "{}", reply.body);
        admitted += 1;
        assert!(admitted <= 10, "10PerMin admitted more than 10");
    }
    assert_eq!(stack.gw.get(path, "").await.status, 401);
    assert_eq!(stack.gw.get(path, "not-a-token").await.status, 401);
    let unknown = stack
        .gw
        .get("/charted/v1.0.0/no-such-resource", &token)
        .await;
    assert!((400..500).contains(&unknown.status), "{}", unknown.status);
    assert_eq!(stack.gw.get("/nowhere/v1/x", &token).await.status, 404);
    let failed = stack
        .gw
        .get("/broken/v1.0.0/devs/alice", &other_token)
        .await;
    assert!(failed.status >= 500, "{}", failed.status);

    let expected = admitted + 4;
    let body = analytics_reaching(&stack, &charted, expected).await;
    assert_eq!(
        (
            &body["requests"],
            &body["clientErrors"],
            &body["serverErrors"]
        ),
        (&json!(expected), &json!(4), &json!(0)),
        "{body}"
    );
    assert_eq!(of_application(&body, Some(&app)), (admitted + 1, 1, 0));
    assert_eq!(of_application(&body, None), (3, 3, 0));
    percentiles_agree_with_the_gateways_histogram(&stack, &body).await;
    let broken_body = analytics_reaching(&stack, &broken, 1).await;
    assert_eq!(
        (&broken_body["requests"], &broken_body["serverErrors"]),
        (&json!(1), &json!(1))
    );

    // A second gateway: its calls add to the first's.
    let addr = format!("127.0.0.1:{}", harness::free_port());
    let control_plane = stack.control_plane.as_ref().unwrap();
    let second = harness::start_edge_gateway_with(
        control_plane,
        &stack.data_dir,
        &addr,
        &["gateway_id=second"],
        &reporting[..1],
    )
    .await;
    let second_gw = harness::Client::new(&second.url);
    warmed_up(&second_gw, &other_token).await;
    for _ in 0..3 {
        assert_eq!(second_gw.get(path, &other_token).await.status, 200);
    }
    let body = analytics_reaching(&stack, &charted, expected + 3).await;
    assert_eq!(body["requests"], expected + 3);
    assert_eq!(of_application(&body, Some(&other_app)), (3, 0, 0));
    assert_eq!(of_application(&body, Some(&app)), (admitted + 1, 1, 0));
}

/// p50, p95 and p99 lie within the bucket of the gateway's Prometheus histogram (the same
/// bounds, counting the same requests) that holds the request of their rank.
async fn percentiles_agree_with_the_gateways_histogram(stack: &Stack, body: &Value) {
    let ops = stack
        .gateway
        .announced("Serving operations")
        .expect("the operations listener is announced");
    let text = reqwest::get(format!("{ops}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // Its buckets, cumulative: (upper bound in seconds, requests up to it).
    let cumulative: Vec<(f64, f64)> = text
        .lines()
        .filter(|line| line.starts_with("apim_gateway_request_duration_seconds_bucket{"))
        .filter(|line| line.contains(r#"api="Charted""#))
        .filter_map(|line| {
            let le = line.split("le=\"").nth(1)?.split('"').next()?;
            let count = line.rsplit_once(' ')?.1;
            Some((le.parse().unwrap_or(f64::INFINITY), count.parse().ok()?))
        })
        .collect();
    assert!(!cumulative.is_empty(), "no histogram of Charted in\n{text}");
    let total = cumulative[cumulative.len() - 1].1;
    assert_eq!(total, body["requests"].as_f64().unwrap());
    for (figure, fraction) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)] {
        let rank = fraction * total;
        let at = cumulative.iter().position(|(_, n)| *n >= rank).unwrap();
        let low = if at == 0 {
            0.0
        } else {
            cumulative[at - 1].0 * 1e3
        };
        let high = cumulative[at].0 * 1e3;
        let value = body["latencyMs"][figure].as_f64().unwrap();
        assert!(
            low - 1e-6 <= value && (value <= high + 1e-6 || high.is_infinite()),
            "{figure} {value} ms not in {low}..{high}"
        );
    }
}
