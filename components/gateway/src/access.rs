//! The access-log line of a request the component handled itself (on Spin; edge-gateway
//! writes its own): the same JSON fields as edge-gateway's, without the latencies it
//! cannot time finer than milliseconds and the byte counts it does not see.

use serde_json::json;

use crate::call::Call;

/// A request's line: `call` as far as the request got, answered `status` at
/// `now_ms` (Unix milliseconds) after `duration_ms`.
pub fn line(
    call: &Call,
    method: &str,
    client: &str,
    status: u16,
    now_ms: i64,
    duration_ms: i64,
) -> String {
    let mut time = [0u8; 24];
    let since_epoch = std::time::Duration::from_millis(u64::try_from(now_ms).unwrap_or(0));
    json!({
        "time": apim_http::time::rfc3339_millis(since_epoch, &mut time),
        "client": client,
        "method": method,
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
    })
    .to_string()
}
