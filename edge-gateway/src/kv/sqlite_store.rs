//! A key-value store in one SQLite table, as Spin's default store keeps it (`spin up`
//! writes `.spin/sqlite_key_value.db`): one table `spin_key_value (store, key, value)`,
//! one connection behind a lock, SQLite's default journal and synchronisation (every
//! write is a transaction committed to disk), counters as 8-byte little-endian integers.
//! It lets edge-gateway host the component the way Spin does (`APIM_KV_URL=sqlite:PATH`),
//! for the benchmark's Spin-like case and the tests of that mode; every key, the
//! manifest's too, lives in it, and nothing expires.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use super::store::{CasSnapshot, KeyPage, KvError, Store};

/// Keys per `list-keys` page.
const PAGE_SIZE: usize = 1000;

const SELECT: &str = "SELECT value FROM spin_key_value WHERE store = ?1 AND key = ?2";
const UPSERT: &str = "INSERT INTO spin_key_value (store, key, value) VALUES (?1, ?2, ?3) \
                      ON CONFLICT (store, key) DO UPDATE SET value = excluded.value";

/// The store: one connection, used by one caller at a time.
pub struct SqliteStore {
    connection: Mutex<Connection>,
}

fn failed(err: rusqlite::Error) -> KvError {
    KvError::Other(format!("sqlite: {err}"))
}

impl SqliteStore {
    /// Opens (creating if need be) the database at `path`; `:memory:` keeps it in memory.
    pub fn open(path: &Path) -> Result<Self, KvError> {
        let connection = if path.as_os_str() == ":memory:" {
            Connection::open_in_memory()
        } else {
            Connection::open(path)
        }
        .map_err(failed)?;
        connection
            .execute(
                "CREATE TABLE IF NOT EXISTS spin_key_value (
                    store TEXT NOT NULL,
                    key   TEXT NOT NULL,
                    value BLOB NOT NULL,
                    PRIMARY KEY (store, key)
                )",
                [],
            )
            .map_err(failed)?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    /// Runs `f` on the connection, in place of the runtime's worker when it can hand its
    /// other tasks over (as Spin does: a commit waits for the disk).
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, KvError> {
        let run = || {
            let mut connection = self
                .connection
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut connection).map_err(failed)
        };
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi_thread {
            tokio::task::block_in_place(run)
        } else {
            run()
        }
    }

    /// The value of `key`, if any.
    pub fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.with(|c| {
            c.prepare_cached(SELECT)?
                .query_row(params![bucket, key], |row| row.get(0))
                .optional()
        })
    }

    /// Stores `value` under `key`.
    pub fn set(&self, bucket: &str, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.with(|c| {
            c.prepare_cached(UPSERT)?
                .execute(params![bucket, key, value])
        })
        .map(drop)
    }

    /// Removes `key`.
    pub fn delete(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        self.with(|c| {
            c.prepare_cached("DELETE FROM spin_key_value WHERE store = ?1 AND key = ?2")?
                .execute(params![bucket, key])
        })
        .map(drop)
    }

    /// Whether `key` exists.
    pub fn exists(&self, bucket: &str, key: &str) -> Result<bool, KvError> {
        self.with(|c| {
            c.prepare_cached("SELECT 1 FROM spin_key_value WHERE store = ?1 AND key = ?2")?
                .exists(params![bucket, key])
        })
    }

    /// One page of the bucket's keys in order, after `cursor`.
    pub fn list_keys(&self, bucket: &str, cursor: Option<&str>) -> Result<KeyPage, KvError> {
        let keys: Vec<String> = self.with(|c| {
            c.prepare_cached(
                "SELECT key FROM spin_key_value WHERE store = ?1 AND key > ?2 ORDER BY key LIMIT ?3",
            )?
            .query_map(
                params![bucket, cursor.unwrap_or_default(), PAGE_SIZE as i64],
                |row| row.get(0),
            )?
            .collect()
        })?;
        let cursor = (keys.len() == PAGE_SIZE)
            .then(|| keys.last().cloned())
            .flatten();
        Ok(KeyPage { keys, cursor })
    }

    /// Adds `delta` to the counter at `key` (absent: 0) in one transaction, as Spin does:
    /// a read and a write, committed.
    pub fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        let mut overflow = false;
        let mut malformed = false;
        let value = self.with(|c| {
            let tx = c.transaction()?;
            let current: Option<Vec<u8>> = tx
                .prepare_cached(SELECT)?
                .query_row(params![bucket, key], |row| row.get(0))
                .optional()?;
            let current = match current.as_deref().map(<[u8; 8]>::try_from) {
                None => 0,
                Some(Ok(bytes)) => i64::from_le_bytes(bytes),
                Some(Err(_)) => {
                    malformed = true;
                    return Ok(0);
                }
            };
            let Some(next) = current.checked_add(delta) else {
                overflow = true;
                return Ok(0);
            };
            tx.prepare_cached(UPSERT)?
                .execute(params![bucket, key, &next.to_le_bytes()[..]])?;
            tx.commit()?;
            Ok(next)
        })?;
        if malformed {
            return Err(KvError::Other("value is not a counter".into()));
        }
        if overflow {
            return Err(KvError::Other("counter overflow".into()));
        }
        Ok(value)
    }

    /// Writes `value` if `key` still holds `expected` (`None`: absent); whether it did.
    pub fn compare_and_swap(
        &self,
        bucket: &str,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, KvError> {
        self.with(|c| {
            let changed = match expected {
                Some(old) => c
                    .prepare_cached(
                        "UPDATE spin_key_value SET value = ?3 \
                         WHERE store = ?1 AND key = ?2 AND value = ?4",
                    )?
                    .execute(params![bucket, key, value, old])?,
                None => c
                    .prepare_cached(
                        "INSERT INTO spin_key_value (store, key, value) VALUES (?1, ?2, ?3) \
                         ON CONFLICT (store, key) DO NOTHING",
                    )?
                    .execute(params![bucket, key, value])?,
            };
            Ok(changed == 1)
        })
    }
}

/// The methods above, behind the trait: each runs to its end when first polled (a write
/// waits for its commit), as they do for [`super::KvStore`], which calls them directly.
impl Store for SqliteStore {
    async fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        SqliteStore::get(self, bucket, key)
    }

    async fn set(&self, bucket: &str, key: &str, value: Vec<u8>) -> Result<(), KvError> {
        SqliteStore::set(self, bucket, key, &value)
    }

    async fn delete(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        SqliteStore::delete(self, bucket, key)
    }

    async fn exists(&self, bucket: &str, key: &str) -> Result<bool, KvError> {
        SqliteStore::exists(self, bucket, key)
    }

    async fn list_keys(&self, bucket: &str, cursor: Option<&str>) -> Result<KeyPage, KvError> {
        SqliteStore::list_keys(self, bucket, cursor)
    }

    async fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        SqliteStore::increment(self, bucket, key, delta)
    }

    /// The bytes the swap compares.
    async fn snapshot(&self, bucket: &str, key: &str) -> Result<CasSnapshot, KvError> {
        SqliteStore::get(self, bucket, key).map(CasSnapshot::of_bytes)
    }

    async fn compare_and_swap(
        &self,
        bucket: &str,
        key: &str,
        snapshot: &CasSnapshot,
        value: Vec<u8>,
    ) -> Result<bool, KvError> {
        let expected = snapshot.value.as_deref();
        SqliteStore::compare_and_swap(self, bucket, key, expected, &value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> SqliteStore {
        SqliteStore::open(Path::new(":memory:")).unwrap()
    }

    #[test]
    fn values_are_kept_per_bucket() {
        let db = store();
        db.set("a", "k", b"v1").unwrap();
        db.set("b", "k", b"other").unwrap();
        db.set("a", "k", b"v2").unwrap();
        assert_eq!(db.get("a", "k").unwrap(), Some(b"v2".to_vec()));
        assert!(db.exists("b", "k").unwrap());
        db.delete("a", "k").unwrap();
        assert_eq!(db.get("a", "k").unwrap(), None);
        assert!(!db.exists("a", "k").unwrap());
    }

    /// Counters are Spin's: 8 bytes, little-endian; a value that is not one is refused.
    #[test]
    fn counters_are_little_endian_integers() {
        let db = store();
        assert_eq!(db.increment("a", "n", 5).unwrap(), 5);
        assert_eq!(db.increment("a", "n", -2).unwrap(), 3);
        assert_eq!(db.get("a", "n").unwrap(), Some(3i64.to_le_bytes().to_vec()));
        db.set("a", "text", b"42").unwrap();
        assert!(db.increment("a", "text", 1).is_err());
        db.set("a", "max", &i64::MAX.to_le_bytes()).unwrap();
        assert!(db.increment("a", "max", 1).is_err());
    }

    #[test]
    fn compare_and_swap_writes_only_over_what_was_read() {
        let db = store();
        assert!(db.compare_and_swap("a", "k", None, b"1").unwrap());
        assert!(!db.compare_and_swap("a", "k", None, b"2").unwrap());
        assert!(!db.compare_and_swap("a", "k", Some(b"0"), b"2").unwrap());
        assert!(db.compare_and_swap("a", "k", Some(b"1"), b"2").unwrap());
        assert_eq!(db.get("a", "k").unwrap(), Some(b"2".to_vec()));
    }

    #[test]
    fn keys_are_listed_in_pages() {
        let db = store();
        for i in 0..PAGE_SIZE + 5 {
            db.set("a", &format!("k{i:05}"), b"x").unwrap();
        }
        db.set("b", "other", b"x").unwrap();
        let first = db.list_keys("a", None).unwrap();
        assert_eq!(first.keys.len(), PAGE_SIZE);
        let second = db.list_keys("a", first.cursor.as_deref()).unwrap();
        assert_eq!(second.keys.len(), 5);
        assert_eq!(second.cursor, None);
    }
}
