//! Throttling with counters in the shared key-value store, so every instance and every
//! node counts together: the API's maxTps per environment (per second), the resource
//! tier, the subscription tier and the application tier (per minute). Windows slide: each
//! counts in a window of the clock and weighs in the share of the previous one that the
//! last window's length still covers.

use std::collections::BTreeMap;

use apim_manifest::{ApiRoute, Operation};

use crate::auth::{Admitted, Environment};
use crate::faults::{Fault, access_time};
use crate::host::Host;
use apim_http::expiry;

/// One fixed window counter.
struct Window<'a> {
    /// Key prefix; the window number is appended.
    key: String,
    /// Requests allowed in a window.
    limit: u64,
    /// Window length in milliseconds.
    length_ms: i64,
    /// The fault when the limit is passed.
    fault: &'a dyn Fn(i64) -> Fault,
}

/// Counts the request against every limit that applies; the first limit passed refuses it.
pub fn check(
    host: &dyn Host,
    tiers: &apim_manifest::Tiers,
    api: &ApiRoute,
    operation: &Operation,
    caller: Option<&Admitted>,
    environment: Environment,
    now_ms: i64,
) -> Result<(), Fault> {
    let api_limit = |_| Fault::api_limit_reached();
    let per_minute =
        |code: u32| move |window_end: i64| Fault::throttled(code, access_time(window_end));
    let (resource, subscription, application) =
        (per_minute(900802), per_minute(900804), per_minute(900803));
    let tps = match environment {
        Environment::Production => api.max_tps.production,
        Environment::Sandbox => api.max_tps.sandbox,
    };
    let mut windows = Vec::new();
    if let Some(limit) = tps {
        windows.push(Window {
            key: format!("tps:{}:{}", api.id, environment.name()),
            limit,
            length_ms: 1000,
            fault: &api_limit,
        });
    }
    if let Some(limit) = limit_of(&tiers.resource, operation.throttling_tier.as_deref()) {
        windows.push(Window {
            key: format!(
                "thr:res:{}:{}:{}",
                api.id, operation.method, operation.template
            ),
            limit,
            length_ms: 60_000,
            fault: &resource,
        });
    }
    if let Some(caller) = caller {
        if let Some(limit) = limit_of(&tiers.subscription, Some(caller.subscription_tier())) {
            windows.push(Window {
                key: format!("thr:sub:{}:{}", caller.application_id(), api.id),
                limit,
                length_ms: 60_000,
                fault: &subscription,
            });
        }
        if let Some(limit) = limit_of(&tiers.application, caller.application_tier()) {
            windows.push(Window {
                key: format!("thr:app:{}", caller.application_id()),
                limit,
                length_ms: 60_000,
                fault: &application,
            });
        }
    }
    windows.iter().try_for_each(|w| count(host, w, now_ms))
}

/// The limit of a named tier; `None` when unlimited or unknown.
fn limit_of(tiers: &BTreeMap<String, Option<u64>>, name: Option<&str>) -> Option<u64> {
    tiers.get(name?).copied().flatten()
}

/// Counts the request in its window and weighs in the previous window's count by the
/// share of it still within the last window's length (a sliding window): a burst at the
/// end of one window and another at the start of the next cannot pass twice the limit,
/// as they would with windows that reset. A refused request is taken back out, so that
/// only admitted requests weigh on the next window.
fn count(host: &dyn Host, window: &Window, now_ms: i64) -> Result<(), Fault> {
    let number = now_ms.div_euclid(window.length_ms);
    // A window's counter lives through the next window too, which weighs it in.
    let lifetime_secs = (2 * window.length_ms as u64).div_ceil(1000) + 1;
    let key_of = |number: i64| format!("{}{lifetime_secs}:{}:{number}", expiry::PREFIX, window.key);
    let key = key_of(number);
    let count = match host.kv_increment(&key, 1) {
        Ok(count) => count,
        Err(err) => {
            // Fail open: a store outage must not take every API down with it.
            eprintln!("throttling counter {key} unavailable: {err}");
            return Ok(());
        }
    };
    if count == 1 {
        // Hosts whose stores do not expire keys: the first request of a window tidies up
        // the window before the previous one.
        let _ = host.kv_delete(&key_of(number - 2));
    }
    let previous = host
        .kv_get(&key_of(number - 1))
        .ok()
        .flatten()
        .and_then(|bytes| std::str::from_utf8(&bytes).ok()?.trim().parse::<u64>().ok())
        .unwrap_or(0);
    if weighed(
        previous,
        count.max(0) as u64,
        now_ms,
        number,
        window.length_ms,
    ) > window.limit
    {
        let _ = host.kv_increment(&key, -1);
        Err((window.fault)((number + 1) * window.length_ms))
    } else {
        Ok(())
    }
}

/// Requests within the last `length_ms`, estimated: this window's `count` and the share of
/// the previous window's that the last `length_ms` still covers (rounded up, so the
/// estimate never falls short of an even spread).
fn weighed(previous: u64, count: u64, now_ms: i64, number: i64, length_ms: i64) -> u64 {
    let into = (now_ms - number * length_ms).clamp(0, length_ms) as u128;
    let length = length_ms.max(1) as u128;
    let covered = (previous as u128 * (length - into)).div_ceil(length);
    count.saturating_add(covered.min(u64::MAX as u128) as u64)
}
