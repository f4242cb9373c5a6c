//! The operations listener (`APIM_OPS_ADDR`, off by default): `GET /healthz` (the process
//! serves), `GET /readyz` (compiled, manifest held: 200; 503 before) and `GET /metrics`
//! (Prometheus text). A listener of its own rather than paths on the gateway's: no
//! published API can shadow them, and clients of the APIs never reach them. Answers are
//! fixed and tell nothing about the deployment beyond the metrics.

use std::convert::Infallible;
use std::sync::Arc;

use apim_metrics_exposition::Format;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use super::Telemetry;

/// Longest a client of the operations listener may take to send a request head.
const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Announces the listener (`Serving operations on http://ADDR/`) and serves it until
/// the process ends.
pub fn spawn(listener: TcpListener, telemetry: Arc<Telemetry>) -> anyhow::Result<()> {
    let bound = listener.local_addr()?;
    println!("Serving operations on http://{bound}/");
    tracing::info!(addr = %bound, "operations listener (health, metrics)");
    tokio::spawn(async move {
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT);
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!("operations listener: accept failed: {err}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let telemetry = telemetry.clone();
            let service = service_fn(move |request| {
                let answer = answer(&telemetry, &request);
                async move { Ok::<_, Infallible>(answer) }
            });
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::spawn(async move {
                if let Err(err) = connection.await {
                    tracing::debug!("operations connection ended with error: {err}");
                }
            });
        }
    });
    Ok(())
}

/// The answer to one request of the operations listener.
fn answer<B>(telemetry: &Telemetry, request: &Request<B>) -> Response<Full<Bytes>> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "");
    }
    match request.uri().path() {
        "/healthz" => json(StatusCode::OK, r#"{"status":"alive"}"#),
        "/readyz" if telemetry.is_ready() => json(StatusCode::OK, r#"{"status":"ready"}"#),
        "/readyz" => json(
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"status":"unavailable"}"#,
        ),
        "/metrics" => {
            let accept = request.headers().get(header::ACCEPT);
            let format = Format::asked_by(accept.and_then(|v| v.to_str().ok()));
            let mut response = text(StatusCode::OK, telemetry.metrics.encode(format));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(format.content_type()),
            );
            response
        }
        _ => text(StatusCode::NOT_FOUND, ""),
    }
}

fn json(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = text(status, body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
}
