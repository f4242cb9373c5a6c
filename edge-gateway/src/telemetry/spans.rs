//! Traces of gateway requests (W3C Trace Context, [`apim_http::trace`]).
//!
//! Every request gets a trace: the one its `traceparent` names when that is valid, a new
//! one otherwise (an invalid value is replaced and its `tracestate` dropped, never passed
//! on). The host makes the gateway's span, the request span, and rewrites the request's
//! `traceparent` before anything else reads it, so both forwarding paths carry it:
//! forwarding here, the backend's parent is the request span's child "backend call";
//! through the component's `wasi:http` handler (told by its `trace_spans` variable to
//! pass the header on as it is), the request span itself.
//!
//! With an OTLP endpoint set ([`apim_otel`]) the spans are exported, batched off the
//! request path: the request span (`SERVER`, the client's span as parent), `decide`
//! (the component's decision) and `backend call` (`CLIENT`), with the ids the headers
//! carried and the times the request measured. Without one, a request costs its ids
//! (random bits) and one header value, and no span is built.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SpanData, SpanEvents, SpanLinks, SpanProcessor,
};

use apim_http::trace::{self, SAMPLED, TRACEPARENT, TRACESTATE, TraceParent};

use crate::telemetry::called::Called;

/// This service's name in spans, unless `OTEL_SERVICE_NAME` names it.
const SERVICE: &str = "edge-gateway";

/// The trace headers' names, made once: named by text, each use would check the text
/// again on every request.
const TRACEPARENT_NAME: HeaderName = HeaderName::from_static(TRACEPARENT);
const TRACESTATE_NAME: HeaderName = HeaderName::from_static(TRACESTATE);

/// Where the host's spans go, if anywhere.
#[derive(Default)]
pub struct Tracing {
    exporter: Option<Exporter>,
}

struct Exporter {
    processor: Arc<BatchSpanProcessor>,
    scope: InstrumentationScope,
}

/// A request's trace, as the host began it.
#[derive(Debug, Clone, Copy)]
pub struct RequestTrace {
    /// The client's span, when its `traceparent` was valid.
    client: Option<TraceParent>,
    /// The request's trace; its span is the gateway's request span.
    pub trace: TraceParent,
    /// The span of the call to the backend, when the host forwards.
    backend_span: u64,
    /// The wall clock at the request's start, for exported spans.
    wall_start: SystemTime,
}

/// When the parts of a request ran, for its spans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The component's decision: start and length.
    pub decide: Option<(Instant, Duration)>,
    /// When the first endpoint was called (the length is the outcome's `backend`).
    pub backend_sent: Option<Instant>,
}

/// What a request's spans say of it.
pub struct Finished<'a> {
    /// The request method.
    pub method: &'a str,
    /// What the component said the request is.
    pub call: &'a Called<'a>,
    /// The answer's status.
    pub status: u16,
    /// When the request began.
    pub started: Instant,
    /// Its whole length.
    pub elapsed: Duration,
    /// When its parts ran.
    pub timeline: Timeline,
    /// The backend's share.
    pub backend: Option<Duration>,
}

impl Tracing {
    /// Exporting when the OTLP variables say so; export requests run on `runtime`.
    pub fn from_env(runtime: tokio::runtime::Handle) -> anyhow::Result<Self> {
        let Some(processor) = apim_otel::batch_processor(SERVICE, runtime)? else {
            return Ok(Self::default());
        };
        tracing::info!("exporting spans over OTLP");
        Ok(Self {
            exporter: Some(Exporter {
                processor: Arc::new(processor),
                scope: InstrumentationScope::builder(SERVICE).build(),
            }),
        })
    }

    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.exporter.is_some()
    }

    /// Begins a request's trace and sets its `traceparent` (and `tracestate`) as
    /// whatever the host hands it to must pass them on: naming the backend call's span
    /// when the host forwards (`host_forwards`), the request span otherwise.
    pub fn begin(&self, headers: &mut HeaderMap, host_forwards: bool) -> RequestTrace {
        let values = headers
            .get_all(&TRACEPARENT_NAME)
            .iter()
            .map(HeaderValue::as_bytes);
        let client = trace::incoming(values);
        let span = rand::random::<u64>();
        let trace = match client {
            Some(client) => client.with_parent(span),
            None => {
                let flags = if self.exporting() { SAMPLED } else { 0 };
                trace::new_trace(rand::random(), span, flags)
            }
        };
        let backend_span = trace::nonzero(rand::random());
        let passed = if host_forwards {
            trace.with_parent(backend_span)
        } else {
            trace
        };
        if client.is_none() {
            headers.remove(&TRACESTATE_NAME);
        }
        let value = HeaderValue::from_bytes(&passed.header()).expect("hex and dashes");
        headers.insert(TRACEPARENT_NAME, value);
        RequestTrace {
            client,
            trace,
            backend_span,
            wall_start: if self.exporting() {
                SystemTime::now()
            } else {
                SystemTime::UNIX_EPOCH
            },
        }
    }

    /// Exports a finished request's spans (when exporting, and the trace is sampled).
    pub fn finish(&self, request: &RequestTrace, finished: &Finished<'_>) {
        let Some(exporter) = &self.exporter else {
            return;
        };
        if !request.trace.sampled() {
            return;
        }
        let at = |instant: Instant| {
            request.wall_start + instant.saturating_duration_since(finished.started)
        };
        let own = |span_id: u64| {
            SpanContext::new(
                request.trace.trace_id.into(),
                SpanId::from(span_id),
                TraceFlags::new(request.trace.flags),
                false,
                TraceState::NONE,
            )
        };
        let request_span = request.trace.span_id;
        let (parent, remote) = match request.client {
            Some(client) => (SpanId::from(client.span_id), true),
            None => (SpanId::INVALID, false),
        };
        let status = if finished.status >= 500 {
            Status::error("")
        } else {
            Status::Unset
        };
        exporter.processor.on_end(SpanData {
            parent_span_is_remote: remote,
            span_kind: SpanKind::Server,
            name: span_name(finished),
            attributes: request_attributes(finished),
            status,
            ..exporter.span(
                own(request_span),
                parent,
                request.wall_start,
                at(finished.started + finished.elapsed),
            )
        });
        let parent = SpanId::from(request_span);
        if let Some((started, took)) = finished.timeline.decide {
            let context = own(trace::nonzero(rand::random()));
            let span = exporter.span(context, parent, at(started), at(started + took));
            exporter.processor.on_end(SpanData {
                name: Cow::Borrowed("decide"),
                ..span
            });
        }
        if let (Some(sent), Some(took)) = (finished.timeline.backend_sent, finished.backend) {
            let context = own(request.backend_span);
            let span = exporter.span(context, parent, at(sent), at(sent + took));
            exporter.processor.on_end(SpanData {
                name: Cow::Borrowed("backend call"),
                span_kind: SpanKind::Client,
                ..span
            });
        }
    }

    /// Sends the spans still queued (at exit).
    pub async fn shutdown(&self) {
        if let Some(exporter) = &self.exporter {
            apim_otel::shutdown_processor(exporter.processor.clone()).await;
        }
    }
}

impl Exporter {
    /// An internal span of the request's, with no attributes.
    fn span(
        &self,
        context: SpanContext,
        parent: SpanId,
        start: SystemTime,
        end: SystemTime,
    ) -> SpanData {
        SpanData {
            span_context: context,
            parent_span_id: parent,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(""),
            start_time: start,
            end_time: end,
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: self.scope.clone(),
        }
    }
}

/// `METHOD /resource/template` (OpenTelemetry's HTTP server span name), or the method
/// alone when no resource matched.
fn span_name(finished: &Finished<'_>) -> Cow<'static, str> {
    if finished.call.resource.is_empty() {
        Cow::Owned(finished.method.to_string())
    } else {
        Cow::Owned(format!("{} {}", finished.method, finished.call.resource))
    }
}

/// The request span's attributes: OpenTelemetry's HTTP names, and the API's.
fn request_attributes(finished: &Finished<'_>) -> Vec<KeyValue> {
    let call = finished.call;
    let mut attributes = vec![
        KeyValue::new("http.request.method", finished.method.to_string()),
        KeyValue::new("http.response.status_code", i64::from(finished.status)),
    ];
    if !call.resource.is_empty() {
        attributes.push(KeyValue::new("http.route", call.resource.to_string()));
    }
    if !call.api.is_empty() {
        attributes.push(KeyValue::new("apim.api", call.api.to_string()));
        attributes.push(KeyValue::new("apim.api.version", call.version.to_string()));
    }
    if !call.application.is_empty() {
        attributes.push(KeyValue::new(
            "apim.application",
            call.application.to_string(),
        ));
    }
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn passed(headers: &HeaderMap) -> TraceParent {
        let values: Vec<_> = headers.get_all(TRACEPARENT).iter().collect();
        assert_eq!(values.len(), 1);
        TraceParent::parse(values[0].as_bytes()).expect("valid")
    }

    #[test]
    fn the_clients_trace_is_kept_and_the_gateways_span_passed_on() {
        let tracing = Tracing::default();
        let mut headers = HeaderMap::new();
        headers.insert(TRACEPARENT, HeaderValue::from_static(CLIENT));
        headers.insert(TRACESTATE, HeaderValue::from_static("vendor=1"));
        let begun = tracing.begin(&mut headers, true);
        let sent = passed(&headers);
        assert_eq!(sent.trace_id, 0x4bf92f3577b34da6a3ce929d0e0e4736);
        assert_eq!(sent.span_id, begun.backend_span);
        assert_ne!(sent.span_id, 0x00f067aa0ba902b7);
        assert!(sent.sampled());
        assert_eq!(headers[TRACESTATE], "vendor=1");

        let mut headers = HeaderMap::new();
        headers.insert(TRACEPARENT, HeaderValue::from_static(CLIENT));
        let begun = tracing.begin(&mut headers, false);
        assert_eq!(
            passed(&headers),
            begun.trace,
            "the request span is the parent"
        );
    }

    #[test]
    fn invalid_or_repeated_values_start_a_new_trace() {
        let tracing = Tracing::default();
        for values in [
            vec!["00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"],
            vec![CLIENT, CLIENT],
            vec!["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 "],
        ] {
            let mut headers = HeaderMap::new();
            for value in &values {
                headers.append(TRACEPARENT, HeaderValue::from_str(value).unwrap());
            }
            headers.insert(TRACESTATE, HeaderValue::from_static("forged=1"));
            let begun = tracing.begin(&mut headers, true);
            let sent = passed(&headers);
            assert_eq!(sent.trace_id, begun.trace.trace_id);
            assert_ne!(
                sent.trace_id, 0x4bf92f3577b34da6a3ce929d0e0e4736,
                "{values:?}"
            );
            assert!(!sent.sampled(), "not exporting");
            assert!(headers.get(TRACESTATE).is_none());
        }
    }
}
