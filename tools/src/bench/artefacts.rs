//! Case 4 (full policy, JWT) on the `wasi:http` path for each artefact of the gateway: the
//! WASI 0.2 component (edge-gateway with `APIM_HOST_FORWARDING=false`, an instance reused
//! for request after request, one at a time) and the WASIp3 artefact hosted with reuse as
//! Spin 4.1 hosts it (an instance for up to 128 requests, up to 16 at once) and, to show
//! what taking several at once gives, one at a time. Each is its own edge-gateway on the
//! same control plane, pinned to CPU 1; they take turns round by round, the idle ones
//! waiting on a long poll.

use std::fmt::Write as _;

use super::Options;
use super::backend::FastBackend;
use super::load::{Load, Wrk, cpu_cell};
use super::platform::{BASE, Platform, SECURED, start_pinned_gateway};
use super::profile::{self, Profile};
use super::stats::median;
use harness::{ServerProcess, machine};

/// One artefact as hosted, and its runs (one per round).
#[derive(Debug, Clone)]
pub struct ArtefactRuns {
    /// The row's label.
    pub label: &'static str,
    /// At `--connections`.
    pub loaded: Vec<Load>,
    /// At concurrency 1.
    pub single: Vec<Load>,
}

/// The row whose gateway is profiled: the WASIp3 artefact as Spin 4.1 hosts it.
const PROFILED: usize = 1;

/// The artefacts and how each is hosted: a label and edge-gateway's settings (each with
/// a perf map, so that the profile names the component's functions).
fn hostings() -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    let mut hostings = artefact_hostings();
    for (_, settings) in &mut hostings {
        settings.push(("APIM_PERF_MAP", "true".to_string()));
    }
    hostings
}

fn artefact_hostings() -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    let p3 = harness::p3_settings();
    let mut one_at_a_time = p3.clone();
    one_at_a_time.push(("APIM_P3_CONCURRENCY", "1".to_string()));
    vec![
        (
            "WASI 0.2 artefact, an instance reused one request at a time",
            vec![("APIM_HOST_FORWARDING", "false".to_string())],
        ),
        (
            "WASIp3 artefact, an instance for 128 requests, 16 at once (Spin 4.1's)",
            p3,
        ),
        (
            "WASIp3 artefact, an instance for 128 requests, one at a time",
            one_at_a_time,
        ),
    ]
}

/// Starts the platform and a gateway per artefact, runs the rounds, and profiles the
/// [`PROFILED`] row's gateway.
pub async fn measure(options: &Options) -> (Vec<ArtefactRuns>, Option<Profile>) {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let path = format!("{BASE}{SECURED}");
    let headers = vec![platform.bearer()];
    let mut gateways: Vec<(ServerProcess, ArtefactRuns)> = Vec::new();
    for (label, settings) in hostings() {
        let gateway = start_pinned_gateway(&platform, &settings).await;
        let runs = ArtefactRuns {
            label,
            loaded: vec![],
            single: vec![],
        };
        gateways.push((gateway, runs));
    }
    machine::pin_process(platform.control_plane_pid(), "0");
    for round in 1..=options.rounds {
        for (gateway, runs) in &mut gateways {
            eprintln!(
                "bench: round {round}/{}: case 4, {}",
                options.rounds, runs.label
            );
            let url = format!("{}{path}", gateway.url);
            machine::wait_for_quiet_cpu().await;
            super::https::wrk(options, &url, &headers, options.warmup).await;
            let load = super::https::counted(options, &url, &headers, gateway.pid()).await;
            runs.loaded.push(load);
            let single = Wrk {
                url: &url,
                connections: 1,
                duration: options.run_time(),
                headers: &headers,
                script: None,
            };
            runs.single.push(single.run().await);
        }
    }
    let profile = if options.no_profile {
        None
    } else {
        let (gateway, runs) = &gateways[PROFILED];
        eprintln!("bench: profiling edge-gateway under case 4, {}", runs.label);
        let url = format!("{}{path}", gateway.url);
        let load = Wrk {
            url: &url,
            connections: options.connections,
            duration: options.run_time(),
            headers: &headers,
            script: None,
        };
        profile::record(&platform, gateway.pid(), "edge-gateway", load).await
    };
    machine::pin_process(platform.control_plane_pid(), "0,1");
    let mut results = Vec::new();
    for (gateway, runs) in gateways {
        gateway.stop().await;
        results.push(runs);
    }
    platform.stop().await;
    (results, profile)
}

/// The report's section.
pub fn table(options: &Options, runs: &[ArtefactRuns], profile: Option<&Profile>) -> String {
    let c = options.connections;
    let mut md = format!(
        "### The gateway's artefacts on the `wasi:http` path\n\nCase 4 (full policy, JWT, \
         1 KiB backend) with the component forwarding through `wasi:http`, as on Spin, for \
         each artefact: the WASI 0.2 component (`APIM_HOST_FORWARDING=false`) and the \
         WASIp3 one (`wasi:http/handler@0.3.0`) hosted with reuse, each its own \
         edge-gateway on CPU 1 on the same control plane, interleaved round by round. \
         Medians of {} rounds; errors: non-2xx answers and socket errors over all runs.\n\n\
         | artefact, hosted | req/s at {c} | CPU µs/req at {c} | p99 µs at {c} | p50 µs at 1 | \
         errors |\n|---|--:|--:|--:|--:|--:|\n",
        options.rounds
    );
    for runs in runs {
        let cpu = cpu_cell(&runs.loaded);
        let errors: u64 = runs
            .loaded
            .iter()
            .chain(&runs.single)
            .map(|l| l.errors)
            .sum();
        let _ = writeln!(
            md,
            "| {} | {:.0} | {cpu} | {:.0} | {:.0} | {errors} |",
            runs.label,
            median(runs.loaded.iter().map(|l| l.rate)),
            median(runs.loaded.iter().map(|l| l.p99_us)),
            median(runs.single.iter().map(|l| l.p50_us)),
        );
    }
    let label = runs.get(PROFILED).map_or("", |r| r.label);
    md.push('\n');
    md.push_str(&super::report::profile(
        "the WASIp3 artefact's gateway's",
        &format!("edge-gateway under case 4, {label}"),
        profile,
    ));
    md
}
