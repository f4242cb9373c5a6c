//! The HTTP side: SOAP on `POST /ws` behind HTTP Basic, the WSDL on
//! `GET /ws/developers.wsdl`; and the process around them.

use std::ffi::OsStr;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, TRANSFER_ENCODING, WWW_AUTHENTICATE,
};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use tokio::signal::unix::{SignalKind, signal};

use super::config::Config;
use super::soap::{self, Fault, Request};
use super::store::{Store, StoreError};
use super::wsdl;

/// Largest request body read; larger ones get 413.
pub const MAX_BODY: usize = 1 << 20;

/// Realm of the original service.
const REALM: &str = "HydrogenRealm";

#[derive(Clone)]
struct AppState {
    store: Store,
    /// `user:password`, as HTTP Basic carries it.
    credentials: Arc<str>,
    recorder: Option<Arc<Recorder>>,
    local_addr: SocketAddr,
    /// Whether chunked request bodies are read (else 411).
    accept_chunked: bool,
}

/// Runs the service until SIGTERM or Ctrl-C.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let (store, seeded) = Store::open(&config.db)
        .await
        .with_context(|| format!("could not open database {}", config.db.display()))?;
    let recorder = match &config.record_dir {
        Some(dir) => Some(Arc::new(Recorder::open(dir).with_context(|| {
            format!("could not use record directory {}", dir.display())
        })?)),
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("could not listen on {}", config.addr))?;
    let local_addr = listener.local_addr()?;
    // Handlers first: a harness may send SIGTERM as soon as it reads the line below.
    let shutdown = shutdown_signal()?;
    let state = AppState {
        store: store.clone(),
        credentials: format!("{}:{}", config.user, config.password).into(),
        recorder,
        local_addr,
        accept_chunked: config.accept_chunked,
    };
    let origin = if seeded { "new, seeded" } else { "existing" };
    let framing = if config.accept_chunked {
        "chunked bodies accepted"
    } else {
        "strict: bodies need Content-Length"
    };
    eprintln!(
        "legacy-soap: database {} ({origin}); {framing}",
        config.db.display()
    );
    println!("Serving HTTP on http://{local_addr}/");
    std::io::stdout().flush()?;
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown)
        .await?;
    store.close().await;
    Ok(())
}

fn app(state: AppState) -> Router {
    Router::new()
        .route("/ws", post(endpoint))
        .route("/ws/developers.wsdl", get(wsdl_document))
        .with_state(state)
}

fn shutdown_signal() -> std::io::Result<impl Future<Output = ()>> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}

/// `POST /ws`: one SOAP 1.1 request, one response or fault.
async fn endpoint(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    if is_chunked(&headers) && !state.accept_chunked {
        // Drained unread, so the client sees the answer rather than a reset connection.
        let _ = axum::body::to_bytes(body, MAX_BODY).await;
        return (
            StatusCode::LENGTH_REQUIRED,
            "Request bodies must be sent with Content-Length; chunked bodies are not read\n",
        )
            .into_response();
    }
    let Some(body) = read_body(&headers, body).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Request bodies are limited to {MAX_BODY} bytes\n"),
        )
            .into_response();
    };
    if let Some(recorder) = &state.recorder {
        recorder.record(&body).await;
    }
    if !authorized(&headers, &state.credentials) {
        return unauthorized();
    }
    if !is_text_xml(&headers) {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "SOAP 1.1 requests must be sent as text/xml\n",
        )
            .into_response();
    }
    let outcome = match soap::parse_request(&body) {
        Ok(request) => execute(&state.store, request).await,
        Err(fault) => Err(fault),
    };
    match outcome {
        Ok(response) => xml(StatusCode::OK, soap::render_response(&response)),
        // SOAP 1.1 §6.2: faults travel with 500 Internal Server Error.
        Err(fault) => xml(
            StatusCode::INTERNAL_SERVER_ERROR,
            soap::render_fault(&fault),
        ),
    }
}

/// Whether the body comes chunked (any transfer coding: the only one HTTP/1.1 clients
/// send on requests is chunked, and a strict stack reads none).
fn is_chunked(headers: &HeaderMap) -> bool {
    headers.contains_key(TRANSFER_ENCODING)
}

/// The body, unless it is over [`MAX_BODY`]: refused by its Content-Length before a byte
/// is read (a client may wait for the answer before sending it), else once it grows past.
async fn read_body(headers: &HeaderMap, body: Body) -> Option<Bytes> {
    let announced = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|length| length > MAX_BODY as u64) {
        return None;
    }
    axum::body::to_bytes(body, MAX_BODY).await.ok()
}

/// Runs a request as the customer's service does (BEHAVIOUR.md): an unknown user name is
/// a Server fault to getDeveloper, a taken one an addDeveloper answer without a developer,
/// and addRepo adds whatever it is given.
async fn execute(store: &Store, request: Request) -> Result<soap::Response, Fault> {
    use soap::Response as R;
    Ok(match request {
        Request::GetDeveloper { username } => R::GetDeveloper(store.developer(&username).await?),
        Request::AddDeveloper(developer) => R::AddDeveloper(store.add_developer(&developer).await?),
        Request::DeleteDeveloper { username } => {
            R::DeleteDeveloper(match store.delete_developer(&username).await {
                Ok(()) => "Success",
                Err(StoreError::NotFound) => "Resource not found",
                Err(other) => return Err(other.into()),
            })
        }
        Request::GetRepo { username } => R::GetRepo(store.repos(&username).await?),
        Request::AddRepo(repo) => R::AddRepo(store.add_repo(&repo).await?),
    })
}

/// What the original's runtime says when getDeveloper meets an unknown user name (it
/// throws from an empty `Optional` with a null exception supplier); not a stable text,
/// so clients cannot rely on it.
pub const UNKNOWN_DEVELOPER_FAULT: &str =
    r#"Cannot invoke "java.util.function.Supplier.get()" because "exceptionSupplier" is null"#;

impl From<StoreError> for Fault {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound => Fault::server(UNKNOWN_DEVELOPER_FAULT),
            StoreError::Database(e) => {
                eprintln!("legacy-soap: database error: {e}");
                Fault::server("Internal error")
            }
        }
    }
}

/// `GET /ws/developers.wsdl`, open to all like the original's; the endpoint address is
/// the one the client used.
async fn wsdl_document(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map_or_else(|| state.local_addr.to_string(), str::to_string);
    xml(StatusCode::OK, wsdl::render(&format!("http://{host}/ws")))
}

fn xml(status: StatusCode, body: String) -> Response {
    (status, [(CONTENT_TYPE, "text/xml; charset=utf-8")], body).into_response()
}

fn authorized(headers: &HeaderMap, credentials: &str) -> bool {
    let Some((scheme, encoded)) = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
    else {
        return false;
    };
    scheme.eq_ignore_ascii_case("basic")
        && base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .is_ok_and(|decoded| decoded == credentials.as_bytes())
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(WWW_AUTHENTICATE, format!("Basic realm=\"{REALM}\""))],
        "HTTP Basic credentials are required\n",
    )
        .into_response()
}

/// SOAP 1.1 over HTTP is `text/xml` (parameters such as charset allowed).
fn is_text_xml(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("text/xml"))
}

/// Writes each request body to a numbered file, continuing after those already there.
struct Recorder {
    dir: PathBuf,
    last: AtomicU64,
}

impl Recorder {
    fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let last = std::fs::read_dir(dir)?
            .filter_map(|entry| record_number(&entry.ok()?.file_name()))
            .max()
            .unwrap_or(0);
        Ok(Recorder {
            dir: dir.to_path_buf(),
            last: AtomicU64::new(last),
        })
    }

    async fn record(&self, body: &[u8]) {
        let number = self.last.fetch_add(1, Ordering::SeqCst) + 1;
        let path = self.dir.join(format!("{number:06}.xml"));
        if let Err(e) = tokio::fs::write(&path, body).await {
            eprintln!("legacy-soap: could not record {}: {e}", path.display());
        }
    }
}

/// The number of a recorded request's file (`000042.xml` → 42).
pub(super) fn record_number(name: &OsStr) -> Option<u64> {
    let digits = name.to_str()?.strip_suffix(".xml")?;
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
