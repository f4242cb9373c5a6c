//! The backend every case forwards to: answers any request with the same 1 KiB body, on a
//! thread of its own pinned to CPU 0 (beside wrk), so it costs the same in every case.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Size of every response body.
pub const BODY_BYTES: usize = 1024;

/// The running backend (it lives as long as the process).
pub struct FastBackend {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl FastBackend {
    /// Starts it on a free port.
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind backend");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        on_cpu_0("backend", move || async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = axum::serve(listener, app()).await;
        });
        FastBackend { url }
    }
}

/// Runs `serve` on a thread of its own pinned to CPU 0 (beside wrk), in a runtime of its
/// own.
pub fn on_cpu_0<F>(name: &str, serve: impl FnOnce() -> F + Send + 'static)
where
    F: std::future::Future<Output = ()>,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            harness::machine::pin_thread("0");
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("backend runtime");
            runtime.block_on(serve());
        })
        .expect("backend thread");
}

/// Requests that came with an `X-JWT-Assertion` (the gateway's backend JWT).
static ASSERTED: AtomicU64 = AtomicU64::new(0);

/// How many requests came with an `X-JWT-Assertion` so far.
pub fn asserted() -> u64 {
    ASSERTED.load(Ordering::Relaxed)
}

/// The request header that asks for [`large_body`] instead of [`body`].
pub const LARGE_HEADER: &str = "x-bench-body";

/// The backend's routes: [`body`] for any request ([`large_body`] for one with
/// [`LARGE_HEADER`]).
pub fn app() -> axum::Router {
    axum::Router::new().fallback(|headers: axum::http::HeaderMap| async move {
        if headers.contains_key("x-jwt-assertion") {
            ASSERTED.fetch_add(1, Ordering::Relaxed);
        }
        let answer = if headers.contains_key(LARGE_HEADER) {
            large_body()
        } else {
            body()
        };
        (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            answer,
        )
    })
}

/// A JSON document of about 10 KiB shaped as APIs answer: a page of records, each with
/// text, numbers, a boolean and a short array.
pub fn large_body() -> &'static str {
    static BODY: OnceLock<String> = OnceLock::new();
    BODY.get_or_init(|| {
        let items: Vec<String> = (0..120)
            .map(|n| {
                format!(
                    r#"{{"id":{n},"name":"item-{n:03}","price":{n}.25,"stock":{},"active":{},"tags":["a","b"]}}"#,
                    n * 7,
                    n % 2 == 0
                )
            })
            .collect();
        format!(r#"{{"page":1,"total":120,"items":[{}]}}"#, items.join(","))
    })
}

/// A JSON document of exactly [`BODY_BYTES`].
pub fn body() -> &'static str {
    static BODY: OnceLock<String> = OnceLock::new();
    BODY.get_or_init(|| {
        let frame = r#"{"data":""}"#;
        format!(r#"{{"data":"{}"}}"#, "x".repeat(BODY_BYTES - frame.len()))
    })
}
