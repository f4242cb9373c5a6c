//! What every room shares at the HTTP layer: callers, extractors, error bodies, paging,
//! forms, the routes' table, and the body limits and fallbacks the app puts around every
//! route.

pub(crate) mod auth;
pub(crate) mod egress_fetch;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod multipart;
pub(crate) mod pagination;
pub(crate) mod routes;
pub(crate) mod urls;

/// Where WSO2's publisher REST API v0.14 is served.
pub const PUBLISHER: &str = "/api/am/publisher/v0.14";
/// Where WSO2's store REST API v0.14 is served.
pub const STORE: &str = "/api/am/store/v0.14";
/// Where WSO2's admin REST API v0.14 is served.
pub const ADMIN: &str = "/api/am/admin/v0.14";

/// Answers 413 from the announced Content-Length, before reading a byte of the body.
/// (The body limit above still stops chunked bodies once they grow past it.)
pub(crate) async fn refuse_oversized_bodies(
    axum::extract::State(limit): axum::extract::State<usize>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let announced = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match announced {
        Some(length) if length > limit as u64 => {
            axum::response::IntoResponse::into_response(crate::error::Error::PayloadTooLarge)
        }
        _ => next.run(request).await,
    }
}

/// How much of a body is read, and for how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    pub(crate) max_bytes: usize,
    pub(crate) timeout: std::time::Duration,
}

/// Reads the whole body within the body timeout (408 past it, 413 past the size limit),
/// so that a client trickling a body cannot hold a handler and its connection.
/// Management bodies are small and every handler reads them whole anyway.
pub(crate) async fn read_body_in_time(
    axum::extract::State(limits): axum::extract::State<BodyLimits>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    use http_body_util::BodyExt as _;
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, limits.max_bytes);
    let read = match tokio::time::timeout(limits.timeout, limited.collect()).await {
        Err(_) => Err(crate::error::Error::RequestTimeout),
        Ok(Err(err)) if err.is::<http_body_util::LengthLimitError>() => {
            Err(crate::error::Error::PayloadTooLarge)
        }
        Ok(Err(_)) => Err(crate::error::Error::Invalid(
            "The request body could not be read".into(),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    };
    match read {
        Ok(bytes) => {
            let body = axum::body::Body::from(bytes);
            next.run(axum::extract::Request::from_parts(parts, body))
                .await
        }
        Err(refusal) => error::closing(refusal.into_response()),
    }
}

pub(crate) async fn not_found(uri: axum::http::Uri) -> crate::error::Error {
    crate::error::Error::NotFoundWhy(format!("No resource at {}", uri.path()))
}

pub(crate) async fn method_not_allowed() -> crate::error::Error {
    crate::error::Error::MethodNotAllowed
}
