//! TLS and HTTP/2 on the listeners of both planes: the seed flow over HTTPS (h2 by ALPN,
//! and HTTP/1.1) and over h2c by prior knowledge; the chain each listener presents, chosen
//! by SNI with a default; TLS 1.0 and 1.1 refused; plain HTTP to a TLS port answered 400;
//! a certificate renewed on disk served to new connections while an old one goes on; a
//! certificate file missing or wrong stopping the start, named. Each refusal beside the
//! request that still works.

use std::sync::Arc;

use harness::stack::{Launch, Stack};
use harness::tls::{self, DEFAULT_NAMES, Listening, OTHER_NAME};
use harness::{Backend, Client, eventually};
use http_body_util::Empty;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use reqwest::Version;
use serde_json::json;

/// The path the seed flow's API serves, and the API it calls.
const CALL: &str = "/secure/v1.0.0/devs/alice";

/// The seed flow through `stack`'s clients (publish, subscribe, keys, token, call), every
/// answer in `version`, a call without a token refused beside it; the application's token.
async fn seed_flow(stack: &Stack, version: Version) -> String {
    let api = stack.api("Secure", json!({}), &["Publish"]).await;
    let (_, key, secret, _) = stack.application("SecureApp", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let reply = eventually(&stack.gw, reqwest::Method::GET, CALL, &token, |r| {
        r.status == 200
    })
    .await;
    assert_eq!(reply.version, version);
    assert_eq!(reply.body["path"], "/devs/alice");
    let refused = stack.gw.get(CALL, "").await;
    assert_eq!((refused.status, refused.fault_code()), (401, "900902"));
    assert_eq!(refused.version, version);
    let read = stack
        .mgmt
        .get(&format!("{}/apis/{api}", harness::PUBLISHER), &stack.admin)
        .await
        .expect(200);
    assert_eq!(read.version, version);
    token
}

/// Both planes behind TLS, with edge-gateway `settings`.
async fn tls_stack(database: Backend, settings: &[(&'static str, String)]) -> Stack {
    let stack = Launch {
        database,
        gateway: settings,
        tls: true,
        ..Launch::default()
    }
    .start()
    .await;
    assert!(stack.gw.base.starts_with("https://"), "{}", stack.gw.base);
    assert!(
        stack.mgmt.base.starts_with("https://"),
        "{}",
        stack.mgmt.base
    );
    stack
}

/// The seed flow over HTTPS on both planes, h2 as ALPN chooses; then HTTP/1.1 over TLS,
/// and plain HTTP sent to each TLS port answered 400.
async fn over_tls(database: Backend, settings: &[(&'static str, String)]) {
    let stack = tls_stack(database, settings).await;
    let token = seed_flow(&stack, Version::HTTP_2).await;
    for base in [&stack.gw.base, &stack.mgmt.base] {
        let http1 = Client::with(base, reqwest::Client::builder().http1_only());
        let path = if *base == stack.gw.base {
            CALL
        } else {
            "/api/am/store/v0.14/apis"
        };
        let reply = http1.get(path, &token).await;
        assert_eq!(reply.version, Version::HTTP_11);
        assert_ne!(reply.status, 400, "{}", reply.body);
        let plain = base.replace("https://", "http://");
        let answer = reqwest::get(format!("{plain}{path}")).await.unwrap();
        assert_eq!(answer.status(), 400);
        let text = answer.text().await.unwrap();
        assert!(text.contains("speaks TLS"), "{text}");
    }
}

pub async fn seed_flow_over_tls_on_the_host_path(database: Backend) {
    over_tls(database, &[]).await;
}

pub async fn seed_flow_over_tls_on_the_component_path(database: Backend) {
    over_tls(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// The seed flow over h2c (HTTP/2 by prior knowledge, in clear) on both planes; HTTP/1.1
/// clients of the same listeners are served as ever.
async fn over_h2c(database: Backend, settings: &[(&'static str, String)]) {
    let mut stack = Launch {
        database,
        gateway: settings,
        ..Launch::default()
    }
    .start()
    .await;
    let h2c = |base: &str| Client::with(base, reqwest::Client::builder().http2_prior_knowledge());
    let (http1_gw, http1_mgmt) = (stack.gw.clone(), stack.mgmt.clone());
    stack.gw = h2c(&stack.gw.base);
    stack.mgmt = h2c(&stack.mgmt.base);
    let token = seed_flow(&stack, Version::HTTP_2).await;
    let reply = http1_gw.get(CALL, &token).await.expect(200);
    assert_eq!(reply.version, Version::HTTP_11);
    let reply = http1_mgmt.get("/api/am/store/v0.14/apis", &token).await;
    assert_eq!(reply.version, Version::HTTP_11);
}

pub async fn seed_flow_over_h2c_on_the_host_path(database: Backend) {
    over_h2c(database, &[]).await;
}

pub async fn seed_flow_over_h2c_on_the_component_path(database: Backend) {
    over_h2c(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// `host:port` of a base URL.
fn address(base: &str) -> &str {
    base.trim_start_matches("https://")
        .trim_start_matches("http://")
}

/// Each listener presents the configured chain for its names (the default for a client
/// sending none, or a name no certificate has, the other certificate for its name),
/// offers h2 and HTTP/1.1 by ALPN, speaks TLS 1.2 to a client that has only it, and
/// refuses TLS 1.1 and 1.0 with a fatal alert.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_present_their_chains_by_name_and_refuse_old_tls() {
    let stack = tls_stack(Backend::Sqlite, &[]).await;
    let listening = stack.listening.as_ref().unwrap();
    let default = listening.default_chain();
    assert_eq!(default.len(), 2, "the certificate and its authority");
    let other = first_certificate(&listening.other_cert);
    let modern = || {
        tls::listener_client_config(
            &[&rustls::version::TLS13, &rustls::version::TLS12],
            &[b"h2", b"http/1.1"],
        )
    };
    for base in [&stack.gw.base, &stack.mgmt.base] {
        let addr = address(base);
        for name in DEFAULT_NAMES {
            let (chain, alpn) = tls::handshake(addr, name, modern()).await.unwrap();
            assert_eq!(chain, default, "{addr} for {name}");
            assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
        }
        let (chain, _) = tls::handshake(addr, OTHER_NAME, modern()).await.unwrap();
        assert_eq!(chain[0], other, "{addr} for {OTHER_NAME}");
        // A name no certificate has: the default, which a verifying client refuses.
        let unknown = "unknown.apim.test";
        let anyone = tls::presented_to_anyone(&[b"http/1.1"]);
        let (chain, alpn) = tls::handshake(addr, unknown, anyone).await.unwrap();
        assert_eq!(chain, default, "{addr} for {unknown}");
        assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
        assert!(tls::handshake(addr, unknown, modern()).await.is_err());

        // TLS 1.2 alone is spoken; 1.1 and 1.0 are refused.
        let tls12 = tls::listener_client_config(&[&rustls::version::TLS12], &[b"http/1.1"]);
        let (chain, _) = tls::handshake(addr, "localhost", tls12).await.unwrap();
        assert_eq!(chain, default);
        // rustls answers a hello without TLS 1.2 with the fatal alert handshake_failure
        // (40); protocol_version (70) would say the same.
        for old in [0x0302, 0x0301] {
            let alert = tls::old_client_hello(addr, old).await;
            assert!(
                matches!(alert, Some(40 | 70)),
                "{addr} with {old:#06x}: {alert:?}"
            );
        }
    }
}

/// The DER of the first certificate of a PEM file.
fn first_certificate(path: &std::path::Path) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

/// An HTTP/1.1 connection over TLS to `addr`: its request sender and the chain it got.
async fn tls_connection(
    addr: &str,
) -> (
    hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    Vec<u8>,
) {
    let config = tls::listener_client_config(
        &[&rustls::version::TLS13, &rustls::version::TLS12],
        &[b"http/1.1"],
    );
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::clone(&config))
        .connect(name, stream)
        .await
        .unwrap();
    let leaf = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(connection);
    (sender, leaf)
}

/// A GET of `path` on an open connection; the status.
async fn get_on(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    path: &str,
) -> u16 {
    let request = hyper::Request::get(path)
        .header("host", "localhost")
        .body(Empty::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    response.status().as_u16()
}

/// A certificate replaced on disk is what new connections get, while a connection opened
/// before goes on with a request; both listeners, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewed_certificates_reach_new_connections_and_old_ones_go_on() {
    let stack = tls_stack(Backend::Sqlite, &[]).await;
    let listening = stack.listening.as_ref().unwrap();
    let before = first_certificate(&listening.default_cert);
    let (gw, mgmt) = (address(&stack.gw.base), address(&stack.mgmt.base));
    let mut open = Vec::new();
    for (addr, path) in [(gw, "/nothing/here"), (mgmt, "/api/am/store/v0.14/apis")] {
        let (mut sender, leaf) = tls_connection(addr).await;
        assert_eq!(leaf, before);
        let status = get_on(&mut sender, path).await;
        open.push((sender, path, status));
    }
    listening.renew_default();
    let after = first_certificate(&listening.default_cert);
    assert_ne!(after, before);
    for addr in [gw, mgmt] {
        let renewed = async || {
            let (_, leaf) = tls_connection(addr).await;
            leaf == after
        };
        harness::wait_until(
            &format!("{addr} presents the renewed certificate"),
            std::time::Duration::from_secs(15),
            renewed,
        )
        .await;
    }
    for (mut sender, path, status) in open {
        assert_eq!(get_on(&mut sender, path).await, status, "{path}");
    }
    // The default certificate is renewed; the other stays.
    let anyone = tls::presented_to_anyone(&[b"http/1.1"]);
    let (chain, _) = tls::handshake(gw, OTHER_NAME, anyone).await.unwrap();
    assert_eq!(chain[0], first_certificate(&listening.other_cert));
}

/// What a binary prints and how it ends when started with `env`.
fn run(binary: &str, env: &[(&str, String)]) -> (bool, String) {
    let output = std::process::Command::new(harness::binary(binary))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A certificate or key file that is missing, not PEM, or not the certificate's key
/// stops either binary at start with a message naming the file; the right files start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_wrong_certificate_file_stops_the_start_naming_it() {
    let dir = harness::temp_dir();
    let listening = Listening::new(&dir);
    let missing = dir.join("missing.crt");
    let path = |p: &std::path::Path| p.display().to_string();
    let cases = [
        // (certificate, key, the file the message names)
        (
            missing.clone(),
            listening.default_key.clone(),
            missing.clone(),
        ),
        (
            listening.default_key.clone(),
            listening.default_key.clone(),
            listening.default_key.clone(),
        ),
        (
            listening.default_cert.clone(),
            listening.other_key.clone(),
            listening.other_key.clone(),
        ),
    ];
    let gateway = |cert: &std::path::Path, key: &std::path::Path| {
        vec![
            ("APIM_GATEWAY_ADDR", "127.0.0.1:0".to_string()),
            ("APIM_COMPILE_CACHE_DIR", "off".to_string()),
            ("APIM_TLS_CERT", path(cert)),
            ("APIM_TLS_KEY", path(key)),
        ]
    };
    let data_dir = harness::temp_dir();
    let control_plane = |cert: &std::path::Path, key: &std::path::Path| {
        vec![
            ("APIM_MGMT_ADDR", "127.0.0.1:0".to_string()),
            ("APIM_DATA_DIR", path(&data_dir)),
            ("APIM_ADMIN_PASSWORD", harness::ADMIN_PASSWORD.to_string()),
            ("APIM_MGMT_TLS_CERT", path(cert)),
            ("APIM_MGMT_TLS_KEY", path(key)),
        ]
    };
    for (cert, key, named) in &cases {
        for (binary, env) in [
            ("edge-gateway", gateway(cert, key)),
            ("control-plane", control_plane(cert, key)),
        ] {
            let (started, stderr) = run(binary, &env);
            assert!(!started, "{binary} started with {cert:?} and {key:?}");
            assert!(stderr.contains(&path(named)), "{binary}: {stderr}");
        }
    }
    // A certificate without its key.
    let mut env = gateway(&listening.default_cert, &listening.default_key);
    env.push((
        "APIM_TLS_CERT",
        format!(
            "{},{}",
            path(&listening.default_cert),
            path(&listening.other_cert)
        ),
    ));
    let (started, stderr) = run("edge-gateway", &env);
    assert!(!started && stderr.contains("APIM_TLS_KEY"), "{stderr}");
    // The right files: the control plane serves HTTPS.
    let control_plane = harness::start_control_plane(
        &Backend::Sqlite,
        &data_dir,
        &listening.settings("APIM_MGMT_TLS_CERT", "APIM_MGMT_TLS_KEY"),
    )
    .await;
    assert!(control_plane.url.starts_with("https://"));
    control_plane.stop().await;
}
