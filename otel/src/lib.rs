//! Span export over OTLP for both planes: HTTP/protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`/v1/traces` appended) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, batched on the SDK's
//! own thread so that no request waits on an export. The standard variables configure it
//! (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_QUEUE_SIZE`, ...).
//! With neither endpoint set nothing is made: no thread, no client, no span.

use std::time::Duration;

use async_trait::async_trait;
use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
use opentelemetry_http::hyper::HyperClient;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{SpanExporter, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, SpanProcessor as _};

pub use opentelemetry_otlp::ExporterBuildError;

/// The variables that name where spans go; export is on when one is set.
pub const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];
/// Longest an export may take when none is configured (`OTEL_EXPORTER_OTLP_TIMEOUT`).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The variables that set it, in milliseconds, the traces' own first.
const TIMEOUT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
];
/// Longest the process waits at exit for the spans still queued to go out.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(3);

/// Whether spans are exported (an OTLP endpoint is set).
pub fn enabled() -> bool {
    ENDPOINT_VARIABLES
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|value| !value.trim().is_empty()))
}

/// This process as spans name it: `service` unless `OTEL_SERVICE_NAME` names it, with
/// `OTEL_RESOURCE_ATTRIBUTES`.
pub fn resource(service: &'static str) -> Resource {
    let builder = Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_ok_and(|name| !name.is_empty()) {
        builder.build()
    } else {
        builder.with_service_name(service).build()
    }
}

/// The OTLP exporter, when export is on; its requests run on `runtime`.
pub fn exporter(
    runtime: tokio::runtime::Handle,
) -> Result<Option<SpanExporter>, ExporterBuildError> {
    if !enabled() {
        return Ok(None);
    }
    let timeout = export_timeout(|name| std::env::var(name).ok());
    let client = OnRuntime {
        client: HyperClient::with_default_connector(timeout, None),
        runtime,
    };
    SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_timeout(timeout)
        .build()
        .map(Some)
}

/// How long an export may take: the first of [`TIMEOUT_VARIABLES`] that `variable` gives
/// as whole milliseconds, else [`EXPORT_TIMEOUT`] (set here, so the exporter's own
/// reading of them is replaced, not left to a default of ours).
fn export_timeout(variable: impl Fn(&str) -> Option<String>) -> Duration {
    TIMEOUT_VARIABLES
        .iter()
        .find_map(|name| variable(name)?.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(EXPORT_TIMEOUT)
}

/// A tracer provider exporting in batches as `service`, when export is on.
pub fn tracer_provider(
    service: &'static str,
    runtime: tokio::runtime::Handle,
) -> Result<Option<SdkTracerProvider>, ExporterBuildError> {
    Ok(exporter(runtime)?.map(|exporter| {
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource(service))
            .build()
    }))
}

/// A batching processor that spans finished elsewhere are handed to
/// ([`SpanProcessor::on_end`](opentelemetry_sdk::trace::SpanProcessor::on_end)), as
/// `service`, when export is on.
pub fn batch_processor(
    service: &'static str,
    runtime: tokio::runtime::Handle,
) -> Result<Option<BatchSpanProcessor>, ExporterBuildError> {
    Ok(exporter(runtime)?.map(|exporter| {
        let mut processor = BatchSpanProcessor::builder(exporter).build();
        processor.set_resource(&resource(service));
        processor
    }))
}

/// Sends what is queued and stops the processor, off the runtime's threads (the export
/// itself runs on the runtime), waiting at most a few seconds.
pub async fn shutdown_processor(processor: std::sync::Arc<BatchSpanProcessor>) {
    let stopped =
        tokio::task::spawn_blocking(move || processor.shutdown_with_timeout(SHUTDOWN_WAIT)).await;
    if let Ok(Err(err)) = stopped {
        tracing::warn!("spans still queued at exit could not be exported: {err}");
    }
}

/// [`shutdown_processor`] for a tracer provider.
pub async fn shutdown_provider(provider: SdkTracerProvider) {
    let stopped =
        tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(SHUTDOWN_WAIT)).await;
    if let Ok(Err(err)) = stopped {
        tracing::warn!("spans still queued at exit could not be exported: {err}");
    }
}

/// A span context received from elsewhere (a `traceparent`), as the SDK takes parents.
pub fn remote_parent(trace_id: u128, span_id: u64, flags: u8) -> SpanContext {
    SpanContext::new(
        TraceId::from(trace_id),
        SpanId::from(span_id),
        TraceFlags::new(flags),
        true,
        TraceState::NONE,
    )
}

/// Hyper's client, each request run on the runtime: the batch processor's thread polls
/// exports outside any Tokio runtime, which Hyper needs.
#[derive(Debug)]
struct OnRuntime {
    client: HyperClient,
    runtime: tokio::runtime::Handle,
}

#[async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        self.runtime
            .spawn(async move { client.send_bytes(request).await })
            .await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds) sets the export timeout, the traces'
    /// own variable before it; what does not read leaves the default.
    #[test]
    fn the_export_timeout_is_read_from_the_standard_variables() {
        let given = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                let found = pairs.iter().find(|(n, _)| *n == name);
                found.map(|(_, value)| value.to_string())
            }
        };
        assert_eq!(export_timeout(given(&[])), EXPORT_TIMEOUT);
        let general = given(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "2500")]);
        assert_eq!(export_timeout(general), Duration::from_millis(2500));
        let both = given(&[
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700"),
        ]);
        assert_eq!(export_timeout(both), Duration::from_millis(700));
        let unreadable = given(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")]);
        assert_eq!(export_timeout(unreadable), EXPORT_TIMEOUT);
    }
}
