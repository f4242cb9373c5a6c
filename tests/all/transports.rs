//! APIs' transports (WSO2's `transport`) on a gateway serving plain HTTP and TLS side by
//! side (`APIM_GATEWAY_TLS_ADDR`): an https-only API refused on the plain listener with
//! WSO2's 404 and served over TLS, an http-only one the other way round, one of both
//! served on both; `X-Forwarded-Proto: https` believed from a trusted proxy's address
//! (`APIM_TRUSTED_PROXIES`) and passed on, ignored and removed from any other; the scheme
//! of an absolute-form target or of HTTP/2's `:scheme`, the client's own word, ignored.
//! On the host path and on the component path.

use std::net::IpAddr;
use std::time::Duration;

use harness::stack::{Launch, Stack};
use harness::{Client, Reply, eventually};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The resource every API of the scenario is called at, under its context.
const RESOURCE: &str = "/v1.0.0/devs/alice";
/// The address a trusted proxy calls from (loopback, but not the tests' 127.0.0.1).
const PROXY: &str = "127.0.0.2";

/// The path of the API named `name`'s resource.
fn path(name: &str) -> String {
    format!("/{}{RESOURCE}", name.to_lowercase())
}

/// A gateway plain on its address and TLS on another, trusting [`PROXY`], with `settings`.
async fn side_by_side(settings: &[(&'static str, String)]) -> (Stack, Client) {
    let listening = harness::tls::Listening::new(&harness::temp_dir());
    let mut gateway = listening.settings("APIM_TLS_CERT", "APIM_TLS_KEY");
    gateway.push(("APIM_GATEWAY_TLS_ADDR", "127.0.0.1:0".into()));
    gateway.push(("APIM_TRUSTED_PROXIES", PROXY.into()));
    gateway.extend(settings.iter().cloned());
    let stack = Launch {
        gateway: &gateway,
        ..Launch::default()
    }
    .start()
    .await;
    assert!(stack.gw.base.starts_with("http://"), "{}", stack.gw.base);
    // The TLS listener is announced right after the plain one, which the launch waited for.
    harness::wait_until(
        "the TLS listener's announcement",
        Duration::from_secs(5),
        async || stack.gateway.announced("Serving HTTPS").is_some(),
    )
    .await;
    let tls = stack
        .gateway
        .announced("Serving HTTPS")
        .expect("a TLS listener");
    assert!(tls.starts_with("https://"), "{tls}");
    (stack, Client::new(&tls))
}

/// WSO2's answer to a call on a transport its API does not take: its main sequence's 404.
fn assert_refused(reply: &Reply, what: &str) {
    assert_eq!((reply.status, reply.fault_code()), (404, "404"), "{what}");
    let body = reply.body.as_str().unwrap_or_default();
    assert!(
        body.contains("<am:message>Not Found</am:message>"),
        "{what}: {body}"
    );
}

/// The echo backend's view of the headers it was sent.
fn sent_header<'a>(reply: &'a Reply, name: &str) -> Option<&'a str> {
    reply.body["headers"][name].as_str()
}

async fn transports(settings: &[(&'static str, String)]) {
    let (stack, tls_gw) = side_by_side(settings).await;
    let https_only = stack
        .api("Sealed", json!({"transport": ["https"]}), &["Publish"])
        .await;
    let http_only = stack
        .api("Clear", json!({"transport": ["http"]}), &["Publish"])
        .await;
    let both = stack.api("Either", json!({}), &["Publish"]).await;
    let apis = [&*https_only, &*http_only, &*both];
    let (_, key, secret, _) = stack.application("TransportsApp", "Unlimited", &apis).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let served = |reply: &Reply| reply.status == 200;

    // The done-when: an https-only API refused on plain HTTP, served over TLS.
    eventually(
        &tls_gw,
        reqwest::Method::GET,
        &path("Sealed"),
        &token,
        served,
    )
    .await;
    assert_refused(
        &stack.gw.get(&path("Sealed"), &token).await,
        "https-only, plain",
    );
    assert_refused(
        &stack.gw.get(&path("Sealed"), "").await,
        "before the token is read",
    );
    eventually(
        &stack.gw,
        reqwest::Method::GET,
        &path("Clear"),
        &token,
        served,
    )
    .await;
    assert_refused(
        &tls_gw.get(&path("Clear"), &token).await,
        "http-only, over TLS",
    );
    for gw in [&stack.gw, &tls_gw] {
        let reply = eventually(gw, reqwest::Method::GET, &path("Either"), &token, served).await;
        assert_eq!(reply.body["path"], "/devs/alice");
    }

    forwarded_proto(&stack, &token).await;
    forged_schemes(&stack, &token).await;
}

/// `X-Forwarded-Proto: https` from [`PROXY`] is believed (and reaches the backend); from
/// 127.0.0.1, not listed, it is ignored and removed.
async fn forwarded_proto(stack: &Stack, token: &str) {
    let from = |address: &str| {
        let address: IpAddr = address.parse().unwrap();
        Client::with(
            &stack.gw.base,
            reqwest::Client::builder().local_address(address),
        )
    };
    let proxy = from(PROXY);
    let reply = says_https(&proxy, "Sealed", token).await.expect(200);
    assert_eq!(sent_header(&reply, "x-forwarded-proto"), Some("https"));
    assert_refused(
        &says_https(&proxy, "Clear", token).await,
        "http-only, behind TLS",
    );
    let reply = proxy.get(&path("Clear"), token).await.expect(200);
    assert_eq!(sent_header(&reply, "x-forwarded-proto"), None);

    let client = from("127.0.0.1");
    assert_refused(
        &says_https(&client, "Sealed", token).await,
        "a client's own claim",
    );
    for name in ["Either", "Clear"] {
        let reply = says_https(&client, name, token).await.expect(200);
        assert_eq!(
            sent_header(&reply, "x-forwarded-proto"),
            None,
            "never passed on"
        );
    }
}

/// A call of the API named `name` through `client` saying `X-Forwarded-Proto: https`.
async fn says_https(client: &Client, name: &str, token: &str) -> Reply {
    let request = client
        .request(reqwest::Method::GET, &path(name), token)
        .header("x-forwarded-proto", "https");
    client.send(request).await
}

/// An https-only API called on the plain listener with `https` in the request itself:
/// an absolute-form target over HTTP/1.1, `:scheme` over h2c; both refused, while the
/// same requests to an API of both transports are served.
async fn forged_schemes(stack: &Stack, token: &str) {
    let authority = stack.gw.base.trim_start_matches("http://");
    for name in ["Sealed", "Either"] {
        let target = format!("https://{authority}{}", path(name));
        let expected = if name == "Sealed" { 404 } else { 200 };
        assert_eq!(
            absolute_form(authority, &target, token).await,
            expected,
            "{name}"
        );
        assert_eq!(
            h2c_with_scheme(authority, &target, token).await,
            expected,
            "{name}"
        );
    }
}

/// The status of a GET of absolute-form `target` over HTTP/1.1 in clear to `authority`.
async fn absolute_form(authority: &str, target: &str, token: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.split(' ').nth(1).unwrap_or_default();
    status
        .parse()
        .unwrap_or_else(|_| panic!("no status in {answer}"))
}

/// The status of a GET of `target` over h2c (prior knowledge) to `authority`, its
/// `:scheme` and `:authority` taken from `target`.
async fn h2c_with_scheme(authority: &str, target: &str, token: &str) -> u16 {
    let stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::get(target)
        .header("authorization", format!("Bearer {token}"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let _ = response.into_body().collect().await;
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transports_on_plain_and_tls_listeners_on_the_host_path() {
    transports(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transports_on_plain_and_tls_listeners_on_the_component_path() {
    transports(&[("APIM_HOST_FORWARDING", "false".into())]).await;
}
