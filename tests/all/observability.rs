//! Operating the platform (issue 23): the operations listener's health and metrics,
//! checked against known sequences of requests.
//! Metrics are compared before and after a sequence, so the counts are exactly what the
//! sequence must add, whatever came before it (waiting for pushes, logging in).

use std::collections::BTreeMap;
use std::time::Duration;

use harness::{Backend, ServerProcess};

use crate::Env;

/// The operations listener on a free port.
fn ops_setting() -> (&'static str, String) {
    ("APIM_OPS_ADDR", "127.0.0.1:0".to_string())
}

/// The base URL of `process`'s operations listener.
fn ops_url(process: &ServerProcess) -> String {
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
async fn scrape(ops: &str) -> BTreeMap<String, f64> {
    let (status, text) = get(ops, "/metrics").await;
    assert_eq!(status, 200, "{text}");
    samples(&text)
}

/// How much `series` grew between two scrapes.
fn grew(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>, series: &str) -> f64 {
    after.get(series).copied().unwrap_or_default() - before.get(series).copied().unwrap_or_default()
}

/// Asserts each series grew by exactly its count.
fn assert_grew(
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
