//! What the gateway asks of its host: key-value state, settings, outbound HTTP, the
//! clock and random bits. The component implements it over WASI; tests implement it in memory.

pub use apim_http::{
    Headers, MAX_BODY_BYTES, Outbound, Request, Response, SendError, connection_tokens,
    content_length, end_to_end, header, may_have_body, passes_on, split_url,
};

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
    /// Writes `value` if the key still holds `expected` (`None`: absent); whether it did.
    fn kv_compare_and_swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, String>;
    /// One page of the store's keys, after `cursor`; and where the next page starts.
    fn kv_list_keys(&self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), String>;
    /// A setting (`control_plane_url`, `manifest_public_key`, ...).
    fn setting(&self, name: &str) -> Option<String>;
    /// Sends a request and reads the whole response.
    fn send(&self, request: Outbound) -> Result<Response, SendError>;
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;
    /// Waits this long.
    fn sleep_ms(&self, ms: u64);
    /// Random bits (trace and span ids).
    fn random_u64(&self) -> u64;
}
