//! Request bodies by one rule: a configured limit refuses a body over it
//! alike whether its length is announced or it comes chunked, with WSO2's 413 fault, on
//! both forwarding paths, next to bodies at the limit that pass whole; and without a limit
//! a gigabyte with `Content-Length` streams through edge-gateway's host path while the
//! gateway's resident memory stays flat.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use harness::stack::{Launch, Stack};
use harness::{machine, raw_exchange};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The limit the first scenarios configure, bytes.
const LIMIT: usize = 4096;
/// What the gigabyte upload sends.
const GIGABYTE: u64 = 1 << 30;
/// The gateway's resident memory must stay under this during the upload, MiB.
const FLAT_RSS_MIB: f64 = 200.0;

/// An API taking uploads at `POST /files` without a token, at `endpoint` when given
/// (the stack's echo backend otherwise); its path on the gateway.
async fn uploads_api(stack: &Stack, name: &str, endpoint: Option<&str>) -> String {
    let swagger = json!({
        "swagger": "2.0",
        "info": {"title": name, "version": "v1.0.0"},
        "paths": {"/files": {"post": {"x-auth-type": "None", "x-throttling-tier": "Unlimited"}}}
    });
    let mut changes = json!({"apiDefinition": swagger.to_string()});
    if let Some(url) = endpoint {
        let config = json!({
            "production_endpoints": {"url": url, "config": null},
            "sandbox_endpoints": {"url": url, "config": null},
            "endpoint_type": "http"
        });
        changes["endpointConfig"] = json!(config.to_string());
    }
    stack.api(name, changes, &["Publish"]).await;
    let path = format!("/{}/v1.0.0/files", name.to_lowercase());
    // The route reaches the gateway a moment after the publish is answered.
    let gw = stack.gw.base.clone();
    harness::wait_until(
        "the uploads API routed",
        Duration::from_secs(20),
        async || raw_exchange(&gw, &announced(&path, 0)).await.status == 200,
    )
    .await;
    path
}

/// `POST path` with a body of `length` bytes announced by `Content-Length`.
fn announced(path: &str, length: usize) -> Vec<u8> {
    let mut message = format!(
        "POST {path} HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\
         Content-Type: text/plain\r\nContent-Length: {length}\r\n\r\n"
    )
    .into_bytes();
    message.resize(message.len() + length, b'x');
    message
}

/// `POST path` with a body of `length` bytes sent chunked, 1 KiB a chunk.
fn chunked(path: &str, length: usize) -> Vec<u8> {
    let mut message = format!(
        "POST {path} HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\
         Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    let body = vec![b'x'; length];
    for chunk in body.chunks(1024) {
        message.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        message.extend_from_slice(chunk);
        message.extend_from_slice(b"\r\n");
    }
    message.extend_from_slice(b"0\r\n\r\n");
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_body_limit_on_the_host_path() {
    one_limit(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_body_limit_on_the_component_path() {
    one_limit(&[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// With `APIM_MAX_REQUEST_BODY_BYTES`: a body at the limit passes whole, announced or
/// chunked; one byte more is refused with WSO2's 413 either way (announced: from the
/// head, before the backend hears of it).
async fn one_limit(settings: &[(&'static str, String)]) {
    let mut gateway = vec![("APIM_MAX_REQUEST_BODY_BYTES", LIMIT.to_string())];
    gateway.extend_from_slice(settings);
    let stack = Launch {
        gateway: &gateway,
        ..Launch::default()
    }
    .start()
    .await;
    let path = uploads_api(&stack, "Uploads", None).await;
    let gw = stack.gw.base.as_str();
    for (framing, message) in [
        ("announced", announced(&path, LIMIT)),
        ("chunked", chunked(&path, LIMIT)),
    ] {
        let reply = raw_exchange(gw, &message).await;
        assert_eq!(reply.status, 200, "{framing}: {}", reply.body);
        let echoed = reply.json();
        assert_eq!(
            echoed["body"].as_str().map(str::len),
            Some(LIMIT),
            "{framing}: the backend got the whole body"
        );
    }
    let hits = || stack.backend.hits.load(Ordering::SeqCst);
    let before = hits();
    let reply = raw_exchange(gw, &announced(&path, LIMIT + 1)).await;
    assert_eq!(
        (reply.status, reply.fault_code()),
        (413, "413"),
        "announced: {}",
        reply.body
    );
    assert_eq!(hits(), before, "refused from the head");
    let reply = raw_exchange(gw, &chunked(&path, LIMIT + 1)).await;
    assert_eq!(
        (reply.status, reply.fault_code()),
        (413, "413"),
        "chunked: {}",
        reply.body
    );
    // WSO2's fault in JSON for a client that asks for it. (Bodies stay a little over the
    // limit: what a refused client sends beyond it, unread, would reset the connection.)
    let mut json_asked = chunked(&path, LIMIT + 100);
    let head_end = json_asked
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap();
    json_asked.splice(head_end..head_end, *b"\r\nAccept: application/json");
    let reply = raw_exchange(gw, &json_asked).await;
    assert_eq!(reply.status, 413, "{}", reply.body);
    assert_eq!(reply.json()["fault"]["code"], json!(413), "{}", reply.body);
    // And the gateway still serves bodies within the limit.
    assert_eq!(raw_exchange(gw, &chunked(&path, 10)).await.status, 200);
    stack.gateway.stop().await;
}

/// A gigabyte with `Content-Length` through the host path, with no limit configured (as
/// WSO2's gateway): the backend receives every byte, and the gateway's resident memory,
/// read from /proc throughout the upload, stays under [`FLAT_RSS_MIB`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_streams_through_with_flat_memory() {
    let sink = Sink::start().await;
    let stack = Stack::start(&[]).await;
    let path = uploads_api(&stack, "Bulk", Some(&sink.url)).await;
    let pid = stack.gateway.pid();
    let before = machine::rss_mib(pid);
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::spawn(async move {
            let mut peak = 0.0_f64;
            while sampling.load(Ordering::Relaxed) {
                peak = peak.max(machine::rss_mib(pid));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            peak
        })
    };
    let reply = upload(&stack.gw.base, &path, GIGABYTE).await;
    sampling.store(false, Ordering::Relaxed);
    let peak = sampler.await.expect("sampler");
    eprintln!(
        "1 GiB upload: gateway resident {before:.1} MiB before, {peak:.1} MiB at most during"
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["received"], json!(GIGABYTE), "{}", reply.body);
    assert_eq!(sink.received.load(Ordering::SeqCst), GIGABYTE);
    assert!(
        peak < FLAT_RSS_MIB,
        "the gateway held {peak:.1} MiB during the upload ({before:.1} MiB before)"
    );
    stack.gateway.stop().await;
}

/// Sends `POST path` with a body of `length` zero bytes, announced, written 256 KiB at a
/// time as a client streams a file; the answer.
async fn upload(base: &str, path: &str, length: u64) -> harness::RawReply {
    let host = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    let block = vec![0u8; 256 * 1024];
    let mut left = length;
    while left > 0 {
        let now = left.min(block.len() as u64) as usize;
        stream.write_all(&block[..now]).await.expect("body");
        left -= now as u64;
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    harness::RawReply {
        status: head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        headers: Vec::new(),
        body: body.to_string(),
    }
}

/// A backend that reads each request's body (framed by `Content-Length`), counting and
/// dropping it, and answers `{"received": bytes}`.
struct Sink {
    url: String,
    received: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Sink {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind sink");
        let url = format!("http://{}/", listener.local_addr().expect("addr"));
        let received = Arc::new(AtomicU64::new(0));
        let total = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(sink_connection(stream, total.clone()));
            }
        });
        Sink {
            url,
            received,
            task,
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves the requests of one kept-alive connection.
async fn sink_connection(mut stream: TcpStream, total: Arc<AtomicU64>) {
    let mut buffer = vec![0u8; 256 * 1024];
    let mut pending = Vec::new();
    loop {
        let head_end = loop {
            if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => pending.extend_from_slice(&buffer[..read]),
            }
        };
        let head = String::from_utf8_lossy(&pending[..head_end]).to_ascii_lowercase();
        let length: u64 = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let already = (pending.len() - head_end) as u64;
        let mut counted = already.min(length);
        pending.drain(..head_end + counted as usize);
        while counted < length {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => {
                    let used = (read as u64).min(length - counted);
                    counted += used;
                    pending.extend_from_slice(&buffer[used as usize..read]);
                }
            }
        }
        total.fetch_add(counted, Ordering::SeqCst);
        let answer = json!({ "received": counted }).to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if stream.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}
