//! Process-local key-value backend.
//!
//! One mutex guards all buckets; every operation is a short critical section
//! with no I/O, which also makes `increment` and compare-and-swap atomic.
//! Every write stamps the entry with a fresh version so that CAS detects any
//! intervening write, even one that restored the same bytes.
//!
//! Keys with a lifetime ([`apim_http::expiry`]: cached responses, throttling windows)
//! expire and are swept a few at a time on every write. Cached answers together stay
//! within a byte budget, the least recently used going first when it is full. Throttling
//! counters take none of it and are never dropped for room (a client could otherwise
//! reset its limit by filling the cache), nor are the manifest's keys, which have no
//! lifetime.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use foldhash::HashMap;

use super::store::{CasSnapshot, Grant, KeyPage, KvError, Store, parse_counter};

/// Most keys returned by one `list-keys` call.
pub const PAGE_SIZE: usize = 1000;
/// Default budget of the keys with a lifetime.
pub const DEFAULT_EPHEMERAL_BYTES: usize = 64 << 20;
/// Expired keys removed at most per write (the sweep stays short).
const SWEEP_PER_WRITE: usize = 8;
/// What a key with a lifetime holds besides its names and value: its [`Entry`] and its
/// places in its bucket's B-tree and in the use and expiry orders, nodes a third empty.
const ENTRY_OVERHEAD: usize = 320;

/// Bytes a key with a lifetime holds: its value's allocation, two of its name (in its
/// bucket and in the expiry order, beside the bucket's name) and [`ENTRY_OVERHEAD`].
fn footprint(bucket: &str, key: &str, value: &Vec<u8>) -> usize {
    allocated(value.capacity())
        + 2 * allocated(key.len())
        + allocated(bucket.len())
        + ENTRY_OVERHEAD
}

/// What an allocation of `bytes` takes: allocators round a block up to a size class, four
/// per doubling (mimalloc, the gateway's, and jemalloc), so an 86 KiB cached answer
/// takes 96 KiB.
fn allocated(bytes: usize) -> usize {
    let below = 1usize << bytes.saturating_sub(1).checked_ilog2().unwrap_or(0);
    bytes.next_multiple_of((below / 4).max(16))
}

/// `value` in an allocation of its length: a serializer's growing buffer (a cached
/// answer's JSON) holds up to twice what it wrote, which the store would keep.
fn compact(value: Vec<u8>) -> Vec<u8> {
    if value.capacity() == value.len() {
        return value;
    }
    // A fresh allocation: shrinking in place may keep the whole block (mimalloc does
    // while the value fills at least half of it).
    value.as_slice().to_vec()
}

#[derive(Debug)]
struct Entry {
    value: Vec<u8>,
    version: u64,
    /// For a key with a lifetime: when it expires, and its place in the use order.
    lifetime: Option<(Instant, u64)>,
}

/// Where keys with a lifetime are, by last use and by expiry.
#[derive(Debug, Default)]
struct Ephemeral {
    /// Bytes held by the keys that may be dropped for room (cached answers; the counters,
    /// bounded by the manifest's limits and short-lived, do not take their room): each
    /// one's [`footprint`].
    bytes: usize,
    /// Byte budget.
    limit: usize,
    /// Use stamp → expiry of every key that may be dropped for room (all but throttling
    /// counters); the first is the least recently used.
    by_use: BTreeMap<u64, Instant>,
    /// (expiry, use stamp) → (bucket, key) of every key with a lifetime.
    by_expiry: BTreeMap<(Instant, u64), (String, String)>,
    last_use: u64,
}

/// A bucket's entries: found by hash on every request's reads, listed in key order.
#[derive(Debug, Default)]
struct Bucket {
    entries: HashMap<Arc<str>, Entry>,
    /// The same keys, sorted, for [`MemoryStore::list_keys`].
    order: BTreeSet<Arc<str>>,
}

impl Bucket {
    fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.entries.get_mut(key)
    }

    /// Sets `key`'s entry (a held key keeps its place in both maps).
    fn insert(&mut self, key: &str, entry: Entry) {
        let key: Arc<str> = Arc::from(key);
        self.order.insert(key.clone());
        self.entries.insert(key, entry);
    }

    fn remove(&mut self, key: &str) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        self.order.remove(key);
        Some(entry)
    }

    /// The entries after `cursor`, in key order (live or not: the caller decides).
    fn after<'a>(
        &'a self,
        cursor: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Arc<str>, &'a Entry)> + 'a {
        let start = cursor.map_or(Bound::Unbounded, Bound::Excluded);
        self.order
            .range::<str, _>((start, Bound::Unbounded))
            .filter_map(|key| Some((key, self.entries.get(key)?)))
    }
}

#[derive(Debug, Default)]
struct Inner {
    buckets: HashMap<String, Bucket>,
    last_version: u64,
    ephemeral: Ephemeral,
}

impl Inner {
    /// Writes `value`. A key with a lifetime keeps the expiry it has (an increment of a
    /// live counter, a compare-and-swap), or gets a fresh one (a set removes the key first).
    fn write(&mut self, bucket: &str, key: &str, value: Vec<u8>, now: Instant) {
        self.last_version += 1;
        if self.overwrite_live(bucket, key, &value, now) {
            return;
        }
        let value = compact(value);
        let expires = apim_http::expiry::ttl_secs(key).map(|ttl| {
            self.entry(bucket, key, now)
                .and_then(|e| e.lifetime)
                .map_or(now + Duration::from_secs(ttl), |(expires, _)| expires)
        });
        self.remove(bucket, key);
        let lifetime = expires.map(|expires| {
            let size = footprint(bucket, key, &value);
            let stamp = self.ephemeral.track(bucket, key, size, expires);
            (expires, stamp)
        });
        let entry = Entry {
            value,
            version: self.last_version,
            lifetime,
        };
        self.buckets
            .entry(bucket.to_owned())
            .or_default()
            .insert(key, entry);
        self.sweep(now);
    }

    /// Writes `value` in place over a live key with a lifetime, keeping its expiry and
    /// place in the use order (a counter's increments, the hot path); whether it did.
    fn overwrite_live(&mut self, bucket: &str, key: &str, value: &[u8], now: Instant) -> bool {
        let version = self.last_version;
        let Some(entry) = self.buckets.get_mut(bucket).and_then(|b| b.get_mut(key)) else {
            return false;
        };
        let Some((_, stamp)) = entry.lifetime.filter(|(expires, _)| *expires > now) else {
            return false;
        };
        let held = allocated(entry.value.capacity());
        entry.value.clear();
        entry.value.extend_from_slice(value);
        entry.version = version;
        if self.ephemeral.by_use.contains_key(&stamp) {
            // The allocation only grows.
            self.ephemeral.bytes = self.ephemeral.bytes + allocated(entry.value.capacity()) - held;
        }
        true
    }

    /// A live entry (an expired one reads as absent).
    fn entry(&self, bucket: &str, key: &str, now: Instant) -> Option<&Entry> {
        let entry = self.buckets.get(bucket)?.get(key)?;
        match entry.lifetime {
            Some((expires, _)) if expires <= now => None,
            _ => Some(entry),
        }
    }

    /// Marks a key with a lifetime as just used.
    fn touch(&mut self, bucket: &str, key: &str) {
        let Some(entry) = self.buckets.get_mut(bucket).and_then(|b| b.get_mut(key)) else {
            return;
        };
        if let Some((expires, stamp)) = &mut entry.lifetime {
            *stamp = self.ephemeral.restamp(*stamp, *expires);
        }
    }

    fn remove(&mut self, bucket: &str, key: &str) {
        let removed = self.buckets.get_mut(bucket).and_then(|b| b.remove(key));
        if let Some(Entry {
            value,
            lifetime: Some((expires, stamp)),
            ..
        }) = removed
        {
            let size = footprint(bucket, key, &value);
            self.ephemeral.forget(size, expires, stamp);
        }
    }

    /// Drops a few expired keys, and the least recently used while over the budget.
    fn sweep(&mut self, now: Instant) {
        for _ in 0..SWEEP_PER_WRITE {
            let Some((&(expires, stamp), _)) = self.ephemeral.by_expiry.first_key_value() else {
                break;
            };
            if expires > now {
                break;
            }
            self.drop_tracked(expires, stamp);
        }
        while self.ephemeral.bytes > self.ephemeral.limit {
            let Some((&stamp, &expires)) = self.ephemeral.by_use.first_key_value() else {
                break;
            };
            self.drop_tracked(expires, stamp);
        }
    }

    /// Removes the key tracked as (`expires`, `stamp`), and the tracking in any case.
    fn drop_tracked(&mut self, expires: Instant, stamp: u64) {
        if let Some((bucket, key)) = self.ephemeral.by_expiry.get(&(expires, stamp)).cloned() {
            self.remove(&bucket, &key);
        }
        self.ephemeral.by_expiry.remove(&(expires, stamp));
        self.ephemeral.by_use.remove(&stamp);
    }
}

impl Ephemeral {
    /// Starts tracking a key that holds `size` bytes; its use stamp.
    fn track(&mut self, bucket: &str, key: &str, size: usize, expires: Instant) -> u64 {
        self.last_use += 1;
        let stamp = self.last_use;
        if !apim_http::expiry::is_window_counter(key) {
            self.bytes += size;
            self.by_use.insert(stamp, expires);
        }
        self.by_expiry
            .insert((expires, stamp), (bucket.to_owned(), key.to_owned()));
        stamp
    }

    /// A fresh use stamp for the key stamped `stamp`, if it may be dropped for room.
    fn restamp(&mut self, stamp: u64, expires: Instant) -> u64 {
        if self.by_use.remove(&stamp).is_none() {
            return stamp;
        }
        let names = self.by_expiry.remove(&(expires, stamp));
        self.last_use += 1;
        self.by_use.insert(self.last_use, expires);
        if let Some(names) = names {
            self.by_expiry.insert((expires, self.last_use), names);
        }
        self.last_use
    }

    fn forget(&mut self, size: usize, expires: Instant, stamp: u64) {
        if self.by_use.remove(&stamp).is_some() {
            self.bytes = self.bytes.saturating_sub(size);
        }
        self.by_expiry.remove(&(expires, stamp));
    }
}

/// In-memory buckets of key-value pairs.
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::with_ephemeral_limit(DEFAULT_EPHEMERAL_BYTES)
    }
}

impl MemoryStore {
    /// A store whose keys with a lifetime hold at most `bytes` together.
    pub fn with_ephemeral_limit(bytes: usize) -> Self {
        let mut inner = Inner::default();
        inner.ephemeral.limit = bytes;
        Self {
            inner: Mutex::new(inner),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave an entry half-written.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The value of `key`, if any.
    pub fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        let mut inner = self.lock();
        let value = inner.entry(bucket, key, Instant::now())?.value.clone();
        inner.touch(bucket, key);
        Some(value)
    }

    /// Stores `value` under `key`.
    pub fn set(&self, bucket: &str, key: &str, value: Vec<u8>) {
        let mut inner = self.lock();
        // A set gives a key with a lifetime a fresh one.
        inner.remove(bucket, key);
        inner.write(bucket, key, value, Instant::now());
    }

    /// Removes `key`.
    pub fn delete(&self, bucket: &str, key: &str) {
        self.lock().remove(bucket, key);
    }

    /// Whether `key` exists.
    pub fn exists(&self, bucket: &str, key: &str) -> bool {
        self.lock().entry(bucket, key, Instant::now()).is_some()
    }

    /// Keys in ascending order after `cursor`, at most [`PAGE_SIZE`] of them.
    pub fn list_keys(&self, bucket: &str, cursor: Option<&str>) -> KeyPage {
        let inner = self.lock();
        let Some(keys) = inner.buckets.get(bucket) else {
            return KeyPage::default();
        };
        let now = Instant::now();
        let live = |entry: &Entry| entry.lifetime.is_none_or(|(expires, _)| expires > now);
        let mut range = keys.after(cursor).filter(|(_, entry)| live(entry));
        let page: Vec<String> = range
            .by_ref()
            .take(PAGE_SIZE)
            .map(|(k, _)| k.to_string())
            .collect();
        let cursor = match range.next() {
            Some(_) => page.last().cloned(),
            None => None,
        };
        KeyPage { keys: page, cursor }
    }

    /// Adds `delta` to the decimal counter at `key` (absent: 0).
    pub fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        let mut inner = self.lock();
        let now = Instant::now();
        let current = match inner.entry(bucket, key, now) {
            Some(entry) => parse_counter(&entry.value)?,
            None => {
                // An expired counter starts again, with a fresh lifetime.
                inner.remove(bucket, key);
                0
            }
        };
        let next = current
            .checked_add(delta)
            .ok_or_else(|| KvError::Other("counter overflow".into()))?;
        inner.write(bucket, key, next.to_string().into_bytes(), now);
        Ok(next)
    }

    /// Makes and counts the grants [`Grant::grantable`] allows; how many.
    pub fn grant(&self, bucket: &str, grant: &Grant<'_>) -> Result<u64, KvError> {
        let mut inner = self.lock();
        let now = Instant::now();
        let counter = |inner: &Inner, key| match inner.entry(bucket, key, now) {
            Some(entry) => parse_counter(&entry.value).map(|n| n.max(0) as u64),
            None => Ok(0),
        };
        let (previous, granted) = (
            counter(&inner, grant.previous)?,
            counter(&inner, grant.current)?,
        );
        let given = grant.grantable(previous, granted);
        if given > 0 {
            if inner.entry(bucket, grant.current, now).is_none() {
                // An expired counter starts again, with a fresh lifetime.
                inner.remove(bucket, grant.current);
            }
            let value = granted.saturating_add(given).to_string().into_bytes();
            inner.write(bucket, grant.current, value, now);
        }
        Ok(given)
    }

    /// Takes `count` off a live counter, not below zero.
    pub fn give_back(&self, bucket: &str, key: &str, count: u64) {
        let mut inner = self.lock();
        let now = Instant::now();
        let Some(Ok(held)) = inner
            .entry(bucket, key, now)
            .map(|e| parse_counter(&e.value))
        else {
            return;
        };
        let left = held
            .saturating_sub(i64::try_from(count).unwrap_or(i64::MAX))
            .max(0);
        inner.write(bucket, key, left.to_string().into_bytes(), now);
    }

    /// Reads `key` together with its version.
    pub fn snapshot(&self, bucket: &str, key: &str) -> CasSnapshot {
        let inner = self.lock();
        let entry = inner.entry(bucket, key, Instant::now());
        CasSnapshot {
            value: entry.map(|e| e.value.clone()),
            version: Some(entry.map_or(0, |e| e.version)),
        }
    }

    /// Writes `value` if `key` still has the snapshot's version.
    pub fn compare_and_swap(
        &self,
        bucket: &str,
        key: &str,
        snapshot: &CasSnapshot,
        value: Vec<u8>,
    ) -> bool {
        let mut inner = self.lock();
        let now = Instant::now();
        let version = inner.entry(bucket, key, now).map_or(0, |e| e.version);
        if Some(version) != snapshot.version {
            return false;
        }
        inner.write(bucket, key, value, now);
        true
    }
}

/// The methods above, behind the trait: this process's memory answers at once, so every
/// future is ready when first polled. [`super::KvStore`] calls the methods themselves, on
/// the path of every request, without awaiting.
impl Store for MemoryStore {
    async fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        Ok(MemoryStore::get(self, bucket, key))
    }

    async fn set(&self, bucket: &str, key: &str, value: Vec<u8>) -> Result<(), KvError> {
        MemoryStore::set(self, bucket, key, value);
        Ok(())
    }

    async fn delete(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        MemoryStore::delete(self, bucket, key);
        Ok(())
    }

    async fn exists(&self, bucket: &str, key: &str) -> Result<bool, KvError> {
        Ok(MemoryStore::exists(self, bucket, key))
    }

    async fn list_keys(&self, bucket: &str, cursor: Option<&str>) -> Result<KeyPage, KvError> {
        Ok(MemoryStore::list_keys(self, bucket, cursor))
    }

    async fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        MemoryStore::increment(self, bucket, key, delta)
    }

    async fn snapshot(&self, bucket: &str, key: &str) -> Result<CasSnapshot, KvError> {
        Ok(MemoryStore::snapshot(self, bucket, key))
    }

    async fn compare_and_swap(
        &self,
        bucket: &str,
        key: &str,
        snapshot: &CasSnapshot,
        value: Vec<u8>,
    ) -> Result<bool, KvError> {
        Ok(MemoryStore::compare_and_swap(
            self, bucket, key, snapshot, value,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn get_set_delete_exists() {
        let store = MemoryStore::default();
        assert_eq!(store.get("b", "k"), None);
        assert!(!store.exists("b", "k"));
        store.set("b", "k", b"one".to_vec());
        store.set("b", "k", b"two".to_vec());
        assert_eq!(store.get("b", "k"), Some(b"two".to_vec()));
        assert!(store.exists("b", "k"));
        assert_eq!(store.get("other", "k"), None, "buckets are separate");
        store.delete("b", "k");
        store.delete("b", "never-set");
        assert!(!store.exists("b", "k"));
    }

    #[test]
    fn keys_with_a_lifetime_expire() {
        let store = MemoryStore::default();
        let key = "apim:ttl:1:cache:x";
        store.set("b", key, b"v".to_vec());
        store.set("b", "apim:m:head", b"1 1".to_vec());
        assert_eq!(store.increment("b", "apim:ttl:1:thr:n", 1).unwrap(), 1);
        assert_eq!(store.get("b", key), Some(b"v".to_vec()));
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(store.get("b", key), None);
        assert!(!store.exists("b", key));
        assert_eq!(
            store.increment("b", "apim:ttl:1:thr:n", 1).unwrap(),
            1,
            "a new window"
        );
        assert_eq!(
            store.list_keys("b", None).keys,
            ["apim:m:head", "apim:ttl:1:thr:n"]
        );
        assert_eq!(store.get("b", "apim:m:head"), Some(b"1 1".to_vec()));
    }

    #[test]
    fn keys_with_a_lifetime_stay_within_their_budget() {
        let store = MemoryStore::with_ephemeral_limit(10_000);
        store.set("b", "apim:m:1:api:a", vec![0; 50_000]);
        for i in 0..1_000 {
            store.set("b", &format!("apim:ttl:300:cache:{i}"), vec![0; 100]);
            if i == 500 {
                // Used recently: kept while older ones go.
                assert!(store.get("b", "apim:ttl:300:cache:495").is_some());
            }
        }
        let inner = store.lock();
        assert!(inner.ephemeral.bytes <= 10_000, "{}", inner.ephemeral.bytes);
        assert_eq!(
            inner.ephemeral.by_use.len(),
            inner.ephemeral.by_expiry.len()
        );
        drop(inner);
        assert!(store.get("b", "apim:ttl:300:cache:999").is_some());
        assert!(store.get("b", "apim:ttl:300:cache:0").is_none());
        assert!(
            store.get("b", "apim:m:1:api:a").is_some(),
            "the manifest is never evicted"
        );
    }

    /// A client cannot reset its throttling counters by filling the cache: cached answers
    /// make room among themselves, and counters go only when they expire.
    #[test]
    fn counters_are_never_dropped_for_room() {
        let store = MemoryStore::with_ephemeral_limit(10_000);
        let counter = format!(
            "{}:1",
            apim_http::expiry::window_counters("thr:app", 60_000)
        );
        let grant = Grant {
            current: &counter,
            previous: "apim:ttl:130:window:thr:app:0",
            allowed: 5,
            window_ms: 60_000,
            into_ms: 0,
            want: 1,
        };
        for _ in 0..5 {
            assert_eq!(store.grant("b", &grant).unwrap(), 1);
        }
        for i in 0..1_000 {
            store.set("b", &format!("apim:ttl:300:cache:{i}"), vec![0; 100]);
        }
        assert_eq!(
            store.grant("b", &grant).unwrap(),
            0,
            "the limit still holds"
        );
        assert_eq!(store.get("b", &counter), Some(b"5".to_vec()));
        assert!(store.get("b", "apim:ttl:300:cache:999").is_some());
        assert!(store.lock().ephemeral.bytes <= 10_000);
        // Nor do counters take the cache's room: with as many as the budget would hold,
        // answers are still kept.
        for i in 0..1_000 {
            let key = format!(
                "{}:{i}",
                apim_http::expiry::window_counters("thr:x", 60_000)
            );
            store.increment("b", &key, 1).unwrap();
        }
        store.set("b", "apim:ttl:300:cache:new", vec![0; 100]);
        assert!(store.get("b", "apim:ttl:300:cache:new").is_some());
        assert!(store.get("b", "apim:ttl:300:cache:999").is_some());
    }

    #[test]
    fn allocations_are_counted_at_their_size_class() {
        assert_eq!(allocated(0), 0);
        assert_eq!(allocated(1), 16);
        assert_eq!(allocated(100), 112);
        assert_eq!(allocated(86_000), 96 << 10);
        assert_eq!(allocated(128 << 10), 128 << 10);
        assert_eq!(allocated((128 << 10) + 1), 160 << 10);
    }

    /// A cached answer's JSON comes in a buffer up to twice its length: the store keeps the
    /// bytes in an allocation of their own, and counts that allocation.
    #[test]
    fn values_are_kept_and_counted_at_their_allocation() {
        let store = MemoryStore::default();
        let key = "apim:ttl:300:cache:a";
        let mut value = Vec::with_capacity(172_000);
        value.resize(86_000, b'x');
        store.set("b", key, value);
        let inner = store.lock();
        let held = &inner.entry("b", key, Instant::now()).unwrap().value;
        assert_eq!(held.capacity(), 86_000);
        assert_eq!(inner.ephemeral.bytes, footprint("b", key, held));
        assert!(inner.ephemeral.bytes > (96 << 10) + 2 * key.len() + ENTRY_OVERHEAD);
    }

    /// Answers with long keys and short values stay within the budget too.
    #[test]
    fn keys_take_room() {
        let store = MemoryStore::with_ephemeral_limit(10_000);
        let long = "k".repeat(1_000);
        for i in 0..100 {
            store.set(
                "b",
                &format!("apim:ttl:300:cache:{i}:{long}"),
                b"v".to_vec(),
            );
        }
        let inner = store.lock();
        assert!(inner.ephemeral.bytes <= 10_000, "{}", inner.ephemeral.bytes);
        assert!(inner.ephemeral.by_use.len() <= 10_000 / 2_000);
    }

    /// What is counted follows a value written in place and goes with the key.
    #[test]
    fn the_count_follows_overwrites_and_removals() {
        let store = MemoryStore::default();
        let key = "apim:ttl:300:cache:a";
        store.set("b", key, vec![0; 100]);
        let snapshot = store.snapshot("b", key);
        assert!(store.compare_and_swap("b", key, &snapshot, vec![0; 5_000]));
        let inner = store.lock();
        let held = &inner.entry("b", key, Instant::now()).unwrap().value;
        assert_eq!(inner.ephemeral.bytes, footprint("b", key, held));
        drop(inner);
        store.delete("b", key);
        assert_eq!(store.lock().ephemeral.bytes, 0);
    }

    #[test]
    fn list_keys_pages_in_order() {
        let store = MemoryStore::default();
        assert_eq!(store.list_keys("b", None), KeyPage::default());
        for i in 0..(PAGE_SIZE + 5) {
            store.set("b", &format!("k{i:05}"), vec![]);
        }
        store.set("c", "elsewhere", vec![]);
        let first = store.list_keys("b", None);
        assert_eq!(first.keys.len(), PAGE_SIZE);
        assert_eq!(first.keys[0], "k00000");
        let second = store.list_keys("b", first.cursor.as_deref());
        assert_eq!(second.keys.len(), 5);
        assert_eq!(second.cursor, None);
        assert_eq!(second.keys[4], format!("k{:05}", PAGE_SIZE + 4));
    }

    #[test]
    fn increment_creates_adds_and_rejects_non_counters() {
        let store = MemoryStore::default();
        assert_eq!(store.increment("b", "n", 3).unwrap(), 3);
        assert_eq!(store.increment("b", "n", -5).unwrap(), -2);
        assert_eq!(store.get("b", "n"), Some(b"-2".to_vec()));
        store.set("b", "text", b"hello".to_vec());
        assert!(store.increment("b", "text", 1).is_err());
        store.set("b", "max", i64::MAX.to_string().into_bytes());
        assert!(store.increment("b", "max", 1).is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn increment_is_atomic_across_tasks() {
        let store = Arc::new(MemoryStore::default());
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move {
                    for _ in 0..500 {
                        store.increment("b", "hits", 1).unwrap();
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(store.get("b", "hits"), Some(b"8000".to_vec()));
    }

    #[test]
    fn cas_succeeds_once_and_detects_intervening_writes() {
        let store = MemoryStore::default();
        let absent = store.snapshot("b", "k");
        assert_eq!(absent.value, None);
        assert!(store.compare_and_swap("b", "k", &absent, b"v1".to_vec()));
        assert!(
            !store.compare_and_swap("b", "k", &absent, b"v2".to_vec()),
            "a stale snapshot must fail"
        );

        let snap = store.snapshot("b", "k");
        assert_eq!(snap.value.as_deref(), Some(&b"v1"[..]));
        // Same bytes written again still counts as a change.
        store.set("b", "k", b"v1".to_vec());
        assert!(!store.compare_and_swap("b", "k", &snap, b"v3".to_vec()));
        let fresh = store.snapshot("b", "k");
        assert!(store.compare_and_swap("b", "k", &fresh, b"v3".to_vec()));
        assert_eq!(store.get("b", "k"), Some(b"v3".to_vec()));

        let before_delete = store.snapshot("b", "k");
        store.delete("b", "k");
        assert!(!store.compare_and_swap("b", "k", &before_delete, b"x".to_vec()));
    }
}
