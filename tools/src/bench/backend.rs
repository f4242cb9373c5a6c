//! The backend every case forwards to: answers any request with the same 1 KiB body, on a
//! thread of its own pinned to CPU 0 (beside wrk), so it costs the same in every case.

use std::sync::OnceLock;

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
        std::thread::Builder::new()
            .name("backend".into())
            .spawn(move || serve(listener))
            .expect("backend thread");
        FastBackend { url }
    }
}

fn serve(listener: std::net::TcpListener) {
    harness::machine::pin_thread("0");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("backend runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
        let app = axum::Router::new().fallback(|| async {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body(),
            )
        });
        let _ = axum::serve(listener, app).await;
    });
}

/// A JSON document of exactly [`BODY_BYTES`].
pub fn body() -> &'static str {
    static BODY: OnceLock<String> = OnceLock::new();
    BODY.get_or_init(|| {
        let frame = r#"{"data":""}"#;
        format!(r#"{{"data":"{}"}}"#, "x".repeat(BODY_BYTES - frame.len()))
    })
}
