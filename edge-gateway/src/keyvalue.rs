//! `wasi:keyvalue/store` and `wasi:keyvalue/atomics` (`0.2.0-draft2`) for the component.
//!
//! The host functions work on a [`KvStore`], which is either process-local
//! ([`memory::MemoryStore`]) or Redis ([`redis_store::RedisStore`], shared by every
//! gateway node that uses the same server and namespace).
//!
//! Conventions common to both backends:
//! - bucket identifiers are 1–64 characters from `[A-Za-z0-9_.-]`; anything
//!   else is `no-such-store`;
//! - counters written by `increment` are stored as ASCII decimal strings (as
//!   Redis `INCRBY` does), so `get` on a counter returns e.g. `b"42"`, and
//!   `increment` on a value that is not such a string is an `other` error;
//! - a `cas` handle remembers what it read; `swap` succeeds only if the key
//!   still holds that (memory: same write version; Redis: same bytes, checked
//!   atomically by a Lua script).

pub mod memory;
pub mod redis_store;

use std::sync::Arc;

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};

use crate::bindings::wasi::keyvalue::{atomics, store};

/// Longest accepted bucket identifier.
const MAX_BUCKET_NAME: usize = 64;

/// A backend failure, mapped onto `wasi:keyvalue/store.error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvError {
    /// The bucket identifier is not one this host provides.
    NoSuchStore,
    /// Any other failure (I/O, type mismatch, overflow).
    Other(String),
}

impl From<KvError> for store::Error {
    fn from(err: KvError) -> Self {
        match err {
            KvError::NoSuchStore => store::Error::NoSuchStore,
            KvError::Other(msg) => store::Error::Other(msg),
        }
    }
}

/// One page of `list-keys`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPage {
    /// Keys of this page.
    pub keys: Vec<String>,
    /// Where to continue, or `None` after the last page.
    pub cursor: Option<String>,
}

/// What a CAS handle read, so that `swap` can tell whether the key changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasSnapshot {
    /// The value when read (`None`: key absent).
    pub value: Option<Vec<u8>>,
    /// Backend write version (memory backend); `None` where values are compared.
    pub version: Option<u64>,
}

/// The host side of a `bucket` resource.
#[derive(Debug, Clone)]
pub struct BucketHandle {
    name: Arc<str>,
}

/// The host side of a `cas` resource.
#[derive(Debug, Clone)]
pub struct CasHandle {
    bucket: Arc<str>,
    key: String,
    snapshot: CasSnapshot,
}

/// A key-value backend shared by all instances.
#[derive(Clone)]
pub enum KvStore {
    /// Process-local; lost at exit, not shared between nodes.
    Memory(Arc<memory::MemoryStore>),
    /// Redis, shared between nodes.
    Redis(redis_store::RedisStore),
}

impl KvStore {
    /// Opens the backend named by `url` (empty: in-memory).
    pub async fn connect(url: &str, namespace: &str) -> anyhow::Result<Self> {
        let url = url.trim();
        if url.is_empty() {
            return Ok(Self::Memory(Arc::default()));
        }
        Ok(Self::Redis(
            redis_store::RedisStore::connect(url, namespace).await?,
        ))
    }

    /// Short description for logs (never includes credentials).
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Memory(_) => "in-memory",
            Self::Redis(_) => "redis",
        }
    }

    /// Resolves a bucket identifier.
    pub fn open(&self, identifier: &str) -> Result<BucketHandle, KvError> {
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if identifier.is_empty()
            || identifier.len() > MAX_BUCKET_NAME
            || !identifier.chars().all(valid)
        {
            return Err(KvError::NoSuchStore);
        }
        Ok(BucketHandle {
            name: identifier.into(),
        })
    }

    /// The value of `key`, if any.
    pub async fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        match self {
            Self::Memory(m) => Ok(m.get(bucket, key)),
            Self::Redis(r) => r.get(bucket, key).await,
        }
    }

    /// Stores `value` under `key`.
    pub async fn set(&self, bucket: &str, key: &str, value: Vec<u8>) -> Result<(), KvError> {
        match self {
            Self::Memory(m) => {
                m.set(bucket, key, value);
                Ok(())
            }
            Self::Redis(r) => r.set(bucket, key, value).await,
        }
    }

    /// Removes `key`; absent keys are fine.
    pub async fn delete(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        match self {
            Self::Memory(m) => {
                m.delete(bucket, key);
                Ok(())
            }
            Self::Redis(r) => r.delete(bucket, key).await,
        }
    }

    /// Whether `key` exists.
    pub async fn exists(&self, bucket: &str, key: &str) -> Result<bool, KvError> {
        match self {
            Self::Memory(m) => Ok(m.exists(bucket, key)),
            Self::Redis(r) => r.exists(bucket, key).await,
        }
    }

    /// One page of the bucket's keys, starting after `cursor`.
    pub async fn list_keys(&self, bucket: &str, cursor: Option<&str>) -> Result<KeyPage, KvError> {
        match self {
            Self::Memory(m) => Ok(m.list_keys(bucket, cursor)),
            Self::Redis(r) => r.list_keys(bucket, cursor).await,
        }
    }

    /// Atomically adds `delta` to the counter at `key` and returns the new value.
    pub async fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        match self {
            Self::Memory(m) => m.increment(bucket, key, delta),
            Self::Redis(r) => r.increment(bucket, key, delta).await,
        }
    }

    /// Reads `key` for a later [`KvStore::compare_and_swap`].
    pub async fn snapshot(&self, bucket: &str, key: &str) -> Result<CasSnapshot, KvError> {
        match self {
            Self::Memory(m) => Ok(m.snapshot(bucket, key)),
            Self::Redis(r) => Ok(CasSnapshot {
                value: r.get(bucket, key).await?,
                version: None,
            }),
        }
    }

    /// Writes `value` if `key` is unchanged since `snapshot`; `Ok(false)` if it changed.
    pub async fn compare_and_swap(
        &self,
        bucket: &str,
        key: &str,
        snapshot: &CasSnapshot,
        value: Vec<u8>,
    ) -> Result<bool, KvError> {
        match self {
            Self::Memory(m) => Ok(m.compare_and_swap(bucket, key, snapshot, value)),
            Self::Redis(r) => {
                r.compare_and_swap(bucket, key, snapshot.value.as_deref(), value)
                    .await
            }
        }
    }
}

/// Parses a stored counter (ASCII decimal, as written by `increment`).
fn parse_counter(raw: &[u8]) -> Result<i64, KvError> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| KvError::Other("value is not an integer counter".into()))
}

/// What the `wasi:keyvalue` host functions see of a store's data.
pub struct KvView<'a> {
    /// The store's resource table (shared with WASI).
    pub table: &'a mut ResourceTable,
    /// The backend.
    pub store: &'a KvStore,
}

/// [`HasData`] marker selecting [`KvView`] for the linker.
pub struct KvData;

impl HasData for KvData {
    type Data<'a> = KvView<'a>;
}

/// Adds `wasi:keyvalue/store` and `wasi:keyvalue/atomics` to `linker`.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> KvView<'_>,
) -> wasmtime::Result<()> {
    store::add_to_linker::<T, KvData>(linker, view)?;
    atomics::add_to_linker::<T, KvData>(linker, view)
}

type KvResult<T> = wasmtime::Result<Result<T, store::Error>>;

impl KvView<'_> {
    fn bucket(&self, bucket: &Resource<BucketHandle>) -> wasmtime::Result<Arc<str>> {
        Ok(self.table.get(bucket)?.name.clone())
    }
}

/// Logs a backend failure and turns it into the WIT result.
fn report<T>(op: &str, result: Result<T, KvError>) -> Result<T, store::Error> {
    result.map_err(|err| {
        if err != KvError::NoSuchStore {
            tracing::warn!(op, ?err, "key-value operation failed");
        }
        err.into()
    })
}

impl store::Host for KvView<'_> {
    async fn open(&mut self, identifier: String) -> KvResult<Resource<BucketHandle>> {
        match self.store.open(&identifier) {
            Ok(handle) => Ok(Ok(self.table.push(handle)?)),
            Err(err) => Ok(Err(err.into())),
        }
    }
}

impl store::HostBucket for KvView<'_> {
    async fn get(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
    ) -> KvResult<Option<Vec<u8>>> {
        let bucket = self.bucket(&bucket)?;
        Ok(report("get", self.store.get(&bucket, &key).await))
    }

    async fn set(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
        value: Vec<u8>,
    ) -> KvResult<()> {
        let bucket = self.bucket(&bucket)?;
        Ok(report("set", self.store.set(&bucket, &key, value).await))
    }

    async fn delete(&mut self, bucket: Resource<BucketHandle>, key: String) -> KvResult<()> {
        let bucket = self.bucket(&bucket)?;
        Ok(report("delete", self.store.delete(&bucket, &key).await))
    }

    async fn exists(&mut self, bucket: Resource<BucketHandle>, key: String) -> KvResult<bool> {
        let bucket = self.bucket(&bucket)?;
        Ok(report("exists", self.store.exists(&bucket, &key).await))
    }

    async fn list_keys(
        &mut self,
        bucket: Resource<BucketHandle>,
        cursor: Option<String>,
    ) -> KvResult<store::KeyResponse> {
        let bucket = self.bucket(&bucket)?;
        let page = self.store.list_keys(&bucket, cursor.as_deref()).await;
        Ok(report("list-keys", page).map(|page| store::KeyResponse {
            keys: page.keys,
            cursor: page.cursor,
        }))
    }

    async fn drop(&mut self, bucket: Resource<BucketHandle>) -> wasmtime::Result<()> {
        self.table.delete(bucket)?;
        Ok(())
    }
}

impl atomics::HostCas for KvView<'_> {
    async fn new(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
    ) -> KvResult<Resource<CasHandle>> {
        let bucket = self.bucket(&bucket)?;
        let snapshot = match report("cas", self.store.snapshot(&bucket, &key).await) {
            Ok(snapshot) => snapshot,
            Err(err) => return Ok(Err(err)),
        };
        let handle = CasHandle {
            bucket,
            key,
            snapshot,
        };
        Ok(Ok(self.table.push(handle)?))
    }

    async fn current(&mut self, cas: Resource<CasHandle>) -> KvResult<Option<Vec<u8>>> {
        Ok(Ok(self.table.get(&cas)?.snapshot.value.clone()))
    }

    async fn drop(&mut self, cas: Resource<CasHandle>) -> wasmtime::Result<()> {
        self.table.delete(cas)?;
        Ok(())
    }
}

impl atomics::Host for KvView<'_> {
    async fn increment(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
        delta: i64,
    ) -> KvResult<i64> {
        let bucket = self.bucket(&bucket)?;
        Ok(report(
            "increment",
            self.store.increment(&bucket, &key, delta).await,
        ))
    }

    async fn swap(
        &mut self,
        cas: Resource<CasHandle>,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), atomics::CasError>> {
        let CasHandle {
            bucket,
            key,
            snapshot,
        } = self.table.delete(cas)?;
        let swapped = self
            .store
            .compare_and_swap(&bucket, &key, &snapshot, value)
            .await;
        match report("swap", swapped) {
            Ok(true) => Ok(Ok(())),
            Ok(false) => {
                let snapshot = match report("cas", self.store.snapshot(&bucket, &key).await) {
                    Ok(snapshot) => snapshot,
                    Err(err) => return Ok(Err(atomics::CasError::StoreError(err))),
                };
                let retry = self.table.push(CasHandle {
                    bucket,
                    key,
                    snapshot,
                })?;
                Ok(Err(atomics::CasError::CasFailed(retry)))
            }
            Err(err) => Ok(Err(atomics::CasError::StoreError(err))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_identifiers_are_validated() {
        let store = KvStore::Memory(Arc::default());
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

    #[test]
    fn counters_parse_as_decimal_text() {
        assert_eq!(parse_counter(b"42").unwrap(), 42);
        assert_eq!(parse_counter(b"-7").unwrap(), -7);
        assert!(parse_counter(b"4x").is_err());
        assert!(parse_counter(&[0xff]).is_err());
    }

    #[tokio::test]
    async fn host_functions_drive_buckets_and_cas_handles() {
        use atomics::{Host as _, HostCas as _};
        use store::{Host as _, HostBucket as _};

        let kv = KvStore::Memory(Arc::default());
        let mut table = ResourceTable::new();
        let mut view = KvView {
            table: &mut table,
            store: &kv,
        };
        assert!(matches!(
            view.open("no:such".into()).await.unwrap(),
            Err(store::Error::NoSuchStore)
        ));
        let bucket = view.open("default".into()).await.unwrap().unwrap();
        let b = || Resource::<BucketHandle>::new_borrow(bucket.rep());
        view.set(b(), "k".into(), b"v1".to_vec())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            view.get(b(), "k".into()).await.unwrap().unwrap(),
            Some(b"v1".to_vec())
        );
        assert_eq!(
            view.increment(b(), "n".into(), 5).await.unwrap().unwrap(),
            5
        );

        let cas = view.new(b(), "k".into()).await.unwrap().unwrap();
        let cas_rep = cas.rep();
        let current = view
            .current(Resource::new_borrow(cas_rep))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(current, Some(b"v1".to_vec()));
        view.set(b(), "k".into(), b"other".to_vec())
            .await
            .unwrap()
            .unwrap();
        let retry = match view.swap(cas, b"v2".to_vec()).await.unwrap() {
            Err(atomics::CasError::CasFailed(retry)) => retry,
            other => panic!("expected cas-failed, got {other:?}"),
        };
        let current = view
            .current(Resource::new_borrow(retry.rep()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(current, Some(b"other".to_vec()));
        view.swap(retry, b"v2".to_vec()).await.unwrap().unwrap();
        assert_eq!(
            view.get(b(), "k".into()).await.unwrap().unwrap(),
            Some(b"v2".to_vec())
        );
        store::HostBucket::drop(&mut view, bucket).await.unwrap();
    }
}
