//! Backends as production has them (issue 21): HTTPS with verified certificates, on the
//! host's forwarding path and on the component's `wasi:http` path.

use std::sync::atomic::Ordering;

use harness::stack::Stack;
use harness::tls::Authority;
use harness::{Client, EchoBackend, eventually};
use reqwest::Method;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_backends_are_verified_on_the_host_path() {
    https_backends(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_backends_are_verified_on_the_component_path() {
    https_backends(&[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// An API on an `https://` backend whose certificate a private authority signed: a
/// gateway told to trust that authority answers 200 and reuses its TLS connections; one
/// that is not answers 502 with WSO2's fault, and no request reaches the backend.
async fn https_backends(settings: &[(&'static str, String)]) {
    let authority = Authority::new("apim test backends");
    let dir = harness::temp_dir();
    let mut trusting = settings.to_vec();
    let ca_file = authority.write_ca(&dir).display().to_string();
    trusting.push(("APIM_BACKEND_CA_FILE", ca_file));
    let stack = Stack::start_with(&[], &trusting).await;
    let backend = EchoBackend::start_tls(&authority).await;
    let endpoint = json!({"url": format!("{}/", backend.url), "config": null});
    let endpoints = json!({"production_endpoints": endpoint, "sandbox_endpoints": endpoint,
                           "endpoint_type": "http"});
    let changes = json!({"endpointConfig": endpoints.to_string(), "endpointSecurity": null});
    let api = stack.api("Secure", changes, &["Publish"]).await;
    let (_, key, secret, _) = stack.application("Tls", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/secure/v1.0.0/devs/alice";

    let answered = eventually(&stack.gw, Method::GET, path, &token, |r| r.status == 200).await;
    assert_eq!(answered.body["path"], "/devs/alice", "{}", answered.body);
    for _ in 0..20 {
        stack.gw.get(path, &token).await.expect(200);
    }
    let handshakes = authority.handshakes.load(Ordering::Relaxed);
    assert!(
        handshakes <= 2,
        "{handshakes} TLS handshakes for 21 calls: not reused"
    );

    // A gateway that does not trust the authority: refused, the backend untouched.
    let hits = backend.hits.load(Ordering::SeqCst);
    let control_plane = stack.control_plane.as_ref().expect("control plane");
    let untrusting = harness::start_edge_gateway_with(
        control_plane,
        &stack.data_dir,
        "127.0.0.1:0",
        &[],
        settings,
    )
    .await;
    let refused = eventually(
        &Client::new(&untrusting.url),
        Method::GET,
        path,
        &token,
        |r| r.status != 404,
    )
    .await;
    assert_eq!(refused.status, 502, "{}", refused.body);
    assert_eq!(refused.fault_code(), "101503", "{}", refused.body);
    assert_eq!(backend.hits.load(Ordering::SeqCst), hits);
    untrusting.stop().await;
    stack.gateway.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}
