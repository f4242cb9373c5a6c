//! What the gateway asks of its host: key-value state, settings, outbound HTTP and the
//! clock. The component implements it over WASI; tests implement it in memory.

pub use apim_http::{Headers, Outbound, Request, Response, SendError, header, split_url};

/// The host's services.
pub trait Host {
    /// A value of the shared key-value store.
    fn kv_get(&self, key: &str) -> Result<Option<Vec<u8>>, String>;
    /// Stores a value.
    fn kv_set(&self, key: &str, value: &[u8]) -> Result<(), String>;
    /// Deletes a value.
    fn kv_delete(&self, key: &str) -> Result<(), String>;
    /// Atomically adds `delta` to a counter, returning the new value.
    fn kv_increment(&self, key: &str, delta: i64) -> Result<i64, String>;
    /// A setting (`control_plane_url`, `manifest_public_key`, ...).
    fn setting(&self, name: &str) -> Option<String>;
    /// Sends a request and reads the whole response.
    fn send(&self, request: Outbound) -> Result<Response, SendError>;
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;
}
