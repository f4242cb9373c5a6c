//! The HTTP shapes our components work with (a request or response read whole, an
//! outbound request), and in the component build the glue that moves them across
//! `wasi:http`: reading the incoming request, writing the response, sending outbound;
//! WASI 0.2's ([`wasi`]), and with the feature `p3` WASI 0.3's as well (`wasi_p3`).
//!
//! Bodies are buffered: the components look at whole payloads (JSON, SOAP envelopes).

pub mod bodies;
pub mod cache;
pub mod contract;
pub mod egress;
pub mod endpoints;
pub mod mcp;
pub mod packed;
pub mod time;
pub mod trace;
#[cfg(target_arch = "wasm32")]
pub mod wasi;
#[cfg(target_arch = "wasm32")]
mod wasi_glue;
#[cfg(all(target_arch = "wasm32", feature = "p3"))]
pub mod wasi_p3;
pub mod xml;

/// An HTTP request or response header list (names lower-case).
pub type Headers = Vec<(String, Vec<u8>)>;

/// An incoming request, body read whole.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Upper-case method.
    pub method: String,
    /// Path and query as received.
    pub path_with_query: String,
    /// Headers.
    pub headers: Headers,
    /// Body.
    pub body: Vec<u8>,
    /// The scheme it came on, as its host says (never read from the request's own text).
    pub scheme: Scheme,
}

/// The scheme a request came on: in clear, or over TLS (at the host, or at a proxy in
/// front that the host trusts to say so).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scheme {
    /// In clear; also what a host that says nothing means.
    #[default]
    Http,
    /// Over TLS.
    Https,
}

/// A response, body whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: Headers,
    /// Body.
    pub body: Vec<u8>,
}

/// A request to a backend or the control plane.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// Upper-case method.
    pub method: String,
    /// `http` or `https`.
    pub scheme: String,
    /// `host:port`.
    pub authority: String,
    /// Path and query.
    pub path_with_query: String,
    /// Headers to send.
    pub headers: Headers,
    /// Body.
    pub body: Vec<u8>,
    /// Connect and first-byte timeout.
    pub timeout_ms: u64,
}

/// Why an outbound request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum SendError {
    /// The backend did not answer in time.
    Timeout(String),
    /// The backend could not be reached or broke the exchange.
    Unreachable(String),
}

/// Largest request or response body a component buffers (a request's, at most: see
/// [`bodies`]).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Keys with a lifetime. A key `apim:ttl:<seconds>:<rest>` expires that many seconds
/// after it was last set (or created by an increment); the hosts' stores honour it
/// (edge-gateway's memory store and Redis), and keep such keys within a bounded size,
/// least recently used out first. The gateway writes every key it makes per request
/// (cached responses, throttling windows) this way, so none lives forever.
pub mod expiry {
    /// Prefix of the keys that expire.
    pub const PREFIX: &str = "apim:ttl:";

    /// A key under `rest` that expires `ttl_secs` after its last write (at least a second).
    pub fn key(ttl_secs: u64, rest: &str) -> String {
        key_of(ttl_secs, &[rest])
    }

    /// [`key`] for a `rest` in parts.
    fn key_of(ttl_secs: u64, rest: &[&str]) -> String {
        let mut ttl = itoa::Buffer::new();
        let head = [PREFIX, ttl.format(ttl_secs.max(1)), ":"];
        crate::joined(head.iter().chain(rest).copied())
    }

    /// What follows the lifetime in a sliding window's counter.
    const WINDOW: &str = "window:";

    /// The prefix of a sliding window's counters under `rest`, to which the window's number
    /// is appended (`<prefix>:<number>`): they live two windows and ten seconds, so that
    /// a window's counter outlives the next window, which weighs it in, on every node
    /// whose clock is within ten seconds of the node that made the counter.
    pub fn window_counters(rest: &str, window_ms: u64) -> String {
        let lifetime = window_ms.saturating_mul(2).div_ceil(1000) + 10;
        key_of(lifetime, &[WINDOW, rest])
    }

    /// The counter of window `number` (the time in milliseconds divided by the window's
    /// length) among the counters under `counters` ([`window_counters`]).
    pub fn window_counter(counters: &str, number: i64) -> String {
        let mut number_text = itoa::Buffer::new();
        crate::joined([counters, ":", number_text.format(number)])
    }

    /// Whether `key` is a sliding window's counter. A store short of room drops other keys
    /// with a lifetime (cached answers) first and never these: a counter dropped before it
    /// expires would let its limit admit a window's worth again.
    pub fn is_window_counter(key: &str) -> bool {
        key.strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once(':'))
            .is_some_and(|(_, rest)| rest.starts_with(WINDOW))
    }

    /// The share of a sliding window's `previous` count that still weighs in `into_ms`
    /// into the next window of `window_ms`: the count times the part of the last
    /// `window_ms` it still covers, rounded down. Rounded down, calls demanded without
    /// pause are admitted at the same instants in every window, so every window admits
    /// the whole limit; rounded up, a full previous window still weighed one call until
    /// the very end of the next, and later windows admitted one call less than the limit.
    pub fn previous_share(previous: u64, into_ms: u64, window_ms: u64) -> u64 {
        let window = u128::from(window_ms.max(1));
        let unexpired = window - u128::from(into_ms).min(window);
        // At most `previous`, since `unexpired` is at most `window`.
        (u128::from(previous) * unexpired / window) as u64
    }

    /// The lifetime a key carries, if it is one of those.
    pub fn ttl_secs(key: &str) -> Option<u64> {
        let (ttl, _) = key.strip_prefix(PREFIX)?.split_once(':')?;
        ttl.parse().ok().filter(|ttl| *ttl > 0)
    }
}

/// Whether a request may carry a body: one announced by `Content-Length`, or a chunked
/// one, which hosts do not show (they hide `Transfer-Encoding`) and which only methods
/// with body semantics are taken to send.
pub fn may_have_body(method: &str, headers: &Headers) -> bool {
    match content_length(headers) {
        Some(length) => length > 0,
        None => !matches!(method, "GET" | "HEAD" | "DELETE" | "OPTIONS" | "TRACE"),
    }
}

/// The `Content-Length`, when given and sane.
pub fn content_length(headers: &Headers) -> Option<usize> {
    header(headers, "content-length")?.trim().parse().ok()
}

/// Headers that belong to one hop and never travel on (RFC 9110 §7.6.1), those the
/// host sets itself (`host`, `content-length`), and Spin's own (`spin-*`). Proxies
/// drop them, and the headers a `Connection` header names, in both directions.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "http2-settings",
    "host",
    "content-length",
];

/// Whether a header must not be passed on; `connection` lists the (lower-case) header
/// names the message's `Connection` header gives.
pub fn is_hop_by_hop(name: &str, connection: &[String]) -> bool {
    HOP_BY_HOP.iter().any(|hop| hop.eq_ignore_ascii_case(name))
        || name
            .get(..5)
            .is_some_and(|start| start.eq_ignore_ascii_case("spin-"))
        || connection.iter().any(|c| c.eq_ignore_ascii_case(name))
}

/// Whether a client header goes on to the backend: it is not hop-by-hop (`connection`:
/// the names the request's `Connection` header lists) and not among `removed` (those
/// the gateway replaces). Both forwarding paths keep exactly these.
pub fn passes_on(name: &str, connection: &[String], removed: &[impl AsRef<str>]) -> bool {
    !is_hop_by_hop(name, connection)
        && !removed
            .iter()
            .any(|r| r.as_ref().eq_ignore_ascii_case(name))
}

/// `parts` written one after another into one allocation of the right size: for a few
/// short parts, `[..].concat()`'s generic join costs several times as much, and keys and
/// URLs are joined on every request.
pub fn joined<'a>(parts: impl IntoIterator<Item = &'a str, IntoIter: Clone>) -> String {
    let parts = parts.into_iter();
    let mut joined = String::with_capacity(parts.clone().map(str::len).sum());
    for part in parts {
        joined.push_str(part);
    }
    joined
}

/// The header names a `Connection` header value lists, lower-case.
pub fn connection_tokens(value: Option<&str>) -> Vec<String> {
    value
        .map(|v| {
            v.split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default()
}

/// The headers of a message without its hop-by-hop ones.
pub fn end_to_end(headers: &Headers) -> Headers {
    let connection = connection_tokens(header(headers, "connection"));
    headers
        .iter()
        .filter(|(name, _)| !is_hop_by_hop(name, &connection))
        .cloned()
        .collect()
}

/// The first value of a header, as text.
pub fn header<'a>(headers: &'a Headers, name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| text(v))
}

/// Sets `headers` in `list`, each replacing any of the same name (ASCII case ignored).
pub fn set_headers(list: &mut Headers, headers: impl IntoIterator<Item = (String, Vec<u8>)>) {
    for (name, value) in headers {
        list.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        list.push((name, value));
    }
}

/// Takes headers of these names, in any case, off a list.
pub fn remove_headers<N: AsRef<str>>(list: &mut Headers, names: &[N]) {
    list.retain(|(n, _)| {
        !names
            .iter()
            .any(|name| n.eq_ignore_ascii_case(name.as_ref()))
    });
}

/// `bytes` as text, if they are UTF-8.
///
/// Header values, names and path segments are nearly always ASCII, and a bearer token's
/// value is hundreds of bytes: in the component, `str::from_utf8` took nearly three instructions
/// per byte of them, where ASCII is told eight bytes at a time.
#[allow(
    unsafe_code,
    reason = "ASCII checked here needs no second check as UTF-8"
)]
pub fn text(bytes: &[u8]) -> Option<&str> {
    if !is_ascii(bytes) {
        return std::str::from_utf8(bytes).ok();
    }
    // SAFETY: every byte is below 0x80, and ASCII is valid UTF-8.
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// Whether every byte is ASCII, read eight at a time. Not `<[u8]>::is_ascii`: it reads a
/// `usize`, four bytes on wasm32, around aligning steps, and cost the component 1,800 more
/// instructions per request.
fn is_ascii(bytes: &[u8]) -> bool {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let (words, rest) = bytes.as_chunks::<8>();
    let high = words
        .iter()
        .fold(0, |seen, word| seen | u64::from_ne_bytes(*word));
    high & HIGH_BITS == 0 && rest.is_ascii()
}

impl Response {
    /// A response with a body and content type.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Response {
            status,
            headers: vec![("content-type".into(), content_type.as_bytes().to_vec())],
            body: body.into(),
        }
    }

    /// A JSON response.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self::new(status, "application/json", value.to_string())
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name.to_string(), value.into()));
        self
    }
}

/// Splits an http(s) URL into scheme, authority and path (the control plane has checked
/// the form); `None` for anything else.
pub fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    split_endpoint_url(url).filter(|(scheme, _, _)| matches!(*scheme, "http" | "https"))
}

/// Splits an endpoint URL, http(s) or, for WebSocket APIs, ws(s), into scheme, authority
/// and path; `None` for anything else.
pub fn split_endpoint_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme, "http" | "https" | "ws" | "wss") {
        return None;
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    (!authority.is_empty()).then_some((scheme, authority, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ASCII and other UTF-8 read as text, other bytes do not: a high byte in any of the
    /// eight places of a word, or in the bytes after the last whole word.
    #[test]
    fn text_is_what_str_from_utf8_reads() {
        let samples: [&[u8]; 6] = [
            b"",
            b"Bearer abc.def",
            "caf\u{e9}".as_bytes(),
            b"\xff",
            b"a\xc3",
            "\u{1f600}".as_bytes(),
        ];
        for sample in samples {
            assert_eq!(text(sample), std::str::from_utf8(sample).ok(), "{sample:?}");
        }
        for len in 1..=24 {
            for at in 0..len {
                let mut bytes = vec![b'a'; len];
                assert_eq!(text(&bytes), Some("a".repeat(len).as_str()));
                bytes[at] = 0x80;
                assert_eq!(text(&bytes), None, "a high byte at {at} of {len}");
            }
        }
    }

    #[test]
    fn expiring_keys_carry_their_lifetime() {
        let key = expiry::key(300, "cache:a:b");
        assert_eq!(key, "apim:ttl:300:cache:a:b");
        assert_eq!(expiry::ttl_secs(&key), Some(300));
        assert_eq!(expiry::ttl_secs(&expiry::key(0, "x")), Some(1));
        assert_eq!(expiry::ttl_secs("apim:m:1:x"), None);
        assert_eq!(expiry::ttl_secs("apim:ttl:x:y"), None);
        // A window's counters outlive the next window: two windows and ten seconds.
        let minute = expiry::window_counters("thr:app:7", 60_000);
        assert_eq!(minute, "apim:ttl:130:window:thr:app:7");
        let counter = expiry::window_counter(&minute, 29);
        assert_eq!(counter, "apim:ttl:130:window:thr:app:7:29");
        assert!(expiry::is_window_counter(&counter));
        assert!(!expiry::is_window_counter("apim:ttl:130:cache:window:x"));
        assert!(!expiry::is_window_counter("apim:m:window:x"));
        assert_eq!(
            expiry::ttl_secs(&expiry::window_counters("tps:a", 1000)),
            Some(12)
        );
    }

    #[test]
    fn a_full_previous_window_leaves_room_for_the_whole_limit() {
        assert_eq!(expiry::previous_share(50, 0, 60_000), 50);
        assert_eq!(expiry::previous_share(50, 30_000, 60_000), 25);
        assert_eq!(expiry::previous_share(50, 59_999, 60_000), 0);
        assert_eq!(expiry::previous_share(50, 90_000, 60_000), 0);
        assert_eq!(expiry::previous_share(7, 0, 0), 7);
        assert_eq!(expiry::previous_share(u64::MAX, 0, u64::MAX), u64::MAX);
        // Calls asked for every millisecond after a window that admitted 50 of 50: this
        // one admits 50 again, evenly spread, as the one after it will.
        let (allowed, window) = (50, 60_000);
        let mut admitted = Vec::new();
        for into in 0..window {
            let share = expiry::previous_share(50, into, window);
            if share + (admitted.len() as u64) < allowed {
                admitted.push(into);
            }
        }
        assert_eq!(admitted.len(), 50);
        assert!(admitted.windows(2).all(|pair| pair[1] - pair[0] == 1_200));
    }

    #[test]
    fn urls_split_into_parts() {
        assert_eq!(split_url("http://h:1/a/b"), Some(("http", "h:1", "/a/b")));
        assert_eq!(split_url("https://h"), Some(("https", "h", "")));
        assert_eq!(split_url("ftp://h"), None);
        assert_eq!(split_url("ws://h/a"), None);
        assert_eq!(
            split_endpoint_url("wss://h:1/a"),
            Some(("wss", "h:1", "/a"))
        );
        assert_eq!(split_url("http:///x"), None);
    }
}
