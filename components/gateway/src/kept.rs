//! What an instance its host keeps for many requests (a WASIp3 host: Spin from 4.1,
//! edge-gateway) carries from one request to the next, so that a call writes to the
//! shared store less and reads less of it: a block of each load-balanced list's turns,
//! and the manifest's head and endpoints' health for a moment. An instance made for one request keeps nothing:
//! only the WASIp3 glue calls [`keep`].
//!
//! Every store on the component's path (Spin's SQLite file, above all) pays for a write
//! with a transaction, which on an ordinary disk waits for the disk; turns taken in
//! blocks cost one such write for many calls. Spin makes a new instance after 128
//! requests, so what one keeps is never much.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;

use apim_http::endpoints::Health;

/// Turns a kept instance takes from a list's shared counter at once.
pub const TURN_BLOCK: u64 = 32;
/// How long an endpoint's health, as read from the store, is taken as it is: what
/// another instance records reaches this one at most this much later (its own records
/// at once).
pub const HEALTH_FRESH_MS: i64 = 250;
/// How long the manifest's head, as read from the store, is taken as it is by a kept
/// instance that no host's moment tells of changes (the WASIp3 handler): what is
/// published reaches such an instance at most this much later than another.
pub const HEAD_FRESH_MS: i64 = 20;
/// Most entries of each kind kept: past it, they are forgotten rather than grow.
const MAX_ENTRIES: usize = 4096;

thread_local! {
    static KEPT: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// Marks this instance as one its host keeps for many requests.
pub fn keep() {
    KEPT.with(|kept| {
        kept.borrow_mut().get_or_insert_with(Kept::default);
    });
}

/// Whether this instance is kept ([`keep`]).
pub fn is_kept() -> bool {
    KEPT.with(|kept| kept.borrow().is_some())
}

/// Runs `f` on what this instance keeps; none when it keeps nothing.
fn with<R>(f: impl FnOnce(&mut Kept) -> R) -> Option<R> {
    KEPT.with(|kept| kept.borrow_mut().as_mut().map(f))
}

#[derive(Default)]
struct Kept {
    /// The turns of each list taken and not yet used.
    turns: HashMap<String, Range<u64>>,
    /// Each endpoint's health and when it was read (milliseconds since the epoch).
    health: HashMap<String, (Health, i64)>,
}

/// Inserts into `map`, forgetting everything first when it is full.
fn bounded_insert<V>(map: &mut HashMap<String, V>, key: &str, value: V) {
    if map.len() >= MAX_ENTRIES && !map.contains_key(key) {
        map.clear();
    }
    map.insert(key.to_string(), value);
}

/// The next turn of `list` this instance holds, if any.
pub fn next_turn(list: &str) -> Option<u64> {
    with(|kept| kept.turns.get_mut(list).and_then(Iterator::next)).flatten()
}

/// Keeps `turns` of `list` for the calls to come.
pub fn hold_turns(list: &str, turns: Range<u64>) {
    with(|kept| bounded_insert(&mut kept.turns, list, turns));
}

/// An endpoint's health as read at most [`HEALTH_FRESH_MS`] before `now_ms`.
pub fn fresh_health(endpoint: &str, now_ms: i64) -> Option<Health> {
    with(|kept| {
        let (health, read_at) = kept.health.get(endpoint)?;
        (now_ms.saturating_sub(*read_at) < HEALTH_FRESH_MS).then_some(*health)
    })
    .flatten()
}

/// Keeps an endpoint's health as read or written at `now_ms`.
pub fn note_health(endpoint: &str, health: Health, now_ms: i64) {
    with(|kept| bounded_insert(&mut kept.health, endpoint, (health, now_ms)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_made_for_one_request_keeps_nothing() {
        hold_turns("list", 0..4);
        note_health("endpoint", Health::default(), 0);
        assert!(!is_kept());
        assert_eq!(next_turn("list"), None);
        assert_eq!(fresh_health("endpoint", 0), None);
    }

    #[test]
    fn a_kept_instance_uses_each_of_its_turns_once() {
        keep();
        hold_turns("list", 4..6);
        assert_eq!((next_turn("list"), next_turn("list")), (Some(4), Some(5)));
        assert_eq!(next_turn("list"), None);
        assert_eq!(next_turn("another"), None);
    }

    #[test]
    fn a_kept_instance_forgets_health_once_it_is_no_longer_fresh() {
        keep();
        let failing = Health {
            failures: 1,
            ..Health::default()
        };
        note_health("endpoint", failing, 1_000);
        assert_eq!(
            fresh_health("endpoint", 1_000 + HEALTH_FRESH_MS - 1),
            Some(failing)
        );
        assert_eq!(fresh_health("endpoint", 1_000 + HEALTH_FRESH_MS), None);
    }
}
