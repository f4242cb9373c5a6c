//! `wasi:keyvalue/store` and `wasi:keyvalue/atomics` (`0.2.0-draft2`) for the component:
//! each call translated into one on the host's store ([`crate::kv::KvStore`]), whose
//! failures become the interface's errors, with the `bucket` and `cas` resources it hands
//! the component ([`handles`]). A `cas` handle holds what it read; a swap that finds the key
//! changed hands back a fresh handle of what the key holds now.

pub mod handles;

use std::sync::Arc;

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};

use crate::kv::{KvError, KvStore, Store as _};
use crate::wit_host::bindings::wasi::keyvalue::{atomics, store};

pub use handles::{BucketHandle, CasHandle};

impl From<KvError> for store::Error {
    fn from(err: KvError) -> Self {
        match err {
            KvError::NoSuchStore => store::Error::NoSuchStore,
            KvError::Other(msg) => store::Error::Other(msg),
        }
    }
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
            Ok(name) => Ok(Ok(self.table.push(BucketHandle { name })?)),
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

    #[tokio::test]
    async fn host_functions_drive_buckets_and_cas_handles() {
        use atomics::{Host as _, HostCas as _};
        use store::{Host as _, HostBucket as _};

        let kv = KvStore::memory();
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
