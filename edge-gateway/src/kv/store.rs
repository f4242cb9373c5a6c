//! What a store and its callers exchange: failures, pages of keys, sliding-window grants
//! and what a compare-and-swap read.

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

/// Parses a stored counter (ASCII decimal, as written by `increment`).
pub fn parse_counter(raw: &[u8]) -> Result<i64, KvError> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| KvError::Other("value is not an integer counter".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse_as_decimal_text() {
        assert_eq!(parse_counter(b"42").unwrap(), 42);
        assert_eq!(parse_counter(b"-7").unwrap(), -7);
        assert!(parse_counter(b"4x").is_err());
        assert!(parse_counter(&[0xff]).is_err());
    }
}
