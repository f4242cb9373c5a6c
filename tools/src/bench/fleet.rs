//! Publish → live across a fleet (`--only fleet`): `--fleet-gateways` edge-gateway
//! processes on this machine, each with its own in-memory store, each long-polling one
//! control plane (SQLite) for changes; no pushes (`APIM_GATEWAYS` is not set). APIs are
//! published one after the other, each once the previous one is live everywhere and the
//! platform is quiet, and each publish is timed until every gateway answers the new
//! route: 401 without a token (route known) where it answered 404 before.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::task::JoinSet;

use super::Options;
use super::propagation::{self, ManifestLog};
use super::stats::{Latencies, median};
use harness::machine;
use harness::stack::{Core, Stack};
use harness::{Backend, Client, ServerProcess};

/// Longest a gateway may take to show a publish before it counts as never.
const GIVE_UP: Duration = Duration::from_secs(30);

/// What the fleet case measured.
#[derive(Debug, Clone, Default)]
pub struct FleetResults {
    /// Gateways in the fleet.
    pub gateways: usize,
    /// Timed publishes.
    pub publishes: usize,
    /// How often each gateway was asked, ms.
    pub poll_ms: u64,
    /// Publish sent → the last gateway answers 401 (live on all).
    pub all: Latencies,
    /// Publish sent → the first gateway answers 401.
    pub first: Latencies,
    /// Publish sent → one gateway answers 401, every (publish, gateway) pair.
    pub each: Latencies,
    /// The last gateway's time less the first one's.
    pub spread: Latencies,
    /// Publish sent → the manifest version carrying it compiled (control plane's log).
    pub compiled: Latencies,
    /// (publish, gateway) pairs that never showed within 30 s.
    pub failures: usize,
    /// Median over publishes of each gateway's time, ms, in start order: whether some
    /// gateways are always late.
    pub per_gateway_p50_ms: Vec<f64>,
    /// Each gateway's resident memory after the run, MiB.
    pub rss_mib: Vec<f64>,
    /// The control plane's, MiB.
    pub control_plane_rss_mib: f64,
    /// Starting the whole fleet (one compiles the component, the others read the cache), s.
    pub start_secs: f64,
    /// Publishes that had to wait for a quiet machine first (another build running).
    pub waited: usize,
}

/// Runs the fleet case.
pub async fn measure(options: &Options) -> FleetResults {
    // Children inherit this thread's CPUs: the whole machine here.
    machine::pin_thread("0,1");
    let data_dir = harness::temp_dir();
    let core = Core::start(
        &Backend::Sqlite,
        data_dir,
        &[
            // Compile events, timed (no pushes: APIM_GATEWAYS is not set).
            ("APIM_LOG_JSON", "true".into()),
            ("RUST_LOG", "warn,control_plane::fleet::hub=info".into()),
        ],
    )
    .await;
    let count = options.fleet_gateways.max(1);
    eprintln!("bench: fleet: starting {count} gateways");
    let started = Instant::now();
    let mut gateways: Vec<ServerProcess> = Vec::new();
    for i in 0..count {
        let id = format!("gateway_id=fleet-{:02}", i + 1);
        let settings = [
            ("APIM_WORKER_THREADS", "1".to_string()),
            ("APIM_MAX_INSTANCES", "4".to_string()),
        ];
        gateways.push(
            harness::start_edge_gateway_with(
                &core.control_plane,
                &core.data_dir,
                "127.0.0.1:0",
                &[&id],
                &settings,
            )
            .await,
        );
    }
    let start_secs = started.elapsed().as_secs_f64();
    let clients: Vec<Client> = gateways.iter().map(|g| Client::new(&g.url)).collect();
    let mut pids: Vec<u32> = gateways.iter().map(|g| g.pid()).collect();
    pids.push(core.control_plane.pid());
    let stack = core.with_gateway(gateways.remove(0));
    let log = ManifestLog::default();

    // Every gateway has pulled the manifest and warmed an instance up: one publish, untimed.
    stack.api("FleetWarm", json!({}), &["Publish"]).await;
    let warm_path = "/fleetwarm/v1.0.0/devs/alice".to_string();
    let warmed = live_everywhere(&clients, &warm_path, Instant::now(), 5).await;
    assert!(
        warmed.iter().all(Option::is_some),
        "fleet: not every gateway came up to date"
    );

    // The timed APIs exist (CREATED) before the clock runs: 404 everywhere.
    let publishes = options.fleet_publishes;
    let mut apis = Vec::new();
    for i in 0..publishes {
        let name = format!("Fleet{i}");
        let path = format!("/{}/v1.0.0/devs/alice", name.to_lowercase());
        apis.push((stack.api(&name, json!({}), &[]).await, path));
    }
    for client in &clients {
        let reply = client.get(&apis[0].1, "").await;
        assert_eq!(reply.status, 404, "an unpublished API must be unknown");
    }
    let mut waited = 0;
    let mut samples: Vec<Vec<Option<Duration>>> = Vec::new();
    let mut compiled = Vec::new();
    for (i, (api, path)) in apis.iter().enumerate() {
        // Another build on these two cores would time it, not the fleet.
        waited += usize::from(machine::wait_for_quiet_cpu().await);
        settle(&pids).await;
        let sent = propagation::wall_clock();
        let started = Instant::now();
        let polls = live_everywhere(&clients, path, started, options.fleet_poll_ms);
        let ((), times) = tokio::join!(stack.lifecycle(api, "Publish"), polls);
        let first = times.iter().flatten().min().copied().unwrap_or(GIVE_UP);
        let output = stack.control_plane.as_ref().map(|c| c.output());
        let compiles = log.compiled(&output.unwrap_or_default());
        if let Some(at) = compiled_by(&compiles, sent, first) {
            compiled.push(at);
        }
        if (i + 1) % 10 == 0 {
            eprintln!("bench: fleet: {} of {publishes} publishes", i + 1);
        }
        samples.push(times);
    }
    let results = summarise(
        options,
        &samples,
        &compiled,
        &gateways_rss(&stack, &gateways),
        start_secs,
        waited,
        stack
            .control_plane
            .as_ref()
            .map_or(f64::NAN, |c| machine::rss_mib(c.pid())),
    );
    for gateway in gateways {
        gateway.stop().await;
    }
    stack.gateway.stop().await;
    if let Some(control_plane) = stack.control_plane {
        control_plane.stop().await;
    }
    let _ = std::fs::remove_dir_all(&stack.data_dir);
    results
}

/// Resident memory of every gateway, the first (the stack's) first.
fn gateways_rss(stack: &Stack, others: &[ServerProcess]) -> Vec<f64> {
    std::iter::once(stack.gateway.pid())
        .chain(others.iter().map(|g| g.pid()))
        .map(machine::rss_mib)
        .collect()
}

fn summarise(
    options: &Options,
    samples: &[Vec<Option<Duration>>],
    compiled: &[Duration],
    rss_mib: &[f64],
    start_secs: f64,
    waited: usize,
    control_plane_rss_mib: f64,
) -> FleetResults {
    let gateways = samples.first().map_or(0, Vec::len);
    let mut all = Vec::new();
    let mut first = Vec::new();
    let mut spread = Vec::new();
    for times in samples {
        let shown: Vec<Duration> = times.iter().flatten().copied().collect();
        let (Some(min), Some(max)) = (shown.iter().min(), shown.iter().max()) else {
            continue;
        };
        first.push(*min);
        if shown.len() == times.len() {
            all.push(*max);
            spread.push(*max - *min);
        }
    }
    let each: Vec<Duration> = samples.iter().flatten().flatten().copied().collect();
    let per_gateway_p50_ms = (0..gateways)
        .map(|g| {
            median(
                samples
                    .iter()
                    .filter_map(|times| times[g])
                    .map(|d| d.as_secs_f64() * 1e3),
            )
        })
        .collect();
    FleetResults {
        gateways,
        publishes: samples.len(),
        poll_ms: options.fleet_poll_ms,
        all: Latencies::of(&all),
        first: Latencies::of(&first),
        each: Latencies::of(&each),
        spread: Latencies::of(&spread),
        compiled: Latencies::of(compiled),
        failures: samples.iter().flatten().filter(|t| t.is_none()).count(),
        per_gateway_p50_ms,
        rss_mib: rss_mib.to_vec(),
        control_plane_rss_mib,
        start_secs,
        waited,
    }
}

/// Asks every gateway for `path` without a token every `poll_ms` until it answers 401;
/// for each gateway, how long after `started` that was (None after 30 s).
async fn live_everywhere(
    clients: &[Client],
    path: &str,
    started: Instant,
    poll_ms: u64,
) -> Vec<Option<Duration>> {
    let mut polls = JoinSet::new();
    for (i, client) in clients.iter().enumerate() {
        let (client, path) = (client.clone(), path.to_string());
        polls.spawn(async move {
            while started.elapsed() < GIVE_UP {
                if client.get(&path, "").await.status == 401 {
                    return (i, Some(started.elapsed()));
                }
                tokio::time::sleep(Duration::from_millis(poll_ms)).await;
            }
            eprintln!("bench: fleet: gateway {} never showed {path}", i + 1);
            (i, None)
        });
    }
    let mut times = vec![None; clients.len()];
    while let Some(joined) = polls.join_next().await {
        let (i, time) = joined.expect("poll task");
        times[i] = time;
    }
    times
}

/// The newest manifest compiled after `sent` (second of day) and before the first gateway
/// showed the change (`first` after `sent`): how long after `sent` it was compiled.
fn compiled_by(compiles: &[(u64, f64)], sent: f64, first: Duration) -> Option<Duration> {
    let first = first.as_secs_f64();
    compiles
        .iter()
        .map(|(_, at)| (at - sent).rem_euclid(86_400.0))
        .filter(|since| *since <= first)
        .max_by(f64::total_cmp)
        .map(Duration::from_secs_f64)
}

/// Waits until the control plane and every gateway used no CPU for 100 ms (at most 30 s).
async fn settle(pids: &[u32]) {
    let started = Instant::now();
    let mut last = u64::MAX;
    let mut quiet_since = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        let ticks: u64 = pids.iter().map(|p| propagation::cpu_ticks(*p)).sum();
        if ticks != last {
            last = ticks;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= Duration::from_millis(100) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_compile_that_carried_the_change() {
        let compiles = [(1, 99.0), (2, 100.004), (3, 100.5)];
        let at = compiled_by(&compiles, 100.0, Duration::from_millis(20)).expect("compiled");
        assert_eq!(at.as_millis(), 4);
        assert_eq!(
            compiled_by(&compiles, 100.6, Duration::from_millis(5)),
            None
        );
    }

    #[test]
    fn live_on_all_is_the_slowest_gateway() {
        let ms = Duration::from_millis;
        let samples = vec![vec![Some(ms(10)), Some(ms(30))], vec![Some(ms(12)), None]];
        let options = <Options as clap::Parser>::parse_from(["bench"]);
        let results = summarise(&options, &samples, &[], &[], 0.0, 0, 0.0);
        assert_eq!(results.all.count, 1);
        assert_eq!(results.all.max_ms, 30.0);
        assert_eq!(results.first.count, 2);
        assert_eq!(results.each.count, 3);
        assert_eq!(results.failures, 1);
        assert_eq!(results.spread.max_ms, 20.0);
    }
}
