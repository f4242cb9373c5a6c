//! The request's trace as the `wasi:http` handler passes it on (W3C `traceparent`,
//! [`apim_http::trace`]): every request leaves with a valid `traceparent`, so backends,
//! the token service and the access log see one trace.
//!
//! On Spin the component is the gateway, so it makes the gateway's span: a new span id
//! whose parent is the client's span (or a new trace when the client sent none, or an
//! invalid one). edge-gateway makes and exports that span itself and hands the component
//! requests whose `traceparent` already names it ([`settings::TRACE_SPANS`] = `host`):
//! they pass on as they are.

use apim_http::trace::{self, TRACEPARENT, TRACESTATE, TraceParent};

use crate::host::{Headers, Host};
use apim_http::contract::{self, settings};

/// The request's trace, with `headers` carrying it on: their `traceparent` replaced by
/// the gateway span's unless the host made that span already.
pub fn begin(host: &dyn Host, headers: &mut Headers) -> TraceParent {
    let values = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case(TRACEPARENT))
        .map(|(_, value)| value.as_slice());
    let incoming = trace::incoming(values);
    if let Some(parent) = incoming
        && host_makes_spans(host)
    {
        return parent;
    }
    let span_id = host.random_u64();
    let traced = match incoming {
        Some(parent) => parent.with_parent(span_id),
        // Nothing is recorded here, so a new trace is not marked sampled.
        None => trace::new_trace(random_u128(host), span_id, 0),
    };
    headers.retain(|(name, _)| {
        !name.eq_ignore_ascii_case(TRACEPARENT)
            // The state of a trace the request no longer belongs to.
            && (incoming.is_some() || !name.eq_ignore_ascii_case(TRACESTATE))
    });
    headers.push((TRACEPARENT.into(), traced.header().to_vec()));
    traced
}

/// Whether the host makes the gateway's span (`trace_spans` = `host`).
fn host_makes_spans(host: &dyn Host) -> bool {
    host.setting(settings::TRACE_SPANS).is_some_and(|value| {
        value
            .trim()
            .eq_ignore_ascii_case(contract::TRACE_SPANS_BY_HOST)
    })
}

fn random_u128(host: &dyn Host) -> u128 {
    u128::from(host.random_u64()) << 64 | u128::from(host.random_u64())
}
