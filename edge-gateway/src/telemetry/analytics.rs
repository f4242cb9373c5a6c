//! Per-API analytics: beside the Prometheus counters, from the same observation of each
//! answered request, this process's totals per Unix minute and per (API id, application
//! id): requests, 4xx and 5xx answers, and a latency histogram with the fixed buckets of
//! [`apim_manifest::analytics`]. The reporter ([`super::reporter`]) sends what changed to
//! the control plane, which charts it per API and application.
//!
//! Bounded: at most [`MAX_PAIRS_PER_MINUTE`] pairs a minute (further new pairs count
//! together under [`OVERFLOW`]), and at most [`MAX_HELD_PAIRS`] pairs held in all while
//! the control plane does not acknowledge them (past that the oldest minute is dropped,
//! and logged). Requests that reached no API are not counted here (the metrics have them);
//! no user, token or client address is ever kept.
//!
//! Counting costs a read-locked look-up of the pair in its minute (hashing the two ids)
//! and atomic adds: nothing is allocated once a pair has been seen in that minute.

use std::hash::{Hash, Hasher};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use apim_manifest::analytics::{BUCKETS, MinuteCounts, bucket_of};
use hashbrown::{Equivalent, HashMap};

/// Most (API, application) pairs counted apart in one minute.
pub const MAX_PAIRS_PER_MINUTE: usize = 5_000;
/// Most pairs held in all, the open minute and those not yet acknowledged.
pub const MAX_HELD_PAIRS: usize = 50_000;
/// The API id new pairs past [`MAX_PAIRS_PER_MINUTE`] count under.
pub const OVERFLOW: &str = "_other";
/// How long after a minute ends it still takes counts (a request stamped just before the
/// minute ended may be added just after), before it is closed.
const CLOSING_GRACE: Duration = Duration::from_secs(5);

/// A pair as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pair {
    api_id: String,
    application_id: String,
}

/// A pair as a request names it, looked up without allocating.
struct PairRef<'a> {
    api_id: &'a str,
    application_id: &'a str,
}

impl Hash for Pair {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.api_id.as_str().hash(state);
        self.application_id.as_str().hash(state);
    }
}

impl Hash for PairRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.api_id.hash(state);
        self.application_id.hash(state);
    }
}

impl Equivalent<Pair> for PairRef<'_> {
    fn equivalent(&self, pair: &Pair) -> bool {
        self.api_id == pair.api_id && self.application_id == pair.application_id
    }
}

/// One pair's counts in one minute. The errors are added after the bucket (and read
/// before the buckets), so a snapshot never has more errors than bucketed requests.
#[derive(Default)]
struct Counts {
    buckets: [AtomicU64; BUCKETS],
    client_errors: AtomicU64,
    server_errors: AtomicU64,
    latency_sum_us: AtomicU64,
    /// [`Snapshot::weight`] of the counts the control plane acknowledged.
    acknowledged: AtomicU64,
}

/// Counts as read at one moment.
struct Snapshot {
    requests: u64,
    client_errors: u64,
    server_errors: u64,
    latency_sum_us: u64,
    buckets: Vec<u64>,
}

impl Snapshot {
    /// Grows with every count, so that a changed pair is told from an unchanged one.
    fn weight(&self) -> u64 {
        self.requests
            .wrapping_add(self.client_errors)
            .wrapping_add(self.server_errors)
    }
}

impl Counts {
    fn add(&self, status: u16, latency_us: u64) {
        self.buckets[bucket_of(latency_us)].fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(latency_us, Ordering::Relaxed);
        match status {
            400..=499 => self.client_errors.fetch_add(1, Ordering::Release),
            500..=599 => self.server_errors.fetch_add(1, Ordering::Release),
            _ => 0,
        };
    }

    fn snapshot(&self) -> Snapshot {
        let client_errors = self.client_errors.load(Ordering::Acquire);
        let server_errors = self.server_errors.load(Ordering::Acquire);
        let buckets: Vec<u64> = self
            .buckets
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect();
        Snapshot {
            requests: buckets.iter().sum(),
            client_errors,
            server_errors,
            latency_sum_us: self.latency_sum_us.load(Ordering::Relaxed),
            buckets,
        }
    }
}

/// The pairs of one minute.
struct Minute {
    minute: i64,
    pairs: HashMap<Pair, Counts>,
}

/// What a report carries, and what to mark acknowledged once it is.
pub struct Batch {
    /// The rows to send.
    pub rows: Vec<MinuteCounts>,
    /// Each row's weight, in order.
    weights: Vec<u64>,
}

impl Batch {
    /// The same rows, in batches of at most `size`.
    pub fn split(self, size: usize) -> Vec<Batch> {
        let mut batches = Vec::new();
        let mut weights = self.weights.into_iter();
        let mut rows = self.rows.into_iter().peekable();
        while rows.peek().is_some() {
            batches.push(Batch {
                rows: rows.by_ref().take(size).collect(),
                weights: weights.by_ref().take(size).collect(),
            });
        }
        batches
    }
}

/// This process's per-minute totals.
#[derive(Default)]
pub struct Analytics {
    /// Oldest first.
    minutes: RwLock<Vec<Minute>>,
}

/// The Unix minute of `time`.
pub fn unix_minute(time: SystemTime) -> i64 {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    i64::try_from(secs / 60).unwrap_or(i64::MAX)
}

impl Analytics {
    /// Counts a request to `api_id` by `application_id` (empty: none) answered `status`
    /// after `elapsed`, at `now`. Requests that reached no API are not counted.
    pub fn record(
        &self,
        api_id: &str,
        application_id: &str,
        status: u16,
        elapsed: Duration,
        now: SystemTime,
    ) {
        if api_id.is_empty() {
            return;
        }
        // Rounded up, so that a latency lands in the bucket Prometheus' histogram (whose
        // bounds are the same, in seconds) puts it in.
        let latency_us = u64::try_from(elapsed.as_nanos().div_ceil(1_000)).unwrap_or(u64::MAX);
        let minute = unix_minute(now);
        let pair = PairRef {
            api_id,
            application_id,
        };
        {
            let minutes = self.minutes.read().unwrap_or_else(|p| p.into_inner());
            let counts = minutes
                .iter()
                .rev()
                .find(|m| m.minute == minute)
                .and_then(|m| m.pairs.get(&pair));
            if let Some(counts) = counts {
                counts.add(status, latency_us);
                return;
            }
        }
        let mut minutes = self.minutes.write().unwrap_or_else(|p| p.into_inner());
        let at = match minutes.iter().position(|m| m.minute >= minute) {
            Some(at) if minutes[at].minute == minute => at,
            found => {
                let at = found.unwrap_or(minutes.len());
                let pairs = HashMap::new();
                minutes.insert(at, Minute { minute, pairs });
                at
            }
        };
        let pairs = &mut minutes[at].pairs;
        let full = pairs.len() >= MAX_PAIRS_PER_MINUTE && !pairs.contains_key(&pair);
        let pair = if full {
            PairRef {
                api_id: OVERFLOW,
                application_id: "",
            }
        } else {
            pair
        };
        let counts = pairs
            .entry(Pair {
                api_id: pair.api_id.to_string(),
                application_id: pair.application_id.to_string(),
            })
            .or_default();
        counts.add(status, latency_us);
    }

    /// The pairs whose counts changed since the control plane last acknowledged them, as
    /// rows of a report.
    pub fn changed(&self) -> Batch {
        let minutes = self.minutes.read().unwrap_or_else(|p| p.into_inner());
        let mut batch = Batch {
            rows: Vec::new(),
            weights: Vec::new(),
        };
        for minute in minutes.iter() {
            for (pair, counts) in &minute.pairs {
                let snapshot = counts.snapshot();
                let weight = snapshot.weight();
                if weight == counts.acknowledged.load(Ordering::Relaxed) {
                    continue;
                }
                batch.weights.push(weight);
                batch.rows.push(MinuteCounts {
                    minute: minute.minute,
                    api_id: pair.api_id.clone(),
                    application_id: pair.application_id.clone(),
                    requests: snapshot.requests,
                    client_errors: snapshot.client_errors,
                    server_errors: snapshot.server_errors,
                    latency_sum_us: snapshot.latency_sum_us,
                    latency_buckets: snapshot.buckets,
                });
            }
        }
        batch
    }

    /// The control plane has stored `batch` (or refused it for good): its counts need not
    /// be sent again.
    pub fn acknowledged(&self, batch: &Batch) {
        let minutes = self.minutes.read().unwrap_or_else(|p| p.into_inner());
        for (row, weight) in batch.rows.iter().zip(&batch.weights) {
            let pair = PairRef {
                api_id: &row.api_id,
                application_id: &row.application_id,
            };
            let counts = minutes
                .iter()
                .find(|m| m.minute == row.minute)
                .and_then(|m| m.pairs.get(&pair));
            if let Some(counts) = counts {
                counts.acknowledged.fetch_max(*weight, Ordering::Relaxed);
            }
        }
    }

    /// Forgets the minutes that are over and wholly acknowledged, then, past
    /// [`MAX_HELD_PAIRS`], the oldest (the requests dropped are logged).
    pub fn forget_done(&self, now: SystemTime) {
        let closed_before = unix_minute(now.checked_sub(CLOSING_GRACE).unwrap_or(now));
        let mut minutes = self.minutes.write().unwrap_or_else(|p| p.into_inner());
        minutes.retain(|m| {
            m.minute >= closed_before
                || m.pairs.values().any(|counts| {
                    counts.snapshot().weight() != counts.acknowledged.load(Ordering::Relaxed)
                })
        });
        let mut held: usize = minutes.iter().map(|m| m.pairs.len()).sum();
        while held > MAX_HELD_PAIRS && minutes.len() > 1 {
            let dropped = minutes.remove(0);
            held -= dropped.pairs.len();
            let requests: u64 = dropped.pairs.values().map(|c| c.snapshot().requests).sum();
            tracing::warn!(
                minute = dropped.minute,
                requests,
                "analytics of a minute dropped unreported: the control plane has not \
                 acknowledged them and too many are held"
            );
        }
    }

    /// How many pairs are held.
    pub fn held(&self) -> usize {
        let minutes = self.minutes.read().unwrap_or_else(|p| p.into_inner());
        minutes.iter().map(|m| m.pairs.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    fn at(minute: u64, second: u64) -> SystemTime {
        UNIX_EPOCH + MINUTE * u32::try_from(minute).unwrap() + Duration::from_secs(second)
    }

    #[test]
    fn counts_per_minute_and_pair_with_errors_and_buckets() {
        let analytics = Analytics::default();
        let ms = Duration::from_millis;
        analytics.record("api-1", "app-1", 200, ms(3), at(100, 1));
        analytics.record("api-1", "app-1", 200, ms(3), at(100, 59));
        analytics.record("api-1", "app-1", 429, ms(0), at(100, 30));
        analytics.record("api-1", "", 401, ms(0), at(100, 30));
        analytics.record("api-1", "app-1", 502, ms(40), at(101, 0));
        analytics.record("", "", 404, ms(0), at(101, 0));
        let mut rows = analytics.changed().rows;
        rows.sort_by(|a, b| (a.minute, &a.application_id).cmp(&(b.minute, &b.application_id)));
        let summary: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.minute,
                    r.application_id.as_str(),
                    r.requests,
                    r.client_errors,
                    r.server_errors,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (100, "", 1, 1, 0),
                (100, "app-1", 3, 1, 0),
                (101, "app-1", 1, 0, 1)
            ]
        );
        assert_eq!(rows[1].latency_buckets[bucket_of(3_000)], 2);
        assert_eq!(rows[1].latency_sum_us, 6_000);
        assert!(rows.iter().all(|r| r.inconsistency().is_none()));
    }

    #[test]
    fn only_changes_are_sent_again_and_done_minutes_are_forgotten() {
        let analytics = Analytics::default();
        analytics.record("api-1", "app-1", 200, Duration::ZERO, at(100, 0));
        let first = analytics.changed();
        assert_eq!(first.rows.len(), 1);
        // Not acknowledged: sent again.
        assert_eq!(analytics.changed().rows.len(), 1);
        analytics.acknowledged(&first);
        assert!(analytics.changed().rows.is_empty());
        analytics.record("api-1", "app-1", 200, Duration::ZERO, at(100, 10));
        let second = analytics.changed();
        assert_eq!(second.rows[0].requests, 2, "totals, never increments");
        // Still open, or within the grace: kept.
        analytics.forget_done(at(101, 1));
        assert_eq!(analytics.held(), 1);
        // Over but not acknowledged: kept.
        analytics.forget_done(at(102, 0));
        assert_eq!(analytics.held(), 1);
        analytics.acknowledged(&second);
        analytics.forget_done(at(102, 0));
        assert_eq!(analytics.held(), 0);
    }

    #[test]
    fn pairs_past_the_bound_count_together() {
        let analytics = Analytics::default();
        for n in 0..MAX_PAIRS_PER_MINUTE + 7 {
            let app = format!("app-{n}");
            analytics.record("api-1", &app, 200, Duration::ZERO, at(5, 0));
        }
        assert_eq!(analytics.held(), MAX_PAIRS_PER_MINUTE + 1);
        let rows = analytics.changed().rows;
        let other = rows.iter().find(|r| r.api_id == OVERFLOW).unwrap();
        assert_eq!(other.requests, 7);
        // A pair already counted keeps its own row.
        analytics.record("api-1", "app-0", 200, Duration::ZERO, at(5, 1));
        let rows = analytics.changed().rows;
        let app0 = rows.iter().find(|r| r.application_id == "app-0").unwrap();
        assert_eq!(app0.requests, 2);
    }

    #[test]
    fn unacknowledged_minutes_are_held_only_up_to_the_bound() {
        let analytics = Analytics::default();
        let minutes = MAX_HELD_PAIRS / MAX_PAIRS_PER_MINUTE + 2;
        for minute in 0..minutes {
            for n in 0..MAX_PAIRS_PER_MINUTE {
                let app = format!("app-{n}");
                let time = at(u64::try_from(minute).unwrap(), 0);
                analytics.record("api-1", &app, 200, Duration::ZERO, time);
            }
        }
        analytics.forget_done(at(u64::try_from(minutes).unwrap() + 1, 0));
        assert!(analytics.held() <= MAX_HELD_PAIRS);
        let kept = analytics.changed().rows;
        assert!(kept.iter().all(|r| r.minute >= 2), "the oldest went first");
    }
}
