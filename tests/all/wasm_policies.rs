//! Tenants' own WebAssembly policies at a real gateway: uploaded as an API's `in`
//! mediation policy (`application/wasm`), checked at upload (a component of the policy
//! world, importing nothing that reaches out), fetched by the gateway by digest and run
//! on each call within its budgets. A policy that loops, exhausts its memory, panics,
//! blocks or answers with headers past the bounds fails its own API's calls with WSO2's
//! fault while another API goes on answering, and one that does so three times in a row
//! is suspended for a while; the failures are counted in `/metrics`.

use harness::stack::Stack;
use harness::{Backend, Client, Reply};
use reqwest::Method;
use serde_json::{Value, json};

const PUBLISHER: &str = "/api/am/publisher/v0.14";

/// The policies the tests upload, built (a minute's cargo on a fresh clone) before any
/// stack starts: the control plane would close a client's connection idle that long.
struct Built {
    example: Vec<u8>,
    hostile: Vec<u8>,
    outbound: Vec<u8>,
}

impl Built {
    fn read() -> Self {
        let read = |name| std::fs::read(harness::policy_component(name)).unwrap();
        Built {
            example: read("add-header"),
            hostile: read("hostile"),
            outbound: read("outbound"),
        }
    }
}

pub async fn wasm_policies_on_the_host_path(database: Backend) {
    let built = Built::read();
    let ops = [("APIM_OPS_ADDR", "127.0.0.1:0".to_string())];
    let stack = Stack::start_on(&database, harness::temp_dir(), &[], &ops, &[]).await;
    let (mgmt, admin) = (&stack.mgmt, stack.admin.as_str());
    let guarded = stack.api("Guarded", json!({}), &[]).await;
    let hostile = stack.api("Hostile", json!({}), &[]).await;
    let quiet = stack.api("Quiet", json!({}), &["Publish"]).await;

    refusals_change_nothing(mgmt, admin, &guarded, &built).await;

    let example = built.example.clone();
    let uploaded = upload(mgmt, admin, &guarded, "add-header", "", example.clone()).await;
    let info = &uploaded.expect(200).body;
    assert_eq!(info["type"], "in");
    assert_eq!(info["config"], "");
    assert_eq!(info["wasm"]["size"], example.len());
    assert_eq!(info["wasm"]["digest"].as_str().unwrap().len(), 64);
    let example_id = info["id"].as_str().unwrap().to_string();
    name_in_sequences(mgmt, admin, &guarded, "add-header").await;
    let hostile_bytes = built.hostile.clone();
    upload(
        mgmt,
        admin,
        &hostile,
        "hostile",
        "&bodyBytes=1024",
        hostile_bytes.clone(),
    )
    .await
    .expect(200);
    name_in_sequences(mgmt, admin, &hostile, "hostile").await;
    stack.lifecycle(&guarded, "Publish").await;
    stack.lifecycle(&hostile, "Publish").await;
    let apis = [guarded.as_str(), hostile.as_str(), quiet.as_str()];
    let (_, key, secret, _) = stack.application("Tenant", "Unlimited", &apis).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let gw = &stack.gw;

    // The example: headers set and removed; its own answer, the backend not called.
    let call = gw
        .request(Method::GET, "/guarded/v1.0.0/devs/alice", &token)
        .header("x-debug", "on");
    let reply = gw.send(call).await.expect(200);
    assert_eq!(sent_header(&reply, "x-policy"), Some("add-header"));
    assert!(sent_header(&reply, "x-end-user").is_some());
    assert_eq!(sent_header(&reply, "x-debug"), None);
    // The policy sees what the backend would get: never the caller's token.
    let call = gw
        .request(Method::GET, "/hostile/v1.0.0/devs/alice", &token)
        .header("x-hostile", "credentials");
    let reply = gw.send(call).await.expect(200);
    assert_eq!(sent_header(&reply, "x-seen-authorization"), Some("none"));
    let hits = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let refused = gw
        .send(gw.request(Method::GET, "/guarded/v1.0.0/devs/alice?debug=1", &token))
        .await;
    assert_eq!(refused.status, 403, "{:?}", refused.body);
    assert_eq!(
        stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits
    );

    // Hostile policies fail their own calls; the quiet API answers meanwhile.
    for (asked, says) in [
        ("loop", "ran past its CPU budget"),
        ("memory", "ran past its memory budget"),
        ("panic", "policy failed"),
        ("headers", "set headers the gateway does not send"),
        ("sleep", "ran past its time budget"),
    ] {
        let call = gw
            .request(Method::GET, "/hostile/v1.0.0/devs/alice", &token)
            .header("x-hostile", asked);
        let reply = gw.send(call).await;
        assert_eq!(reply.status, 500, "{asked}: {:?}", reply.body);
        assert_eq!(reply.fault_code(), "101500", "{asked}");
        assert!(
            reply.body.to_string().contains(says),
            "{asked}: {:?}",
            reply.body
        );
        gw.send(gw.request(Method::GET, "/quiet/v1.0.0/devs/alice", &token))
            .await
            .expect(200);
        // A call it decides clears its record (three failures in a row suspend it).
        gw.send(gw.request(Method::GET, "/hostile/v1.0.0/devs/alice", &token))
            .await
            .expect(200);
    }
    // The same policy still serves calls that do not ask it to misbehave, with the body
    // it was given, within its bound.
    let call = gw
        .request(Method::POST, "/hostile/v1.0.0/devs", &token)
        .header("x-hostile", "body")
        .header("content-type", "application/json")
        .body(r#"{"name": "ann"}"#);
    let reply = gw.send(call).await.expect(200);
    assert_eq!(sent_header(&reply, "x-body-bytes"), Some("15"));
    let call = gw
        .request(Method::POST, "/hostile/v1.0.0/devs", &token)
        .header("content-type", "application/json")
        .body(vec![b' '; 2048]);
    assert_eq!(gw.send(call).await.status, 413);

    // A policy whose calls fail three times in a row is suspended on its API: its calls
    // are refused at once for a second, then it runs again.
    for _ in 0..3 {
        let call = gw
            .request(Method::GET, "/hostile/v1.0.0/devs/alice", &token)
            .header("x-hostile", "loop");
        assert_eq!(gw.send(call).await.status, 500);
    }
    let suspended = gw
        .send(gw.request(Method::GET, "/hostile/v1.0.0/devs/alice", &token))
        .await;
    assert_eq!(suspended.status, 503, "{:?}", suspended.body);
    assert!(suspended.body.to_string().contains("is suspended"));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    gw.send(gw.request(Method::GET, "/hostile/v1.0.0/devs/alice", &token))
        .await
        .expect(200);

    // Another policy uploaded in its place reaches the gateway as any change does.
    let policies = format!("{PUBLISHER}/apis/{guarded}/policies/mediation");
    let replaced = mgmt
        .send(
            mgmt.request(
                Method::PUT,
                &format!("{policies}/{example_id}?name=add-header&type=in"),
                admin,
            )
            .header("content-type", "application/wasm")
            .body(hostile_bytes),
        )
        .await;
    replaced.expect(200);
    // (The hostile policy, asked nothing, changes nothing: the example's header is gone.)
    harness::eventually(
        gw,
        Method::GET,
        "/guarded/v1.0.0/devs/alice",
        &token,
        |reply| reply.status == 200 && sent_header(reply, "x-policy").is_none(),
    )
    .await;

    let metrics = stack
        .gateway
        .announced("Serving operations")
        .expect("the operations listener is announced");
    let text = reqwest::get(format!("{metrics}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for outcome in [
        "proceeded",
        "answered",
        "cpu_budget",
        "memory_budget",
        "time_budget",
    ] {
        assert!(
            text.lines()
                .any(|line| line.starts_with("apim_gateway_policy_calls_total")
                    && line.contains(&format!("outcome=\"{outcome}\""))),
            "{outcome} not counted:\n{text}"
        );
    }
}

/// Where the gateway cannot run a policy (the component forwards by itself, as on Spin),
/// a call whose API has one is refused, never let through without it.
pub async fn wasm_policies_on_the_component_path(database: Backend) {
    let built = Built::read();
    let component = [("APIM_HOST_FORWARDING", "false".to_string())];
    let stack = Stack::start_on(&database, harness::temp_dir(), &[], &component, &[]).await;
    let (mgmt, admin) = (&stack.mgmt, stack.admin.as_str());
    let api = stack.api("Guarded", json!({}), &[]).await;
    upload(mgmt, admin, &api, "add-header", "", built.example)
        .await
        .expect(200);
    name_in_sequences(mgmt, admin, &api, "add-header").await;
    stack.lifecycle(&api, "Publish").await;
    let (_, key, secret, _) = stack.application("Tenant", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let gw = &stack.gw;
    let hits = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let reply = gw
        .send(gw.request(Method::GET, "/guarded/v1.0.0/devs/alice", &token))
        .await;
    assert_eq!(reply.status, 503, "{:?}", reply.body);
    assert_eq!(reply.fault_code(), "101500");
    assert_eq!(
        stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits
    );
}

/// Bytes that are not a policy of the world, or a policy for another flow, are refused
/// with a 400 saying why; the API's policies are as before.
async fn refusals_change_nothing(mgmt: &Client, admin: &str, api: &str, built: &Built) {
    upload(mgmt, admin, api, "outbound", "", built.outbound.clone())
        .await
        .expect_error(400, "imports 'wasi:sockets/");
    let core_module = b"\0asm\x01\0\0\0".to_vec();
    upload(mgmt, admin, api, "core", "", core_module)
        .await
        .expect_error(400, "not a component");
    upload(mgmt, admin, api, "junk", "", b"<sequence/>".to_vec())
        .await
        .expect_error(400, "Invalid WebAssembly policy");
    let example = built.example.clone();
    let url = format!("{PUBLISHER}/apis/{api}/policies/mediation?name=x&type=out");
    let out = mgmt
        .send(
            mgmt.request(Method::POST, &url, admin)
                .header("content-type", "application/wasm")
                .body(example.clone()),
        )
        .await;
    out.expect_error(400, "in flow only");
    upload(
        mgmt,
        admin,
        api,
        "big",
        "&bodyBytes=99999999",
        example.clone(),
    )
    .await
    .expect_error(400, "bodyBytes");
    upload(mgmt, admin, api, "../x", "", example)
        .await
        .expect_error(400, "Invalid mediation policy name");
    let listed = mgmt
        .get(&format!("{PUBLISHER}/apis/{api}/policies/mediation"), admin)
        .await;
    assert_eq!(listed.expect(200).body["count"], 0);
    // Without the gateway secret, no policy's bytes are served.
    let digest = "0".repeat(64);
    let fetched = mgmt
        .send(mgmt.request(
            Method::GET,
            &format!("/internal/gateway/policies/{digest}"),
            admin,
        ))
        .await;
    assert_eq!(fetched.status, 401);
}

/// Uploads `bytes` as the API's `in` policy `name` (`extra`: more of the query).
async fn upload(
    mgmt: &Client,
    admin: &str,
    api: &str,
    name: &str,
    extra: &str,
    bytes: Vec<u8>,
) -> Reply {
    let url = format!("{PUBLISHER}/apis/{api}/policies/mediation?name={name}&type=in{extra}");
    let request = mgmt
        .request(Method::POST, &url, admin)
        .header("content-type", "application/wasm")
        .body(bytes);
    mgmt.send(request).await
}

/// Names the API's `in` policy `name` in its sequences.
async fn name_in_sequences(mgmt: &Client, admin: &str, api: &str, name: &str) {
    let path = format!("{PUBLISHER}/apis/{api}");
    let mut record: Value = mgmt.get(&path, admin).await.expect(200).body;
    record["sequences"] = json!([{"name": name, "type": "in"}]);
    mgmt.put_json(&path, admin, &record).await.expect(200);
}

fn sent_header<'r>(reply: &'r Reply, name: &str) -> Option<&'r str> {
    reply.body["headers"][name].as_str()
}
