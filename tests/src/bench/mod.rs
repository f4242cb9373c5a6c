//! The benchmark behind `cargo run --release -p e2e --bin bench`: every case in one run,
//! on loopback, with the server under test on CPU 1 and the backend and load on CPU 0.
//!
//! Data plane: wrk against the backend directly, nginx, Envoy with our policy, and
//! edge-gateway (full policy; `x-auth-type: None`), interleaved round by round, medians
//! reported. Control plane: publish, revocation and unsubscribe propagation, token
//! issuance, manifest compile and push, API listing and gateway memory, on an empty
//! database and with `--apis` APIs published. Prints a table and writes `BENCHMARKS.md`.

pub mod backend;
pub mod control;
pub mod dataplane;
pub mod load;
pub mod machine;
pub mod platform;
pub mod profile;
pub mod propagation;
pub mod proxies;
pub mod report;
pub mod stats;
pub mod tools;

use std::path::PathBuf;
use std::time::Duration;

/// Command-line options of the benchmark.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "bench",
    about = "Benchmarks the gateway against nginx and Envoy, and the control plane"
)]
pub struct Options {
    /// Rounds of the data-plane cases (each round runs every case once); medians are quoted.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Seconds of each measured wrk run (and of each token-issuance run).
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Seconds of warm-up before each measured data-plane run.
    #[arg(long, default_value_t = 2)]
    pub warmup: u64,
    /// Fixed concurrency (keep-alive connections) of the throughput runs.
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// APIs (each published, each with a subscription) for the scale cases.
    #[arg(long, default_value_t = 10_000)]
    pub apis: usize,
    /// Timed publishes, revocations and unsubscribes per database size.
    #[arg(long, default_value_t = 50)]
    pub changes: usize,
    /// Skip the cases with `--apis` APIs (a quick run).
    #[arg(long)]
    pub skip_scale: bool,
    /// Skip the `perf` profile of edge-gateway under case 4.
    #[arg(long)]
    pub no_profile: bool,
    /// Where to write the report (the part between its bench markers is replaced).
    #[arg(long, default_value = "BENCHMARKS.md")]
    pub out: PathBuf,
    /// Start everything, print how to load it, and wait for Ctrl-C instead of measuring.
    #[arg(long)]
    pub hold: bool,
}

impl Options {
    /// One measured wrk run.
    pub fn run_time(&self) -> Duration {
        Duration::from_secs(self.seconds)
    }
}

/// Runs the whole benchmark.
pub fn run(options: Options) {
    tools::ensure_all();
    // Builds the release binaries and the component before anything is measured.
    crate::gateway_component();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let backend = backend::FastBackend::start();
        let platform = platform::Platform::start(&backend.url).await;
        if options.hold {
            dataplane::hold(&backend, &platform).await;
            platform.stop().await;
            return;
        }
        let machine = machine::describe();
        let data = dataplane::measure(&options, &backend, &platform).await;
        let profile = if options.no_profile {
            None
        } else {
            profile::gateway(&options, &platform).await
        };
        let control = control::measure(&options, &platform).await;
        platform.stop().await;
        let report = report::Report {
            options: &options,
            machine,
            data,
            control,
            profile,
        };
        report.print_and_write();
    });
}
