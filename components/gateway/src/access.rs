//! The access-log line of a request the component handled itself (on Spin; edge-gateway
//! writes its own): the same JSON fields as edge-gateway's, without the latencies it
//! cannot time finer than milliseconds and the byte counts it does not see.

use serde_json::json;

use crate::call::Call;

/// What an access-log line needs of the request head, taken before the head is handed on.
pub struct Logged {
    /// The request method.
    pub method: String,
    /// The client's address, as the host reports it.
    pub client: String,
}

/// A request's line: `call` as far as the request got, in the trace `trace_id` (32 hex
/// digits), answered `status` at `at` = (Unix milliseconds, milliseconds taken).
pub fn line(
    call: &Call,
    logged: &Logged,
    trace_id: &[u8; 32],
    status: u16,
    at: (i64, i64),
) -> String {
    let (now_ms, duration_ms) = at;
    let mut time = [0u8; 24];
    let since_epoch = std::time::Duration::from_millis(u64::try_from(now_ms).unwrap_or(0));
    json!({
        "time": apim_http::time::rfc3339_millis(since_epoch, &mut time),
        "client": logged.client,
        "method": logged.method,
        "api": call.api,
        "version": call.version,
        "resource": call.resource,
        "application": call.application,
        "key_type": call.key_type,
        "user": call.user,
        "status": status,
        "fault_code": (call.fault_code != 0).then_some(call.fault_code),
        "cached": call.cached,
        "duration_ms": duration_ms,
        "trace_id": std::str::from_utf8(trace_id).unwrap_or_default(),
    })
    .to_string()
}
