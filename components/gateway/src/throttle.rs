//! Throttling: which limits an admitted call counts against, and counting them with
//! counters in the shared key-value store, so every instance and every node counts
//! together: the API's maxTps per environment (per second), the resource tier (a
//! subscription tier where throttling is WSO2's legacy kind), the subscription tier and
//! the application tier (per minute). Windows slide: each counts in a window of the
//! clock and weighs in the share of the previous one that the last window's length still
//! covers.
//!
//! Hosts that forward by themselves (edge-gateway) are given the limits with the decision
//! and count them natively ([`crate::gateway::Verdict`]); the `wasi:http` handler (Spin)
//! counts them here, in the store, where a write can cost a disk commit (Spin's default
//! store is a SQLite file): so, far from its limit, a window is counted in batches
//! ([`batch`]), unless the host says its store writes cheaply (`exact_counting`, which
//! edge-gateway sets on Redis): then every call is written ([`Counting::Exact`]). An
//! instance its host keeps for many requests reads a window far from its limit once in a
//! while rather than for every call ([`kept::fresh_window`]): there its counts only size
//! the batches.

use apim_manifest::{ApiRoute, Operation, TierLevel, tenant_of_context};

use crate::auth::{Admitted, Environment};
use crate::faults::{Fault, access_time};
use crate::host::Host;
use crate::kept;
use crate::sync::settings;
use apim_http::expiry;

/// Which limit a request counts against; it decides the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// The API's maxTps for the key's environment.
    ApiTps,
    /// The resource's tier.
    ResourceTier,
    /// The subscription's tier.
    SubscriptionTier,
    /// The application's tier.
    ApplicationTier,
}

/// A limit a request counts against: one counter, in windows of the clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// What passing it answers.
    pub kind: LimitKind,
    /// Names the counter; the window number is appended.
    pub key: String,
    /// Requests allowed within any window's length.
    pub allowed: u64,
    /// Window length in milliseconds.
    pub window_ms: u64,
}

/// The limits a call counts against, in the order they are checked. Tiers are looked up
/// in the API's tenant's own first ([`apim_manifest::Meta::tier_rate`]).
pub fn limits(
    meta: &apim_manifest::Meta,
    api: &ApiRoute,
    operation: &Operation,
    caller: Option<&Admitted>,
    environment: Environment,
) -> Vec<Limit> {
    let limit = |kind, key, allowed, window_ms| Limit {
        kind,
        key,
        allowed,
        window_ms,
    };
    let tps = match environment {
        Environment::Production => api.max_tps.production,
        Environment::Sandbox => api.max_tps.sandbox,
    };
    let tenant = tenant_of_context(&api.context);
    let rate = |level, name: Option<&str>| {
        let rate = meta.tier_rate(tenant, level, name?)?;
        Some((rate.requests?, rate.window_ms))
    };
    let mut limits = Vec::new();
    if let Some(allowed) = tps {
        let key = apim_http::joined(["tps:", api.id.as_str(), ":", environment.name()]);
        limits.push(limit(LimitKind::ApiTps, key, allowed, 1000));
    }
    let resource_level = if meta.legacy_throttling {
        TierLevel::Subscription
    } else {
        TierLevel::Resource
    };
    if let Some((allowed, window_ms)) = rate(resource_level, operation.throttling_tier.as_deref()) {
        let key = apim_http::joined([
            "thr:res:",
            api.id.as_str(),
            ":",
            operation.method.as_str(),
            ":",
            operation.template.as_str(),
        ]);
        limits.push(limit(LimitKind::ResourceTier, key, allowed, window_ms));
    }
    if let Some(caller) = caller {
        if let Some((allowed, window_ms)) =
            rate(TierLevel::Subscription, Some(caller.subscription_tier()))
        {
            let key =
                apim_http::joined(["thr:sub:", caller.application_id(), ":", api.id.as_str()]);
            limits.push(limit(LimitKind::SubscriptionTier, key, allowed, window_ms));
        }
        if let Some((allowed, window_ms)) = rate(TierLevel::Application, caller.application_tier())
        {
            let key = apim_http::joined(["thr:app:", caller.application_id()]);
            limits.push(limit(LimitKind::ApplicationTier, key, allowed, window_ms));
        }
    }
    limits
}

/// The refusal for a request a limit of `kind` refused in the window ending at
/// `window_end_ms`.
pub fn refusal(kind: LimitKind, window_end_ms: i64) -> Fault {
    let per_minute = |code| Fault::throttled(code, access_time(window_end_ms));
    match kind {
        LimitKind::ApiTps => Fault::api_limit_reached(),
        LimitKind::ResourceTier => per_minute(900802),
        LimitKind::SubscriptionTier => per_minute(900804),
        LimitKind::ApplicationTier => per_minute(900803),
    }
}

/// Room (requests the limit still allows in the window) from which calls are counted in
/// batches; below it every call is counted as it comes.
pub const BATCH_FROM_ROOM: u64 = 2048;
/// Room per call of a batch.
const ROOM_PER_BATCHED_CALL: u64 = 1024;
/// The largest batch.
pub const MAX_BATCH: u64 = 256;

/// How many calls one write counts while the window has `room` left: one below
/// [`BATCH_FROM_ROOM`]; above, one for every 1,024 calls of room, at most [`MAX_BATCH`]. A
/// call is then counted as `k` calls with a chance of 1 in `k` (a write for every `k`
/// calls on average), so the count is right on average and a window's last 2,048 calls
/// are counted one by one. The calls a window admits deviate from its limit `L` by a
/// standard deviation of about `L / sqrt(2048)`, 2.2 % of it (the variance is the sum of
/// `k − 1` over the calls counted in batches, about `L² / 2048`), and by less above
/// 262,144 calls a window, where batches stop growing.
pub fn batch(room: u64) -> u64 {
    if room < BATCH_FROM_ROOM {
        1
    } else {
        (room / ROOM_PER_BATCHED_CALL).clamp(1, MAX_BATCH)
    }
}

/// How the component writes its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Far from the limit, in batches ([`batch`]): right on average.
    Batched,
    /// Every call as it comes: exact.
    Exact,
}

impl Counting {
    /// The counting the host's `exact_counting` setting asks for (`true`: exact).
    pub fn read(host: &dyn Host) -> Self {
        let exact = host.setting(settings::EXACT_COUNTING);
        if exact.is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            Counting::Exact
        } else {
            Counting::Batched
        }
    }
}

/// Counts the request against every limit, in the store, as `counting` says; the first
/// limit passed refuses it, and the request is then taken back out of those it had
/// passed (a refused request counts against none).
pub fn count(
    host: &dyn Host,
    limits: &[Limit],
    now_ms: i64,
    counting: Counting,
) -> Result<(), Fault> {
    let mut counted = Vec::with_capacity(limits.len());
    for limit in limits {
        match count_one(host, limit, now_ms, counting) {
            Ok(written) => counted.extend(written),
            Err(fault) => {
                for (key, delta) in counted {
                    let _ = host.kv_increment(&key, -delta);
                }
                return Err(fault);
            }
        }
    }
    Ok(())
}

/// Counts the request in its window and weighs in the previous window's count by the
/// share of it still within the last window's length (a sliding window): a burst at the
/// end of one window and another at the start of the next cannot pass twice the limit,
/// as they would with windows that reset. A refused request is taken back out, so that
/// only admitted requests weigh on the next window. What was written, if anything: the
/// counter and how much it was given.
fn count_one(
    host: &dyn Host,
    limit: &Limit,
    now_ms: i64,
    counting: Counting,
) -> Result<Option<(String, i64)>, Fault> {
    let length_ms = limit.window_ms.clamp(1, i64::MAX as u64) as i64;
    let number = now_ms.div_euclid(length_ms);
    let counters = expiry::window_counters(&limit.key, limit.window_ms);
    let key_of = |number: i64| expiry::window_counter(&counters, number);
    let key = key_of(number);
    let read = |number: i64| {
        host.kv_get(&key_of(number))
            .map(|v| v.map_or(0, |v| stored_count(&v)))
    };
    let room_of = |previous: u64, current: u64| {
        let counted = weighed(previous, current, now_ms, number, length_ms);
        limit.allowed.saturating_sub(counted)
    };
    let room_left = |window: &kept::Window| room_of(window.previous, window.current);
    let (current, previous) = match kept::fresh_window(&limit.key, number, now_ms, room_left) {
        Some(window) => (window.current, window.previous),
        None => match (read(number), read(number - 1)) {
            (Ok(current), Ok(previous)) => {
                note_window(&limit.key, number, current, previous, now_ms);
                (current, previous)
            }
            (Err(err), _) | (_, Err(err)) => {
                // Fail open: a store outage must not take every API down with it.
                eprintln!("throttling counter {key} unavailable: {err}");
                return Ok(None);
            }
        },
    };
    let refused = || Err(refusal(limit.kind, (number + 1) * length_ms));
    let room = room_of(previous, current);
    if room == 0 {
        return refused();
    }
    let k = match counting {
        Counting::Batched => batch(room),
        Counting::Exact => 1,
    };
    if k > 1 && !host.random_u64().is_multiple_of(k) {
        return Ok(None);
    }
    let delta = k as i64;
    let count = match host.kv_increment(&key, delta) {
        Ok(count) => count,
        Err(err) => {
            eprintln!("throttling counter {key} unavailable: {err}");
            return Ok(None);
        }
    };
    note_window(&limit.key, number, count.max(0) as u64, previous, now_ms);
    if count == delta {
        // Hosts whose stores do not expire keys: the first write of a window tidies up
        // the window before the previous one.
        let _ = host.kv_delete(&key_of(number - 2));
    }
    if k == 1 && weighed(previous, count.max(0) as u64, now_ms, number, length_ms) > limit.allowed {
        let _ = host.kv_increment(&key, -1);
        return refused();
    }
    Ok(Some((key, delta)))
}

/// Keeps, in a kept instance, a window's counts as just read or written.
fn note_window(counter: &str, number: i64, current: u64, previous: u64, at: i64) {
    let window = kept::Window {
        number,
        current,
        previous,
        at,
    };
    kept::note_window(counter, window);
}

/// A counter as the store holds it: ASCII decimal (edge-gateway's stores, Redis) or, as
/// Spin's SQLite store writes them, 8 bytes little-endian; anything else is 0.
fn stored_count(bytes: &[u8]) -> u64 {
    if let Some(count) = std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| text.trim().parse::<i64>().ok())
    {
        return count.max(0) as u64;
    }
    <[u8; 8]>::try_from(bytes).map_or(0, |le| i64::from_le_bytes(le).max(0) as u64)
}

/// Requests within the last `length_ms`, estimated: this window's `count` and the share of
/// the previous window's that the last `length_ms` still covers
/// ([`apim_http::expiry::previous_share`]).
fn weighed(previous: u64, count: u64, now_ms: i64, number: i64, length_ms: i64) -> u64 {
    let into = (now_ms - number * length_ms).max(0) as u64;
    let covered = apim_http::expiry::previous_share(previous, into, length_ms.max(1) as u64);
    count.saturating_add(covered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_read_as_decimal_text_or_spins_little_endian_bytes() {
        assert_eq!(stored_count(b"42"), 42);
        assert_eq!(stored_count(b"-3"), 0);
        assert_eq!(stored_count(&42i64.to_le_bytes()), 42);
        assert_eq!(stored_count(&(-1i64).to_le_bytes()), 0);
        // Eight ASCII digits are decimal (a little-endian count that large is not text).
        assert_eq!(stored_count(b"12345678"), 12_345_678);
        assert_eq!(stored_count(b"junk"), 0);
    }

    #[test]
    fn calls_are_counted_one_by_one_near_the_limit_and_in_batches_far_from_it() {
        assert_eq!(batch(1), 1);
        assert_eq!(batch(BATCH_FROM_ROOM - 1), 1);
        assert_eq!(batch(BATCH_FROM_ROOM), 2);
        assert_eq!(batch(10_000), 9);
        assert_eq!(batch(1_000_000_000), MAX_BATCH);
    }
}
