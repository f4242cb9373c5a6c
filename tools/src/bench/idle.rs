//! Memory per idle connection (`--only idle`): `--idle-connections` clients each open a
//! kept-alive connection to edge-gateway (full policy, plain HTTP), call the benchmark's
//! secured resource once and then hold the connection idle; the gateway's resident memory
//! before and while they are held gives the cost of one. Meanwhile a fresh client on a
//! connection of its own is timed over `--idle-probes` calls, one after the other.

use std::time::Duration;

use super::Options;
use super::backend::FastBackend;
use super::platform::{BASE, Platform, SECURED};
use super::stats::Latencies;
use harness::held;
use harness::machine;

/// Connections being opened at once (the listen backlog holds the rest).
const OPENING: usize = 256;
/// Calls on connections of their own before the baseline is read, so that instances,
/// pools and caches are as they are under load, and only connections differ.
pub const WARM_CONNECTIONS: usize = 512;
/// Pause before each reading of resident memory: freed memory returns to the system.
const SETTLE: Duration = Duration::from_secs(2);

/// What the idle case measured.
#[derive(Debug, Clone, Default)]
pub struct IdleResults {
    /// Connections held.
    pub connections: usize,
    /// The gateway's resident memory, warm, before they were opened, MiB.
    pub before_mib: f64,
    /// The same with every connection held, MiB.
    pub held_mib: f64,
    /// The difference per connection, KiB.
    pub per_connection_kib: f64,
    /// A fresh client's calls while they are held.
    pub fresh: Latencies,
    /// Connections that were not answered 200 (opening or calling).
    pub failures: usize,
}

/// Runs the idle case.
pub async fn measure(options: &Options) -> IdleResults {
    let limit = held::raise_file_limit();
    let count = options.idle_connections;
    assert!(
        limit as usize > count + 100,
        "open-file limit {limit} is too low for {count} connections"
    );
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let results = held_connections(options, &platform).await;
    platform.stop().await;
    results
}

/// Warms the gateway, reads its memory, holds the connections and reads it again.
async fn held_connections(options: &Options, platform: &Platform) -> IdleResults {
    let addr = platform.stack.gw.base.trim_start_matches("http://");
    let request = held::get(&format!("{BASE}{SECURED}"), &platform.token);
    let pid = platform.gateway_pid();
    let (warm, _) = held::hold(addr, &request, WARM_CONNECTIONS, OPENING).await;
    drop(warm);
    tokio::time::sleep(SETTLE).await;
    let before_mib = machine::rss_mib(pid);
    let count = options.idle_connections;
    eprintln!("bench: idle: holding {count} connections");
    let (connections, failures) = held::hold(addr, &request, count, OPENING).await;
    tokio::time::sleep(SETTLE).await;
    let held_mib = machine::rss_mib(pid);
    let fresh = fresh_client(addr, &request, options.idle_probes).await;
    let per_connection_kib = (held_mib - before_mib) * 1024.0 / connections.len().max(1) as f64;
    eprintln!(
        "bench: idle: {before_mib:.1} → {held_mib:.1} MiB with {} held ({per_connection_kib:.1} \
         KiB each; {} failed); a fresh client p50 {:.3} ms, p99 {:.3} ms",
        connections.len(),
        failures.len(),
        fresh.p50_ms,
        fresh.p99_ms
    );
    IdleResults {
        connections: connections.len(),
        before_mib,
        held_mib,
        per_connection_kib,
        fresh,
        failures: failures.len(),
    }
}

/// `probes` calls, one after the other, on a new kept-alive connection.
async fn fresh_client(addr: &str, request: &[u8], probes: usize) -> Latencies {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("fresh client connects");
    let mut samples = Vec::with_capacity(probes);
    for _ in 0..probes {
        let (status, took) = held::call(&mut stream, request)
            .await
            .expect("fresh client answered");
        assert_eq!(status, 200, "a fresh client is served");
        samples.push(took);
    }
    Latencies::of(&samples)
}
