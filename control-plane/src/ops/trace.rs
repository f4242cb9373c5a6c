//! The control plane's spans, exported over OTLP when an endpoint is set ([`apim_otel`];
//! nothing is made otherwise): a change's way to the gateways.
//!
//! - `METHOD /route/template` (`SERVER`): a management request, its parent the caller's
//!   span when its `traceparent` is valid (an invalid one is ignored, as the gateway
//!   ignores it);
//! - `compile manifest`: a compile that made a new version, its parent the first request
//!   whose change it took in, the others linked;
//! - `deliver manifest` (`CLIENT`): a page pushed to a gateway, its parent the compile that
//!   made the newest version the page carries.

use std::sync::OnceLock;
use std::time::SystemTime;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::trace::{
    FutureExt as _, Link, Span as _, SpanContext, SpanKind, Status, TraceContextExt as _,
    Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use apim_http::trace::TRACEPARENT;

/// This service's name in spans, unless `OTEL_SERVICE_NAME` names it.
const SERVICE: &str = "control-plane";
/// Requests a compile's span links to at most (besides its parent).
pub const MAX_LINKED_REQUESTS: usize = 32;

static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Starts exporting when the OTLP variables say so; the provider to shut down at exit.
pub fn init() -> anyhow::Result<Option<SdkTracerProvider>> {
    let Some(provider) = apim_otel::tracer_provider(SERVICE, tokio::runtime::Handle::current())?
    else {
        return Ok(None);
    };
    use opentelemetry::trace::TracerProvider as _;
    let _ = TRACER.set(provider.tracer(SERVICE));
    tracing::info!("exporting spans over OTLP");
    Ok(Some(provider))
}

fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get()
}

/// Middleware making a management request's span, current while the request is handled
/// (so that the changes it reports name it: [`current_request`]).
pub async fn trace_request(request: Request, next: Next) -> Response {
    let Some(tracer) = tracer() else {
        return next.run(request).await;
    };
    let parent = caller_context(request.headers());
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str);
    let span = tracer
        .span_builder(format!("{method} {route}"))
        .with_kind(SpanKind::Server)
        .with_attributes([
            KeyValue::new("http.request.method", method),
            KeyValue::new("http.route", route.to_string()),
        ])
        .start_with_context(tracer, &parent);
    let context = parent.with_span(span);
    let response = next.run(request).with_context(context.clone()).await;
    let span = context.span();
    let status = response.status();
    span.set_attribute(KeyValue::new(
        "http.response.status_code",
        i64::from(status.as_u16()),
    ));
    if status.is_server_error() {
        span.set_status(Status::error(""));
    }
    span.end();
    response
}

/// The caller's span as a parent, when its one `traceparent` is valid.
fn caller_context(headers: &axum::http::HeaderMap) -> Context {
    let values = headers.get_all(TRACEPARENT).iter().map(|v| v.as_bytes());
    match apim_http::trace::incoming(values) {
        Some(caller) => Context::new().with_remote_span_context(apim_otel::remote_parent(
            caller.trace_id,
            caller.span_id,
            caller.flags,
        )),
        None => Context::new(),
    }
}

/// The span of the request being handled, when spans are exported.
pub fn current_request() -> Option<SpanContext> {
    tracer()?;
    let context = Context::current();
    let span = context.span();
    let span_context = span.span_context();
    span_context.is_valid().then(|| span_context.clone())
}

/// A compile that began at `started` and made `version`, of the changes `requests`
/// made: its span, ended now.
pub fn compiled(
    requests: &[SpanContext],
    started: SystemTime,
    version: u64,
    changes: usize,
) -> Option<SpanContext> {
    let tracer = tracer()?;
    let (parent, linked) = match requests.split_first() {
        Some((first, rest)) => (Context::new().with_remote_span_context(first.clone()), rest),
        None => (Context::new(), &[][..]),
    };
    let mut span = tracer
        .span_builder("compile manifest")
        .with_start_time(started)
        .with_links(
            linked
                .iter()
                .map(|request| Link::with_context(request.clone()))
                .collect(),
        )
        .with_attributes([
            KeyValue::new(
                "apim.manifest.version",
                i64::try_from(version).unwrap_or(i64::MAX),
            ),
            KeyValue::new(
                "apim.manifest.changes",
                i64::try_from(changes).unwrap_or(i64::MAX),
            ),
        ])
        .start_with_context(tracer, &parent);
    let context = span.span_context().clone();
    span.end();
    Some(context)
}

/// A page that brought `gateway` to `version`, pushed from `started` to now, as part of
/// the compile `compile`.
pub fn delivered(compile: Option<SpanContext>, gateway: &str, version: u64, started: SystemTime) {
    let Some(tracer) = tracer() else {
        return;
    };
    let parent = compile.map_or_else(Context::new, |compile| {
        Context::new().with_remote_span_context(compile)
    });
    tracer
        .span_builder("deliver manifest")
        .with_kind(SpanKind::Client)
        .with_start_time(started)
        .with_attributes([
            KeyValue::new("apim.gateway", gateway.to_string()),
            KeyValue::new(
                "apim.manifest.version",
                i64::try_from(version).unwrap_or(i64::MAX),
            ),
        ])
        .start_with_context(tracer, &parent)
        .end();
}
