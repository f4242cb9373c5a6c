//! The gateway tried as an attacker would, with real processes over real HTTP: each attack
//! next to the legitimate request that must still work. Paths are sent byte for byte over
//! raw connections, since HTTP clients normalise what attackers do not.

use std::time::Duration;

use harness::Backend;
use harness::stack::{Launch, Stack};
use harness::{RawReply, raw_request};
use serde_json::{Value, json};

/// An API whose open template sits beside a protected literal: `GET /devs/{username}`
/// needs no token, `GET /devs/admin` does; `POST /devs` takes bodies; `GET /files/*`
/// needs a token.
fn guarded_swagger() -> String {
    json!({
        "swagger": "2.0",
        "info": {"title": "Guarded", "version": "v1.0.0"},
        "paths": {
            "/devs/{username}": {"get": {"x-auth-type": "None", "x-throttling-tier": "Unlimited"}},
            "/devs/admin": {"get": {"x-auth-type": "Application & Application User", "x-throttling-tier": "Unlimited"}},
            "/devs": {"post": {"x-auth-type": "None", "x-throttling-tier": "Unlimited"}},
        }
    })
    .to_string()
}

/// A stack with the guarded API published and subscribed; its bearer token.
async fn guarded_stack(database: Backend, settings: &[(&'static str, String)]) -> (Stack, String) {
    let stack = Launch {
        database,
        gateway: settings,
        ..Launch::default()
    }
    .start()
    .await;
    let api = stack
        .api(
            "Guarded",
            json!({"apiDefinition": guarded_swagger()}),
            &["Publish"],
        )
        .await;
    let (_, key, secret, _) = stack.application("Guard", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let bearer = format!("Bearer {token}");
    wait_for(&stack.gw.base, "/guarded/v1.0.0/devs/admin", &bearer, 200).await;
    (stack, bearer)
}

/// Waits until `target` answers `status` (pushes are asynchronous).
async fn wait_for(base: &str, target: &str, bearer: &str, status: u16) -> RawReply {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let reply = raw_request(base, "GET", target, &[("Authorization", bearer)], b"").await;
        if reply.status == status {
            return reply;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{target} never answered {status}: {} {}",
            reply.status,
            reply.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn paths_are_canonical_on_the_host_path(database: Backend) {
    canonical_paths(database, &[]).await;
}

pub async fn paths_are_canonical_on_the_component_path(database: Backend) {
    canonical_paths(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

pub async fn paths_are_canonical_on_the_p3_artefact(database: Backend) {
    canonical_paths(database, &harness::p3_settings()).await;
}

/// Encodings never reach a protected literal through an open template, ambiguous paths
/// get a 400, and the backend receives exactly the path that was authorized.
async fn canonical_paths(database: Backend, settings: &[(&'static str, String)]) {
    let (stack, bearer) = guarded_stack(database, settings).await;
    let gw = stack.gw.base.as_str();
    let hits = || stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    let before = hits();
    for target in [
        "/guarded/v1.0.0/devs/admin",
        "/guarded/v1.0.0/devs/%61dmin",
        "/guarded/v1.0.0/devs/%61%64%6d%69%6e",
        "/guarded/v1.0.0/devs/ADMIN",
        "/guarded/v1.0.0/devs/aDmIn/",
        "/guarded/v1.0.0/devs//admin",
        "//guarded//v1.0.0//devs//admin",
    ] {
        let reply = raw_request(gw, "GET", target, &[], b"").await;
        assert_eq!(
            (reply.status, reply.fault_code()),
            (401, "900902"),
            "{target}: {}",
            reply.body
        );
    }
    for target in [
        "/guarded/v1.0.0/devs/..%2Fadmin",
        "/guarded/v1.0.0/devs/..%2fsecure",
        "/guarded/v1.0.0/devs/x%5C..%5Cadmin",
        "/guarded/v1.0.0/devs/x\\admin",
        "/guarded/v1.0.0/devs/..",
        "/guarded/v1.0.0/devs/.",
        "/guarded/v1.0.0/devs/%2e%2e",
        "/guarded/v1.0.0/devs/%2E.",
        "/guarded/v1.0.0/devs/x/../admin",
        "/guarded/v1.0.0/devs/x/%2e%2e/admin",
        "/guarded/v1.0.0/devs/a%00",
        "/guarded/v1.0.0/devs/%ff",
        "/guarded/v1.0.0/devs/%zz",
        "/guarded/v1.0.0/devs/a?x=%g1",
    ] {
        let reply = raw_request(gw, "GET", target, &[], b"").await;
        assert_eq!(
            (reply.status, reply.fault_code()),
            (400, "400"),
            "{target}: {}",
            reply.body
        );
    }
    let long = format!("/guarded/v1.0.0/devs/{}", "a".repeat(5000));
    assert_eq!(raw_request(gw, "GET", &long, &[], b"").await.status, 400);
    assert_eq!(hits(), before, "no refused request reached the backend");

    // The legitimate requests, and what the backend receives.
    let backend_path = |reply: RawReply| {
        assert_eq!(reply.status, 200, "{}", reply.body);
        let echoed = reply.json();
        let query = echoed["query"].as_str().unwrap_or_default().to_string();
        let path = echoed["path"].as_str().unwrap_or_default().to_string();
        if query.is_empty() {
            path
        } else {
            format!("{path}?{query}")
        }
    };
    let auth = [("Authorization", bearer.as_str())];
    for (target, headers, expected) in [
        ("/guarded/v1.0.0/devs/admin", &auth[..], "/devs/admin"),
        ("/guarded/v1.0.0/devs/%61dmin", &auth[..], "/devs/admin"),
        ("/guarded/v1.0.0/devs/alice", &[][..], "/devs/alice"),
        ("/guarded/v1.0.0/devs/%61lice", &[][..], "/devs/alice"),
        ("/guarded/v1.0.0/devs//alice", &[][..], "/devs/alice"),
        (
            "/guarded/v1.0.0/devs/admin;x=1",
            &[][..],
            "/devs/admin%3Bx=1",
        ),
        ("/guarded/v1.0.0/devs/a%20b", &[][..], "/devs/a%20b"),
        (
            "/guarded/v1.0.0/devs/bob?x=%61&y=%2f&z=a+b",
            &[][..],
            "/devs/bob?x=a&y=%2F&z=a+b",
        ),
    ] {
        let reply = raw_request(gw, "GET", target, headers, b"").await;
        assert_eq!(backend_path(reply), expected, "{target}");
    }
    stack.gateway.stop().await;
}

pub async fn framing_is_kept_on_the_host_path(database: Backend) {
    framing(database, &[]).await;
}

pub async fn framing_is_kept_on_the_component_path(database: Backend) {
    framing(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

pub async fn framing_is_kept_on_the_p3_artefact(database: Backend) {
    framing(database, &harness::p3_settings()).await;
}

/// A request with `Content-Length` reaches the backend with it (not chunked), and the
/// backend's `Content-Length` reaches the client. A client that shuts its side of the
/// connection once its request is sent is answered all the same.
async fn framing(database: Backend, settings: &[(&'static str, String)]) {
    let (stack, _) = guarded_stack(database, settings).await;
    let gw = stack.gw.base.as_str();
    let host = gw.trim_start_matches("http://");
    let half_closed = format!("GET /guarded/v1.0.0/devs/alice HTTP/1.1\r\nHost: {host}\r\n\r\n");
    let reply = harness::raw_exchange_half_closed(gw, half_closed.as_bytes()).await;
    assert_eq!(reply.status, 200, "half-closed: {}", reply.body);
    assert_eq!(reply.json()["path"], "/devs/alice", "{}", reply.body);
    let body = vec![b'x'; 5000];
    let reply = raw_request(
        gw,
        "POST",
        "/guarded/v1.0.0/devs",
        &[("Content-Type", "text/plain"), ("Content-Length", "5000")],
        &body,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let echoed = reply.json();
    assert_eq!(echoed["headers"]["content-length"], "5000", "{echoed}");
    assert!(
        echoed["headers"].get("transfer-encoding").is_none(),
        "{echoed}"
    );
    assert_eq!(echoed["body"].as_str().map(str::len), Some(5000));
    let length: usize = reply
        .header("content-length")
        .expect("length")
        .parse()
        .unwrap();
    assert_eq!(length, reply.body.len());
    assert!(reply.header("transfer-encoding").is_none());
    stack.gateway.stop().await;
}

pub async fn the_gateways_own_endpoints_need_its_secret(database: Backend) {
    let (stack, bearer) = guarded_stack(database, &[]).await;
    let gw = stack.gw.base.as_str();
    let secret = std::fs::read_to_string(stack.data_dir.join("gateway-secret")).unwrap();
    let proof = format!("Bearer {}", secret.trim());
    for (method, target) in [
        ("POST", "/_apim/sync"),
        ("GET", "/_apim/manifest"),
        ("POST", "/_apim/manifest"),
        ("GET", "/_apim/%6danifest"),
        ("GET", "/_apim/anything"),
    ] {
        for headers in [&[][..], &[("Authorization", bearer.as_str())][..]] {
            let reply = raw_request(gw, method, target, headers, b"").await;
            assert_eq!(reply.status, 401, "{method} {target}: {}", reply.body);
        }
    }
    // A large push is refused from its head, before its body is read.
    let (status, _) = harness::oversized_post(gw, "/_apim/manifest", "guess", 10 << 20).await;
    assert_eq!(status, 401);
    // With the secret: the position held, and a pull.
    let reply = raw_request(
        gw,
        "GET",
        "/_apim/manifest",
        &[("Authorization", &proof)],
        b"",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.json()["version"].as_u64().unwrap() > 0);
    // The gateway's own loop may be applying pages at that moment: 503 with Retry-After.
    let mut tries = 0;
    let reply = loop {
        let reply = raw_request(gw, "POST", "/_apim/sync", &[("Authorization", &proof)], b"").await;
        if reply.status != 503 {
            break reply;
        }
        assert_eq!(reply.header("retry-after"), Some("1"), "{}", reply.body);
        tries += 1;
        assert!(tries < 50, "always busy: {}", reply.body);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(reply.status, 200, "{}", reply.body);
    stack.gateway.stop().await;
}

pub async fn a_request_that_has_passed_the_gateway_is_a_loop(database: Backend) {
    let (stack, _) = guarded_stack(database, &[]).await;
    let gw = stack.gw.base.as_str();
    let reply = raw_request(
        gw,
        "GET",
        "/guarded/v1.0.0/devs/alice",
        &[("Via", "1.1 apim-gateway")],
        b"",
    )
    .await;
    assert_eq!(
        (reply.status, reply.fault_code()),
        (508, "508"),
        "{}",
        reply.body
    );
    let reply = raw_request(
        gw,
        "GET",
        "/guarded/v1.0.0/devs/alice",
        &[("Via", "1.1 cdn")],
        b"",
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["headers"]["via"], "1.1 cdn, 1.1 apim-gateway");
    stack.gateway.stop().await;
}

/// Publishes an API at `endpoint`; the control plane's answer (201, or its refusal).
async fn api_at(stack: &Stack, name: &str, endpoint: &str) -> harness::Reply {
    let mut record = harness::stack::api_record(name, endpoint);
    record["apiDefinition"] = json!(guarded_swagger());
    stack
        .mgmt
        .post_json(
            &format!("{}/apis", harness::PUBLISHER),
            &stack.admin,
            &record,
        )
        .await
}

pub async fn backends_are_reached_only_where_the_egress_policy_allows(database: Backend) {
    // The control plane allows more than the gateway, so that the gateway's own checks
    // show: loopback at large and `localhost` pass the control plane, not the gateway.
    let stack = Launch {
        database,
        control_plane: &[("APIM_EGRESS_ALLOW", "127.0.0.0/8,localhost".into())],
        ..Launch::default()
    }
    .start()
    .await;
    let backend_port = stack.backend.url.rsplit(':').next().unwrap().to_string();
    let gateway_port = stack.gw.base.rsplit(':').next().unwrap().to_string();
    let control_plane_port = stack.mgmt.base.rsplit(':').next().unwrap().to_string();

    // Refused when created: metadata, link-local, unspecified and the control plane.
    for endpoint in [
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://[::1]:8080/".to_string(),
        "http://0.0.0.0:8080/".to_string(),
        format!("http://127.0.0.1:{control_plane_port}/"),
    ] {
        let reply = api_at(&stack, "Refused", &endpoint).await;
        assert_eq!(reply.status, 400, "{endpoint}: {}", reply.body);
    }

    // Accepted by the control plane, refused by the gateway: another loopback address,
    // this machine by name, and the gateway's own listener (a loop).
    let mut refused = Vec::new();
    for (name, endpoint) in [
        ("LoopTwo", format!("http://127.0.0.2:{backend_port}/")),
        ("ByName", format!("http://localhost:{backend_port}/")),
        (
            "ItSelf",
            format!("http://127.0.0.1:{gateway_port}/guarded/v1.0.0"),
        ),
    ] {
        let id = api_at(&stack, name, &endpoint).await.expect(201).str("id");
        stack.lifecycle(&id, "Publish").await;
        refused.push(format!("/{}/v1.0.0/devs/alice", name.to_lowercase()));
    }
    let allowed = stack
        .api(
            "Allowed",
            json!({"apiDefinition": guarded_swagger()}),
            &["Publish"],
        )
        .await;
    let _ = allowed;
    wait_for(&stack.gw.base, "/allowed/v1.0.0/devs/alice", "", 200).await;
    let before = stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst);
    for target in &refused {
        let reply = wait_for(&stack.gw.base, target, "", 502).await;
        assert_eq!(reply.fault_code(), "101503", "{target}");
    }
    assert_eq!(
        stack.backend.hits.load(std::sync::atomic::Ordering::SeqCst),
        before
    );
    stack.gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_stay_with_their_caller_on_the_host_path() {
    cache_rules(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_stay_with_their_caller_on_the_component_path() {
    cache_rules(&[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// Cached answers are per caller and variant, private ones are not kept, entries expire,
/// and the gateway's memory stays flat over 10,000 distinct URLs.
async fn cache_rules(settings: &[(&'static str, String)]) {
    // A few instances, all warm before memory is first read: what grows then is the store.
    let mut settings = settings.to_vec();
    settings.push(("APIM_MAX_INSTANCES", "4".into()));
    let stack = Stack::start_with(&[], &settings).await;
    let api = stack
        .api(
            "Cached",
            // maxTps well above what 16 clients send here.
            json!({"apiDefinition": guarded_swagger(), "responseCaching": "Enabled", "cacheTimeout": 1,
                   "maxTps": {"production": 1_000_000, "sandbox": 1_000_000}}),
            &["Publish"],
        )
        .await;
    let mut bearers = Vec::new();
    for name in ["One", "Two"] {
        let (_, key, secret, _) = stack.application(name, "Unlimited", &[&api]).await;
        bearers.push(format!(
            "Bearer {}",
            stack.app_token(&key, &secret, &[]).await
        ));
    }
    let gw = stack.gw.base.as_str();
    wait_for(gw, "/cached/v1.0.0/devs/admin", &bearers[0], 200).await;
    let hit = |reply: RawReply| -> Value {
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()["hit"].clone()
    };
    let get = async |bearer: &str, language: &str| {
        let headers = [
            ("Authorization", bearer),
            ("Accept-Language", language),
            ("X-Echo-Vary", "Accept-Language"),
        ];
        hit(raw_request(gw, "GET", "/cached/v1.0.0/devs/admin?v=1", &headers, b"").await)
    };
    let first = get(&bearers[0], "en").await;
    assert_eq!(
        get(&bearers[0], "en").await,
        first,
        "the same caller and variant: cached"
    );
    assert_ne!(
        get(&bearers[1], "en").await,
        first,
        "another application: not shared"
    );
    assert_ne!(
        get(&bearers[0], "fr").await,
        first,
        "another variant: not shared"
    );
    // Private answers are not kept.
    let private = [
        ("Authorization", bearers[0].as_str()),
        ("X-Echo-Cache-Control", "private"),
    ];
    let one = hit(raw_request(gw, "GET", "/cached/v1.0.0/devs/admin?p=1", &private, b"").await);
    let two = hit(raw_request(gw, "GET", "/cached/v1.0.0/devs/admin?p=1", &private, b"").await);
    assert_ne!(one, two);
    // Entries expire at cacheTimeout.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_ne!(get(&bearers[0], "en").await, first, "expired");

    // 10,000 distinct URLs after 5,000 that warm the instances, the allocator and the
    // store up to the entries alive at once: the gateway's memory stays flat.
    let distinct =
        |range: std::ops::Range<usize>| distinct_urls(gw.to_string(), bearers[0].clone(), range);
    distinct(0..5_000).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let warm = harness::machine::rss_mib(stack.gateway.pid());
    distinct(5_000..15_000).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    distinct(15_000..15_100).await;
    let after = harness::machine::rss_mib(stack.gateway.pid());
    eprintln!("gateway resident memory: {warm:.1} MiB warm, {after:.1} MiB after");
    assert!(
        // Unbounded, the first of these 10,000 entries would cost ~860 MiB (the gateway
        // before its keys had lifetimes grew 26 MiB per 300 URLs); what remains is pools
        // and instances settling, which stop growing: 10-19 MiB on the component path on a
        // loaded 2-core machine, so the bound leaves room for that and none for growth.
        after < warm + 32.0,
        "the gateway grew from {warm:.1} MiB to {after:.1} MiB over 10,000 more distinct URLs"
    );
    stack.gateway.stop().await;
}

/// GETs the cached resource once per `range` item, each with its own query, 16 at a time.
async fn distinct_urls(base: String, bearer: String, range: std::ops::Range<usize>) {
    const WORKERS: usize = 16;
    let client = reqwest::Client::new();
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..WORKERS {
        let (client, base, bearer, range) =
            (client.clone(), base.clone(), bearer.clone(), range.clone());
        workers.spawn(async move {
            for i in range.skip(worker).step_by(WORKERS) {
                let reply = client
                    .get(format!("{base}/cached/v1.0.0/devs/admin?u={i}"))
                    .header("authorization", &bearer)
                    .send()
                    .await
                    .expect("gateway answers");
                assert_eq!(reply.status(), 200);
                let _ = reply.bytes().await;
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.expect("worker");
    }
}

/// The in-memory store's budget of cached answers (edge-gateway's default), MiB.
const CACHE_BUDGET_MIB: f64 = 64.0;
/// Body of each large answer: 2,000 of them are about three times the budget's worth.
const LARGE_ANSWER_BYTES: usize = 64 << 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_stay_within_their_budget_on_the_host_path() {
    cache_budget(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_stay_within_their_budget_on_the_component_path() {
    cache_budget(&[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// Past its budget, the cache costs the gateway its budget and at most half more: the
/// budget counts what the cache holds (the gateway grew 148 MiB, host path, when it
/// counted the lengths of values held in buffers twice as long). The margin is the
/// allocator's: mimalloc keeps freed pages of a thread resident until that thread
/// allocates again, so evicted answers linger, more so on a busy machine (64.7 MiB
/// alone, 75.2 MiB beside the rest of the suite on two cores).
async fn cache_budget(settings: &[(&'static str, String)]) {
    let mut settings = settings.to_vec();
    settings.push(("APIM_MAX_INSTANCES", "4".into()));
    let stack = Stack::start_with(&[], &settings).await;
    let backend = large_answers().await;
    let mut apis = Vec::new();
    // Answers kept 300 s, and some kept 1 s to warm the path that keeps them.
    for (name, timeout) in [("Large", 300), ("Brief", 1)] {
        apis.push(large_api(&stack, &backend, name, timeout).await);
    }
    let apis: Vec<&str> = apis.iter().map(String::as_str).collect();
    let (_, key, secret, _) = stack.application("Big", "Unlimited", &apis).await;
    let bearer = format!("Bearer {}", stack.app_token(&key, &secret, &[]).await);
    // Measured on a second gateway, which finds the component compiled: a gateway that
    // compiled it holds what the compiler left (tens of MiB), whose release would blur
    // the figure.
    let control_plane = stack.control_plane.as_ref().expect("control plane");
    let gateway = harness::start_edge_gateway_with(
        control_plane,
        &stack.data_dir,
        "127.0.0.1:0",
        &[],
        &settings,
    )
    .await;
    let gw = gateway.url.as_str();
    wait_for(gw, "/large/v1.0.0/devs/admin?private", &bearer, 200).await;
    wait_for(gw, "/brief/v1.0.0/devs/admin?private", &bearer, 200).await;
    let fetch =
        |target: &'static str, range| large_urls(gw.to_string(), bearer.clone(), target, range);
    // The instances, pools and the path that keeps answers warm first, on answers of
    // this size: private ones are not kept, and the few brief ones (2 MiB) have expired.
    fetch("/large/v1.0.0/devs/admin?private", 0..2_000).await;
    fetch("/brief/v1.0.0/devs/admin?u", 0..20).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let warm = harness::machine::rss_mib(gateway.pid());
    fetch("/large/v1.0.0/devs/admin?u", 0..2_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = harness::machine::rss_mib(gateway.pid());
    let grown = after - warm;
    eprintln!("gateway resident memory: {warm:.1} MiB warm, {after:.1} MiB after");
    assert!(
        grown < CACHE_BUDGET_MIB * 1.5,
        "the gateway grew by {grown:.1} MiB for a {CACHE_BUDGET_MIB} MiB cache"
    );
    gateway.stop().await;
    stack.gateway.stop().await;
}

/// Publishes the guarded API as `name`, on `backend`, its answers cached `timeout` s; its id.
async fn large_api(stack: &Stack, backend: &str, name: &str, timeout: u64) -> String {
    let endpoint = json!({"url": format!("{backend}/"), "config": null});
    let endpoints = json!({"production_endpoints": endpoint, "sandbox_endpoints": endpoint,
                           "endpoint_type": "http"});
    stack
        .api(
            name,
            json!({"apiDefinition": guarded_swagger(), "responseCaching": "Enabled",
                   "cacheTimeout": timeout, "endpointConfig": endpoints.to_string(),
                   "maxTps": {"production": 1_000_000, "sandbox": 1_000_000}}),
            &["Publish"],
        )
        .await
}

/// A backend answering every request with [`LARGE_ANSWER_BYTES`], private when the query
/// starts with `private`; its URL.
async fn large_answers() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind backend");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = axum::Router::new().fallback(async |uri: axum::http::Uri| {
        let private = uri.query().is_some_and(|q| q.starts_with("private"));
        let control = if private { "private" } else { "public" };
        (
            [(axum::http::header::CACHE_CONTROL, control)],
            vec![b'a'; LARGE_ANSWER_BYTES],
        )
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

/// GETs `target` once per `range` item, each with its own number appended, 4 at a time
/// (as many as the gateway's instances).
async fn large_urls(base: String, bearer: String, target: &str, range: std::ops::Range<usize>) {
    const WORKERS: usize = 4;
    let client = reqwest::Client::new();
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..WORKERS {
        let (client, bearer, range) = (client.clone(), bearer.clone(), range.clone());
        let target = format!("{base}{target}");
        workers.spawn(async move {
            for i in range.skip(worker).step_by(WORKERS) {
                let reply = client
                    .get(format!("{target}={i}"))
                    .header("authorization", &bearer)
                    .send()
                    .await
                    .expect("gateway answers");
                assert_eq!(reply.status(), 200);
                let body = reply.bytes().await.expect("body");
                assert_eq!(body.len(), LARGE_ANSWER_BYTES);
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.expect("worker");
    }
}
