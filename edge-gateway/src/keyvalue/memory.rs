//! Process-local key-value backend.
//!
//! One mutex guards all buckets; every operation is a short critical section
//! with no I/O, which also makes `increment` and compare-and-swap atomic.
//! Every write stamps the entry with a fresh version so that CAS detects any
//! intervening write, even one that restored the same bytes.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use super::{CasSnapshot, KeyPage, KvError, parse_counter};

/// Most keys returned by one `list-keys` call.
pub const PAGE_SIZE: usize = 1000;

#[derive(Debug)]
struct Entry {
    value: Vec<u8>,
    version: u64,
}

#[derive(Debug, Default)]
struct Inner {
    buckets: HashMap<String, BTreeMap<String, Entry>>,
    last_version: u64,
}

impl Inner {
    fn write(&mut self, bucket: &str, key: &str, value: Vec<u8>) {
        self.last_version += 1;
        let entry = Entry {
            value,
            version: self.last_version,
        };
        self.buckets
            .entry(bucket.to_owned())
            .or_default()
            .insert(key.to_owned(), entry);
    }

    fn entry(&self, bucket: &str, key: &str) -> Option<&Entry> {
        self.buckets.get(bucket)?.get(key)
    }
}

/// In-memory buckets of key-value pairs.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

impl MemoryStore {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave an entry half-written.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The value of `key`, if any.
    pub fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        self.lock().entry(bucket, key).map(|e| e.value.clone())
    }

    /// Stores `value` under `key`.
    pub fn set(&self, bucket: &str, key: &str, value: Vec<u8>) {
        self.lock().write(bucket, key, value);
    }

    /// Removes `key`.
    pub fn delete(&self, bucket: &str, key: &str) {
        if let Some(keys) = self.lock().buckets.get_mut(bucket) {
            keys.remove(key);
        }
    }

    /// Whether `key` exists.
    pub fn exists(&self, bucket: &str, key: &str) -> bool {
        self.lock().entry(bucket, key).is_some()
    }

    /// Keys in ascending order after `cursor`, at most [`PAGE_SIZE`] of them.
    pub fn list_keys(&self, bucket: &str, cursor: Option<&str>) -> KeyPage {
        let inner = self.lock();
        let Some(keys) = inner.buckets.get(bucket) else {
            return KeyPage::default();
        };
        let start = cursor.map_or(Bound::Unbounded, Bound::Excluded);
        let mut range = keys.range::<str, _>((start, Bound::Unbounded));
        let page: Vec<String> = range
            .by_ref()
            .take(PAGE_SIZE)
            .map(|(k, _)| k.clone())
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
        let current = match inner.entry(bucket, key) {
            Some(entry) => parse_counter(&entry.value)?,
            None => 0,
        };
        let next = current
            .checked_add(delta)
            .ok_or_else(|| KvError::Other("counter overflow".into()))?;
        inner.write(bucket, key, next.to_string().into_bytes());
        Ok(next)
    }

    /// Reads `key` together with its version.
    pub fn snapshot(&self, bucket: &str, key: &str) -> CasSnapshot {
        let inner = self.lock();
        let entry = inner.entry(bucket, key);
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
        let version = inner.entry(bucket, key).map_or(0, |e| e.version);
        if Some(version) != snapshot.version {
            return false;
        }
        inner.write(bucket, key, value);
        true
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
