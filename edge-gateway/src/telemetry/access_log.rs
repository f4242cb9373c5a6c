//! The access log: one JSON line per request on standard output (`APIM_ACCESS_LOG`, on by
//! default), for a log collector:
//!
//! ```json
//! {"time":"2026-11-26T05:21:25.123Z","client":"10.1.2.3:4567","method":"GET",
//!  "api":"Pets","version":"1.0.0","resource":"/pets/{id}","application":"<id>",
//!  "key_type":"PRODUCTION","user":"alice","status":200,"fault_code":null,
//!  "cached":false,"duration_ms":0.84,"backend_ms":0.61,"request_bytes":0,
//!  "response_bytes":512,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}
//! ```
//!
//! Fields the request did not get to are empty (or `null`); the raw path and query are
//! left out (queries carry API keys and personal data), the resource template says what
//! was called. The line is written once the response head is ready, so `duration_ms`
//! stops there and `response_bytes` is the announced length (`null` when the body is
//! streamed without one).
//!
//! Lines are appended to a buffer under a short lock and written by a thread of their own
//! every [`FLUSH_EVERY`], so a request never waits for standard output; while it cannot
//! write (a blocked pipe), lines beyond [`MAX_PENDING_BYTES`] are dropped and counted. Two
//! buffers take turns and keep their capacity, so that lines are not appended to a
//! freshly allocated buffer growing from scratch every [`FLUSH_EVERY`].

use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::telemetry::called::Called;

/// How often buffered lines are written out.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// Most bytes of lines waiting to be written.
pub const MAX_PENDING_BYTES: usize = 8 << 20;

/// One request's line: what the component said the request came to ([`Called`]; its
/// API id is not logged), and what the host saw of it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Entry<'a> {
    /// When it was answered (RFC 3339, UTC, milliseconds).
    pub time: &'a str,
    /// The client's socket address.
    pub client: &'a str,
    /// The request method.
    pub method: &'a str,
    /// The API, resource, application, key type and user, and whether from the cache.
    pub call: Called<'a>,
    /// Response status.
    pub status: u16,
    /// WSO2 fault code of a refusal.
    pub fault_code: Option<u32>,
    /// Until the response head, milliseconds.
    pub duration_ms: f64,
    /// The backend's share, milliseconds.
    pub backend_ms: Option<f64>,
    /// The request body's announced length.
    pub request_bytes: Option<u64>,
    /// The response body's length, when known.
    pub response_bytes: Option<u64>,
    /// The request's trace (32 hex digits; see [`super::spans`]).
    pub trace_id: &'a str,
}

impl<'a> Entry<'a> {
    /// Appends the entry as one JSON object, laid out here rather than through a derived
    /// `Serialize` (each name escaped and written in four pieces, the line took 4 % of a
    /// request's instructions, twice as much); text is escaped by `serde_json`.
    fn write_json(&self, out: &mut Vec<u8>) {
        // The host's own text: digits, an address, an HTTP method token (hyper takes no
        // other), nothing JSON escapes.
        plain_field(out, "{\"time\":", self.time);
        plain_field(out, ",\"client\":", self.client);
        plain_field(out, ",\"method\":", self.method);
        let call = &self.call;
        let texts = [
            (",\"api\":", call.api),
            (",\"version\":", call.version),
            (",\"resource\":", call.resource),
            (",\"application\":", call.application),
            (",\"key_type\":", call.key_type),
            (",\"user\":", call.user),
        ];
        for (name, text) in texts {
            text_field(out, name, text);
        }
        field(out, ",\"status\":", &self.status);
        field(out, ",\"fault_code\":", &self.fault_code);
        field(out, ",\"cached\":", &call.cached);
        field(out, ",\"duration_ms\":", &self.duration_ms);
        field(out, ",\"backend_ms\":", &self.backend_ms);
        field(out, ",\"request_bytes\":", &self.request_bytes);
        field(out, ",\"response_bytes\":", &self.response_bytes);
        plain_field(out, ",\"trace_id\":", self.trace_id);
        out.push(b'}');
    }
}

/// Appends `name` (with its quotes, colon and the separator before it) and `value` as
/// JSON, escaped by `serde_json`.
fn field(out: &mut Vec<u8>, name: &str, value: &impl Serialize) {
    out.extend_from_slice(name.as_bytes());
    // Text, numbers and booleans always serialize, and a `Vec` takes every write.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// [`field`] for text: copied between quotes when nothing in it needs escaping (names,
/// ids and templates, nearly always), which costs a fraction of `serde_json`'s escaping
/// byte by byte; else escaped by `serde_json`.
fn text_field(out: &mut Vec<u8>, name: &str, text: &str) {
    // The fold has no early exit, so it runs many bytes at a time.
    let plain = !text
        .bytes()
        .fold(false, |escaped, b| escaped | escaped_in_json(b));
    if plain {
        plain_field(out, name, text);
    } else {
        field(out, name, &text);
    }
}

/// [`field`] for text with nothing to escape in it.
fn plain_field(out: &mut Vec<u8>, name: &str, text: &str) {
    debug_assert!(!text.bytes().any(escaped_in_json));
    out.extend_from_slice(name.as_bytes());
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// Whether JSON escapes `b` in a string: control characters, quotes and backslashes, and
/// nothing else (UTF-8 passes as it is).
fn escaped_in_json(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

/// Lines waiting to be written, and how many were dropped.
pub struct AccessLog {
    pending: Mutex<Vec<u8>>,
    /// The buffer that takes `pending`'s place at the next flush (locked only by flushes,
    /// one at a time).
    spare: Mutex<Vec<u8>>,
    dropped: AtomicU64,
}

impl AccessLog {
    /// A log whose lines [`AccessLog::flush`] writes; start [`AccessLog::spawn_writer`].
    pub fn new() -> Self {
        Self {
            pending: Mutex::new(Vec::with_capacity(64 << 10)),
            spare: Mutex::new(Vec::with_capacity(64 << 10)),
            dropped: AtomicU64::new(0),
        }
    }

    /// Writes buffered lines every [`FLUSH_EVERY`] on a thread of its own, for as long as
    /// the process runs.
    pub fn spawn_writer(log: std::sync::Arc<AccessLog>) -> std::io::Result<()> {
        std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(FLUSH_EVERY);
                    log.flush();
                }
            })
            .map(drop)
    }

    /// Appends `entry` as a line (at `now`).
    pub fn write(&self, entry: Entry<'_>, now: SystemTime) {
        let mut time = [0u8; 24];
        let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let entry = Entry {
            time: apim_http::time::rfc3339_millis(since_epoch, &mut time),
            ..entry
        };
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.len() >= MAX_PENDING_BYTES {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        entry.write_json(&mut pending);
        pending.push(b'\n');
    }

    /// Writes what is buffered to standard output (outside the lock: requests keep
    /// appending meanwhile).
    pub fn flush(&self) {
        let mut lines = self.spare.lock().unwrap_or_else(|p| p.into_inner());
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if pending.is_empty() {
                return;
            }
            std::mem::swap(&mut *pending, &mut *lines);
        }
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(&lines)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        lines.clear();
    }

    /// Lines dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// What is buffered (for tests).
    #[cfg(test)]
    fn take(&self) -> String {
        let mut pending = self.pending.lock().unwrap();
        let text = String::from_utf8(pending.clone()).unwrap();
        pending.clear();
        text
    }
}

impl Default for AccessLog {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call to `api` by `user`.
    fn call<'a>(api: &'a str, user: &'a str) -> Called<'a> {
        Called {
            api,
            api_id: "api-1",
            version: "1.0.0",
            resource: "/menu",
            application: "6f1b7a2e-4c1d-4a57-9d0e-3f6f2b9c8a11",
            key_type: "PRODUCTION",
            user,
            cached: false,
        }
    }

    #[test]
    fn a_line_is_one_json_object_with_hostile_text_escaped() {
        let log = AccessLog::new();
        let call = call("Pets\"\n{", "eve\n{\"forged\":1}");
        let entry = Entry {
            client: "10.1.2.3:4567",
            method: "GET",
            status: 401,
            fault_code: Some(900901),
            duration_ms: 0.5,
            call,
            ..Entry::default()
        };
        log.write(entry, UNIX_EPOCH);
        let text = log.take();
        assert_eq!(text.lines().count(), 1, "{text}");
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(line["user"], "eve\n{\"forged\":1}");
        assert_eq!(line["fault_code"], 900901);
        assert_eq!(line["time"], "1970-01-01T00:00:00.000Z");
    }

    /// The line `entry` should make, built by `serde_json`.
    fn expected_line(entry: &Entry<'_>) -> serde_json::Value {
        let call = &entry.call;
        serde_json::json!({
            "time": entry.time,
            "client": entry.client,
            "method": entry.method,
            "api": call.api,
            "version": call.version,
            "resource": call.resource,
            "application": call.application,
            "key_type": call.key_type,
            "user": call.user,
            "status": entry.status,
            "fault_code": entry.fault_code,
            "cached": call.cached,
            "duration_ms": entry.duration_ms,
            "backend_ms": entry.backend_ms,
            "request_bytes": entry.request_bytes,
            "response_bytes": entry.response_bytes,
            "trace_id": entry.trace_id,
        })
    }

    #[test]
    fn lines_are_what_serde_json_makes_of_the_entry() {
        let hostile = call("Pets\"\n{\u{7f}\u{1}é", "eve\\\t{\"forged\":1}");
        let plain = call("Pets", "alice");
        let entries = [
            Entry {
                time: "2026-11-26T05:21:25.123Z",
                client: "[::1]:4567",
                method: "GET",
                status: 200,
                duration_ms: 0.84,
                backend_ms: Some(0.61),
                request_bytes: Some(0),
                response_bytes: Some(512),
                trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
                call: plain,
                ..Entry::default()
            },
            Entry {
                status: 429,
                fault_code: Some(900803),
                duration_ms: f64::NAN,
                backend_ms: Some(1e-7),
                call: Called {
                    cached: true,
                    ..hostile
                },
                ..Entry::default()
            },
            Entry {
                call: hostile,
                ..Entry::default()
            },
        ];
        for entry in entries {
            let mut laid_out = Vec::new();
            entry.write_json(&mut laid_out);
            let line: serde_json::Value = serde_json::from_slice(&laid_out).unwrap();
            assert_eq!(line, expected_line(&entry));
        }
    }

    #[test]
    fn flushes_empty_the_buffer_and_the_two_keep_their_capacity() {
        let log = AccessLog::new();
        let call = call("Pets", "alice");
        log.flush();
        for _ in 0..3 {
            log.write(
                Entry {
                    call,
                    ..Entry::default()
                },
                UNIX_EPOCH,
            );
            log.flush();
            assert!(log.pending.lock().unwrap().is_empty());
            assert!(log.spare.lock().unwrap().is_empty());
        }
        log.write(
            Entry {
                call,
                ..Entry::default()
            },
            UNIX_EPOCH,
        );
        assert_eq!(log.take().lines().count(), 1);
        for buffer in [&log.pending, &log.spare] {
            assert!(buffer.lock().unwrap().capacity() >= 64 << 10);
        }
        assert_eq!(log.dropped(), 0);
    }

    /// The cost of a line, for the benchmark's budget (`cargo test --release -p
    /// edge-gateway -- --ignored --nocapture access_line_cost`).
    #[test]
    #[ignore]
    fn access_line_cost() {
        let log = AccessLog::new();
        let call = call("PizzaShackAPI", "admin");
        let rounds: u64 = 1_000_000;
        let started = std::time::Instant::now();
        for n in 0..rounds {
            let entry = Entry {
                client: "127.0.0.1:50000",
                method: "GET",
                status: 200,
                duration_ms: 0.028,
                backend_ms: Some(0.011),
                response_bytes: Some(n % 1000),
                call,
                ..Entry::default()
            };
            log.write(entry, SystemTime::now());
            if n % 10_000 == 0 {
                log.take();
            }
        }
        println!("access line: {:?}", started.elapsed() / rounds as u32);
    }
}
