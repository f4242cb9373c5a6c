//! Operating the platform: the operations listeners' health and metrics on both
//! planes, and the gateway's access log, checked against known sequences of requests.
//! Metrics are compared before and after a sequence, so the counts are exactly what the
//! sequence must add, whatever came before it (waiting for pushes, logging in).

use std::collections::BTreeMap;
use std::time::Duration;

use harness::stack::{Core, Launch, Stack};
use harness::{Backend, ServerProcess, eventually, wait_until};
use reqwest::Method;
use serde_json::{Value, json};

use crate::Env;

/// The operations listener on a free port.
pub(crate) fn ops_setting() -> (&'static str, String) {
    ("APIM_OPS_ADDR", "127.0.0.1:0".to_string())
}

/// The base URL of `process`'s operations listener.
pub(crate) fn ops_url(process: &ServerProcess) -> String {
    process
        .announced("Serving operations")
        .expect("the operations listener is announced")
}

/// The status and body of `GET {base}{path}`.
async fn get(base: &str, path: &str) -> (u16, String) {
    let response = reqwest::get(format!("{base}{path}")).await.expect("GET");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// The samples of an exposition: `name{labels}` to value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// A scrape of `/metrics` at `ops`.
pub(crate) async fn scrape(ops: &str) -> BTreeMap<String, f64> {
    let (status, text) = get(ops, "/metrics").await;
    assert_eq!(status, 200, "{text}");
    samples(&text)
}

/// How much `series` grew between two scrapes.
fn grew(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>, series: &str) -> f64 {
    after.get(series).copied().unwrap_or_default() - before.get(series).copied().unwrap_or_default()
}

/// Asserts each series grew by exactly its count.
pub(crate) fn assert_grew(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    expected: &[(&str, f64)],
) {
    for (series, count) in expected {
        assert_eq!(
            grew(before, after, series),
            *count,
            "{series}: expected +{count}; now {:?}",
            after
                .iter()
                .filter(|(k, _)| k.contains(series.split('{').next().unwrap()))
                .collect::<Vec<_>>()
        );
    }
}

/// The control plane's health and readiness, and its counts of a known sequence of
/// management requests; on PostgreSQL, readiness follows the database going away and
/// coming back.
pub async fn control_plane_health_and_metrics(mut env: Env) {
    env.restart_with(&[ops_setting()]).await;
    let ops = ops_url(&env.control_plane);
    assert_eq!(
        get(&ops, "/healthz").await,
        (200, r#"{"status":"alive"}"#.into())
    );
    assert_eq!(
        get(&ops, "/readyz").await,
        (200, r#"{"status":"ready"}"#.into())
    );
    // Nothing else answers there, and none of it is on the management listener.
    assert_eq!(get(&ops, "/api/am/publisher/v0.14/apis").await.0, 404);
    for path in ["/metrics", "/healthz", "/readyz"] {
        let (status, body) = get(&env.control_plane.url, path).await;
        assert_eq!(status, 404, "{path} is not on the management listener");
        assert!(!body.contains("apim_"), "{body}");
    }

    let before = scrape(&ops).await;
    let token = env
        .api
        .login("admin", harness::ADMIN_PASSWORD, "mgr:api_view")
        .await;
    for _ in 0..2 {
        env.api
            .get("/api/am/publisher/v0.14/apis", &token)
            .await
            .expect(200);
    }
    env.api
        .get("/api/am/publisher/v0.14/apis", "")
        .await
        .expect(401);
    env.api
        .get("/api/am/publisher/v0.14/apis/no-such-api", &token)
        .await
        .expect(404);
    env.api.get("/not/a/route", &token).await.expect(404);
    let client = env
        .api
        .register("admin", harness::ADMIN_PASSWORD, "observed-client")
        .await
        .expect(200);
    env.api
        .password_token(&client, "admin", "wrong-password", "")
        .await
        .expect(400);
    let after = scrape(&ops).await;
    let apis = r#"route="/api/am/publisher/v0.14/apis""#;
    let api = r#"route="/api/am/publisher/v0.14/apis/{api_id}""#;
    assert_grew(
        &before,
        &after,
        &[
            (
                &format!(r#"apim_mgmt_requests_total{{method="GET",{apis},status="200"}}"#),
                2.0,
            ),
            (
                &format!(r#"apim_mgmt_requests_total{{method="GET",{apis},status="401"}}"#),
                1.0,
            ),
            (
                &format!(r#"apim_mgmt_requests_total{{method="GET",{api},status="404"}}"#),
                1.0,
            ),
            (
                r#"apim_mgmt_requests_total{method="GET",route="unmatched",status="404"}"#,
                1.0,
            ),
            (r#"apim_tokens_issued_total{grant="password"}"#, 1.0),
            ("apim_login_failures_total", 1.0),
        ],
    );
    assert!(
        after
            .keys()
            .all(|series| !series.contains("no-such-api") && !series.contains("/not/a")),
        "raw paths are never labels"
    );
    assert!(after["apim_db_pool_connections"] >= 1.0);
    assert!(after.contains_key("apim_manifest_version"));

    if let Backend::Postgres { name, .. } = &env.backend {
        readiness_follows_postgres(&ops, name).await;
    }
}

/// With `database` refusing connections (and its open ones ended) the control plane is
/// not ready; once it takes them again, it is.
async fn readiness_follows_postgres(ops: &str, database: &str) {
    use sqlx::Connection as _;
    let mut admin = sqlx::PgConnection::connect(&harness::postgres_admin_url())
        .await
        .expect("PostgreSQL");
    let set = |allowed: bool| format!("ALTER DATABASE {database} ALLOW_CONNECTIONS {allowed}");
    sqlx::query(&set(false)).execute(&mut admin).await.unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(database)
        .execute(&mut admin)
        .await
        .unwrap();
    assert_eq!(
        answers_in_time(ops, "/readyz", 503).await,
        r#"{"status":"unavailable"}"#
    );
    // Alive all the same: restarting it would not bring the database back.
    assert_eq!(get(ops, "/healthz").await.0, 200);
    sqlx::query(&set(true)).execute(&mut admin).await.unwrap();
    answers_in_time(ops, "/readyz", 200).await;
}

/// Asks `GET {base}{path}` until it answers `status` (within 20 s); the body. (A loop of
/// its own: `wait_until`'s closure is not `Send`, which scenarios on both databases are.)
async fn answers_in_time(base: &str, path: &str, status: u16) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (answered, body) = get(base, path).await;
        if answered == status {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} kept answering {answered}, not {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The access-log lines of API calls and refusals `gateway` printed after its output had
/// `from` bytes (the control plane's calls of the gateway's own endpoints, which carry
/// neither an API nor a fault, come meanwhile).
fn access_lines(gateway: &ServerProcess, from: usize) -> Vec<Value> {
    gateway.output()[from..]
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line.get("resource").is_some())
        .filter(|line| line["api"] != "" || !line["fault_code"].is_null())
        .collect()
}

/// A known sequence through the gateway — calls until the application tier throttles,
/// one without a token, one with a forged token, one to no API — counted exactly in its
/// metrics and logged a line each; the health and metrics paths are not the gateway's
/// public paths, and an API published at `/metrics` takes only its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_metrics_and_access_log_follow_a_known_sequence() {
    let stack = Launch {
        gateway: &[ops_setting()],
        ..Launch::default()
    }
    .start()
    .await;
    let ops = ops_url(&stack.gateway);
    assert_eq!(get(&ops, "/healthz").await.0, 200);
    assert_eq!(get(&ops, "/readyz").await.0, 200);
    let api = stack.api("Observed", json!({}), &["Publish"]).await;
    let (app, key, secret, _) = stack.application("Observing", "10PerMin", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/observed/v1.0.0/devs/alice";
    eventually(&stack.gw, Method::GET, path, &token, |r| r.status == 200).await;

    // The lines of the calls so far are written within the access log's flush interval.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = scrape(&ops).await;
    let logged_from = stack.gateway.output().len();
    let mut admitted = 0.0;
    loop {
        let reply = stack.gw.get(path, &token).await;
        if reply.status == 429 {
            assert_eq!(reply.fault_code(), "900803");
            break;
        }
        assert_eq!(reply.status, 200, "{}", reply.body);
        admitted += 1.0;
        assert!(admitted <= 10.0, "10PerMin admitted more than 10");
    }
    assert_eq!(stack.gw.get(path, "").await.fault_code(), "900902");
    let forged = stack.gw.get(path, "not-a-token").await;
    assert_eq!((forged.status, forged.fault_code()), (401, "900901"));
    assert_eq!(stack.gw.get("/nowhere/v1/x", &token).await.status, 404);
    let after = scrape(&ops).await;

    let labels = |class: &str, application: &str| {
        format!(
            r#"apim_gateway_requests_total{{api="Observed",version="v1.0.0",resource="/devs/{{username}}",application="{application}",method="GET",class="{class}"}}"#
        )
    };
    assert_grew(
        &before,
        &after,
        &[
            (&labels("2xx", &app), admitted),
            (&labels("4xx", &app), 1.0),
            (&labels("4xx", ""), 2.0),
            (
                r#"apim_gateway_requests_total{api="",version="",resource="",application="",method="GET",class="4xx"}"#,
                1.0,
            ),
            (
                r#"apim_gateway_refusals_total{status="429",code="900803"}"#,
                1.0,
            ),
            (
                r#"apim_gateway_refusals_total{status="401",code="900901"}"#,
                1.0,
            ),
            (
                r#"apim_gateway_refusals_total{status="401",code="900902"}"#,
                1.0,
            ),
            (
                r#"apim_gateway_throttled_total{limit="application_tier"}"#,
                1.0,
            ),
            (
                r#"apim_gateway_backend_duration_seconds_count{api="Observed",version="v1.0.0"}"#,
                admitted,
            ),
            (
                r#"apim_gateway_request_duration_seconds_count{api="Observed",version="v1.0.0"}"#,
                admitted + 3.0,
            ),
            (r#"apim_gateway_backend_errors_total{kind="timeout"}"#, 0.0),
        ],
    );
    assert!(after["apim_gateway_manifest_version"] >= 1.0);
    assert!(after["apim_gateway_instantiations_total"] >= 1.0);
    let text = get(&ops, "/metrics").await.1;
    assert!(
        !text.contains(&token) && !text.contains("alice"),
        "no token or user as a label"
    );

    // One line per request of the sequence, in order.
    let expected = admitted as usize + 4;
    wait_until(
        "the access log is written",
        Duration::from_secs(5),
        async || access_lines(&stack.gateway, logged_from).len() >= expected,
    )
    .await;
    let lines = access_lines(&stack.gateway, logged_from);
    assert_eq!(lines.len(), expected, "{lines:#?}");
    let first = &lines[0];
    assert_eq!(first["api"], "Observed");
    assert_eq!(first["version"], "v1.0.0");
    assert_eq!(first["resource"], "/devs/{username}");
    assert_eq!(first["application"], app.as_str());
    assert_eq!(first["key_type"], "PRODUCTION");
    assert_eq!(first["method"], "GET");
    assert_eq!(first["status"], 200);
    assert_eq!(first["fault_code"], Value::Null);
    assert!(
        first["user"]
            .as_str()
            .is_some_and(|user| user.starts_with("admin")),
        "{first}"
    );
    assert!(
        first["client"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{first}"
    );
    assert!(first["duration_ms"].as_f64().unwrap() >= first["backend_ms"].as_f64().unwrap());
    assert!(first["time"].as_str().unwrap().ends_with('Z'), "{first}");
    let refusals: Vec<_> = lines[admitted as usize..]
        .iter()
        .map(|line| {
            (
                line["status"].as_u64().unwrap(),
                line["fault_code"].clone(),
                line["api"].clone(),
            )
        })
        .collect();
    assert_eq!(
        refusals,
        [
            (429, json!(900803), json!("Observed")),
            (401, json!(900902), json!("Observed")),
            (401, json!(900901), json!("Observed")),
            (404, json!(404), json!("")),
        ]
    );
    assert!(
        !stack.gateway.output().contains("not-a-token"),
        "tokens are never logged"
    );

    operations_paths_are_not_public(&stack, &ops, &token).await;
}

/// The gateway's public listener does not serve the operations paths; an API whose
/// context is `/metrics` is reached there, and the operations listener still serves the
/// metrics.
async fn operations_paths_are_not_public(stack: &Stack, ops: &str, token: &str) {
    for path in ["/metrics", "/healthz", "/readyz", "/_apim/metrics"] {
        let reply = stack.gw.get(path, token).await;
        assert!(
            matches!(reply.status, 401 | 404),
            "{path}: {}",
            reply.status
        );
        assert!(
            !reply.body.to_string().contains("apim_gateway"),
            "{path}: {}",
            reply.body
        );
    }
    let shadow = stack
        .api("Shadow", json!({"context": "/metrics"}), &["Publish"])
        .await;
    let (_, key, secret, _) = stack
        .application("Shadowing", "Unlimited", &[&shadow])
        .await;
    let shadow_token = stack.app_token(&key, &secret, &[]).await;
    let reached = eventually(
        &stack.gw,
        Method::GET,
        "/metrics/v1.0.0/devs/x",
        &shadow_token,
        |r| r.status == 200,
    )
    .await;
    assert!(!reached.body.to_string().contains("apim_gateway"));
    let (status, text) = get(ops, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        text.contains(r#"apim_gateway_requests_total{api="Shadow""#),
        "{text}"
    );
}

/// A gateway that cannot reach its control plane is alive but not ready; once the control
/// plane is back and the gateway holds its manifest, it is ready. (Its access log is off.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_readiness_waits_for_a_manifest() {
    let port = harness::free_port();
    let mgmt = ("APIM_MGMT_ADDR", format!("127.0.0.1:{port}"));
    let core = Core::start(
        &Backend::Sqlite,
        harness::temp_dir(),
        std::slice::from_ref(&mgmt),
    )
    .await;
    let settings = [
        ("APIM_GATEWAY_ADDR", "127.0.0.1:0".to_string()),
        ops_setting(),
        // Serve at once, without waiting for a manifest.
        ("APIM_FIRST_SYNC_TIMEOUT_MS", "0".to_string()),
        ("APIM_ACCESS_LOG", "off".to_string()),
    ];
    let env = harness::gateway_env(&core.control_plane, &core.data_dir, &settings).await;
    let data_dir = core.data_dir.clone();
    core.control_plane.stop().await;

    let gateway = ServerProcess::start(&harness::binary("edge-gateway"), &env).await;
    let ops = ops_url(&gateway);
    assert_eq!(get(&ops, "/healthz").await.0, 200);
    assert_eq!(
        get(&ops, "/readyz").await,
        (503, r#"{"status":"unavailable"}"#.into())
    );
    assert_eq!(scrape(&ops).await["apim_gateway_manifest_version"], -1.0);

    let _control_plane = harness::start_control_plane(&Backend::Sqlite, &data_dir, &[mgmt]).await;
    wait_until(
        "the gateway is ready",
        Duration::from_secs(20),
        async || get(&ops, "/readyz").await.0 == 200,
    )
    .await;
    assert!(scrape(&ops).await["apim_gateway_manifest_version"] >= 0.0);
    // Its access log is off: requests are counted, and no line is written.
    let (refused, _) = get(&gateway.url, "/nowhere/v1/x").await;
    assert_eq!(refused, 404);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(access_lines(&gateway, 0).is_empty(), "{}", gateway.output());
    let counted = r#"apim_gateway_requests_total{api="",version="",resource="",application="",method="GET",class="4xx"}"#;
    assert_eq!(scrape(&ops).await[counted], 1.0);
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// On Spin the component writes the access log itself (`access_log=on`, as spin.toml
/// sets it): run on edge-gateway's component path, which passes the component's output
/// on, with the host's own log off, each request gets one line of the same shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_component_writes_the_access_log_where_it_forwards_itself() {
    let settings = [
        ("APIM_HOST_FORWARDING", "false".to_string()),
        ("APIM_ACCESS_LOG", "off".to_string()),
    ];
    let stack = Stack::start_with(&["access_log=on"], &settings).await;
    let api = stack.api("Spun", json!({}), &["Publish"]).await;
    let (app, key, secret, _) = stack.application("Spinning", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/spun/v1.0.0/devs/alice";
    eventually(&stack.gw, Method::GET, path, &token, |r| r.status == 200).await;
    let logged_from = stack.gateway.output().len();
    stack.gw.get(path, &token).await.expect(200);
    assert_eq!(stack.gw.get(path, "").await.fault_code(), "900902");
    wait_until(
        "the component's lines",
        Duration::from_secs(5),
        async || access_lines(&stack.gateway, logged_from).len() >= 2,
    )
    .await;
    let lines = access_lines(&stack.gateway, logged_from);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(
        (
            &lines[0]["api"],
            &lines[0]["application"],
            &lines[0]["status"]
        ),
        (&json!("Spun"), &json!(app), &json!(200))
    );
    assert_eq!(lines[0]["resource"], "/devs/{username}");
    assert_eq!(
        (&lines[1]["status"], &lines[1]["fault_code"]),
        (&json!(401), &json!(900902))
    );
}

/// A stack whose control plane and gateway both serve their operations listeners.
async fn with_operations_listeners() -> Stack {
    Launch {
        gateway: &[ops_setting()],
        control_plane: &[ops_setting()],
        ..Launch::default()
    }
    .start()
    .await
}

/// How far gateways are behind, seen from both planes, and the pages gateways refused:
/// the gateway's lag and last sync, the control plane's per-gateway lag and silence, and
/// its count of refusal reports (only those that prove the gateway secret).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lag_and_refused_pages_are_metrics_on_both_planes() {
    let stack = with_operations_listeners().await;
    let control_plane = stack.control_plane.as_ref().expect("running");
    let (gateway_ops, control_ops) = (ops_url(&stack.gateway), ops_url(control_plane));
    let api = stack.api("Lagging", json!({}), &["Publish"]).await;
    let (_, key, secret, _) = stack.application("Lagger", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/lagging/v1.0.0/devs/alice";
    eventually(&stack.gw, Method::GET, path, &token, |r| r.status == 200).await;

    let fleet = r#"{gateway="apim-gateway",environment=""}"#;
    let lag = format!("apim_fleet_lag_versions{fleet}");
    wait_until(
        "both planes see the gateway current",
        Duration::from_secs(20),
        async || {
            let (gateway, control) = (scrape(&gateway_ops).await, scrape(&control_ops).await);
            control.get(&lag) == Some(&0.0)
                && gateway.get("apim_gateway_manifest_version")
                    == control.get("apim_manifest_version")
        },
    )
    .await;
    let gateway = scrape(&gateway_ops).await;
    assert_eq!(gateway["apim_gateway_manifest_lag"], 0.0);
    assert!(gateway["apim_gateway_manifest_synced_timestamp_seconds"] > 1.7e9);
    let control = scrape(&control_ops).await;
    assert!(control.contains_key(&format!("apim_fleet_silent_seconds{fleet}")));

    let before = scrape(&control_ops).await;
    let report = json!({"after": 3, "snapshot": false, "reason": "signature does not verify"});
    let secret = std::fs::read_to_string(stack.data_dir.join("gateway-secret")).unwrap();
    let report_path = "/internal/gateway/report";
    stack
        .mgmt
        .post_json(report_path, "not-the-secret", &report)
        .await
        .expect(401);
    for _ in 0..2 {
        stack
            .mgmt
            .post_json(report_path, secret.trim(), &report)
            .await
            .expect(204);
    }
    let after = scrape(&control_ops).await;
    assert_grew(
        &before,
        &after,
        &[(r#"apim_manifest_pages_refused_total{gateway="pull"}"#, 2.0)],
    );
}

/// `/metrics` on both planes is the Prometheus text format unless OpenMetrics is asked
/// for, and `promtool check metrics` (Prometheus's linter) finds nothing in it; a scraper
/// that prefers OpenMetrics gets it, ending with `# EOF`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_pass_promtool_on_both_planes() {
    let stack = with_operations_listeners().await;
    let control_plane = stack.control_plane.as_ref().expect("running");
    let api = stack.api("Linted", json!({}), &["Publish"]).await;
    let (_, key, secret, _) = stack.application("Linter", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/linted/v1.0.0/devs/alice";
    eventually(&stack.gw, Method::GET, path, &token, |r| r.status == 200).await;
    stack
        .gw
        .get("/linted/v1.0.0/nowhere/../x", "not-a-token")
        .await;

    for ops in [ops_url(&stack.gateway), ops_url(control_plane)] {
        let client = reqwest::Client::new();
        let plain = client.get(format!("{ops}/metrics")).send().await.unwrap();
        let content_type = plain.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
        let text = plain.text().await.unwrap();
        assert!(text.contains("_total"), "{text}");
        let (clean, said) = promtool_check_metrics(&text).await;
        assert!(clean && said.is_empty(), "promtool on {ops}:\n{said}");

        let prometheus_accept = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        let open = client
            .get(format!("{ops}/metrics"))
            .header("accept", prometheus_accept)
            .send()
            .await
            .unwrap();
        let content_type = open.headers()["content-type"].to_str().unwrap().to_string();
        assert!(content_type.starts_with("application/openmetrics-text; version=1.0.0"));
        assert!(open.text().await.unwrap().ends_with("# EOF\n"));
    }
    stack.gateway.stop().await;
}

/// Whether `promtool check metrics` passes `text`, and what it said.
async fn promtool_check_metrics(text: &str) -> (bool, String) {
    use tokio::io::AsyncWriteExt as _;
    let mut child = tokio::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus; run-tests installs it)");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said.trim().to_string())
}
