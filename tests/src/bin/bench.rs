//! `cargo run --release -p e2e --bin bench`: what the gateway costs per request.
//!
//! Starts the whole stack in release mode (control plane, edge gateway pinned to CPU 1,
//! an echo backend and the load on CPU 0), publishes an API, subscribes, and then drives
//! keep-alive load straight at the backend and through the gateway, at concurrency 1
//! (the latency the gateway adds) and at higher concurrency (throughput). Prints
//! requests per second, p50/p99 latency, and the gateway's resident memory.
//! Options: `--seconds N` (default 10), `--connections N` (default 32), `--hold` (keep the
//! stack up for a profiler instead of measuring).

use std::sync::Arc;
use std::time::{Duration, Instant};

use e2e::stack::Stack;

struct Run {
    requests: usize,
    elapsed: Duration,
    latencies_us: Vec<u64>,
}

impl Run {
    fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> u64 {
        let mut sorted = self.latencies_us.clone();
        sorted.sort_unstable();
        sorted
            .get(((sorted.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or_default()
    }
}

/// `connections` keep-alive clients sending GET `url` for `seconds`; every answer must be 200.
async fn load(url: &str, token: &str, connections: usize, seconds: u64) -> Run {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .build()
        .expect("client");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (client, url, token) = (client.clone(), url.to_string(), token.to_string());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let sent = Instant::now();
                let response = client
                    .get(&url)
                    .bearer_auth(&token)
                    .send()
                    .await
                    .expect("request");
                assert_eq!(response.status(), 200, "{url}");
                let _ = response.bytes().await;
                latencies.push(sent.elapsed().as_micros() as u64);
            }
            latencies
        }));
    }
    let mut latencies_us = Vec::new();
    for task in tasks {
        latencies_us.extend(task.await.expect("load task"));
    }
    Run {
        requests: latencies_us.len(),
        elapsed: started.elapsed(),
        latencies_us,
    }
}

fn pin(pid: u32, cpu: &str) {
    let _ = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpu, &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .status();
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(str::to_string)
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let seconds = arg("--seconds", 10);
    let connections = arg("--connections", 32) as usize;
    // The load generator and the backend share CPU 0; the gateway gets CPU 1.
    pin(std::process::id(), "0");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let stack = Arc::new(Stack::start(&[]).await);
        let gateway_pid = stack.gateway.pid();
        pin(gateway_pid, "1");
        let api = stack
            // No maxTps: the spec's record caps production at 1000 requests per second.
            .api("Bench", serde_json::json!({"maxTps": null}), &["Publish"])
            .await;
        let (_, key, secret, _) = stack.application("BenchApp", "Unlimited", &[&api]).await;
        let token = stack.app_token(&key, &secret, &[]).await;
        let through_gateway = format!("{}/bench/v1.0.0/devs/alice", stack.gw.base);
        let direct = format!("{}/devs/alice", stack.backend.url);
        // Wait for the manifest, then warm up instances, caches and connection pools.
        let deadline = Instant::now() + Duration::from_secs(15);
        while stack
            .gw
            .get("/bench/v1.0.0/devs/alice", &token)
            .await
            .status
            != 200
        {
            assert!(Instant::now() < deadline, "the API never became invocable");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        load(&through_gateway, &token, connections, 2).await;
        let rss_idle = rss_mib(gateway_pid);
        if std::env::args().any(|a| a == "--hold") {
            // For profilers: keep the stack up and say how to load it.
            println!("gateway pid {gateway_pid}; try: wrk -c32 -d10s -H 'Authorization: Bearer {token}' {through_gateway}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }

        println!("gateway benchmark: {seconds} s per run, keep-alive GET, gateway pinned to CPU 1");
        println!(
            "{:<34} {:>10} {:>9} {:>9}",
            "run", "req/s", "p50 µs", "p99 µs"
        );
        let mut results = Vec::new();
        for (name, url, c) in [
            ("backend direct, 1 connection", &direct, 1),
            ("through gateway, 1 connection", &through_gateway, 1),
            ("backend direct, N connections", &direct, connections),
            (
                "through gateway, N connections",
                &through_gateway,
                connections,
            ),
        ] {
            let run = load(url, &token, c, seconds).await;
            println!(
                "{:<34} {:>10.0} {:>9} {:>9}",
                name.replace('N', &connections.to_string()),
                run.rate(),
                run.percentile(0.5),
                run.percentile(0.99)
            );
            results.push(run);
        }
        let added = results[1].percentile(0.5) as i64 - results[0].percentile(0.5) as i64;
        println!("latency the gateway adds at concurrency 1 (p50): {added} µs");
        println!(
            "gateway resident memory: {rss_idle:.1} MiB after warm-up, {:.1} MiB after load",
            rss_mib(gateway_pid)
        );
    });
}
