//! Case 6 on its own (`--only spin-like`, and after every full run): edge-gateway hosting
//! the component as Spin hosts a WASI 0.2 component (a fresh instance per request, the
//! `wasi:http` forwarding path, every key in a SQLite file as Spin's default store) beside
//! case 4 (edge-gateway's own hosting), round by round on the same platform, then `perf`
//! on case 6's gateway to show where its time goes.

use std::fmt::Write as _;

use super::Options;
use super::backend::FastBackend;
use super::https::{counted, wrk};
use super::load::{Load, Wrk};
use super::platform::{BASE, Platform, SECURED};
use super::profile::{self, Profile};
use super::report::{int, section_head};
use super::stats::median;
use harness::machine;

/// Both cases' runs, one per round.
#[derive(Debug, Clone, Default)]
pub struct SpinLikeRuns {
    /// Case 4 at `--connections`.
    pub native: Vec<Load>,
    /// Case 6 at `--connections`.
    pub spin_like: Vec<Load>,
    /// Case 6 at concurrency 1.
    pub spin_like_single: Vec<Load>,
    /// The load average before each round.
    pub load_averages: Vec<String>,
    /// Case 6's gateway under load.
    pub profile: Option<Profile>,
}

/// Starts the platform, runs the rounds and the profile, and stops it.
pub async fn measure(options: &Options) -> SpinLikeRuns {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let headers = vec![platform.bearer()];
    let native = format!("{}{BASE}{SECURED}", platform.stack.gw.base);
    let spin_like = format!("{}{BASE}{SECURED}", platform.spin_like_url());
    machine::pin_process(platform.control_plane_pid(), "0");
    let mut runs = SpinLikeRuns::default();
    for round in 1..=options.rounds {
        eprintln!("bench: round {round}/{}: cases 4 and 6", options.rounds);
        if !options.busy_ok {
            machine::wait_for_quiet_cpu().await;
        }
        runs.load_averages.push(load_average());
        wrk(options, &native, &headers, options.warmup).await;
        let pid = platform.gateway_pid();
        runs.native
            .push(counted(options, &native, &headers, pid).await);
        wrk(options, &spin_like, &headers, options.warmup).await;
        let pid = platform.spin_like_pid();
        runs.spin_like
            .push(counted(options, &spin_like, &headers, pid).await);
        runs.spin_like_single.push(
            Wrk {
                url: &spin_like,
                connections: 1,
                duration: options.run_time(),
                headers: &headers,
                script: None,
            }
            .run()
            .await,
        );
    }
    if !options.no_profile {
        eprintln!("bench: profiling edge-gateway under case 6");
        let load = Wrk {
            url: &spin_like,
            connections: options.connections,
            duration: options.run_time(),
            headers: &headers,
            script: None,
        };
        runs.profile =
            profile::record(&platform, platform.spin_like_pid(), "edge-gateway", load).await;
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    platform.stop().await;
    runs
}

/// The first three fields of `/proc/loadavg`.
pub(super) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The section of the report.
pub fn section(options: &Options, runs: &SpinLikeRuns) -> String {
    let c = options.connections;
    let busy = if options.busy_ok { " --busy-ok" } else { "" };
    let command = format!(
        "--only spin-like --rounds {} --seconds {}{busy}",
        options.rounds, options.seconds
    );
    let mut md = section_head("The component hosted as Spin hosts it (case 6)", &command);
    let _ = write!(
        md,
        "Case 6: a second edge-gateway on the same control plane, on CPU 1 with one worker, \
         hosting the gateway component as Spin 3/4 hosts a WASI 0.2 component: a fresh \
         instance for every request (`APIM_INSTANCE_REUSE=1`), forwarding through \
         `wasi:http` (`APIM_HOST_FORWARDING=false`), every key in one SQLite table with \
         SQLite's defaults, as Spin's default store (`APIM_KV_URL=sqlite:PATH`: a disk \
         commit per write), no loop of its own (requests catch up once a second), the \
         access log written by the component. Full policy with a JWT, as case 4, which runs \
         beside it round by round. Medians of {} rounds of {} s after a {} s warm-up; load \
         average before each round: {}.\n\n\
         | case | req/s at {c} | CPU µs/req at {c} | p50 µs at {c} | p99 µs at {c} | p50 µs at 1 | p99 µs at 1 |\n\
         |---|--:|--:|--:|--:|--:|--:|\n",
        options.rounds,
        options.seconds,
        options.warmup,
        runs.load_averages.join("; "),
    );
    let m = |loads: &[Load], f: fn(&Load) -> f64| median(loads.iter().map(f));
    let cpu = |loads: &[Load]| {
        let measured: Vec<f64> = loads.iter().filter_map(|l| l.cpu_us).collect();
        if measured.is_empty() {
            "–".to_string()
        } else {
            format!("{:.1}", median(measured))
        }
    };
    let _ = writeln!(
        md,
        "| 4. edge-gateway, full policy, JWT | {} | {} | {:.0} | {:.0} | – | – |",
        int(m(&runs.native, |l| l.rate)),
        cpu(&runs.native),
        m(&runs.native, |l| l.p50_us),
        m(&runs.native, |l| l.p99_us),
    );
    let _ = writeln!(
        md,
        "| 6. Spin-like, full policy, JWT | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} |",
        int(m(&runs.spin_like, |l| l.rate)),
        cpu(&runs.spin_like),
        m(&runs.spin_like, |l| l.p50_us),
        m(&runs.spin_like, |l| l.p99_us),
        m(&runs.spin_like_single, |l| l.p50_us),
        m(&runs.spin_like_single, |l| l.p99_us),
    );
    let rounds = |loads: &[Load]| {
        loads
            .iter()
            .map(|l| int(l.rate))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let errors: u64 = runs
        .spin_like
        .iter()
        .chain(&runs.spin_like_single)
        .map(|l| l.errors)
        .sum();
    let _ = writeln!(
        md,
        "\nEvery round, req/s at {c}: case 4 {}; case 6 {}{}.\n",
        rounds(&runs.native),
        rounds(&runs.spin_like),
        if errors > 0 {
            format!(" (**{errors} errors or non-2xx answers**)")
        } else {
            String::new()
        }
    );
    md.push_str(&super::report::profile(
        "case 6's gateway's",
        "edge-gateway hosting the component as Spin does, under case 6",
        runs.profile.as_ref(),
    ));
    md
}
