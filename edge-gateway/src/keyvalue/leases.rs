//! Throttling counters shared through Redis, counted on this node in leases
//! ([`apim_http::counters`]): instead of an `INCRBY` per request, the node claims a block
//! of a counter's values at once and hands them out to its requests one by one.
//!
//! - Every value handed out was claimed by this node alone, so the nodes together admit
//!   exactly what one store-wide counter would: a request refused hands its value back,
//!   and the node's next request takes it again.
//! - A block grows while the node claims often (doubling up to [`MAX_BLOCK`]) and shrinks
//!   when it does not, so a busy counter costs a round trip every few dozen requests and
//!   a quiet one holds nothing unused. A busy counter's next block is claimed in the
//!   background when a quarter of the last is left, so its requests do not wait for Redis.
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
pub const IDLE: Duration = Duration::from_millis(10);

/// Something kept per counter, by bucket and key (looked up without allocating).
type PerCounter<T> = HashMap<Arc<str>, HashMap<String, T>>;

/// The entry of `bucket`'s `key`, if there is one.
fn find<'m, T>(map: &'m mut PerCounter<T>, bucket: &str, key: &str) -> Option<&'m mut T> {
    map.get_mut(bucket)?.get_mut(key)
}

/// The entry of `bucket`'s `key`, made by `make` if there is none.
fn entry<'m, T>(
    map: &'m mut PerCounter<T>,
    bucket: &str,
    key: &str,
    make: impl FnOnce() -> T,
) -> &'m mut T {
    if !map.contains_key(bucket) {
        map.insert(bucket.into(), HashMap::new());
    }
    let counters = map.get_mut(bucket).expect("inserted above");
    if !counters.contains_key(key) {
        counters.insert(key.to_string(), make());
    }
    counters.get_mut(key).expect("inserted above")
}

/// Removes the entries `drop` picks, returning them with their bucket and key.
fn remove_where<T>(
    map: &mut PerCounter<T>,
    mut drop: impl FnMut(&T) -> bool,
) -> Vec<(Arc<str>, String, T)> {
    let mut removed = Vec::new();
    for (bucket, counters) in map.iter_mut() {
        let keys: Vec<String> = counters
            .iter()
            .filter(|(_, value)| drop(value))
            .map(|(key, _)| key.clone())
            .collect();
        for key in keys {
            if let Some(value) = counters.remove(&key) {
                removed.push((bucket.clone(), key, value));
            }
        }
    }
    map.retain(|_, counters| !counters.is_empty());
    removed
}

/// What this node holds of one counter: the values `next + 1 ..= end`, and a block
/// claimed ahead to follow them.
#[derive(Debug)]
struct Lease {
    /// The last value handed out.
    next: i64,
    /// The last value of the range being handed out.
    end: i64,
    /// The first value of that range (values below it went to requests before the range
    /// last moved, so they are not given back here).
    start: i64,
    /// A block claimed ahead, `(first, last)`, handed out once the range is used up.
    ahead: Option<(i64, i64)>,
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

/// A claim to make ahead of need, while the lock on claiming it is held.
pub struct ClaimAhead {
    _claiming: tokio::sync::OwnedMutexGuard<()>,
    block: i64,
}

impl Lease {
    /// A lease holding nothing yet.
    fn empty(now: Instant) -> Self {
        Self {
            next: 0,
            end: 0,
            start: 1,
            ahead: None,
            block: 1,
            claimed_at: None,
            touched_at: now,
            claiming: Arc::default(),
        }
    }

    /// The next value held, if any is left (moving on to the block claimed ahead once the
    /// range is used up).
    fn take(&mut self, now: Instant) -> Option<i64> {
        self.touched_at = now;
        if self.next >= self.end {
            let (first, last) = self.ahead.take()?;
            (self.start, self.next, self.end) = (first, first - 1, last);
        }
        self.next += 1;
        Some(self.next)
    }

    /// Gives the last value handed out back, when it is of the range held now.
    fn give_back(&mut self, now: Instant) -> Option<i64> {
        self.touched_at = now;
        (self.next >= self.start).then(|| {
            self.next -= 1;
            self.next
        })
    }

    /// A claim to make now, ahead of need, when a quarter of the range or less is left, no
    /// block is claimed ahead yet and no claim is on its way.
    fn claim_ahead(&mut self, now: Instant) -> Option<ClaimAhead> {
        // Only for counters busy enough for blocks of a few: a quiet one would hold a
        // claimed value for nothing between its requests.
        let busy = self.block >= 4;
        if !busy || self.ahead.is_some() || self.end - self.next > self.block / 4 {
            return None;
        }
        let claiming = self.claiming.clone().try_lock_owned().ok()?;
        Some(ClaimAhead {
            _claiming: claiming,
            block: self.block_for_claim(now),
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
    /// there is no room for them (they go back).
    fn hold(&mut self, end: i64, block: i64) -> bool {
        let first = end - block + 1;
        if self.ahead.is_some() {
            return false;
        }
        if self.end == first - 1 {
            // Nobody claimed in between: the block extends the range.
            self.end = end;
        } else if self.next >= self.end {
            (self.start, self.next, self.end) = (first, first - 1, end);
        } else {
            self.ahead = Some((first, end));
        }
        true
    }

    /// Values claimed and not handed out.
    fn unused(&self) -> i64 {
        let ahead = self.ahead.map_or(0, |(first, last)| last - first + 1);
        self.end - self.next + ahead
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
    leases: Mutex<PerCounter<Lease>>,
    reads: Mutex<PerCounter<Read>>,
}

impl Leases {
    /// Adds `delta` to the counter when this node can alone: a step up takes a value it
    /// holds, a step down gives the last value back. `None` when Redis is needed; with the
    /// value, the claim to make ahead when the values held run low
    /// ([`Leases::claim`] it without waiting, so that requests never wait for one).
    pub fn increment_held(
        &self,
        bucket: &str,
        key: &str,
        delta: i64,
    ) -> Option<(i64, Option<ClaimAhead>)> {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        let lease = find(&mut leases, bucket, key)?;
        match delta {
            1 => lease.take(now).map(|value| (value, lease.claim_ahead(now))),
            -1 => lease.give_back(now).map(|value| (value, None)),
            _ => None,
        }
    }

    /// Claims a block ahead of need and keeps it (or gives it back when there is no room).
    pub async fn claim(&self, redis: &RedisStore, bucket: &str, key: &str, ahead: ClaimAhead) {
        match redis.increment(bucket, key, ahead.block).await {
            Ok(end) => {
                if !self.with_lease(bucket, key, |lease, _| lease.hold(end, ahead.block)) {
                    give_back_to_redis(redis, bucket, key, ahead.block);
                }
            }
            Err(err) => tracing::debug!(?err, "could not claim counter values ahead"),
        }
    }

    /// Adds `delta` to the counter: as [`Leases::increment_held`] when it can, else a step
    /// up takes a value of a block claimed for it (one claim at a time per counter), and
    /// anything else goes to Redis as it is.
    pub async fn increment(
        &self,
        redis: &RedisStore,
        bucket: &str,
        key: &str,
        delta: i64,
    ) -> Result<i64, KvError> {
        match self.increment_held(bucket, key, delta) {
            Some((value, ahead)) => {
                if let Some(ahead) = ahead {
                    self.claim(redis, bucket, key, ahead).await;
                }
                Ok(value)
            }
            None if delta == 1 => self.take_claiming(redis, bucket, key).await,
            None => redis.increment(bucket, key, delta).await,
        }
    }

    /// A value of a block claimed for this request, or for one it waited for.
    async fn take_claiming(
        &self,
        redis: &RedisStore,
        bucket: &str,
        key: &str,
    ) -> Result<i64, KvError> {
        let claiming = match self.with_lease(bucket, key, |lease, now| {
            lease.take(now).ok_or_else(|| lease.claiming.clone())
        }) {
            Ok(value) => return Ok(value),
            Err(claiming) => claiming,
        };
        let _claiming = claiming.lock().await;
        // A claim this request waited for may have brought values enough.
        let block = match self.with_lease(bucket, key, |lease, now| {
            lease.take(now).ok_or_else(|| lease.block_for_claim(now))
        }) {
            Ok(value) => return Ok(value),
            Err(block) => block,
        };
        let end = redis.increment(bucket, key, block).await?;
        let (held, taken) = self.with_lease(bucket, key, |lease, now| {
            let held = lease.hold(end, block);
            (held, lease.take(now))
        });
        if !held {
            give_back_to_redis(redis, bucket, key, block);
        }
        match taken {
            Some(value) => Ok(value),
            None => redis.increment(bucket, key, 1).await,
        }
    }

    /// Runs `f` on the counter's lease (made empty if there is none), under the lock.
    fn with_lease<T>(
        &self,
        bucket: &str,
        key: &str,
        f: impl FnOnce(&mut Lease, Instant) -> T,
    ) -> T {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        f(entry(&mut leases, bucket, key, || Lease::empty(now)), now)
    }

    /// The counter's value from a copy at most [`counters::STALE_READ_MS`] old, less what
    /// this node holds unused (which no request has been admitted with); `None` when
    /// there is no such copy.
    pub fn read_held(&self, bucket: &str, key: &str) -> Option<Option<Vec<u8>>> {
        let fresh = Duration::from_millis(counters::STALE_READ_MS);
        let value = find(&mut lock(&self.reads), bucket, key)
            .filter(|read| read.at.elapsed() < fresh)?
            .value
            .clone();
        Some(self.less_held(bucket, key, value))
    }

    /// The counter's value, as [`Leases::read_held`] gives it, reading Redis when there is
    /// no copy fresh enough.
    pub async fn get(
        &self,
        redis: &RedisStore,
        bucket: &str,
        key: &str,
    ) -> Result<Option<Vec<u8>>, KvError> {
        if let Some(value) = self.read_held(bucket, key) {
            return Ok(value);
        }
        let value = redis.get(bucket, key).await?;
        let copy = Read {
            value: value.clone(),
            at: Instant::now(),
        };
        let mut reads = lock(&self.reads);
        let slot = entry(&mut reads, bucket, key, || Read {
            value: None,
            at: copy.at,
        });
        *slot = copy;
        drop(reads);
        Ok(self.less_held(bucket, key, value))
    }

    /// `value` less what this node holds unused of the counter.
    fn less_held(&self, bucket: &str, key: &str, value: Option<Vec<u8>>) -> Option<Vec<u8>> {
        let unused = find(&mut lock(&self.leases), bucket, key).map_or(0, |lease| lease.unused());
        value.map(|value| less_unused(value, unused))
    }

    /// Forgets the counter (it is being deleted), keeping nothing of it here.
    pub fn forget(&self, bucket: &str, key: &str) {
        if let Some(counters) = lock(&self.leases).get_mut(bucket) {
            counters.remove(key);
        }
        if let Some(counters) = lock(&self.reads).get_mut(bucket) {
            counters.remove(key);
        }
    }

    /// Returns what this node holds of counters idle for [`IDLE`] to Redis, and drops read
    /// copies too old to be used. `redis` is `None` while it cannot be used: the values
    /// are then dropped (the counter only overstates what was admitted until it expires).
    pub async fn sweep(&self, redis: Option<&RedisStore>) {
        let now = Instant::now();
        let idle = remove_where(&mut lock(&self.leases), |lease| {
            now.duration_since(lease.touched_at) >= IDLE
        });
        let stale = Duration::from_millis(counters::STALE_READ_MS);
        remove_where(&mut lock(&self.reads), |read| {
            now.duration_since(read.at) >= stale
        });
        let Some(redis) = redis else { return };
        for (bucket, key, lease) in idle {
            let unused = lease.unused();
            if unused > 0 {
                return_to_redis(redis, &bucket, &key, unused).await;
            }
        }
    }

    /// How many counters this node holds values of (for tests).
    pub fn held(&self) -> usize {
        lock(&self.leases).values().map(HashMap::len).sum()
    }
}

/// Returns `count` values to the counter in Redis; a failure only leaves the counter
/// overstating what was admitted until it expires.
async fn return_to_redis(redis: &RedisStore, bucket: &str, key: &str, count: i64) {
    if let Err(err) = redis.increment(bucket, key, -count).await {
        tracing::debug!(?err, "could not return unused counter values");
    }
}

/// [`return_to_redis`], without waiting for it.
fn give_back_to_redis(redis: &RedisStore, bucket: &str, key: &str, count: i64) {
    let (redis, bucket, key) = (redis.clone(), bucket.to_string(), key.to_string());
    tokio::spawn(async move { return_to_redis(&redis, &bucket, &key, count).await });
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

    /// A busy counter claims its next block when a quarter of its range is left, and
    /// hands that block out once the range is used up; a quiet one never claims ahead.
    #[test]
    fn busy_counters_claim_ahead_and_move_on_to_the_block() {
        let now = Instant::now();
        let mut lease = Lease::empty(now);
        assert!(lease.hold(8, 8));
        lease.block_for_claim(now);
        lease.block = 8;
        for value in 1..=5 {
            assert_eq!(lease.take(now), Some(value));
            assert!(lease.claim_ahead(now).is_none(), "{value}");
        }
        assert_eq!(lease.take(now), Some(6));
        let ahead = lease.claim_ahead(now).expect("two of eight left");
        assert!(lease.claim_ahead(now).is_none(), "one claim at a time");
        // Another node claimed 9..=20 meanwhile: this block is 21..=36.
        drop(ahead);
        assert!(lease.hold(36, 16));
        assert_eq!(lease.unused(), 2 + 16);
        assert!(!lease.hold(52, 16), "no room for a second block ahead");
        assert_eq!((lease.take(now), lease.take(now)), (Some(7), Some(8)));
        assert_eq!(lease.take(now), Some(21));
        // A value given back is of the block now handed out.
        assert_eq!(lease.give_back(now), Some(20));
        assert_eq!(lease.give_back(now), None);
        assert_eq!(lease.take(now), Some(21));

        let mut quiet = Lease::empty(now);
        assert!(quiet.hold(1, 1));
        quiet.block_for_claim(now + QUIET * 2);
        assert_eq!(quiet.take(now), Some(1));
        assert!(quiet.claim_ahead(now).is_none());
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
