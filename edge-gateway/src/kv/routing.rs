//! Where each key lives: the manifest in this node's memory, keys with a lifetime in Redis
//! when it answers, or every key in Spin's SQLite table ([`KvStore`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use apim_http::contract::KV_BUCKET;
use apim_http::expiry;
use apim_manifest::stored::HEAD_KEY;

use super::memory::MemoryStore;
use super::redis_link::{COMMAND_BUDGET, RedisLink};
use super::redis_store::RedisStore;
use super::sqlite_store::SqliteStore;
use super::store::{CasSnapshot, Grant, KeyPage, KvError, Made, Store};

/// Longest accepted bucket identifier.
const MAX_BUCKET_NAME: usize = 64;

/// The key-value backend every instance shares: the [`Store`] behind the components'
/// buckets, and where the host counts and caches.
///
/// The manifest (every key without a lifetime) is always this node's own, in memory:
/// each node pulls it from the control plane itself, so no other store's outage can take
/// it away. Keys with a lifetime ([`apim_http::expiry`]: throttling windows, cached
/// answers) go to Redis when one is configured, so that every node counts together, and
/// stay on this node while Redis cannot be reached ([`RedisLink`]).
#[derive(Clone)]
pub struct KvStore {
    local: Arc<MemoryStore>,
    redis: Option<Arc<RedisLink>>,
    /// Spin's default store: when set, every key the component reads or writes is there.
    sqlite: Option<Arc<SqliteStore>>,
    /// Writes of the manifest's head through this store so far ([`KvStore::manifest_epoch`]).
    head_writes: Arc<AtomicU64>,
}

impl KvStore {
    /// A process-local store.
    pub fn memory() -> Self {
        Self {
            local: Arc::default(),
            redis: None,
            sqlite: None,
            head_writes: Arc::default(),
        }
    }

    /// Spin's default store, a SQLite file (`:memory:`: in memory). The host's own counters
    /// (host forwarding) stay in this node's memory.
    pub fn sqlite(path: &std::path::Path) -> Result<Self, KvError> {
        Ok(Self {
            sqlite: Some(Arc::new(SqliteStore::open(path)?)),
            ..Self::memory()
        })
    }

    /// Opens the backend named by `url` (empty: in-memory). A Redis URL is given a first
    /// connection attempt, then connected in the background: the store works either way.
    pub async fn connect(url: &str, namespace: &str) -> Self {
        let url = url.trim();
        let redis = if url.is_empty() {
            None
        } else {
            Some(RedisLink::connect(url.into(), namespace.into()).await)
        };
        Self {
            redis,
            ..Self::memory()
        }
    }

    /// Short description for logs (never includes credentials).
    pub fn describe(&self) -> &'static str {
        match (&self.redis, &self.sqlite) {
            (_, Some(_)) => "SQLite, one table as Spin's default store",
            (None, None) => "in-memory",
            (Some(_), None) => "in-memory manifest, Redis for counters and cached answers",
        }
    }

    /// Rests the Redis link as a failed command does (`resting`), or ends its rest: for
    /// tests of what happens while Redis fails and once it is back.
    #[cfg(test)]
    pub(crate) fn rest_redis(&self, resting: bool) {
        match &self.redis {
            Some(link) if resting => link.failed(&KvError::Other("failed by a test".into())),
            Some(link) => link.rest_over(),
            None => {}
        }
    }

    /// Changes whenever the manifest's head may have: it counts the head's writes, which
    /// all go through this store, since the manifest is always this node's own (in
    /// memory). A SQLite file, which another process may write, is never trusted: each
    /// call gives a new count. The component takes it with each decision, so that a reused
    /// instance reads the head again only when it moved.
    pub fn manifest_epoch(&self) -> u64 {
        if self.sqlite.is_some() {
            return self.head_writes.fetch_add(1, Ordering::AcqRel) + 1;
        }
        self.head_writes.load(Ordering::Acquire)
    }

    /// Counts a write of `key` if it is the manifest's head (a failed one too: it may
    /// have landed).
    fn wrote(&self, bucket: &str, key: &str) {
        if key == HEAD_KEY && bucket == KV_BUCKET {
            self.head_writes.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Whether Redis is connected (false without one).
    pub fn redis_connected(&self) -> bool {
        self.redis.as_ref().is_some_and(|link| link.connected())
    }

    /// Runs `shared` on Redis for a key with a lifetime when Redis can be used, else (and
    /// when it fails) `local` on this node's store.
    async fn on_store<T>(
        &self,
        key: &str,
        shared: impl AsyncFnOnce(&RedisStore) -> Result<T, KvError>,
        local: impl FnOnce(&MemoryStore) -> Result<T, KvError>,
    ) -> Result<T, KvError> {
        match self.on_redis(key, shared).await {
            Some(value) => Ok(value),
            None => local(&self.local),
        }
    }

    /// Runs `shared` on Redis for a key with a lifetime; `None` when Redis is absent,
    /// resting, or failed (which rests it).
    async fn on_redis<T>(
        &self,
        key: &str,
        shared: impl AsyncFnOnce(&RedisStore) -> Result<T, KvError>,
    ) -> Option<T> {
        let link = self
            .redis
            .as_ref()
            .filter(|_| expiry::ttl_secs(key).is_some())?;
        let redis = link.usable()?;
        match tokio::time::timeout(COMMAND_BUDGET, shared(&redis)).await {
            Ok(Ok(value)) => {
                link.worked();
                Some(value)
            }
            Ok(Err(err)) => {
                link.failed(&err);
                None
            }
            Err(_) => {
                link.failed(&KvError::Other("no answer in time".into()));
                None
            }
        }
    }

    /// The bucket named `identifier`, if this store has it: it has one of every name of 1
    /// to 64 characters from `[A-Za-z0-9_.-]`.
    pub fn open(&self, identifier: &str) -> Result<Arc<str>, KvError> {
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if identifier.is_empty()
            || identifier.len() > MAX_BUCKET_NAME
            || !identifier.chars().all(valid)
        {
            return Err(KvError::NoSuchStore);
        }
        Ok(identifier.into())
    }

    /// Whether counters are shared with other nodes (a Redis store is configured).
    pub fn shares_counters(&self) -> bool {
        self.redis.is_some()
    }

    /// Makes grants of a sliding-window counter ([`Grant::grantable`]) and counts them;
    /// how many, and where. In Redis when it can be used, else on this node (fail open:
    /// each node then admits up to the limit on its own).
    pub async fn grant(&self, bucket: &str, grant: &Grant<'_>) -> Result<(u64, Made), KvError> {
        let shared = async |r: &RedisStore| r.grant(bucket, grant).await;
        if let Some(given) = self.on_redis(grant.current, shared).await {
            return Ok((given, Made::Shared));
        }
        Ok((self.local.grant(bucket, grant)?, Made::Local))
    }

    /// Gives back `count` unused grants of a counter to the store that `made` them (never
    /// taking it below zero, nor bringing back one that has expired). Grants Redis made
    /// while it cannot be used now stay counted there: the window refuses a few calls too
    /// many rather than letting this node's count take room other nodes used.
    pub async fn give_back(&self, made: Made, bucket: &str, key: &str, count: u64) {
        match made {
            Made::Shared => {
                let shared = async |r: &RedisStore| r.give_back(bucket, key, count).await;
                let _ = self.on_redis(key, shared).await;
            }
            Made::Local => self.local.give_back(bucket, key, count),
        }
    }

    async fn set_anywhere(&self, bucket: &str, key: &str, value: Vec<u8>) -> Result<(), KvError> {
        if let Some(db) = &self.sqlite {
            return db.set(bucket, key, &value);
        }
        if self.redis.is_none() {
            // No copy of the value needed for a second try.
            self.local.set(bucket, key, value);
            return Ok(());
        }
        let retry = value.clone();
        self.on_store(
            key,
            async |r| r.set(bucket, key, value).await,
            |m| {
                m.set(bucket, key, retry);
                Ok(())
            },
        )
        .await
    }

    async fn delete_anywhere(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        if let Some(db) = &self.sqlite {
            return db.delete(bucket, key);
        }
        self.on_store(
            key,
            async |r| r.delete(bucket, key).await,
            |m| {
                m.delete(bucket, key);
                Ok(())
            },
        )
        .await
    }

    async fn swap_anywhere(
        &self,
        bucket: &str,
        key: &str,
        snapshot: &CasSnapshot,
        value: Vec<u8>,
    ) -> Result<bool, KvError> {
        if let Some(db) = &self.sqlite {
            return db.compare_and_swap(bucket, key, snapshot.value.as_deref(), &value);
        }
        if snapshot.version.is_some() {
            // Read on this node: a memory snapshot (its version) compares only here.
            return Ok(self.local.compare_and_swap(bucket, key, snapshot, value));
        }
        self.on_store(
            key,
            async |r| r.compare_and_swap(bucket, key, snapshot, value).await,
            |_| Ok(false),
        )
        .await
    }
}

impl Store for KvStore {
    async fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        if let Some(db) = &self.sqlite {
            return db.get(bucket, key);
        }
        self.on_store(
            key,
            async |r| r.get(bucket, key).await,
            |m| Ok(m.get(bucket, key)),
        )
        .await
    }

    async fn set(&self, bucket: &str, key: &str, value: Vec<u8>) -> Result<(), KvError> {
        let set = self.set_anywhere(bucket, key, value).await;
        self.wrote(bucket, key);
        set
    }

    async fn delete(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        let deleted = self.delete_anywhere(bucket, key).await;
        self.wrote(bucket, key);
        deleted
    }

    async fn exists(&self, bucket: &str, key: &str) -> Result<bool, KvError> {
        if let Some(db) = &self.sqlite {
            return db.exists(bucket, key);
        }
        self.on_store(
            key,
            async |r| r.exists(bucket, key).await,
            |m| Ok(m.exists(bucket, key)),
        )
        .await
    }

    /// One page of the bucket's keys on this node, starting after `cursor` (the
    /// manifest's, with whatever keys with a lifetime are kept here).
    async fn list_keys(&self, bucket: &str, cursor: Option<&str>) -> Result<KeyPage, KvError> {
        match &self.sqlite {
            Some(db) => db.list_keys(bucket, cursor),
            None => Ok(self.local.list_keys(bucket, cursor)),
        }
    }

    async fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        if let Some(db) = &self.sqlite {
            return db.increment(bucket, key, delta);
        }
        self.on_store(
            key,
            async |r| r.increment(bucket, key, delta).await,
            |m| m.increment(bucket, key, delta),
        )
        .await
    }

    async fn snapshot(&self, bucket: &str, key: &str) -> Result<CasSnapshot, KvError> {
        if let Some(db) = &self.sqlite {
            return db.snapshot(bucket, key).await;
        }
        self.on_store(
            key,
            async |r| r.snapshot(bucket, key).await,
            |m| Ok(m.snapshot(bucket, key)),
        )
        .await
    }

    /// Writes `value` if `key` is unchanged since `snapshot`; `Ok(false)` if it changed
    /// (or the snapshot was taken where the key no longer is).
    async fn compare_and_swap(
        &self,
        bucket: &str,
        key: &str,
        snapshot: &CasSnapshot,
        value: Vec<u8>,
    ) -> Result<bool, KvError> {
        let swapped = self.swap_anywhere(bucket, key, snapshot, value).await;
        self.wrote(bucket, key);
        swapped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The epoch moves with every write of the manifest's head, and with nothing else; a
    /// SQLite store's moves on every call.
    #[tokio::test]
    async fn the_manifest_epoch_moves_with_the_heads_writes_only() {
        let store = KvStore::memory();
        let start = store.manifest_epoch();
        store
            .set(KV_BUCKET, "apim:m:1:route:/a", b"x".to_vec())
            .await
            .unwrap();
        store.set("other", HEAD_KEY, b"x".to_vec()).await.unwrap();
        store
            .increment(KV_BUCKET, "apim:ttl:60:c", 1)
            .await
            .unwrap();
        assert_eq!(store.manifest_epoch(), start);
        store
            .set(KV_BUCKET, HEAD_KEY, b"1 5 0".to_vec())
            .await
            .unwrap();
        assert_eq!(store.manifest_epoch(), start + 1);
        let snapshot = store.snapshot(KV_BUCKET, HEAD_KEY).await.unwrap();
        let swapped = store.compare_and_swap(KV_BUCKET, HEAD_KEY, &snapshot, b"1 6 0".to_vec());
        assert!(swapped.await.unwrap());
        assert_eq!(store.manifest_epoch(), start + 2);
        store.delete(KV_BUCKET, HEAD_KEY).await.unwrap();
        assert_eq!(store.manifest_epoch(), start + 3);

        let sqlite = KvStore::sqlite(std::path::Path::new(":memory:")).unwrap();
        assert_ne!(sqlite.manifest_epoch(), sqlite.manifest_epoch());
    }

    #[test]
    fn bucket_identifiers_are_validated() {
        let store = KvStore::memory();
        assert!(store.open("default").is_ok());
        assert!(store.open("tenant-1.cache_v2").is_ok());
        for bad in ["", "a:b", "with space", "x*", &"b".repeat(65)] {
            assert_eq!(
                store.open(bad).unwrap_err(),
                KvError::NoSuchStore,
                "{bad:?}"
            );
        }
    }

    /// With Redis unreachable (nothing listens on the port) every key is served on this
    /// node at once; with Redis up, only keys with a lifetime go there, the manifest never.
    #[tokio::test]
    async fn keys_with_a_lifetime_go_to_redis_when_it_answers_and_the_manifest_never() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let down = KvStore::connect(&format!("redis://127.0.0.1:{port}/0"), "apim-down").await;
        let counter = "apim:ttl:60:thr:x";
        assert_eq!(down.increment("default", counter, 1).await.unwrap(), 1);
        assert_eq!(down.increment("default", counter, 1).await.unwrap(), 2);
        down.set("default", "apim:m:head", b"1 7".to_vec())
            .await
            .unwrap();
        assert_eq!(
            down.get("default", "apim:m:head").await.unwrap(),
            Some(b"1 7".to_vec())
        );
        assert!(!down.redis_connected());

        let test = "keys_with_a_lifetime_go_to_redis_when_it_answers_and_the_manifest_never";
        if !harness::services::available(harness::services::Service::Redis, test) {
            return;
        }
        let namespace = format!("apim-split-{}-{port}", std::process::id());
        let url = "redis://127.0.0.1:6379/0";
        let up = KvStore::connect(url, &namespace).await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !up.redis_connected() {
            assert!(std::time::Instant::now() < deadline, "never connected");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        up.increment("default", counter, 3).await.unwrap();
        up.set("default", "apim:m:head", b"1 7".to_vec())
            .await
            .unwrap();
        let direct = RedisStore::connect(url, &namespace).await.unwrap();
        assert_eq!(
            direct.get("default", counter).await.unwrap(),
            Some(b"3".to_vec())
        );
        assert_eq!(direct.get("default", "apim:m:head").await.unwrap(), None);
        direct.delete("default", counter).await.unwrap();
    }

    /// With a SQLite store every key is there, the manifest's too, and compare-and-swap
    /// compares the values read.
    #[tokio::test]
    async fn a_sqlite_store_holds_every_key() {
        let kv = KvStore::sqlite(std::path::Path::new(":memory:")).unwrap();
        assert_eq!(kv.describe(), "SQLite, one table as Spin's default store");
        kv.set("default", "apim:m:head", b"1 7".to_vec())
            .await
            .unwrap();
        assert_eq!(kv.increment("default", "apim:ttl:9:n", 2).await.unwrap(), 2);
        let snapshot = kv.snapshot("default", "apim:m:head").await.unwrap();
        assert_eq!(snapshot.value.as_deref(), Some(&b"1 7"[..]));
        assert!(
            kv.compare_and_swap("default", "apim:m:head", &snapshot, b"1 8".to_vec())
                .await
                .unwrap()
        );
        assert!(
            !kv.compare_and_swap("default", "apim:m:head", &snapshot, b"1 9".to_vec())
                .await
                .unwrap()
        );
        let page = kv.list_keys("default", None).await.unwrap();
        assert_eq!(page.keys, ["apim:m:head", "apim:ttl:9:n"]);
        kv.delete("default", "apim:m:head").await.unwrap();
        assert!(!kv.exists("default", "apim:m:head").await.unwrap());
        assert!(!kv.shares_counters());
    }
}
