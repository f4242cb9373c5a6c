//! Counting API calls against the limits the component's verdicts carry
//! (`apim:gateway/policy`): the host side of the gateway's throttling.
//!
//! Every limit is a counter in windows of the clock, and the window slides (the previous
//! window's count weighs in). Where counters are shared (a Redis store), a node does not
//! write to Redis for every call: it asks for *grants*, permissions to admit a call that
//! Redis counts as it makes them and never makes beyond what the limit leaves
//! ([`Grant::grantable`]), and admits calls from the grants it holds. Admission is "did
//! this node get a grant", never "is my number within the limit", so grants it gives back
//! (a call another limit refused, a window that ended, grants held idle) only return room
//! and cannot make any node admit more than the limit:
//!
//! - a node asks for one grant at first and for twice as many at each ask after, up to
//!   [`MOST_WANTED`], and asks again in the background once it has used half of them, so
//!   a busy counter costs a Redis round trip every few dozen calls, off the calls' path;
//! - Redis grants more than one only up to a share of what is left, so that near the
//!   limit every node asks for one at a time, and the last calls of a window go to
//!   whichever nodes receive them;
//! - a node gives back what it has held unused for [`IDLE_MS`], and when a window
//!   ends, what it holds of it, so the previous window weighs in with what was admitted;
//! - a refusal stands on the node for [`RECHECK_MS`] at most, then Redis is asked again.
//!
//! Without Redis (or while it cannot be used) the store counts on this node, one grant
//! per call.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use apim_http::expiry;
use foldhash::HashMap;
use tokio::sync::Notify;

use crate::kv::{Grant, KvStore, Made};
use crate::wit_host::bindings::exports::apim::gateway::policy::{Limit, LimitKind};
use apim_http::contract::KV_BUCKET;

/// Most grants a node asks for at once.
pub const MOST_WANTED: u64 = 64;
/// How long a node holds grants unused before it gives them back, milliseconds.
pub const IDLE_MS: i64 = 100;
/// How long a refusal stands on a node before Redis is asked again, milliseconds (room
/// comes back as the previous window's share shrinks and as other nodes give back).
pub const RECHECK_MS: i64 = 10;
/// How often held grants are looked over.
const SWEEP_EVERY: Duration = Duration::from_millis(50);
/// Longest window counted (a day); a limit with a longer one is not counted.
const LONGEST_WINDOW_MS: u64 = 86_400_000;
/// Largest `allowed × window` counted: Redis's script computes in doubles, exact up to
/// 2^53 (a per-minute tier of 150 billion). A larger limit is not counted: no traffic
/// could reach it.
const LARGEST_PRODUCT: u128 = 1 << 53;

/// A call a limit refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// The limit's kind, which decides the answer.
    pub kind: LimitKind,
    /// When the window that refused it ends, milliseconds since the Unix epoch.
    pub window_end_ms: u64,
}

/// The counters of every limit this node has counted lately.
#[derive(Clone)]
pub struct Counters {
    kv: KvStore,
    slots: Arc<Mutex<HashMap<String, Arc<Slot>>>>,
}

/// What a node holds of one limit's counter.
#[derive(Default)]
struct Slot {
    state: Mutex<Holding>,
    /// Woken when an ask for grants has been answered.
    answered: Notify,
}

/// Grants held of a counter's current window.
#[derive(Default)]
struct Holding {
    /// The window the grants are of.
    window: i64,
    /// Grants not used yet.
    held: u64,
    /// The store that made them.
    made: Made,
    /// Grants to ask for next.
    want: u64,
    /// How many the last ask got.
    last_given: u64,
    /// Whether an ask is on its way.
    asking: bool,
    /// Until when the last refusal stands, milliseconds since the epoch.
    refusing_until_ms: i64,
    /// When a call last used this counter.
    last_used_ms: i64,
    /// Asks answered so far (a call that waits for one knows when it has come).
    answers: u64,
}

/// A grant a call took, to be given back if another of its limits refuses it.
enum Taken {
    /// From the node's holding, of window `window`, made by `made`.
    Held {
        slot: Arc<Slot>,
        window: i64,
        made: Made,
    },
    /// From the store directly (a node counting alone), in window `window`.
    Counted { window: i64, made: Made },
    /// None: the store failed, and the call was admitted without counting.
    Uncounted,
}

/// Where a call stands with a limit, when it looks at the node's holding.
enum Look {
    Admitted(Taken),
    Refused,
    /// Another call's ask is on its way: wait for answer number `.0`.
    Wait(u64),
    /// Ask for `want` grants of window `number` (the holding's, which a call that
    /// reckoned its window just before another moved the holding on joins).
    Ask {
        want: u64,
        number: i64,
    },
}

/// The limit a counter counts, and where.
#[derive(Clone)]
struct Counted {
    /// The counter's key without its window number.
    base: String,
    allowed: u64,
    window: i64,
}

impl Counters {
    /// Counters on `kv`; with a shared store, a task gives back grants held idle.
    pub fn new(kv: KvStore) -> Self {
        let counters = Self {
            kv,
            slots: Arc::default(),
        };
        if counters.kv.shares_counters() {
            tokio::spawn(sweep(Arc::downgrade(&counters.slots), counters.kv.clone()));
        }
        counters
    }

    /// Counts a call against every limit, in order; the first that refuses it refuses
    /// the call, which then gives back what it took of the others.
    pub async fn admit(&self, limits: &[Limit]) -> Result<(), Refused> {
        let now = now_ms();
        let mut taken = Vec::with_capacity(limits.len());
        for limit in limits {
            let Some(counted) = counted(limit) else {
                continue;
            };
            match self.take(&counted, now).await {
                Some(grant) => taken.push((counted, grant)),
                None => {
                    for (counted, grant) in taken {
                        self.put_back(&counted, grant).await;
                    }
                    let number = now.div_euclid(counted.window);
                    let end = (number + 1).saturating_mul(counted.window);
                    return Err(Refused {
                        kind: limit.kind,
                        window_end_ms: u64::try_from(end).unwrap_or_default(),
                    });
                }
            }
        }
        Ok(())
    }

    /// A grant for a call at `now`, or `None` when the limit refuses it.
    async fn take(&self, counted: &Counted, now: i64) -> Option<Taken> {
        let number = now.div_euclid(counted.window);
        if !self.kv.shares_counters() {
            return match self.ask(counted, number, now, 1).await {
                Ok((0, _)) => None,
                Ok((_, made)) => Some(Taken::Counted {
                    window: number,
                    made,
                }),
                Err(()) => Some(Taken::Uncounted),
            };
        }
        let slot = self.slot(&counted.base);
        loop {
            match self.look(&slot, counted, number, now) {
                Look::Admitted(taken) => return Some(taken),
                Look::Refused => return None,
                Look::Wait(answer) => {
                    let answered = slot.answered.notified();
                    tokio::pin!(answered);
                    answered.as_mut().enable();
                    if lock(&slot.state).answers < answer {
                        answered.await;
                    }
                }
                Look::Ask { want, number } => {
                    // In a task of its own: a call dropped while it waits (its client gone)
                    // must not leave the holding asking forever.
                    let (counters, asker, counted) = (self.clone(), slot.clone(), counted.clone());
                    let ask = async move { counters.refill(&asker, &counted, number, want).await };
                    if !tokio::spawn(ask).await.unwrap_or(false) {
                        return Some(Taken::Uncounted);
                    }
                }
            }
        }
    }

    /// What the node's holding says of a call in window `number`.
    fn look(&self, slot: &Arc<Slot>, counted: &Counted, number: i64, now: i64) -> Look {
        let mut holding = lock(&slot.state);
        if number > holding.window {
            self.roll(&mut holding, &counted.base, number);
        }
        holding.last_used_ms = now;
        if holding.held > 0 {
            holding.held -= 1;
            if !holding.asking && holding.last_given >= 4 && holding.held <= holding.last_given / 2
            {
                holding.asking = true;
                let (counters, slot, counted) = (self.clone(), slot.clone(), counted.clone());
                let (window, want) = (holding.window, holding.want);
                tokio::spawn(async move { counters.refill(&slot, &counted, window, want).await });
            }
            return Look::Admitted(Taken::Held {
                slot: slot.clone(),
                window: holding.window,
                made: holding.made,
            });
        }
        if holding.refusing_until_ms > now {
            return Look::Refused;
        }
        if holding.asking {
            return Look::Wait(holding.answers + 1);
        }
        holding.asking = true;
        Look::Ask {
            want: holding.want.max(1),
            number: holding.window,
        }
    }

    /// Moves a holding on to window `number`, giving back what it held of the last.
    fn roll(&self, holding: &mut Holding, base: &str, number: i64) {
        let held = std::mem::take(&mut holding.held);
        if held > 0 {
            let (kv, counter, made) = (
                self.kv.clone(),
                expiry::window_counter(base, holding.window),
                holding.made,
            );
            tokio::spawn(async move { kv.give_back(made, KV_BUCKET, &counter, held).await });
        }
        holding.window = number;
        holding.refusing_until_ms = 0;
    }

    /// Asks the store for `want` grants of window `number` and adds them to the slot's
    /// holding (or, when there are none, makes the refusal stand for a moment); wakes
    /// the calls waiting for it. Whether the store answered.
    async fn refill(&self, slot: &Slot, counted: &Counted, number: i64, want: u64) -> bool {
        let unanswered = Unanswered(Some(slot));
        let now = now_ms().max(number * counted.window);
        let given = self.ask(counted, number, now, want).await;
        // Grants that cannot join the holding: of a window it has left, or held from the
        // other store (Redis failed or came back meanwhile); (window, made, count).
        let mut unheld = None;
        unanswered.answer(|holding| match given {
            Ok((given, made)) if holding.window != number => unheld = Some((number, made, given)),
            Ok((0, _)) => holding.refusing_until_ms = now + RECHECK_MS,
            Ok((given, made)) => {
                if holding.made != made {
                    let held = std::mem::take(&mut holding.held);
                    unheld = Some((holding.window, holding.made, held));
                    holding.made = made;
                }
                holding.held += given;
                holding.last_given = given;
                holding.want = (holding.want.max(1) * 2).min(MOST_WANTED);
            }
            Err(()) => {}
        });
        if let Some((window, made, count)) = unheld.filter(|(_, _, count)| *count > 0) {
            let counter = expiry::window_counter(&counted.base, window);
            self.kv.give_back(made, KV_BUCKET, &counter, count).await;
        }
        given.is_ok()
    }

    /// Asks the store for up to `want` grants of window `number` at `now`.
    async fn ask(
        &self,
        counted: &Counted,
        number: i64,
        now: i64,
        want: u64,
    ) -> Result<(u64, Made), ()> {
        let (current, previous) = (
            expiry::window_counter(&counted.base, number),
            expiry::window_counter(&counted.base, number - 1),
        );
        let grant = Grant {
            current: &current,
            previous: &previous,
            allowed: counted.allowed,
            window_ms: counted.window as u64,
            into_ms: (now - number * counted.window).max(0) as u64,
            want,
        };
        self.kv.grant(KV_BUCKET, &grant).await.map_err(|err| {
            tracing::warn!(?err, "throttling counter unavailable; admitting");
        })
    }

    /// Gives back a grant of `counted` a call took but will not use: to the node's
    /// holding while it is of the grant's window, else to the store.
    async fn put_back(&self, counted: &Counted, taken: Taken) {
        let (window, made) = match taken {
            Taken::Held { slot, window, made } => {
                let mut holding = lock(&slot.state);
                if holding.window == window && holding.made == made {
                    holding.held += 1;
                    return;
                }
                (window, made)
            }
            Taken::Counted { window, made } => (window, made),
            Taken::Uncounted => return,
        };
        let counter = expiry::window_counter(&counted.base, window);
        self.kv.give_back(made, KV_BUCKET, &counter, 1).await;
    }

    /// The node's holding of the counter `base`.
    fn slot(&self, base: &str) -> Arc<Slot> {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(base) {
            return slot.clone();
        }
        slots.entry(base.to_owned()).or_default().clone()
    }
}

impl Slot {
    /// Ends the ask on its way: `update`s the holding with its answer and wakes the calls
    /// waiting for it.
    fn end_ask(&self, update: impl FnOnce(&mut Holding)) {
        let mut holding = lock(&self.state);
        holding.asking = false;
        holding.answers += 1;
        update(&mut holding);
        drop(holding);
        self.answered.notify_waiters();
    }
}

/// An ask on its way, ended once: with its answer, or, should it end without one (its
/// task panicked, or the runtime shut down under it), with none, so that the calls
/// waiting for it go on, asking anew, rather than wait forever.
struct Unanswered<'a>(Option<&'a Slot>);

impl Unanswered<'_> {
    /// Ends the ask with its answer, which `update` puts in the holding.
    fn answer(mut self, update: impl FnOnce(&mut Holding)) {
        if let Some(slot) = self.0.take() {
            slot.end_ask(update);
        }
    }
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            slot.end_ask(|_| {});
        }
    }
}

/// Gives back grants held unused for [`IDLE_MS`], and forgets counters unused for two
/// minutes, every [`SWEEP_EVERY`], until the counters are dropped.
async fn sweep(slots: Weak<Mutex<HashMap<String, Arc<Slot>>>>, kv: KvStore) {
    loop {
        tokio::time::sleep(SWEEP_EVERY).await;
        let Some(slots) = slots.upgrade() else {
            return;
        };
        let now = now_ms();
        let mut idle = Vec::new();
        lock(&slots).retain(|base, slot| {
            let mut holding = lock(&slot.state);
            let unused_for = now - holding.last_used_ms;
            if holding.held > 0 && unused_for >= IDLE_MS && !holding.asking {
                idle.push((
                    expiry::window_counter(base, holding.window),
                    holding.made,
                    holding.held,
                ));
                holding.held = 0;
                holding.want = 1;
            }
            // Two minutes covers a window and the one it weighs in (the longest counted
            // by the gateway's tiers); a counter forgotten too early only costs an ask.
            holding.asking || holding.held > 0 || unused_for < 120_000
        });
        drop(slots);
        for (counter, made, held) in idle {
            kv.give_back(made, KV_BUCKET, &counter, held).await;
        }
    }
}

/// The counted form of a limit; `None` for one that cannot be counted exactly (a window
/// of no length or longer than a day, a limit no traffic could reach), which is not.
fn counted(limit: &Limit) -> Option<Counted> {
    let valid = (1..=LONGEST_WINDOW_MS).contains(&limit.window_ms)
        && u128::from(limit.allowed) * u128::from(limit.window_ms) <= LARGEST_PRODUCT;
    if !valid {
        tracing::debug!(key = %limit.key, "limit not counted");
        return None;
    }
    let window = limit.window_ms as i64;
    Some(Counted {
        base: expiry::window_counters(&limit.key, limit.window_ms),
        allowed: limit.allowed,
        window,
    })
}

/// Milliseconds since the Unix epoch: every node counts in windows of the wall clock.
fn now_ms() -> i64 {
    i64::try_from(apim_http::time::now_ms()).unwrap_or(i64::MAX)
}

/// Locks a mutex, through poisoning (no holder leaves it half-written).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use std::future::Future as _;
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::*;
    use crate::kv::Store as _;
    use crate::kv::redis_store::RedisStore;

    const REDIS: &str = "redis://127.0.0.1:6379/0";

    fn limit(kind: LimitKind, key: &str, allowed: u64, window_ms: u64) -> Limit {
        Limit {
            kind,
            key: key.into(),
            allowed,
            window_ms,
        }
    }

    /// Whether Redis serves `test` (a test without it fails, unless told to skip).
    fn redis_up(test: &str) -> bool {
        harness::services::available(harness::services::Service::Redis, test)
    }

    fn namespace(name: &str) -> String {
        format!("apim-counters-{name}-{}", uuid_ish())
    }

    fn uuid_ish() -> u128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    /// Waits until `check` holds, asking every 20 ms, and fails naming `what` after 10 s.
    async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !check().await {
            assert!(std::time::Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `nodes` counters sharing one Redis namespace, each with its own store and link.
    async fn nodes(namespace: &str, nodes: usize) -> Vec<Counters> {
        let mut all = Vec::new();
        for _ in 0..nodes {
            let kv = KvStore::connect(REDIS, namespace).await;
            assert!(kv.redis_connected());
            all.push(Counters::new(kv));
        }
        all
    }

    /// Waits until `window_ms` has at least `room_ms` left.
    async fn room_in_window(window_ms: i64, room_ms: i64) {
        let into = now_ms().rem_euclid(window_ms);
        if into + room_ms > window_ms {
            tokio::time::sleep(Duration::from_millis((window_ms - into + 5) as u64)).await;
        }
    }

    /// The Redis script and [`Grant::grantable`] agree, exactly, on every case: an empty
    /// and a full previous window, each point of the window, limits small and near the
    /// largest counted.
    #[tokio::test]
    async fn the_redis_script_grants_what_the_rule_says() {
        if !redis_up("the_redis_script_grants_what_the_rule_says") {
            return;
        }
        let store = RedisStore::connect(REDIS, &namespace("rule"))
            .await
            .unwrap();
        let largest = (LARGEST_PRODUCT / 60_000) as u64;
        let mut cases = 0;
        for (allowed, window) in [(5, 1000), (50, 60_000), (1000, 1000), (largest, 60_000)] {
            for previous in [0, 1, allowed / 3, allowed] {
                for into in [0, 1, window / 3, window - 1, window] {
                    for (granted, want) in [(0, 1), (0, 64), (allowed / 2, 64), (allowed, 1)] {
                        let (current, before) = ("apim:ttl:5:c:1", "apim:ttl:5:c:0");
                        store
                            .set("b", before, previous.to_string().into())
                            .await
                            .unwrap();
                        store
                            .set("b", current, granted.to_string().into())
                            .await
                            .unwrap();
                        let grant = Grant {
                            current,
                            previous: before,
                            allowed,
                            window_ms: window,
                            into_ms: into,
                            want,
                        };
                        let expected = grant.grantable(previous, granted);
                        let given = store.grant("b", &grant).await.unwrap();
                        assert_eq!(
                            given, expected,
                            "{allowed} {window} {previous} {into} {granted} {want}"
                        );
                        let counted = store.get("b", current).await.unwrap().unwrap();
                        assert_eq!(counted, (granted + given).to_string().into_bytes());
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 320);
    }

    /// Three nodes on one Redis, each sent 3 × the limit at once: exactly the limit is
    /// admitted, whichever nodes the calls reach; then, with the previous window weighing
    /// in at its full share at the start of the next one, none. Calls come in at a few
    /// hundred a second, so nodes ask for more than one grant at a time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nodes_sharing_redis_admit_exactly_the_limit() {
        if !redis_up("nodes_sharing_redis_admit_exactly_the_limit") {
            return;
        }
        let nodes = nodes(&namespace("exact"), 3).await;
        for allowed in [50, 500] {
            let limit = limit(
                LimitKind::ApplicationTier,
                &format!("app-{allowed}"),
                allowed,
                10_000,
            );
            room_in_window(10_000, 3_000).await;
            let mut calls = tokio::task::JoinSet::new();
            for k in 0..3 * allowed {
                let (node, limit) = (nodes[k as usize % 3].clone(), limit.clone());
                calls.spawn(async move { node.admit(&[limit]).await.is_ok() });
            }
            let admitted = calls.join_all().await.into_iter().filter(|ok| *ok).count();
            assert_eq!(admitted as u64, allowed);
        }
    }

    /// A node gives back grants it holds unused, so the others can admit up to the
    /// limit: one node takes a block, then only the others are called.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grants_held_idle_go_back_to_the_others() {
        if !redis_up("grants_held_idle_go_back_to_the_others") {
            return;
        }
        let nodes = nodes(&namespace("idle"), 2).await;
        let limit = limit(LimitKind::SubscriptionTier, "sub", 400, 60_000);
        room_in_window(60_000, 5_000).await;
        // The first node's asks double: 1, 2, 4, ... it ends holding some unused.
        for _ in 0..20 {
            nodes[0].admit(std::slice::from_ref(&limit)).await.unwrap();
        }
        let mut admitted = 20;
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while admitted < 400 {
            match nodes[1].admit(std::slice::from_ref(&limit)).await {
                Ok(()) => admitted += 1,
                Err(_) => {
                    assert!(std::time::Instant::now() < deadline, "{admitted} admitted");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        assert!(nodes[1].admit(std::slice::from_ref(&limit)).await.is_err());
        assert!(nodes[0].admit(&[limit]).await.is_err());
    }

    /// Grants a node made in its memory while Redis failed go back to its memory, not to
    /// Redis once it is back: there they would take off calls other nodes admitted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grants_go_back_to_the_store_that_made_them() {
        if !redis_up("grants_go_back_to_the_store_that_made_them") {
            return;
        }
        let nodes = nodes(&namespace("made"), 2).await;
        let limit = limit(LimitKind::SubscriptionTier, "sub", 80, 60_000);
        room_in_window(60_000, 5_000).await;
        let number = now_ms().div_euclid(60_000);
        let key = expiry::window_counter(&counted(&limit).unwrap().base, number);
        let in_redis = async || {
            let value = nodes[1]
                .kv
                .get(KV_BUCKET, &key)
                .await
                .unwrap()
                .unwrap_or_default();
            String::from_utf8(value)
                .unwrap()
                .parse::<u64>()
                .unwrap_or(0)
        };
        let base = counted(&limit).unwrap().base;
        // A node holds no grants and asks for none: it has given back its idle ones.
        let holds_none = |node: &Counters| {
            let slot = node.slot(&base);
            let holding = lock(&slot.state);
            holding.held == 0 && !holding.asking
        };
        for _ in 0..10 {
            nodes[1].admit(std::slice::from_ref(&limit)).await.unwrap();
        }
        until("grants held", async || holds_none(&nodes[1])).await;
        // The sweep gives them back to Redis just after it empties the holding.
        until("idle grants went back", async || in_redis().await == 10).await;

        // The first node asks its memory while Redis rests: 1, 2, 4, 8 grants, of which it
        // uses 10; Redis is back before it gives the rest back as idle.
        nodes[0].kv.rest_redis(true);
        for _ in 0..10 {
            nodes[0].admit(std::slice::from_ref(&limit)).await.unwrap();
        }
        nodes[0].kv.rest_redis(false);
        until("grants held", async || holds_none(&nodes[0])).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            in_redis().await,
            10,
            "the first node's grants stayed off Redis"
        );
    }

    /// A call the second of its limits refuses gives back what it took of the first, on
    /// a node counting alone and on nodes sharing Redis.
    #[tokio::test]
    async fn a_refused_call_counts_against_none_of_its_limits() {
        let mut all = vec![Counters::new(KvStore::memory())];
        if redis_up("a_refused_call_counts_against_none_of_its_limits") {
            all.extend(nodes(&namespace("refused"), 1).await);
        }
        for counters in all {
            let open = limit(LimitKind::ApiTps, "tps", 1, 60_000);
            let closed = limit(LimitKind::ResourceTier, "res", 0, 60_000);
            room_in_window(60_000, 1_000).await;
            let refused = counters.admit(&[open.clone(), closed]).await.unwrap_err();
            assert_eq!(refused.kind, LimitKind::ResourceTier);
            assert_eq!(refused.window_end_ms % 60_000, 0);
            assert!(counters.admit(std::slice::from_ref(&open)).await.is_ok());
            let refused = counters.admit(&[open]).await.unwrap_err();
            assert_eq!(refused.kind, LimitKind::ApiTps);
        }
    }

    /// A call dropped while its node asks Redis for grants (its client gone) leaves the
    /// ask to finish: the calls after it are answered, not left waiting for it.
    #[tokio::test]
    async fn a_call_dropped_while_asking_leaves_no_one_waiting() {
        if !redis_up("a_call_dropped_while_asking_leaves_no_one_waiting") {
            return;
        }
        let node = nodes(&namespace("dropped"), 1).await.remove(0);
        let limit = limit(LimitKind::ApplicationTier, "app", 10, 60_000);
        room_in_window(60_000, 3_000).await;
        {
            let limits = [limit.clone()];
            let mut call = std::pin::pin!(node.admit(&limits));
            let mut context = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(
                call.as_mut().poll(&mut context).is_pending(),
                "it asks Redis"
            );
        }
        let next = tokio::time::timeout(Duration::from_secs(2), node.admit(&[limit])).await;
        assert_eq!(next, Ok(Ok(())));
    }

    /// An ask that ends without an answer (its task panicked) does not leave the calls
    /// waiting for it waiting forever; one that is answered is ended once, with its answer.
    #[test]
    fn an_ask_that_ends_unanswered_lets_the_waiters_go_on() {
        let slot = Slot::default();
        lock(&slot.state).asking = true;
        Unanswered(Some(&slot)).answer(|holding| holding.held = 3);
        {
            let holding = lock(&slot.state);
            assert!(!holding.asking);
            assert_eq!((holding.answers, holding.held), (1, 3), "answered once");
        }
        lock(&slot.state).asking = true;
        let waiter = slot.answered.notified();
        tokio::pin!(waiter);
        waiter.as_mut().enable();
        drop(Unanswered(Some(&slot)));
        let holding = lock(&slot.state);
        assert!(!holding.asking);
        assert_eq!(holding.answers, 2);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(waiter.as_mut().poll(&mut context).is_ready(), "woken");
    }

    /// Limits that cannot be counted exactly are not counted; the others are.
    #[tokio::test]
    async fn limits_beyond_exact_counting_are_not_counted() {
        let counters = Counters::new(KvStore::memory());
        for unreachable in [
            limit(LimitKind::ApiTps, "huge", u64::MAX, 1000),
            limit(LimitKind::ApiTps, "no-length", 1, 0),
            limit(LimitKind::ApiTps, "too-long", 1, LONGEST_WINDOW_MS + 1),
        ] {
            for _ in 0..3 {
                assert!(
                    counters
                        .admit(std::slice::from_ref(&unreachable))
                        .await
                        .is_ok()
                );
            }
        }
        let one = limit(LimitKind::ApiTps, "one", 1, 60_000);
        room_in_window(60_000, 1_000).await;
        assert!(counters.admit(std::slice::from_ref(&one)).await.is_ok());
        assert!(counters.admit(&[one]).await.is_err());
    }
}
