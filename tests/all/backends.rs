//! Backends as production has them: HTTPS with verified certificates, the
//! roots' or an endpoint's own from the certificates API, on the host's forwarding path
//! and on the component's `wasi:http` path; and Spin's `[[client_tls]]` from the same
//! certificates.

use std::sync::atomic::Ordering;

use harness::stack::{Core, Stack};
use harness::tls::Authority;
use harness::{Backend, Client, EchoBackend, Reply, eventually};
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

pub async fn endpoint_certificates_on_the_host_path(database: Backend) {
    endpoint_certificates(database, &[]).await;
}

pub async fn endpoint_certificates_on_the_component_path(database: Backend) {
    endpoint_certificates(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// An API on an `https://` backend whose certificate is self-signed: 502 with WSO2's fault
/// until its certificate is added through the certificates API, also while certificates
/// are bound to another host and port only; 200 once it is (the machine's roots
/// untouched); 502 again once it is deleted, its pooled connection dropped with the trust
/// it was made with. Another endpoint's trust is not touched by either.
async fn endpoint_certificates(database: Backend, settings: &[(&'static str, String)]) {
    let stack = Stack::start_on(&database, harness::temp_dir(), &[], settings, &[]).await;
    let pinned = Authority::self_signed("pinned backend");
    let other = Authority::self_signed("other backend");
    let (pinned_backend, other_backend) = (
        EchoBackend::start_tls(&pinned).await,
        EchoBackend::start_tls(&other).await,
    );
    let pinned_api = https_api(&stack, "Pinned", &pinned_backend).await;
    let other_api = https_api(&stack, "Elsewhere", &other_backend).await;
    let (_, key, secret, _) = stack
        .application("Pins", "Unlimited", &[&pinned_api, &other_api])
        .await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let (pinned_path, other_path) = ("/pinned/v1.0.0/devs/alice", "/elsewhere/v1.0.0/devs/bob");
    let forwarded = |r: &Reply| r.status == 200 || r.status == 502;

    let refused = eventually(&stack.gw, Method::GET, pinned_path, &token, forwarded).await;
    assert_unverified(&refused);

    // The pinned backend's certificate bound to the other backend's host and port, then
    // the other backend's own: once the other answers, both are in force.
    let steps = stack.steps();
    steps
        .add_certificate("pinned-elsewhere", &other_backend.url, &pinned.ca_pem)
        .await
        .unwrap();
    steps
        .add_certificate("other", &other_backend.url, &other.ca_pem)
        .await
        .unwrap();
    eventually(&stack.gw, Method::GET, other_path, &token, |r| {
        r.status == 200
    })
    .await;
    assert_unverified(&stack.gw.get(pinned_path, &token).await);
    assert_eq!(pinned_backend.hits.load(Ordering::SeqCst), 0);

    let endpoint = format!("{}/any/path", pinned_backend.url);
    steps
        .add_certificate("pinned", &endpoint, &pinned.ca_pem)
        .await
        .unwrap();
    let answered = eventually(&stack.gw, Method::GET, pinned_path, &token, |r| {
        r.status == 200
    })
    .await;
    assert_eq!(answered.body["path"], "/devs/alice", "{}", answered.body);
    stack.gw.get(pinned_path, &token).await.expect(200);

    steps.delete_certificate("pinned").await.unwrap();
    let refused = eventually(&stack.gw, Method::GET, pinned_path, &token, |r| {
        r.status != 200
    })
    .await;
    assert_unverified(&refused);
    stack.gw.get(other_path, &token).await.expect(200);
    stack.gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_as_people_make_them_on_the_host_path() {
    certificates_as_people_make_them(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_as_people_make_them_on_the_component_path() {
    certificates_as_people_make_them(&[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// Self-signed backend certificates as people make them: `openssl req -x509` with its
/// defaults (basicConstraints `CA:TRUE`, the name in the CN alone), the same with a
/// `subjectAltName` (also behind a backend that speaks TLS 1.2 only), one as keytool makes
/// it (CN alone, no extensions), and an X.509 v1 one as `openssl x509 -req -signkey`
/// makes it. Each endpoint is refused (502) while only an unrelated self-signed
/// certificate is bound to its host and port, and answers 200 once its own is uploaded;
/// the upload says how it is trusted.
async fn certificates_as_people_make_them(settings: &[(&'static str, String)]) {
    let stack = Stack::start_with(&[], settings).await;
    let shapes = [
        (
            "Defaults",
            Authority::openssl_self_signed("localhost", false),
            true,
        ),
        (
            "Named",
            Authority::openssl_self_signed("127.0.0.1", true),
            true,
        ),
        (
            "Tls12",
            Authority::openssl_self_signed("127.0.0.1", true),
            true,
        ),
        ("Keytool", Authority::keytool_like("backend.example"), false),
        ("Version1", Authority::openssl_v1("127.0.0.1"), false),
    ];
    let mut backends = Vec::new();
    let mut apis = Vec::new();
    for (name, certificate, _) in &shapes {
        let backend = if *name == "Tls12" {
            EchoBackend::start_tls12(certificate).await
        } else {
            EchoBackend::start_tls(certificate).await
        };
        apis.push(https_api(&stack, name, &backend).await);
        backends.push(backend);
    }
    let subscribed: Vec<&str> = apis.iter().map(String::as_str).collect();
    let (_, key, secret, _) = stack.application("Shapes", "Unlimited", &subscribed).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let steps = stack.steps();
    let forwarded = |r: &Reply| r.status == 200 || r.status == 502;

    for (((name, certificate, authority), backend), index) in shapes.iter().zip(&backends).zip(0..)
    {
        let path = format!("/{}/v1.0.0/devs/alice", name.to_lowercase());
        let stranger = Authority::openssl_self_signed("127.0.0.1", true);
        steps
            .add_certificate(&format!("stranger-{index}"), &backend.url, &stranger.ca_pem)
            .await
            .unwrap();
        let refused = eventually(&stack.gw, Method::GET, &path, &token, forwarded).await;
        assert_unverified(&refused);
        assert_eq!(backend.hits.load(Ordering::SeqCst), 0, "{name}");

        let uploaded = steps
            .add_certificate(&format!("own-{index}"), &backend.url, &certificate.ca_pem)
            .await
            .unwrap();
        let mut trusted_as = vec!["endpoint certificate"];
        if *authority {
            trusted_as.push("certificate authority");
        }
        assert_eq!(
            uploaded["trustedAs"],
            json!(trusted_as),
            "{name}: {uploaded}"
        );
        let answered = eventually(&stack.gw, Method::GET, &path, &token, |r| r.status == 200).await;
        assert_eq!(
            answered.body["path"], "/devs/alice",
            "{name}: {}",
            answered.body
        );
    }
    stack.gateway.stop().await;
}

/// An API published on `backend`, context `/<name in lower case>`; its id.
async fn https_api(stack: &Stack, name: &str, backend: &EchoBackend) -> String {
    let endpoint = json!({"url": format!("{}/", backend.url), "config": null});
    let endpoints = json!({"production_endpoints": endpoint, "sandbox_endpoints": endpoint,
                           "endpoint_type": "http"});
    let changes = json!({"endpointConfig": endpoints.to_string(), "endpointSecurity": null});
    stack.api(name, changes, &["Publish"]).await
}

/// A backend whose certificate the gateway does not verify: 502 with WSO2's fault.
fn assert_unverified(reply: &Reply) {
    assert_eq!(reply.status, 502, "{}", reply.body);
    assert_eq!(reply.fault_code(), "101503", "{}", reply.body);
}

/// `spin-client-tls` writes a `[[client_tls]]` section per endpoint host and port, for the
/// gateway component, naming a PEM file that holds that endpoint's certificates, read
/// from the control plane's REST API; Spin's roots stay trusted beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spin_client_tls_is_written_from_the_certificates() {
    let core = Core::start(&Backend::Sqlite, harness::temp_dir(), &[]).await;
    let steps = harness::steps::Steps::new(&core.mgmt, &core.admin);
    let (one, two, three) = (
        Authority::self_signed("one").ca_pem,
        Authority::self_signed("two").ca_pem,
        Authority::new("three").ca_pem,
    );
    steps
        .add_certificate("one", "https://b.example/api", &one)
        .await
        .unwrap();
    steps
        .add_certificate("two", "https://B.example:443/", &two)
        .await
        .unwrap();
    steps
        .add_certificate("three", "https://10.0.0.7:9443", &three)
        .await
        .unwrap();

    let out = harness::temp_dir();
    let status = tokio::process::Command::new(harness::binary("spin-client-tls"))
        .args(["--management-url", &core.control_plane.url, "--out"])
        .arg(&out)
        .env("APIM_ADMIN_TOKEN", &core.admin)
        .status()
        .await
        .unwrap();
    assert!(status.success());

    let text = std::fs::read_to_string(out.join("runtime-config.toml")).unwrap();
    let config: toml::Table = text.parse().unwrap();
    let sections = config["client_tls"].as_array().unwrap();
    assert_eq!(sections.len(), 2, "{text}");
    let section = |host: &str| {
        sections
            .iter()
            .find(|s| {
                s["hosts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|h| h.as_str() == Some(host))
            })
            .unwrap_or_else(|| panic!("no section for {host}: {text}"))
    };
    for (host, pems) in [
        ("b.example:443", vec![&one, &two]),
        ("10.0.0.7:9443", vec![&three]),
    ] {
        let section = section(host);
        assert_eq!(
            section["component_ids"].as_array().unwrap()[0].as_str(),
            Some("gateway")
        );
        assert_eq!(section["ca_use_webpki_roots"].as_bool(), Some(true));
        let file = out.join(section["ca_roots_file"].as_str().unwrap());
        let bundle = std::fs::read_to_string(file).unwrap();
        assert_eq!(
            bundle.matches("BEGIN CERTIFICATE").count(),
            pems.len(),
            "{host}"
        );
        for pem in pems {
            let body = pem.lines().nth(1).unwrap();
            assert!(bundle.contains(body), "{host}");
        }
    }
    assert!(section("b.example")["hosts"].as_array().unwrap().len() == 2);

    // Without a token that reads certificates it fails, writing nothing.
    let refused = harness::temp_dir();
    let status = tokio::process::Command::new(harness::binary("spin-client-tls"))
        .args([
            "--management-url",
            &core.control_plane.url,
            "--token",
            "nope",
            "--out",
        ])
        .arg(&refused)
        .status()
        .await
        .unwrap();
    assert!(!status.success());
    assert!(!refused.join("runtime-config.toml").exists());
    core.control_plane.stop().await;
}
