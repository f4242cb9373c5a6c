//! The one trait every key-value store answers ([`Store`]), and what a store and its
//! callers exchange: failures, pages of keys, sliding-window grants and what a
//! compare-and-swap read.

use std::future::Future;

/// What the components' `wasi:keyvalue` asks of a store. Every backend answers it (memory,
/// Redis, SQLite), and so does [`super::KvStore`], which places each key in one of them:
/// the components' buckets reach a store only through it.
pub trait Store: Send + Sync {
    /// The value of `key`, if any.
    fn get(
        &self,
        bucket: &str,
        key: &str,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, KvError>> + Send;

    /// Stores `value` under `key`.
    fn set(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
    ) -> impl Future<Output = Result<(), KvError>> + Send;

    /// Removes `key`; absent keys are fine.
    fn delete(&self, bucket: &str, key: &str) -> impl Future<Output = Result<(), KvError>> + Send;

    /// Whether `key` exists.
    fn exists(&self, bucket: &str, key: &str)
    -> impl Future<Output = Result<bool, KvError>> + Send;

    /// One page of the bucket's keys, starting after `cursor`.
    fn list_keys(
        &self,
        bucket: &str,
        cursor: Option<&str>,
    ) -> impl Future<Output = Result<KeyPage, KvError>> + Send;

    /// Atomically adds `delta` to the counter at `key` (absent: 0) and returns the new value.
    fn increment(
        &self,
        bucket: &str,
        key: &str,
        delta: i64,
    ) -> impl Future<Output = Result<i64, KvError>> + Send;

    /// Reads `key` for a later [`Store::compare_and_swap`].
    fn snapshot(
        &self,
        bucket: &str,
        key: &str,
    ) -> impl Future<Output = Result<CasSnapshot, KvError>> + Send;

    /// Writes `value` if `key` is unchanged since `snapshot`; `Ok(false)` if it changed.
    fn compare_and_swap(
        &self,
        bucket: &str,
        key: &str,
        snapshot: &CasSnapshot,
        value: Vec<u8>,
    ) -> impl Future<Output = Result<bool, KvError>> + Send;
}

/// A backend failure, mapped onto `wasi:keyvalue/store.error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvError {
    /// The bucket identifier is not one this host provides.
    NoSuchStore,
    /// Any other failure (I/O, type mismatch, overflow).
    Other(String),
}

/// One page of `list-keys`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPage {
    /// Keys of this page.
    pub keys: Vec<String>,
    /// Where to continue, or `None` after the last page.
    pub cursor: Option<String>,
}

/// A request for grants of a sliding-window counter: permissions to admit a request,
/// each counted in the window's counter when granted (see [`Grant::grantable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant<'a> {
    /// This window's counter (a key with a lifetime): the grants made in it.
    pub current: &'a str,
    /// The previous window's counter, which weighs in.
    pub previous: &'a str,
    /// Requests allowed within any window's length.
    pub allowed: u64,
    /// The window's length, milliseconds (at least 1).
    pub window_ms: u64,
    /// Milliseconds into the current window (at most `window_ms`).
    pub into_ms: u64,
    /// Grants asked for (at least 1).
    pub want: u64,
}

/// A grant of more than one goes to one node only while that leaves most of the room to
/// the others: at most this fraction (1/n) of what the window has left.
pub const GRANT_SHARE: u64 = 8;

impl Grant<'_> {
    /// How many grants to make now, when `previous` and `granted` hold what the two
    /// counters hold. The room is what the limit leaves once the previous window's share
    /// (its count times the part of the last window's length it still covers, rounded
    /// down: see [`apim_http::expiry::previous_share`]) and this window's grants are
    /// taken off. A grant of one is made while there is
    /// room; more, up to `want`, only up to a [`GRANT_SHARE`] of the room, so that grants
    /// a node holds unused leave the others room. The same rule is the Redis store's
    /// script.
    pub fn grantable(&self, previous: u64, granted: u64) -> u64 {
        let covered = apim_http::expiry::previous_share(previous, self.into_ms, self.window_ms);
        let room =
            u128::from(self.allowed).saturating_sub(u128::from(covered) + u128::from(granted));
        if room == 0 {
            return 0;
        }
        let share = (room / u128::from(GRANT_SHARE)).max(1);
        share.min(u128::from(self.want.max(1))) as u64
    }
}

/// Which store made a counter's grants, to which they go back: a grant made on this node
/// while Redis failed must not be taken off Redis's count once it is back, nor one made
/// by Redis off this node's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Made {
    /// Redis, shared with the other nodes.
    #[default]
    Shared,
    /// This node's memory.
    Local,
}

/// What a CAS handle read, so that `swap` can tell whether the key changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasSnapshot {
    /// The value when read (`None`: key absent).
    pub value: Option<Vec<u8>>,
    /// Backend write version (memory backend); `None` where values are compared.
    pub version: Option<u64>,
}

impl CasSnapshot {
    /// What a store that compares bytes read: the key's `value` (`None`: absent).
    pub fn of_bytes(value: Option<Vec<u8>>) -> Self {
        Self {
            value,
            version: None,
        }
    }
}

/// Parses a stored counter (ASCII decimal, as written by `increment`).
pub fn parse_counter(raw: &[u8]) -> Result<i64, KvError> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| KvError::Other("value is not an integer counter".into()))
}

/// Every key of `bucket`, page after page, sorted.
#[cfg(test)]
pub async fn every_key(store: &impl Store, bucket: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list_keys(bucket, cursor.as_deref()).await.unwrap();
        keys.extend(page.keys);
        cursor = page.cursor;
        if cursor.is_none() {
            break;
        }
    }
    keys.sort();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::KvStore;
    use crate::kv::memory::MemoryStore;
    use crate::kv::redis_store::RedisStore;
    use crate::kv::sqlite_store::SqliteStore;

    /// What every store does alike, whatever it keeps values and counters in.
    async fn keeps_what_it_is_given(store: &impl Store, bucket: &str) {
        let absent = store.get(bucket, "k").await.unwrap();
        assert_eq!(absent, None);
        store.set(bucket, "k", b"v1".to_vec()).await.unwrap();
        assert_eq!(store.get(bucket, "k").await.unwrap(), Some(b"v1".to_vec()));
        assert!(store.exists(bucket, "k").await.unwrap());
        assert_eq!(store.increment(bucket, "n", 2).await.unwrap(), 2);
        assert_eq!(store.increment(bucket, "n", 3).await.unwrap(), 5);

        let read = store.snapshot(bucket, "k").await.unwrap();
        assert_eq!(read.value.as_deref(), Some(&b"v1"[..]));
        let swapped = store.compare_and_swap(bucket, "k", &read, b"v2".to_vec());
        assert!(swapped.await.unwrap());
        let stale = store.compare_and_swap(bucket, "k", &read, b"v3".to_vec());
        assert!(!stale.await.unwrap(), "a stale snapshot must fail");
        assert_eq!(store.get(bucket, "k").await.unwrap(), Some(b"v2".to_vec()));

        assert_eq!(every_key(store, bucket).await, ["k", "n"]);
        for key in ["k", "n"] {
            store.delete(bucket, key).await.unwrap();
        }
        assert!(!store.exists(bucket, "k").await.unwrap());
    }

    #[tokio::test]
    async fn every_store_keeps_what_it_is_given() {
        keeps_what_it_is_given(&MemoryStore::default(), "b").await;
        let sqlite = SqliteStore::open(std::path::Path::new(":memory:")).unwrap();
        keeps_what_it_is_given(&sqlite, "b").await;
        keeps_what_it_is_given(&KvStore::memory(), "b").await;
        let test = "every_store_keeps_what_it_is_given";
        if !harness::services::available(harness::services::Service::Redis, test) {
            return;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let namespace = format!("edge-gateway-store-{}-{nanos}", std::process::id());
        let redis = RedisStore::connect("redis://127.0.0.1:6379/0", &namespace)
            .await
            .unwrap();
        keeps_what_it_is_given(&redis, "b").await;
    }

    #[test]
    fn counters_parse_as_decimal_text() {
        assert_eq!(parse_counter(b"42").unwrap(), 42);
        assert_eq!(parse_counter(b"-7").unwrap(), -7);
        assert!(parse_counter(b"4x").is_err());
        assert!(parse_counter(&[0xff]).is_err());
    }
}
