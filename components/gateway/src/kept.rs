//! What an instance its host keeps for many requests (a WASIp3 host: Spin from 4.1,
//! edge-gateway) carries from one request to the next, so that a call writes to the
//! shared store less and reads less of it: a block of each load-balanced list's turns,
//! and the manifest's head, endpoints' health and throttling windows far from their
//! limits for a moment. An instance made for one request keeps nothing: only the WASIp3
//! glue calls [`keep`].
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
/// How long a throttling window's counts, as last read or written, are taken as they
/// are by a kept instance while the room they leave is at least [`WINDOW_ROOM_KEPT`]: far
/// from the limit they only size the batches calls are counted in, so what other
/// instances count meanwhile is unseen for at most this long.
pub const WINDOW_FRESH_MS: i64 = 20;
/// Room below which a window is read afresh for every call.
pub const WINDOW_ROOM_KEPT: u64 = 2 * crate::throttle::BATCH_FROM_ROOM;
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
    /// Each throttling counter's last window as last read or written.
    windows: HashMap<String, Window>,
}

/// A throttling window's counts as read or written at `at` (milliseconds since the
/// epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The window's number (its start over its length).
    pub number: i64,
    /// The window's count.
    pub current: u64,
    /// The previous window's count.
    pub previous: u64,
    /// When they were read.
    pub at: i64,
}

/// Inserts into `map`, forgetting everything first when it is full.
fn bounded_insert<V>(map: &mut HashMap<String, V>, key: &str, value: V) {
    // Most calls replace what a key already holds: no new key to allocate then.
    if let Some(held) = map.get_mut(key) {
        *held = value;
        return;
    }
    if map.len() >= MAX_ENTRIES {
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

/// The counts of `counter`'s window `number` as read or written less than
/// [`WINDOW_FRESH_MS`] before `now_ms`, if the room they leave (`room` tells it) is at
/// least [`WINDOW_ROOM_KEPT`].
pub fn fresh_window(
    counter: &str,
    number: i64,
    now_ms: i64,
    room: impl Fn(&Window) -> u64,
) -> Option<Window> {
    with(|kept| {
        let window = kept.windows.get(counter)?;
        let fresh = window.number == number
            && now_ms.saturating_sub(window.at) < WINDOW_FRESH_MS
            && room(window) >= WINDOW_ROOM_KEPT;
        fresh.then_some(*window)
    })
    .flatten()
}

/// Keeps a throttling window's counts as read or written.
pub fn note_window(counter: &str, window: Window) {
    with(|kept| bounded_insert(&mut kept.windows, counter, window));
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
