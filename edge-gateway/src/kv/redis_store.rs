//! Redis key-value backend, shared by every gateway node on the same server.
//!
//! Bucket `B`'s key `K` is the Redis string `NAMESPACE:B:K`. `increment` is
//! `INCRBY`; compare-and-swap is a Lua script that compares the current bytes
//! with the ones the CAS handle read and writes only if they are equal (so,
//! unlike the in-memory backend, a write that restores the same bytes is not
//! detected). One multiplexed [`ConnectionManager`] serves all instances and
//! reconnects by itself.

use std::time::Duration;

use anyhow::Context as _;
use redis::AsyncCommands as _;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::store::{CasSnapshot, GRANT_SHARE, Grant, KeyPage, KvError, Store};

/// Keys asked for per `SCAN` round trip.
const SCAN_COUNT: usize = 500;
/// `SCAN` round trips per `list-keys` call before returning an empty page with a cursor.
const SCAN_ROUNDS: usize = 16;
/// Timeout of one Redis command.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Timeout of one connection attempt.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Connection attempts after the first before one connect gives up.
const CONNECT_RETRIES: usize = 2;
/// Longest wait between connection attempts, milliseconds.
const MAX_RETRY_DELAY_MS: u64 = 1000;

/// KEYS[1]: key; ARGV[1]: "1" if the key existed when read, else "0";
/// ARGV[2]: the bytes read; ARGV[3]: the new value. Returns 1 if written.
const CAS_SCRIPT: &str = r"
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if current ~= ARGV[2] then return 0 end
elseif current then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3])
return 1
";

/// [`Grant::grantable`] in Redis, so that every node's grants of a counter are made one
/// at a time. KEYS[1]: this window's counter; KEYS[2]: the previous window's. ARGV:
/// allowed, window length and milliseconds into it, grants wanted, the counter's
/// lifetime in seconds, [`super::GRANT_SHARE`]. Returns the grants made, already counted.
/// Numbers are Lua's doubles: the host keeps `allowed × window` within 2^53, where they
/// are exact, and `math.fmod` divides without rounding.
const GRANT_SCRIPT: &str = r"
local allowed = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local into = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local granted = math.max(tonumber(redis.call('GET', KEYS[1]) or '0') or 0, 0)
local previous = math.max(tonumber(redis.call('GET', KEYS[2]) or '0') or 0, 0)
local weight = previous * (window - math.min(into, window))
local covered = (weight - math.fmod(weight, window)) / window
local room = allowed - covered - granted
if room <= 0 then return 0 end
local give = math.max(math.floor(room / tonumber(ARGV[6])), 1)
give = math.min(give, want)
if redis.call('INCRBY', KEYS[1], give) == give then
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
return give
";

/// Takes ARGV[1] off the counter KEYS[1] if it still exists, not below zero (a grant
/// given back after its counter expired must not start a counter without a lifetime).
const GIVE_BACK_SCRIPT: &str = r"
local held = tonumber(redis.call('GET', KEYS[1]) or '')
if not held then return 0 end
local back = math.min(tonumber(ARGV[1]), math.max(held, 0))
if back > 0 then redis.call('DECRBY', KEYS[1], back) end
return back
";

/// A Redis-backed store.
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    namespace: String,
    cas: redis::Script,
    grant: redis::Script,
    give_back: redis::Script,
}

fn backend_error(err: redis::RedisError) -> KvError {
    KvError::Other(format!("redis: {err}"))
}

/// Escapes the glob metacharacters of `SCAN ... MATCH`.
fn escape_glob(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl RedisStore {
    /// Connects to `url` (fails if Redis cannot be reached within a few attempts).
    pub async fn connect(url: &str, namespace: &str) -> anyhow::Result<Self> {
        let client = redis::Client::open(url).context("invalid Redis URL")?;
        // Few retries a second apart: whoever connects (start-up, or the manager after a
        // lost connection) tries again soon rather than backing off for long.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(CONNECT_TIMEOUT)
            .set_response_timeout(RESPONSE_TIMEOUT)
            .set_number_of_retries(CONNECT_RETRIES)
            .set_max_delay(MAX_RETRY_DELAY_MS);
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .context("cannot connect to Redis")?;
        Ok(Self {
            conn,
            namespace: namespace.to_owned(),
            cas: redis::Script::new(CAS_SCRIPT),
            grant: redis::Script::new(GRANT_SCRIPT),
            give_back: redis::Script::new(GIVE_BACK_SCRIPT),
        })
    }

    fn bucket_prefix(&self, bucket: &str) -> String {
        format!("{}:{bucket}:", self.namespace)
    }

    fn key(&self, bucket: &str, key: &str) -> String {
        format!("{}{key}", self.bucket_prefix(bucket))
    }

    /// Makes and counts the grants [`Grant::grantable`] allows ([`GRANT_SCRIPT`]).
    pub async fn grant(&self, bucket: &str, grant: &Grant<'_>) -> Result<u64, KvError> {
        let lifetime = apim_http::expiry::ttl_secs(grant.current).unwrap_or(1);
        let mut conn = self.conn.clone();
        let given: u64 = self
            .grant
            .key(self.key(bucket, grant.current))
            .key(self.key(bucket, grant.previous))
            .arg(grant.allowed)
            .arg(grant.window_ms.max(1))
            .arg(grant.into_ms)
            .arg(grant.want.max(1))
            .arg(lifetime)
            .arg(GRANT_SHARE)
            .invoke_async(&mut conn)
            .await
            .map_err(backend_error)?;
        Ok(given)
    }

    /// Gives back unused grants ([`GIVE_BACK_SCRIPT`]).
    pub async fn give_back(&self, bucket: &str, key: &str, count: u64) -> Result<(), KvError> {
        let mut conn = self.conn.clone();
        let _: u64 = self
            .give_back
            .key(self.key(bucket, key))
            .arg(count)
            .invoke_async(&mut conn)
            .await
            .map_err(backend_error)?;
        Ok(())
    }
}

impl Store for RedisStore {
    /// `GET`.
    async fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let mut conn = self.conn.clone();
        conn.get(self.key(bucket, key)).await.map_err(backend_error)
    }

    /// `SET`.
    async fn set(&self, bucket: &str, key: &str, value: Vec<u8>) -> Result<(), KvError> {
        let mut conn = self.conn.clone();
        match apim_http::expiry::ttl_secs(key) {
            // Keys with a lifetime (`apim:ttl:<s>:...`) expire in Redis too.
            Some(ttl) => conn.set_ex(self.key(bucket, key), value, ttl).await,
            None => conn.set(self.key(bucket, key), value).await,
        }
        .map_err(backend_error)
    }

    /// `DEL`.
    async fn delete(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        let mut conn = self.conn.clone();
        let _: i64 = conn
            .del(self.key(bucket, key))
            .await
            .map_err(backend_error)?;
        Ok(())
    }

    /// `EXISTS`.
    async fn exists(&self, bucket: &str, key: &str) -> Result<bool, KvError> {
        let mut conn = self.conn.clone();
        conn.exists(self.key(bucket, key))
            .await
            .map_err(backend_error)
    }

    /// `INCRBY`.
    async fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        let mut conn = self.conn.clone();
        let full = self.key(bucket, key);
        let value: i64 = conn.incr(&full, delta).await.map_err(backend_error)?;
        // A counter with a lifetime gets it when created (the increment that made it).
        if value == delta
            && let Some(ttl) = apim_http::expiry::ttl_secs(key)
        {
            let _: bool = conn
                .expire(&full, ttl as i64)
                .await
                .map_err(backend_error)?;
        }
        Ok(value)
    }

    /// `SCAN` with the bucket's prefix; the cursor is Redis's own.
    async fn list_keys(&self, bucket: &str, cursor: Option<&str>) -> Result<KeyPage, KvError> {
        let mut cursor: u64 = match cursor {
            None => 0,
            Some(raw) => raw
                .parse()
                .map_err(|_| KvError::Other(format!("invalid cursor {raw:?}")))?,
        };
        let prefix = self.bucket_prefix(bucket);
        let pattern = format!("{}*", escape_glob(&prefix));
        let mut conn = self.conn.clone();
        let mut keys = Vec::new();
        for _ in 0..SCAN_ROUNDS {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(SCAN_COUNT)
                .query_async(&mut conn)
                .await
                .map_err(backend_error)?;
            keys.extend(
                batch
                    .into_iter()
                    .filter_map(|k| k.strip_prefix(&prefix).map(str::to_owned)),
            );
            cursor = next;
            if cursor == 0 || !keys.is_empty() {
                break;
            }
        }
        let cursor = (cursor != 0).then(|| cursor.to_string());
        Ok(KeyPage { keys, cursor })
    }

    /// `GET`: the bytes the swap compares.
    async fn snapshot(&self, bucket: &str, key: &str) -> Result<CasSnapshot, KvError> {
        Ok(CasSnapshot::of_bytes(self.get(bucket, key).await?))
    }

    /// Writes `value` if the key still holds the bytes `snapshot` read (or is still absent).
    async fn compare_and_swap(
        &self,
        bucket: &str,
        key: &str,
        snapshot: &CasSnapshot,
        value: Vec<u8>,
    ) -> Result<bool, KvError> {
        let expected = snapshot.value.as_deref();
        let mut conn = self.conn.clone();
        let written: i64 = self
            .cas
            .key(self.key(bucket, key))
            .arg(if expected.is_some() { "1" } else { "0" })
            .arg(expected.unwrap_or_default())
            .arg(value)
            .invoke_async(&mut conn)
            .await
            .map_err(backend_error)?;
        Ok(written == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a compare-and-swap read when the key held `value`.
    fn read(value: Option<&[u8]>) -> CasSnapshot {
        CasSnapshot::of_bytes(value.map(<[u8]>::to_vec))
    }

    #[test]
    fn glob_metacharacters_are_escaped() {
        assert_eq!(escape_glob("apim:default:"), "apim:default:");
        assert_eq!(escape_glob(r"a*b?[c]\"), r"a\*b\?\[c\]\\");
    }

    /// Runs against the local Redis (fails without it, unless told to skip).
    #[tokio::test]
    async fn redis_backend_semantics() {
        let url = "redis://127.0.0.1:6379/0";
        if !harness::services::available(
            harness::services::Service::Redis,
            "redis_backend_semantics",
        ) {
            return;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let namespace = format!("edge-gateway-test-{}-{nanos}", std::process::id());
        let store = RedisStore::connect(url, &namespace).await.unwrap();
        let b = "default";

        assert_eq!(store.get(b, "k").await.unwrap(), None);
        store.set(b, "k", b"v1".to_vec()).await.unwrap();
        assert!(store.exists(b, "k").await.unwrap());
        assert_eq!(store.get(b, "k").await.unwrap(), Some(b"v1".to_vec()));

        assert_eq!(store.increment(b, "n", 2).await.unwrap(), 2);
        assert_eq!(store.increment(b, "n", 3).await.unwrap(), 5);
        assert!(store.increment(b, "k", 1).await.is_err());

        assert!(
            !store
                .compare_and_swap(b, "k", &read(None), b"x".to_vec())
                .await
                .unwrap()
        );
        assert!(
            store
                .compare_and_swap(b, "k", &read(Some(b"v1")), b"v2".to_vec())
                .await
                .unwrap()
        );
        assert!(
            !store
                .compare_and_swap(b, "k", &read(Some(b"v1")), b"v3".to_vec())
                .await
                .unwrap()
        );
        assert!(
            store
                .compare_and_swap(b, "fresh", &read(None), b"y".to_vec())
                .await
                .unwrap()
        );

        let keys = crate::kv::store::every_key(&store, b).await;
        assert_eq!(keys, ["fresh", "k", "n"]);

        // Keys with a lifetime expire in Redis; others do not.
        let mut conn = store.conn.clone();
        let ttl_ms = async |conn: &mut ConnectionManager, key: &str| -> i64 {
            redis::cmd("PTTL")
                .arg(store.key(b, key))
                .query_async(conn)
                .await
                .unwrap()
        };
        store
            .set(b, "apim:ttl:5:cache:x", b"v".to_vec())
            .await
            .unwrap();
        assert_eq!(store.increment(b, "apim:ttl:2:thr:w", 1).await.unwrap(), 1);
        assert_eq!(store.increment(b, "apim:ttl:2:thr:w", 1).await.unwrap(), 2);
        assert!((1..=5000).contains(&ttl_ms(&mut conn, "apim:ttl:5:cache:x").await));
        assert!((1..=2000).contains(&ttl_ms(&mut conn, "apim:ttl:2:thr:w").await));
        assert_eq!(ttl_ms(&mut conn, "k").await, -1);

        for key in ["k", "n", "fresh", "apim:ttl:5:cache:x", "apim:ttl:2:thr:w"] {
            store.delete(b, key).await.unwrap();
        }
        assert!(!store.exists(b, "k").await.unwrap());
    }
}
