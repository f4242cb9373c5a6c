//! How long a change takes to show at the gateway: publish → first 200, revocation →
//! 401, unsubscribe → 403 900908, each split into compile and delivery by the control
//! plane's own log (`route manifest compiled` / `manifest delivered` / `manifest push
//! failed`, JSON, UTC).
//!
//! Every timed change starts from a quiet platform (nothing compiling or being pushed),
//! and is timed from sending its request to the first gateway answer that shows it,
//! polling the gateway about every millisecond.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::platform::{self, BASE, Platform, SECURED};
use super::stats::Latencies;
use harness::{Client, Reply, STORE};

/// Longest a change may take to show before it counts as failed.
const GIVE_UP: Duration = Duration::from_secs(30);

/// Timings of one kind of change.
#[derive(Debug, Clone, Default)]
pub struct Propagation {
    /// Request sent → the gateway shows the change.
    pub total: Latencies,
    /// Request sent → the version carrying it compiled.
    pub compiled: Latencies,
    /// Compiled → the gateway accepted the push (transfer, verification, storing).
    pub delivered: Latencies,
    /// Accepted → the first answer that shows it (the instance loading the new manifest,
    /// and up to a millisecond of polling).
    pub applied: Latencies,
    /// Changes that never showed (after one has waited 30 s in vain while the gateway
    /// refuses manifests, the rest are not tried).
    pub failures: usize,
    /// Why the gateway refused the manifests, when it did.
    pub refused: Option<String>,
}

impl Propagation {
    fn of(samples: &[Sample]) -> Self {
        let all = |f: fn(&Sample) -> Option<Duration>| -> Vec<Duration> {
            samples.iter().filter_map(f).collect()
        };
        Propagation {
            total: Latencies::of(&all(|s| s.total)),
            compiled: Latencies::of(&all(|s| s.compiled)),
            delivered: Latencies::of(&all(|s| s.delivered)),
            applied: Latencies::of(&all(|s| s.total?.checked_sub(s.compiled? + s.delivered?))),
            failures: samples.iter().filter(|s| s.total.is_none()).count(),
            refused: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    total: Option<Duration>,
    compiled: Option<Duration>,
    delivered: Option<Duration>,
}

/// `count` publishes of new APIs (created beforehand, untimed). The benchmark application
/// subscribes right after Publish answers 200 (a store cannot subscribe to an unpublished
/// API), so the time covers publish + subscribe → first 200 with its token. Returns the
/// subscriptions and the paths they open.
pub async fn publishes(
    platform: &Platform,
    tag: &str,
    count: usize,
) -> (Propagation, Vec<(String, String)>) {
    let stack = &platform.stack;
    let mut apis = Vec::new();
    for i in 0..count {
        let name = format!("Live{tag}{i}");
        let path = format!("/{}/v1.0.0/devs/alice", name.to_lowercase());
        apis.push((stack.api(&name, json!({}), &[]).await, path));
    }
    let mut subscriptions = Vec::new();
    let propagation = time_each(platform, &apis, async |(api, path)| {
        let change = async {
            stack.lifecycle(api, "Publish").await;
            platform::subscribe(stack, &platform.application, api).await
        };
        let (sample, subscription) =
            timed(platform, path, &platform.token, |r| r.status == 200, change).await;
        subscriptions.push((subscription, path.clone()));
        sample
    })
    .await;
    (propagation, subscriptions)
}

/// Deletes each subscription → the gateway answers 403 900908 on the path it opened.
pub async fn unsubscribes(platform: &Platform, subscriptions: &[(String, String)]) -> Propagation {
    let stack = &platform.stack;
    time_each(platform, subscriptions, async |(subscription, path)| {
        let change = async {
            let path = format!("{STORE}/subscriptions/{subscription}");
            stack.mgmt.delete(&path, &stack.admin).await.expect(200);
        };
        let refused = |r: &Reply| r.status == 403 && r.body.to_string().contains("900908");
        timed(platform, path, &platform.token, refused, change)
            .await
            .0
    })
    .await
}

/// `count` client_credentials tokens, each revoked (`POST /oauth2/revoke`) → 401.
pub async fn revocations(platform: &Platform, count: usize) -> Propagation {
    let path = format!("{BASE}{SECURED}");
    let mut tokens = Vec::new();
    for _ in 0..count {
        let token = platform::fresh_token(platform).await;
        poll(&platform.stack.gw, &path, &token, |r| r.status == 200).await;
        tokens.push(token);
    }
    time_each(platform, &tokens, async |token| {
        let change = async {
            let form = [("token", token.as_str())];
            let mgmt = &platform.stack.mgmt;
            let revoke = mgmt.token_at("/oauth2/revoke", &platform.key, &platform.secret, &form);
            revoke.await.expect(200);
        };
        timed(platform, &path, token, |r| r.status == 401, change)
            .await
            .0
    })
    .await
}

/// Times a change per item; once one never shows while the gateway refuses manifests, the
/// others could not show either and count as failures untried.
async fn time_each<T>(
    platform: &Platform,
    items: &[T],
    mut time_one: impl AsyncFnMut(&T) -> Sample,
) -> Propagation {
    let mut samples = Vec::new();
    for item in items {
        let sample = time_one(item).await;
        samples.push(sample);
        if sample.total.is_some() {
            continue;
        }
        if let Some(reason) = refusal(platform) {
            let mut propagation = Propagation::of(&samples);
            propagation.failures += items.len() - samples.len();
            propagation.refused = Some(reason);
            return propagation;
        }
    }
    Propagation::of(&samples)
}

/// Waits for a quiet platform, applies `change`, and polls `path` until `shows`.
async fn timed<T>(
    platform: &Platform,
    path: &str,
    token: &str,
    shows: fn(&Reply) -> bool,
    change: impl Future<Output = T>,
) -> (Sample, T) {
    settle(platform).await;
    let sent = wall_clock();
    let started = Instant::now();
    let outcome = change.await;
    let total = poll(&platform.stack.gw, path, token, shows)
        .await
        .map(|_| started.elapsed());
    let shown = sent + total.unwrap_or(GIVE_UP).as_secs_f64();
    settle(platform).await;
    let (compiled, delivered) = split(&events(platform), sent, shown);
    let sample = Sample {
        total,
        compiled,
        delivered,
    };
    (sample, outcome)
}

/// GETs `path` on the gateway about every millisecond until `shows`; how long that took,
/// None after 30 s.
pub async fn poll(
    gw: &Client,
    path: &str,
    token: &str,
    shows: fn(&Reply) -> bool,
) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < GIVE_UP {
        if shows(&gw.get(path, token).await) {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    eprintln!("bench: {path} did not change within {GIVE_UP:?}");
    None
}

/// The manifest that made a change (sent at `sent`) show at `shown`: the newest compiled
/// by then. How long after `sent` it was compiled, and how long its delivery took.
fn split(events: &[Event], sent: f64, shown: f64) -> (Option<Duration>, Option<Duration>) {
    let since = |t: f64, from: f64| Duration::from_secs_f64((t - from).rem_euclid(86_400.0));
    let Some(compiled) = events
        .iter()
        .filter(|e| e.kind == Kind::Compiled && after(e.at, sent) && !after(e.at, shown))
        .max_by_key(|e| e.version)
    else {
        return (None, None);
    };
    let delivered = events
        .iter()
        .find(|e| e.kind == Kind::Delivered && e.version >= compiled.version)
        .map(|d| since(d.at, compiled.at));
    (Some(since(compiled.at, sent)), delivered)
}

/// Whether second-of-day `t` comes after `from` (within half a day, across midnight).
fn after(t: f64, from: f64) -> bool {
    (t - from).rem_euclid(86_400.0) < 43_200.0
}

/// Waits until nothing is being compiled or pushed: the newest manifest delivered (or
/// pushes failing), no new log event and no CPU used by the control plane or gateway for
/// 100 ms (so that a pending compile shows).
pub async fn settle(platform: &Platform) {
    let pids = [platform.control_plane_pid(), platform.gateway_pid()];
    let started = Instant::now();
    let mut last = (usize::MAX, 0);
    let mut quiet_since = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        let events = events(platform);
        let state = (events.len(), pids.iter().map(|p| cpu_ticks(*p)).sum());
        if state != last {
            last = state;
            quiet_since = Instant::now();
        }
        let done =
            newest(&events, Kind::Delivered) >= newest(&events, Kind::Compiled) || failing(&events);
        if done && quiet_since.elapsed() >= Duration::from_millis(100) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    eprintln!("bench: the platform did not quiet down within 120 s");
}

fn newest(events: &[Event], kind: Kind) -> Option<u64> {
    events
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.version)
        .max()
}

/// Whether the last push attempt failed. (The newest manifest need not have been tried:
/// the control plane may wait for a further change before pushing again.)
fn failing(events: &[Event]) -> bool {
    events
        .iter()
        .rev()
        .find(|e| e.kind != Kind::Compiled)
        .is_some_and(|e| e.kind == Kind::Refused)
}

/// Manifests compiled so far.
pub fn compiled_count(platform: &Platform) -> usize {
    events(platform)
        .iter()
        .filter(|e| e.kind == Kind::Compiled)
        .count()
}

/// Why the last push failed, when it did.
pub fn refusal(platform: &Platform) -> Option<String> {
    failing(&events(platform)).then(|| platform.manifest_log.last_refusal())
}

/// What the control plane logged about a manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `route manifest compiled`.
    Compiled,
    /// `manifest delivered`.
    Delivered,
    /// `manifest push failed; will retry`.
    Refused,
}

/// A compile or push logged by the control plane.
#[derive(Debug, Clone, Copy)]
struct Event {
    kind: Kind,
    version: u64,
    /// Seconds since midnight UTC.
    at: f64,
}

fn events(platform: &Platform) -> Vec<Event> {
    let Some(control_plane) = platform.stack.control_plane.as_ref() else {
        return Vec::new();
    };
    platform.manifest_log.read(&control_plane.output())
}

/// The control plane's manifest events, parsed once as its output grows.
#[derive(Debug, Default)]
pub struct ManifestLog(std::sync::Mutex<LogState>);

#[derive(Debug, Default)]
struct LogState {
    parsed: usize,
    events: Vec<Event>,
    last_refusal: String,
}

impl ManifestLog {
    fn read(&self, output: &str) -> Vec<Event> {
        let mut state = self.0.lock().expect("manifest log");
        // Only whole lines: the last one may still be arriving.
        let end = output.rfind('\n').map_or(0, |i| i + 1);
        for line in output.get(state.parsed..end).unwrap_or_default().lines() {
            if let Some((event, error)) = event(line) {
                if let Some(error) = error {
                    state.last_refusal = error;
                }
                state.events.push(event);
            }
        }
        state.parsed = end.max(state.parsed);
        state.events.clone()
    }

    /// When each manifest version was compiled, as `(version, second of day UTC)`, from
    /// the control plane's `output` so far.
    pub(super) fn compiled(&self, output: &str) -> Vec<(u64, f64)> {
        self.read(output)
            .into_iter()
            .filter(|e| e.kind == Kind::Compiled)
            .map(|e| (e.version, e.at))
            .collect()
    }

    fn last_refusal(&self) -> String {
        self.0.lock().expect("manifest log").last_refusal.clone()
    }
}

/// An event, with the push error of a refusal.
fn event(line: &str) -> Option<(Event, Option<String>)> {
    let entry: serde_json::Value = serde_json::from_str(line).ok()?;
    let fields = &entry["fields"];
    let kind = match fields["message"].as_str()? {
        "route manifest compiled" => Kind::Compiled,
        "manifest delivered" => Kind::Delivered,
        "manifest push failed; will retry" => Kind::Refused,
        _ => return None,
    };
    let event = Event {
        kind,
        version: fields["version"].as_u64()?,
        at: second_of_day(entry["timestamp"].as_str()?)?,
    };
    let error = fields["error"]
        .as_str()
        .map(|e| e.chars().take(200).collect());
    Some((event, error))
}

/// "2026-11-22T06:22:33.123456Z" → 22953.123456.
fn second_of_day(timestamp: &str) -> Option<f64> {
    let time = timestamp.split_once('T')?.1.trim_end_matches('Z');
    let mut parts = time.split(':').map(|p| p.parse::<f64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(h * 3600.0 + m * 60.0 + s)
}

/// Seconds since midnight UTC, now (the clock of the control plane's log).
pub(super) fn wall_clock() -> f64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    now.as_secs_f64().rem_euclid(86_400.0)
}

/// User plus system CPU time of a process, in clock ticks.
pub(super) fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime and stime are the
    // 12th and 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    rest.split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_control_plane_log() {
        let line = r#"{"timestamp":"2026-11-22T06:22:33.500000Z","level":"INFO","fields":{"message":"route manifest compiled","version":7},"target":"control_plane::fleet::hub"}"#;
        let (event, error) = event(line).expect("event");
        assert_eq!(event.kind, Kind::Compiled);
        assert_eq!(error, None);
        assert_eq!(event.version, 7);
        assert!((event.at - 22_953.5).abs() < 1e-6);
    }

    #[test]
    fn pushes_fail_while_the_last_attempt_failed() {
        let at = |kind, version| Event {
            kind,
            version,
            at: 0.0,
        };
        let events = [
            at(Kind::Compiled, 1),
            at(Kind::Delivered, 1),
            at(Kind::Compiled, 2),
        ];
        assert!(!failing(&events));
        let events = [
            at(Kind::Compiled, 2),
            at(Kind::Refused, 2),
            at(Kind::Compiled, 3),
        ];
        assert!(failing(&events));
    }

    #[test]
    fn splits_at_the_manifest_that_showed_the_change() {
        let events = [
            Event {
                kind: Kind::Compiled,
                version: 1,
                at: 9.0,
            },
            Event {
                kind: Kind::Compiled,
                version: 2,
                at: 10.03,
            },
            Event {
                kind: Kind::Delivered,
                version: 2,
                at: 10.05,
            },
            Event {
                kind: Kind::Compiled,
                version: 3,
                at: 11.0,
            },
        ];
        let (compiled, delivered) = split(&events, 10.0, 10.06);
        assert_eq!(compiled.map(|d| d.as_millis()), Some(30));
        assert_eq!(delivered.map(|d| d.as_millis()), Some(20));
    }
}
