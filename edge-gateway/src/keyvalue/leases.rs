//! Throttling counters shared through Redis, counted on this node in leases
//! ([`apim_http::counters`]): instead of an `INCRBY` per request, the node claims a block
//! of a counter's values at once and hands them out to its requests one by one.
//!
//! - Every value handed out was claimed by this node alone, so the nodes together admit
//!   exactly what one store-wide counter would: a request refused hands its value back,
//!   and the node's next request takes it again.
//! - A block grows while the node claims often (doubling up to [`MAX_BLOCK`]) and shrinks
//!   when it does not, so a busy counter costs a round trip every few dozen requests and
//!   a quiet one holds nothing unused.
//! - Values still unused when the counter has gone quiet (the window it counts is over,
//!   or traffic has moved to other nodes) go back to Redis after [`IDLE`], so that what
//!   the nodes hold never weighs on the next window for long.
//! - Reads (the previous window, weighed into the current one) come from a copy at most
//!   [`counters::STALE_READ_MS`] old, less what this node holds unused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apim_http::counters;

use super::KvError;
use super::redis_store::RedisStore;

/// Largest block a node claims at once: the most of a counter one node may hold unused.
pub const MAX_BLOCK: i64 = 64;
/// A block used up within this long is doubled for the next claim.
const BUSY: Duration = Duration::from_millis(20);
/// A block that lasted longer than this is halved for the next claim.
const QUIET: Duration = Duration::from_millis(200);
/// How long a counter may go untouched before what this node holds of it goes back.
pub const IDLE: Duration = Duration::from_millis(50);

/// A counter and the bucket it is in.
type CounterKey = (Arc<str>, String);

/// What this node holds of one counter: the values `next + 1 ..= end` are its own.
#[derive(Debug)]
struct Lease {
    /// The last value handed out.
    next: i64,
    /// The last value claimed.
    end: i64,
    /// The first value of the range being handed out (values below it went to requests
    /// before the range last moved, so they are not given back here).
    start: i64,
    /// How many values the next claim asks for.
    block: i64,
    /// When the last claim was made (`None`: none yet).
    claimed_at: Option<Instant>,
    /// When a request last took or gave back a value.
    touched_at: Instant,
    /// Held while a claim is on its way, so that the node's requests that find the range
    /// used up wait for that claim rather than each claiming a block of its own.
    claiming: Arc<tokio::sync::Mutex<()>>,
}

impl Lease {
    /// A lease holding nothing yet.
    fn empty(now: Instant) -> Self {
        Self {
            next: 0,
            end: 0,
            start: 1,
            block: 1,
            claimed_at: None,
            touched_at: now,
            claiming: Arc::default(),
        }
    }

    /// The next value of the range, if any is left.
    fn take(&mut self, now: Instant) -> Option<i64> {
        self.touched_at = now;
        (self.next < self.end).then(|| {
            self.next += 1;
            self.next
        })
    }

    /// The block size for a claim made now: larger when the last block went fast.
    fn block_for_claim(&mut self, now: Instant) -> i64 {
        if let Some(claimed_at) = self.claimed_at {
            let lasted = now.duration_since(claimed_at);
            if lasted < BUSY {
                self.block = (self.block * 2).min(MAX_BLOCK);
            } else if lasted > QUIET {
                self.block = (self.block / 2).max(1);
            }
        }
        self.claimed_at = Some(now);
        self.block
    }

    /// Keeps the values `end - block + 1 ..= end` just claimed from Redis; `false` when
    /// they are not needed (values given back meanwhile are handed out first).
    fn hold(&mut self, end: i64, block: i64) -> bool {
        if self.end == end - block {
            // Nobody claimed in between: the block extends what is held.
            self.end = end;
        } else if self.unused() == 0 {
            self.next = end - block;
            self.end = end;
            self.start = end - block + 1;
        } else {
            return false;
        }
        true
    }

    /// Values claimed and not handed out.
    fn unused(&self) -> i64 {
        self.end - self.next
    }
}

/// A copy of a counter read from Redis.
struct Read {
    value: Option<Vec<u8>>,
    at: Instant,
}

/// This node's leases and read copies.
#[derive(Default)]
pub struct Leases {
    leases: Mutex<HashMap<CounterKey, Lease>>,
    reads: Mutex<HashMap<CounterKey, Read>>,
}

impl Leases {
    /// Adds `delta` to the counter: a step up takes a value this node holds (claiming a
    /// block when it holds none), a step down gives the last value back; anything else
    /// goes to Redis as it is.
    pub async fn increment(
        &self,
        redis: &RedisStore,
        bucket: &Arc<str>,
        key: &str,
        delta: i64,
    ) -> Result<i64, KvError> {
        match delta {
            1 => self.take(redis, bucket, key).await,
            -1 => match self.give_back(bucket, key) {
                Some(value) => Ok(value),
                None => redis.increment(bucket, key, -1).await,
            },
            _ => redis.increment(bucket, key, delta).await,
        }
    }

    /// A value of the counter for one request: one this node holds, else one of a block
    /// claimed for it (one claim at a time per counter).
    async fn take(&self, redis: &RedisStore, bucket: &Arc<str>, key: &str) -> Result<i64, KvError> {
        let id = (bucket.clone(), key.to_string());
        let claiming = match self.with_lease(&id, |lease, now| {
            lease.take(now).ok_or_else(|| lease.claiming.clone())
        }) {
            Ok(value) => return Ok(value),
            Err(claiming) => claiming,
        };
        let _claiming = claiming.lock().await;
        // A claim this request waited for may have brought values enough.
        let block = match self.with_lease(&id, |lease, now| {
            lease.take(now).ok_or_else(|| lease.block_for_claim(now))
        }) {
            Ok(value) => return Ok(value),
            Err(block) => block,
        };
        let end = redis.increment(bucket, key, block).await?;
        let taken = self.with_lease(&id, |lease, now| {
            let held = lease.hold(end, block);
            (held, lease.take(now))
        });
        let (held, taken) = taken;
        if !held {
            self.give_back_to_redis(redis, bucket, key, block);
        }
        match taken {
            Some(value) => Ok(value),
            None => redis.increment(bucket, key, 1).await,
        }
    }

    /// Runs `f` on the counter's lease (made empty if there is none), under the lock.
    fn with_lease<T>(&self, id: &CounterKey, f: impl FnOnce(&mut Lease, Instant) -> T) -> T {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        let lease = leases
            .entry(id.clone())
            .or_insert_with(|| Lease::empty(now));
        f(lease, now)
    }

    /// Gives the last value handed out back to this node's range; `None` when it holds no
    /// range it could go back to.
    fn give_back(&self, bucket: &Arc<str>, key: &str) -> Option<i64> {
        let mut leases = lock(&self.leases);
        let lease = leases.get_mut(&(bucket.clone(), key.to_string()))?;
        lease.touched_at = Instant::now();
        (lease.next >= lease.start).then(|| {
            lease.next -= 1;
            lease.next
        })
    }

    /// Returns `count` values to the counter in Redis, without waiting for it.
    fn give_back_to_redis(&self, redis: &RedisStore, bucket: &Arc<str>, key: &str, count: i64) {
        let (redis, bucket, key) = (redis.clone(), bucket.clone(), key.to_string());
        tokio::spawn(async move {
            if let Err(err) = redis.increment(&bucket, &key, -count).await {
                tracing::debug!(?err, "could not return unused counter values");
            }
        });
    }

    /// The counter's value: a copy at most [`counters::STALE_READ_MS`] old, less what
    /// this node holds unused (which no request has been admitted with).
    pub async fn get(
        &self,
        redis: &RedisStore,
        bucket: &Arc<str>,
        key: &str,
    ) -> Result<Option<Vec<u8>>, KvError> {
        let id = (bucket.clone(), key.to_string());
        let fresh = Duration::from_millis(counters::STALE_READ_MS);
        let copy = lock(&self.reads)
            .get(&id)
            .filter(|read| read.at.elapsed() < fresh)
            .map(|read| read.value.clone());
        let value = match copy {
            Some(value) => value,
            None => {
                let value = redis.get(bucket, key).await?;
                let read = Read {
                    value: value.clone(),
                    at: Instant::now(),
                };
                lock(&self.reads).insert(id.clone(), read);
                value
            }
        };
        let unused = lock(&self.leases).get(&id).map_or(0, Lease::unused);
        Ok(value.map(|value| less_unused(value, unused)))
    }

    /// Forgets the counter (it is being deleted), keeping nothing of it here.
    pub fn forget(&self, bucket: &Arc<str>, key: &str) {
        let id = (bucket.clone(), key.to_string());
        lock(&self.leases).remove(&id);
        lock(&self.reads).remove(&id);
    }

    /// Returns what this node holds of counters idle for [`IDLE`] to Redis, and drops read
    /// copies too old to be used. `redis` is `None` while it cannot be used: the values
    /// are then dropped (the counter only overstates what was admitted until it expires).
    pub async fn sweep(&self, redis: Option<&RedisStore>) {
        let now = Instant::now();
        let idle: Vec<(CounterKey, i64)> = {
            let mut leases = lock(&self.leases);
            let ids: Vec<CounterKey> = leases
                .iter()
                .filter(|(_, lease)| now.duration_since(lease.touched_at) >= IDLE)
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| leases.remove(&id).map(|lease| (id, lease.unused())))
                .filter(|(_, unused)| *unused > 0)
                .collect()
        };
        let stale = Duration::from_millis(counters::STALE_READ_MS);
        lock(&self.reads).retain(|_, read| now.duration_since(read.at) < stale);
        let Some(redis) = redis else { return };
        for ((bucket, key), unused) in idle {
            if let Err(err) = redis.increment(&bucket, &key, -unused).await {
                tracing::debug!(?err, "could not return unused counter values");
            }
        }
    }

    /// How many counters this node holds values of (for tests).
    pub fn held(&self) -> usize {
        lock(&self.leases).len()
    }
}

/// A counter's stored text less `unused`, as stored text.
fn less_unused(value: Vec<u8>, unused: i64) -> Vec<u8> {
    if unused == 0 {
        return value;
    }
    match super::parse_counter(&value) {
        Ok(count) => (count - unused).max(0).to_string().into_bytes(),
        Err(_) => value,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Redis namespace of the test's own, when a Redis listens on 127.0.0.1:6379.
    async fn redis(test: &str) -> Option<RedisStore> {
        if std::net::TcpStream::connect("127.0.0.1:6379").is_err() {
            eprintln!("no Redis on 127.0.0.1:6379; skipping");
            return None;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let namespace = format!("edge-gateway-leases-{test}-{}-{nanos}", std::process::id());
        Some(
            RedisStore::connect("redis://127.0.0.1:6379/0", &namespace)
                .await
                .unwrap(),
        )
    }

    fn counter(redis_value: Option<Vec<u8>>) -> i64 {
        redis_value.map_or(0, |v| super::super::parse_counter(&v).unwrap())
    }

    /// Two nodes counting one counter in turns, fast enough for their blocks to grow,
    /// never hand out the same value, nor one the store did not count; once the nodes have
    /// returned what they held unused, the store holds exactly the number handed out.
    #[tokio::test]
    async fn nodes_hand_out_values_no_other_node_holds() {
        let Some(redis) = redis("unique").await else {
            return;
        };
        let (a, b) = (Leases::default(), Leases::default());
        let bucket: Arc<str> = "default".into();
        let key = counters::key(60, "thr:app:1:1");
        let mut values = Vec::new();
        for i in 0..1_000 {
            let node = if i % 3 == 0 { &b } else { &a };
            values.push(node.increment(&redis, &bucket, &key, 1).await.unwrap());
        }
        let claimed = counter(redis.get(&bucket, &key).await.unwrap());
        assert!(
            (1_000..=1_000 + 2 * MAX_BLOCK).contains(&claimed),
            "{claimed}"
        );
        values.sort();
        values.dedup();
        assert_eq!(values.len(), 1_000, "a value was handed out twice");
        assert!(values.iter().all(|v| (1..=claimed).contains(v)));
        tokio::time::sleep(IDLE).await;
        a.sweep(Some(&redis)).await;
        b.sweep(Some(&redis)).await;
        assert_eq!(counter(redis.get(&bucket, &key).await.unwrap()), 1_000);
        assert_eq!((a.held(), b.held()), (0, 0));
    }

    /// A refused request's value goes to the next request of the node; a read counts what
    /// was handed out, not what the node holds unused.
    #[tokio::test]
    async fn a_value_given_back_is_taken_again_and_reads_leave_out_what_is_held() {
        let Some(redis) = redis("give-back").await else {
            return;
        };
        let node = Leases::default();
        let bucket: Arc<str> = "default".into();
        let key = counters::key(60, "tps:7:production:1");
        for expected in 1..=40 {
            assert_eq!(
                node.increment(&redis, &bucket, &key, 1).await.unwrap(),
                expected
            );
        }
        assert_eq!(node.increment(&redis, &bucket, &key, -1).await.unwrap(), 39);
        assert_eq!(node.increment(&redis, &bucket, &key, 1).await.unwrap(), 40);
        assert_eq!(node.increment(&redis, &bucket, &key, -1).await.unwrap(), 39);
        let read = node.get(&redis, &bucket, &key).await.unwrap();
        assert_eq!(read, Some(b"39".to_vec()));
        // Other steps go to the store as they are.
        let before = counter(redis.get(&bucket, &key).await.unwrap());
        node.increment(&redis, &bucket, &key, 5).await.unwrap();
        assert_eq!(counter(redis.get(&bucket, &key).await.unwrap()), before + 5);
        node.forget(&bucket, &key);
        assert_eq!(node.held(), 0);
    }

    /// Requests of one node arriving together wait for one claim at a time, so the values
    /// they get are exactly 1..=n: none is skipped for a block claimed twice.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_arriving_together_share_one_claim() {
        let Some(redis) = redis("together").await else {
            return;
        };
        let node = Arc::new(Leases::default());
        let bucket: Arc<str> = "default".into();
        let key = counters::key(60, "thr:sub:1:2:1");
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..300 {
            let (node, redis, bucket, key) =
                (node.clone(), redis.clone(), bucket.clone(), key.clone());
            calls.spawn(async move { node.increment(&redis, &bucket, &key, 1).await.unwrap() });
        }
        let mut values = calls.join_all().await;
        values.sort();
        assert_eq!(values, (1..=300).collect::<Vec<_>>());
    }

    #[test]
    fn blocks_grow_while_busy_and_shrink_when_quiet() {
        let start = Instant::now();
        let mut lease = Lease::empty(start);
        let mut now = start;
        for _ in 0..10 {
            now += Duration::from_millis(1);
            lease.block_for_claim(now);
        }
        assert_eq!(lease.block, MAX_BLOCK);
        lease.block_for_claim(now + QUIET * 2);
        assert_eq!(lease.block, MAX_BLOCK / 2);
        assert_eq!(less_unused(b"10".to_vec(), 3), b"7".to_vec());
        assert_eq!(less_unused(b"2".to_vec(), 3), b"0".to_vec());
    }
}
