//! The whole platform: control plane and edge gateway as real processes, a real backend,
//! the spec §5 flow through `{gateway_url}`, and every failure the gateway reports.

use std::time::Duration;

use harness::stack::Stack;
use harness::steps::TokenType;
use harness::{Client, Reply, STORE, eventually};
use serde_json::json;

#[track_caller]
fn expect_fault(reply: &Reply, status: u16, code: &str) {
    assert_eq!(
        (reply.status, reply.fault_code()),
        (status, code),
        "body: {}",
        reply.body
    );
}

/// Here the backend timeout is edge-gateway's own setting; the others set the component's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_flow_and_every_gateway_failure() {
    spec_flow(&[("APIM_BACKEND_TIMEOUT_MS", "1000".into())]).await;
}

/// The same with the component forwarding through `wasi:http`, as it does on Spin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_flow_with_the_component_forwarding() {
    spec_flow(&[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// The same with the component hosted as Spin hosts it: a fresh instance per request,
/// forwarding through `wasi:http`, every key (manifest, counters, verified tokens) in a
/// SQLite file as Spin's default store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_flow_in_the_spin_like_mode() {
    spec_flow(&harness::stack::spin_like(&harness::temp_dir())).await;
}

/// The same with the gateway's WASIp3 artefact, hosted with instance reuse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_flow_with_the_p3_artefact() {
    spec_flow(&harness::p3_settings()).await;
}

/// The spec flow and every failure the gateway reports, with edge-gateway `settings`, on
/// a backend timeout of one second (edge-gateway's `APIM_BACKEND_TIMEOUT_MS` when the
/// settings give it, else the component's `backend_timeout_ms`).
async fn spec_flow(settings: &[(&'static str, String)]) {
    let own_timeout = settings
        .iter()
        .any(|(name, _)| *name == "APIM_BACKEND_TIMEOUT_MS");
    let vars: &[&str] = if own_timeout {
        &[]
    } else {
        &["backend_timeout_ms=1000"]
    };
    let stack = Stack::start_with(vars, settings).await;
    let gw = &stack.gw;
    let get = reqwest::Method::GET;

    // Publish, subscribe, keys, token: the API is invocable without restarting anything.
    let dev = stack
        .api(
            "DevApi",
            json!({"corsConfiguration": {
        "corsConfigurationEnabled": true, "accessControlAllowOrigins": ["*"],
        "accessControlAllowHeaders": ["authorization"], "accessControlAllowMethods": ["GET"],
        "accessControlAllowCredentials": false}}),
            &["Publish"],
        )
        .await;
    // JWTs: an expired one is 900903 whether or not the gateway met it before (an opaque
    // token it never met is only unknown once expired, 900901: token_types.rs).
    let (_, key, secret, subscriptions) = stack
        .typed_application("Consumer", "Unlimited", TokenType::Jwt, &[&dev])
        .await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let reply = eventually(
        gw,
        get.clone(),
        "/devapi/v1.0.0/devs/alice?tab=repos",
        &token,
        |r| r.status == 200,
    )
    .await;
    assert_eq!(reply.body["path"], "/devs/alice");
    assert_eq!(reply.body["query"], "tab=repos");
    // endpointSecurity replaces the client's token; X-Forwarded-For names the client.
    assert_eq!(
        reply.body["headers"]["authorization"],
        "Basic YmFja2VuZDpiYWNrZW5kLXNlY3JldA=="
    );
    assert!(
        reply.body["headers"]["x-forwarded-for"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1")
    );
    let preflight = gw
        .send(
            gw.request(reqwest::Method::OPTIONS, "/devapi/v1.0.0/devs/alice", "")
                .header("origin", "http://portal.example")
                .header("access-control-request-method", "GET"),
        )
        .await;
    assert_eq!(preflight.status, 200);
    assert_eq!(preflight.headers["access-control-allow-origin"], "*");

    // Authentication faults.
    let path = "/devapi/v1.0.0/devs/alice";
    let reply = gw.get(path, "").await;
    expect_fault(&reply, 401, "900902");
    assert!(reply.headers.contains_key("www-authenticate"));
    assert_eq!(reply.headers["content-type"], "application/xml");
    expect_fault(&gw.get(path, "not-a-token").await, 401, "900901");
    let json = gw
        .send(
            gw.request(get.clone(), path, "")
                .header("accept", "application/json"),
        )
        .await;
    assert_eq!(json.body["fault"]["code"], 900902);
    let brief = stack
        .app_token(&key, &secret, &[("validity_period", "1")])
        .await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    expect_fault(&gw.get(path, &brief).await, 401, "900903");
    let (_, other_key, other_secret, _) = stack.application("Stranger", "Unlimited", &[]).await;
    let stranger = stack.app_token(&other_key, &other_secret, &[]).await;
    expect_fault(
        &eventually(gw, get.clone(), path, &stranger, |r| r.status != 401).await,
        403,
        "900908",
    );

    // Resources: wrong method, unknown resource, unknown API.
    let put = gw
        .send(gw.request(reqwest::Method::PUT, path, &token))
        .await;
    expect_fault(&put, 403, "900906");
    expect_fault(
        &gw.get("/devapi/v1.0.0/nothing/here", &token).await,
        404,
        "404",
    );
    expect_fault(&gw.get("/no-such-api/v1/devs", &token).await, 404, "404");

    // Throttling: the application tier (10PerMin) and the API's maxTps.
    let limited_api = stack.api("Limited", json!({}), &["Publish"]).await;
    let (_, lkey, lsecret, _) = stack
        .application("Limited", "10PerMin", &[&limited_api])
        .await;
    let limited = stack.app_token(&lkey, &lsecret, &[]).await;
    eventually(gw, get.clone(), "/limited/v1.0.0/devs/a", &limited, |r| {
        r.status == 200
    })
    .await;
    let mut statuses = Vec::new();
    for _ in 0..12 {
        statuses.push(gw.get("/limited/v1.0.0/devs/a", &limited).await);
    }
    let throttled = statuses
        .iter()
        .find(|r| r.status == 429)
        .expect("the 11th call in a minute is throttled");
    expect_fault(throttled, 429, "900803");
    assert!(throttled.body.as_str().unwrap().contains("nextAccessTime"));
    let tps_api = stack
        .api(
            "Tps",
            json!({"maxTps": {"production": 1, "sandbox": 1}}),
            &["Publish"],
        )
        .await;
    let (_, tkey, tsecret, _) = stack.application("TpsApp", "Unlimited", &[&tps_api]).await;
    let tps_token = stack.app_token(&tkey, &tsecret, &[]).await;
    eventually(gw, get.clone(), "/tps/v1.0.0/devs/a", &tps_token, |r| {
        r.status == 200 || r.status == 503
    })
    .await;
    let mut rejected = None;
    for _ in 0..5 {
        let reply = gw.get("/tps/v1.0.0/devs/a", &tps_token).await;
        if reply.status == 503 {
            rejected = Some(reply);
        }
    }
    expect_fault(&rejected.expect("maxTps 1 refuses a burst"), 503, "900801");

    // Lifecycle: BLOCKED answers 503 700700; CREATED and RETIRED are not deployed.
    stack.lifecycle(&dev, "Block").await;
    expect_fault(
        &eventually(gw, get.clone(), path, &token, |r| r.status == 503).await,
        503,
        "700700",
    );
    stack.lifecycle(&dev, "Re-Publish").await;
    eventually(gw, get.clone(), path, &token, |r| r.status == 200).await;
    stack.api("Draft", json!({}), &[]).await;
    expect_fault(&gw.get("/draft/v1.0.0/devs/a", &token).await, 404, "404");
    stack.lifecycle(&tps_api, "Deprecate").await;
    stack.lifecycle(&tps_api, "Retire").await;
    expect_fault(
        &eventually(gw, get.clone(), "/tps/v1.0.0/devs/a", &tps_token, |r| {
            r.status == 404
        })
        .await,
        404,
        "404",
    );

    // Backend failures: 502 when unreachable, 504 when too slow.
    let closed = harness::free_port();
    let down = stack
        .api("Down", json!({"endpointConfig": json!({"production_endpoints": {"url": format!("http://127.0.0.1:{closed}/")}, "endpoint_type": "http"}).to_string()}), &["Publish"])
        .await;
    let slow_swagger =
        json!({"swagger": "2.0", "paths": {"/slow": {"get": {"x-auth-type": "None"}}}}).to_string();
    stack
        .api("Slow", json!({"apiDefinition": slow_swagger}), &["Publish"])
        .await;
    let (_, dkey, dsecret, _) = stack.application("DownApp", "Unlimited", &[&down]).await;
    let down_token = stack.app_token(&dkey, &dsecret, &[]).await;
    expect_fault(
        &eventually(gw, get.clone(), "/down/v1.0.0/devs/a", &down_token, |r| {
            r.status != 403 && r.status != 404
        })
        .await,
        502,
        "101503",
    );
    expect_fault(
        &eventually(gw, get.clone(), "/slow/v1.0.0/slow", "", |r| {
            r.status != 404
        })
        .await,
        504,
        "101504",
    );

    // An unsubscribe and a revocation take effect.
    stack
        .mgmt
        .delete(
            &format!("{STORE}/subscriptions/{}", subscriptions[0]),
            &stack.admin,
        )
        .await
        .expect(200);
    expect_fault(
        &eventually(gw, get.clone(), path, &token, |r| r.status == 403).await,
        403,
        "900908",
    );
    let revoke = reqwest::Client::new()
        .post(format!("{}/revoke", gw.base))
        .basic_auth(&lkey, Some(&lsecret))
        .form(&[("token", limited.as_str())]);
    gw.send(revoke).await.expect(200);
    expect_fault(
        &eventually(gw, get.clone(), "/limited/v1.0.0/devs/a", &limited, |r| {
            r.status == 401
        })
        .await,
        401,
        "900901",
    );

    stack.gateway.stop().await;
    if let Some(control_plane) = stack.control_plane {
        control_plane.stop().await;
    }
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_gateways_catch_up_and_gateways_outlive_the_control_plane() {
    let mut stack = Stack::start(&[]).await;
    let api = stack.api("Durable", json!({}), &["Publish"]).await;
    let (_, key, secret, _) = stack.application("DurableApp", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/durable/v1.0.0/devs/a";
    eventually(&stack.gw, reqwest::Method::GET, path, &token, |r| {
        r.status == 200
    })
    .await;

    // A gateway started after publishing (and not on the push list) pulls the manifest.
    let control_plane = stack.control_plane.take().unwrap();
    let late =
        harness::start_edge_gateway(&control_plane, &stack.data_dir, "127.0.0.1:0", &[]).await;
    let late_client = Client::new(&late.url);
    late_client.get(path, &token).await.expect(200);

    // With the control plane stopped, both keep serving the last manifest.
    control_plane.stop().await;
    stack.gw.get(path, &token).await.expect(200);
    late_client.get(path, &token).await.expect(200);
    expect_fault(&late_client.get(path, "").await, 401, "900902");
    late.stop().await;
    stack.gateway.stop().await;
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_compiled_alone_agree_with_a_full_compile() {
    let stack = Stack::start(&[]).await;
    let kept = stack.api("Kept", json!({}), &["Publish"]).await;
    let blocked = stack
        .api("Stopped", json!({"isDefaultVersion": true}), &["Publish"])
        .await;
    let demoted = stack
        .api("Demoted", json!({}), &["Publish", "Demote to Created"])
        .await;
    let retired = stack
        .api("Retired", json!({}), &["Publish", "Deprecate", "Retire"])
        .await;
    let (app, key, secret, subscriptions) = stack
        .application("Agreeing", "Unlimited", &[&kept, &blocked])
        .await;
    let (dropped, _, _, _) = stack.application("Dropped", "20PerMin", &[&kept]).await;
    stack.lifecycle(&blocked, "Block").await;
    let store = |path: &str| format!("{STORE}/{path}");
    stack
        .mgmt
        .delete(
            &store(&format!("subscriptions/{}", subscriptions[1])),
            &stack.admin,
        )
        .await
        .expect(200);
    stack
        .mgmt
        .put_json(
            &store(&format!("applications/{app}")),
            &stack.admin,
            &json!({"name": "Agreeing", "throttlingTier": "10PerMin"}),
        )
        .await
        .expect(200);
    stack
        .mgmt
        .delete(&store(&format!("applications/{dropped}")), &stack.admin)
        .await
        .expect(200);
    // The kept API gets another resource and becomes the default version.
    let path = format!("{}/apis/{kept}", harness::PUBLISHER);
    let mut record = stack.mgmt.get(&path, &stack.admin).await.expect(200).body;
    record["apiDefinition"] =
        json!(json!({"swagger": "2.0", "paths": {"/other": {"get": {}}}}).to_string());
    record["isDefaultVersion"] = json!(true);
    stack
        .mgmt
        .put_json(&path, &stack.admin, &record)
        .await
        .expect(200);
    let token = stack.app_token(&key, &secret, &[]).await;
    let revoke = reqwest::Client::new()
        .post(format!("{}/revoke", stack.gw.base))
        .basic_auth(&key, Some(&secret))
        .form(&[("token", token.as_str())]);
    stack.gw.send(revoke).await.expect(200);
    eventually(
        &stack.gw,
        reqwest::Method::GET,
        "/kept/other",
        &token,
        |r| r.status == 401,
    )
    .await;
    let _ = (demoted, retired);

    // A second control plane compiling everything from the same database finds every
    // entry as the compiles of single changes recorded it (configured alike: gateways are
    // reached at the same URLs).
    let control_plane = stack.control_plane.as_ref().unwrap();
    let second = harness::start_control_plane(
        &harness::Backend::Sqlite,
        &stack.data_dir,
        &[
            ("APIM_GATEWAY_URLS", stack.gw.base.clone()),
            ("APIM_LOG_JSON", "true".into()),
            ("RUST_LOG", "warn,control_plane::fleet::hub=info".into()),
        ],
    )
    .await;
    let mut waited = Duration::ZERO;
    while !second.output().contains("route manifest loaded") {
        assert!(waited < Duration::from_secs(30), "{}", second.output());
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    let log = second.output();
    assert!(
        !log.contains("route manifest compiled"),
        "the full compile found changes the single ones missed:\n{log}\nfirst:\n{}",
        control_plane.output()
    );
    second.stop().await;
    stack.gateway.stop().await;
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}
