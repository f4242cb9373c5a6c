//! Gateways that connect out: current as soon as they reach the control plane, whatever
//! the pushes did meanwhile, and listed for the operator.

use std::time::{Duration, Instant};

use harness::stack::Stack;
use reqwest::Method;
use serde_json::json;

/// Deployed as operators do (control plane first, the gateway 30 s later, after the
/// pushes to it have failed and backed off), a publish made right after the gateway came
/// up is served within a second; the admin API lists the gateway, current.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_started_late_serves_a_new_publish_within_a_second() {
    let stack = Stack::start_late(Duration::from_secs(30)).await;
    let id = stack.api("Late", json!({}), &["Publish"]).await;
    let published = Instant::now();
    let path = "/late/v1.0.0/devs/alice";
    loop {
        // Without a token: 401 once the route is known, 404 before.
        let reply = stack.gw.get(path, "").await;
        if reply.status != 404 {
            assert_eq!(reply.status, 401, "{}", reply.body);
            break;
        }
        assert!(
            published.elapsed() < Duration::from_secs(1),
            "API {id} was still unknown to the gateway a second after its publish"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("live {:?} after the publish", published.elapsed());

    let gateways = "/api/am/admin/v0.14/gateways";
    let admin = ("admin", harness::ADMIN_PASSWORD);
    // It checks in with the version it holds as it asks for the next change.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let listed = stack
            .mgmt
            .basic(Method::GET, gateways, admin, None)
            .await
            .expect(200);
        let gateway = &listed.body["list"][0];
        assert_eq!(gateway["id"], "apim-gateway", "{}", listed.body);
        assert!(gateway["silentFor"].as_i64().unwrap() <= 30);
        if gateway["lag"] == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "still behind: {}", listed.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The fleet is the platform's business.
    stack
        .mgmt
        .basic(Method::GET, gateways, ("nobody", "x"), None)
        .await
        .expect(401);
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}

/// On Spin no loop keeps the gateway current: requests catch up, after their answer, at
/// most once per `catch_up_interval_ms`. Modelled on edge-gateway hosting the component as
/// Spin does ([`harness::stack::spin_like`]: its own loop off, the `wasi:http` path, one
/// instance per request, a SQLite store) and no pushes: a publish is served
/// once requests have come in for an interval, and the gateway is listed as it pulls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_loop_requests_catch_up() {
    let stack = Stack::start_configured(
        &["gateway_id=spin-like", "catch_up_interval_ms=200"],
        &harness::stack::spin_like(&harness::temp_dir()),
        &[("APIM_GATEWAYS", String::new())],
    )
    .await;
    let path = "/caught/v1.0.0/devs/alice";
    stack.gw.get(path, "").await.expect(404);
    stack.api("Caught", json!({}), &["Publish"]).await;
    let published = Instant::now();
    harness::wait_until(
        "the publish, caught up by requests",
        Duration::from_secs(5),
        async || stack.gw.get(path, "").await.status == 401,
    )
    .await;
    let took = published.elapsed();
    eprintln!("live {took:?} after the publish, by requests catching up");
    assert!(took < Duration::from_secs(1), "{took:?}");

    let admin = ("admin", harness::ADMIN_PASSWORD);
    let listed = stack
        .mgmt
        .basic(Method::GET, "/api/am/admin/v0.14/gateways", admin, None)
        .await
        .expect(200);
    let ids: Vec<&str> = listed.body["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["id"].as_str())
        .collect();
    assert_eq!(ids, ["spin-like"], "{}", listed.body);
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}
