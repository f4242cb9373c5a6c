//! The key-value store the components and the host share: the components' `wasi:keyvalue`
//! buckets (which `wit_host::keyvalue` translates into calls here), the host's throttling
//! counters ([`crate::counters`]) and the answers it caches ([`crate::proxy`]).
//!
//! [`KvStore`] decides where each key lives: in this process ([`memory::MemoryStore`]), in
//! Redis ([`redis_store::RedisStore`], shared by every gateway node that uses the same
//! server and namespace, reached through [`redis_link::RedisLink`]), or in one SQLite table
//! as Spin's default store keeps it ([`sqlite_store::SqliteStore`], for hosting the
//! component as Spin does).
//!
//! Conventions common to the backends:
//! - counters written by `increment` are stored as ASCII decimal strings in memory and in
//!   Redis (as Redis `INCRBY` does), so `get` on a counter returns e.g. `b"42"`, and
//!   `increment` on a value that is not such a string is an `other` error; SQLite keeps
//!   them as Spin does, 8-byte little-endian integers;
//! - a compare-and-swap remembers what it read ([`CasSnapshot`]), and the swap succeeds
//!   only if the key still holds that (memory: the same write version; Redis: the same
//!   bytes, checked atomically by a Lua script; SQLite: the same bytes, in one statement).

pub mod memory;
pub mod redis_link;
pub mod redis_store;
pub mod routing;
pub mod sqlite_store;
pub mod store;

pub use routing::KvStore;
pub use store::{CasSnapshot, GRANT_SHARE, Grant, KeyPage, KvError, Made, Store};
