//! The management listener: every REST resource, merged into one router.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tower_http::trace::TraceLayer;

use crate::state::{AppState, Touches};

pub(crate) mod auth;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod multipart;
pub(crate) mod pagination;

/// The whole management API, its paths' repeated slashes collapsed before routing.
pub fn app(state: AppState) -> Router {
    let routed = tower_layer::Layer::layer(
        &axum::middleware::map_request(collapse_repeated_slashes),
        routes(state),
    );
    Router::new().fallback_service(routed)
}

/// WSO2 collapses repeated slashes in a path (its own Java clients join base URL and path
/// into `/api/am/publisher/v0.14//apis`); so do we, keeping the query as it is.
async fn collapse_repeated_slashes(mut request: axum::extract::Request) -> axum::extract::Request {
    let uri = request.uri();
    if !uri.path().contains("//") {
        return request;
    }
    let mut target = String::with_capacity(uri.path().len());
    for c in uri.path().chars() {
        if !(c == '/' && target.ends_with('/')) {
            target.push(c);
        }
    }
    if let Some(query) = uri.query() {
        target.push('?');
        target.push_str(query);
    }
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = target.parse().ok();
    if let Ok(collapsed) = axum::http::Uri::from_parts(parts) {
        *request.uri_mut() = collapsed;
    }
    request
}

/// Every resource's routes and the layers they share.
fn routes(state: AppState) -> Router {
    let body_limit = state.config.max_body_bytes;
    rooms()
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            after_changes,
        ))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            BodyLimits {
                max_bytes: body_limit,
                timeout: std::time::Duration::from_millis(state.config.body_timeout_ms),
            },
            read_body_in_time,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::fleet::require_gateway_secret,
        ))
        .layer(axum::middleware::from_fn_with_state(
            body_limit,
            refuse_oversized_bodies,
        ))
        // Outside every refusal above, so that they are counted too; `Router::layer` runs it
        // after routing, where the route template is known.
        .layer(axum::middleware::from_fn(
            crate::ops::metrics::count_request,
        ))
        // Outside `after_changes`, so that the changes a request reports name its span.
        .layer(axum::middleware::from_fn(crate::ops::trace::trace_request))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Every resource's routes, as the rooms declare them: what the management listener serves
/// and what the OpenAPI document must describe (`crate::openapi`).
pub fn rooms() -> Router<AppState> {
    Router::new()
        .merge(crate::clients::router())
        .merge(crate::tokens::router())
        .merge(crate::tokens::introspection_router())
        .merge(crate::apis::publisher_router())
        .merge(crate::tiers::router())
        .merge(crate::environments::router())
        .merge(crate::certificates::router())
        .merge(crate::applications::router())
        .merge(crate::applications::scopes_router())
        .merge(crate::applications::publisher_router())
        .merge(crate::keys::router())
        .merge(crate::subscriptions::router())
        .merge(crate::subscriptions::publisher_router())
        .merge(crate::apis::store_router())
        .merge(crate::apis::tags_router())
        .merge(crate::documents::publisher_router())
        .merge(crate::documents::store_router())
        .merge(crate::thumbnails::router())
        .merge(crate::wsdl::router())
        .merge(crate::mediation::router())
        .merge(crate::users::router())
        .merge(crate::workflows::router())
        .merge(crate::fleet::router())
        .merge(crate::analytics::router())
        .merge(crate::openapi::router())
}

/// Every successful change (any method but GET/HEAD/OPTIONS) may change what gateways
/// must do (lifecycle, updates, deletes, subscriptions, keys, revocations, key rotation)
/// and what the token endpoint knows of clients and users: asks for a compile of what it
/// [`Touches`] (changes during one are taken in by the next, so bursts cost few) and
/// clears the client cache.
/// Issuing tokens, registering clients and gateways' analytics change neither (a refresh grant's revocation
/// asks for its own compile), and at thousands of tokens a second they must not keep
/// the compiler busy.
async fn after_changes(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::Method;
    let path = request.uri().path();
    let changes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) && path != "/oauth2/token"
        && path != apim_manifest::paths::CONTROL_PLANE_ANALYTICS
        && !path.starts_with("/client-registration/");
    let mut response = next.run(request).await;
    if changes && response.status().is_success() {
        match response.extensions_mut().remove::<Touches>() {
            Some(Touches(touched)) => state.manifests.touch(touched),
            None => state.manifests.request_recompile(),
        }
        state.clients.clear();
    }
    response
}

/// Answers 413 from the announced Content-Length, before reading a byte of the body.
/// (The body limit above still stops chunked bodies once they grow past it.)
async fn refuse_oversized_bodies(
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
struct BodyLimits {
    max_bytes: usize,
    timeout: std::time::Duration,
}

/// Reads the whole body within the body timeout (408 past it, 413 past the size limit),
/// so that a client trickling a body cannot hold a handler and its connection.
/// Management bodies are small and every handler reads them whole anyway.
async fn read_body_in_time(
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

async fn not_found(uri: axum::http::Uri) -> crate::error::Error {
    crate::error::Error::NotFoundWhy(format!("No resource at {}", uri.path()))
}

async fn method_not_allowed() -> crate::error::Error {
    crate::error::Error::MethodNotAllowed
}
