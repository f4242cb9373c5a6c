//! The benchmark behind `cargo run --release -p tools --bin bench`: every case in one run,
//! on loopback, with the server under test on CPU 1 and the backend and load on CPU 0.
//!
//! Data plane: wrk against the backend directly, nginx, Envoy with our policy, and
//! edge-gateway (full policy; `x-auth-type: None`), interleaved round by round, medians
//! reported; then the full policy against an HTTPS backend beside the plain one. Control plane: publish, revocation and unsubscribe propagation, token
//! issuance, manifest compile and push, API listing and gateway memory, on an empty
//! database and with `--apis` APIs published. Fleet: publish → live on every one of
//! `--fleet-gateways` gateways. Throttling: what three nodes sharing Redis admit per
//! window against `maxTps` and the largest tiers, and the CPU Redis counting costs. Idle:
//! the gateway's memory per held kept-alive connection. Artefacts: case 4 on the
//! `wasi:http` path, the WASI 0.2 component beside the WASIp3 one hosted with reuse. TLS:
//! kept-alive TLS, new handshakes and HTTP/2 with many streams, beside nginx and Envoy
//! with the same certificate. Floods: another client's latency while HTTP/2 floods run.
//! Portal: the developer portal's pages with 1,000 published APIs. MCP: a tool call beside
//! the same REST call, on edge-gateway and in the Spin-like case.
//! Prints tables and writes `BENCHMARKS.md`; `--only fleet,throttling,idle,artefacts,tls,floods`
//! (any of them) runs just those cases and rewrites just their sections.

pub mod artefacts;
pub mod backend;
pub mod control;
pub mod dataplane;
pub mod fleet;
pub mod floods;
pub mod handshakes;
pub mod https;
pub mod idle;
pub mod load;
pub mod machine;
pub mod mcp;
pub mod mediation;
pub mod platform;
pub mod portal;
pub mod profile;
pub mod propagation;
pub mod proxies;
pub mod real_spin;
pub mod redis_server;
pub mod report;
pub mod spin_like;
pub mod stats;
pub mod throttling;
pub mod tls;
pub mod token_flood;
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
    /// Start everything, print how to load it, and wait for Ctrl-C instead of measuring
    /// (the data plane's cases; with `--only spin`, real Spin's targets).
    #[arg(long)]
    pub hold: bool,
    /// Run only these cases (comma-separated) and rewrite only their sections of the
    /// report; by default every case runs.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Part>,
    /// Gateways (edge-gateway processes, each with its own store) in the fleet case.
    #[arg(long, default_value_t = 20)]
    pub fleet_gateways: usize,
    /// Timed publishes in the fleet case, each once the previous one is live everywhere.
    #[arg(long, default_value_t = 100)]
    pub fleet_publishes: usize,
    /// How often the fleet case asks each gateway whether a publish shows, ms.
    #[arg(long, default_value_t = 5)]
    pub fleet_poll_ms: u64,
    /// `maxTps` of the throttling case's API (per second, production keys).
    #[arg(long, default_value_t = 1000)]
    pub max_tps: u64,
    /// Minutes of load against the per-minute tiers in the throttling case.
    #[arg(long, default_value_t = 3)]
    pub throttle_minutes: usize,
    /// The throttling case's load, as a multiple of each limit.
    #[arg(long, default_value_t = 2.0)]
    pub overload: f64,
    /// Measure the Spin-like and real Spin sections without waiting for a quiet machine
    /// (their reports give the load average before each round instead).
    #[arg(long)]
    pub busy_ok: bool,
    /// Kept-alive connections the idle case holds (the machine's open-file cap, 20,000 a
    /// process here, bounds it).
    #[arg(long, default_value_t = 10_000)]
    pub idle_connections: usize,
    /// Calls a fresh client makes, timed, while the idle case holds its connections.
    #[arg(long, default_value_t = 2_000)]
    pub idle_probes: usize,
    /// Connections h2load opens in the TLS part's HTTP/2 case.
    #[arg(long, default_value_t = 4)]
    pub h2_connections: usize,
    /// Streams h2load keeps in flight on each of them.
    #[arg(long, default_value_t = 32)]
    pub h2_streams: usize,
    /// The kinds of connection the idle case holds (comma-separated); by default each.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub idle_kinds: Vec<idle::Kind>,
    /// Calls the other client makes, timed, under each condition of the floods part.
    #[arg(long, default_value_t = 5_000)]
    pub flood_probes: usize,
    /// Rounds of the floods part (each quiet, rapid reset, CONTINUATION) and of the
    /// token-flood part (each quiet, flooded); medians reported.
    #[arg(long, default_value_t = 3)]
    pub flood_rounds: usize,
    /// Requests with made-up opaque tokens in each flood of the token-flood part.
    #[arg(long, default_value_t = 10_000)]
    pub flood_tokens: usize,
    /// Their pace, a second.
    #[arg(long, default_value_t = 2_000.0)]
    pub flood_token_rate: f64,
    /// Published APIs in the portal part.
    #[arg(long, default_value_t = 1_000)]
    pub portal_apis: usize,
    /// Requests for each page in the portal part.
    #[arg(long, default_value_t = 2_000)]
    pub portal_requests: usize,
}

/// The cases `--only` can pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// Publish → live on every gateway of a fleet.
    Fleet,
    /// Throttling across three nodes sharing Redis.
    Throttling,
    /// Case 6 (the component hosted as Spin hosts it) beside case 4, with its profile.
    SpinLike,
    /// Memory per idle kept-alive connection (plain, TLS, h2c), 10,000 held.
    Idle,
    /// Case 4 on the `wasi:http` path, the WASI 0.2 and the WASIp3 artefacts.
    Artefacts,
    /// Case 4 against an HTTPS backend, beside the plain one.
    Https,
    /// Kept-alive TLS, new TLS handshakes and HTTP/2, beside nginx and Envoy.
    Tls,
    /// Another client's latency while HTTP/2 floods (rapid reset, CONTINUATION) run.
    Floods,
    /// Made-up opaque tokens: what they cost the control plane and other clients.
    TokenFlood,
    /// Cases 1 to 6 alone, with the machine and their targets (a whole run has them in
    /// its main report).
    DataPlane,
    /// The developer portal's pages with `--portal-apis` published APIs.
    Portal,
    /// A tool call through an API's MCP server beside the same REST call.
    Mcp,
    /// A call through an API with a header-setting sequence beside one without.
    Mediation,
    /// Real Spin running the project's `spin.toml` and `spin-p3.toml` beside nginx, Envoy
    /// and edge-gateway (a `spin` binary: `SPIN_BIN`, else `PATH`).
    Spin,
}

impl Options {
    /// One measured wrk run.
    pub fn run_time(&self) -> Duration {
        Duration::from_secs(self.seconds)
    }

    /// Whether this run measures `part`.
    pub fn runs(&self, part: Part) -> bool {
        self.only.is_empty() || self.only.contains(&part)
    }
}

/// Runs the whole benchmark.
pub fn run(options: Options) {
    // nginx and Envoy are compared with in the data plane's cases, behind TLS and beside
    // real Spin.
    if options.runs(Part::DataPlane) || options.runs(Part::Tls) || options.runs(Part::Spin) {
        tools::ensure_all();
    } else {
        tools::ensure_wrk();
    }
    // Builds the release binaries and the component before anything is measured.
    harness::gateway_component();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        if !options.only.is_empty() {
            run_parts(&options).await;
            return;
        }
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
        run_parts(&options).await;
    });
}

/// The parts with sections of their own (those `--only` selects), each written to its
/// own section of the report as soon as it is measured.
async fn run_parts(options: &Options) {
    if options.only.contains(&Part::DataPlane) {
        let backend = backend::FastBackend::start();
        let platform = platform::Platform::start(&backend.url).await;
        let machine = machine::describe();
        let data = dataplane::measure(options, &backend, &platform).await;
        platform.stop().await;
        let markdown = report::data_plane_section(options, &machine, &data);
        report::write_section(options, Part::DataPlane, &markdown);
    }
    if options.runs(Part::Https) {
        let backend = backend::FastBackend::start();
        let platform = platform::Platform::start(&backend.url).await;
        let runs = https::measure(options, &platform).await;
        platform.stop().await;
        report::write_section(options, Part::Https, &https::table(options, &runs));
    }
    if options.runs(Part::SpinLike) {
        let runs = spin_like::measure(options).await;
        report::write_section(options, Part::SpinLike, &spin_like::section(options, &runs));
    }
    if options.runs(Part::Artefacts) {
        let (runs, profile) = artefacts::measure(options).await;
        let markdown = artefacts::table(options, &runs, profile.as_ref());
        report::write_section(options, Part::Artefacts, &markdown);
    }
    if options.runs(Part::Fleet) {
        let fleet = fleet::measure(options).await;
        report::write_section(options, Part::Fleet, &report::fleet(options, &fleet));
    }
    if options.runs(Part::Throttling) {
        let throttling = throttling::measure(options).await;
        let markdown = report::throttling(options, &throttling);
        report::write_section(options, Part::Throttling, &markdown);
    }
    if options.runs(Part::Idle) {
        let idle = idle::measure(options).await;
        report::write_section(options, Part::Idle, &idle::section(options, &idle));
    }
    if options.runs(Part::Tls) {
        let results = tls::measure(options).await;
        report::write_section(options, Part::Tls, &tls::section(options, &results));
    }
    if options.runs(Part::Floods) {
        let runs = floods::measure(options).await;
        report::write_section(options, Part::Floods, &floods::section(options, &runs));
    }
    if options.runs(Part::Portal) {
        let runs = portal::measure(options).await;
        report::write_section(options, Part::Portal, &portal::section(options, &runs));
    }
    if options.runs(Part::Mcp) {
        let runs = mcp::measure(options).await;
        report::write_section(options, Part::Mcp, &mcp::section(options, &runs));
    }
    if options.runs(Part::Mediation) {
        let runs = mediation::measure(options).await;
        let markdown = mediation::section(options, &runs);
        report::write_section(options, Part::Mediation, &markdown);
    }
    if options.runs(Part::Spin) {
        match real_spin::spin_binary() {
            Some(_) => {
                let runs = real_spin::measure(options).await;
                if !options.hold {
                    let markdown = real_spin::section(options, &runs);
                    report::write_section(options, Part::Spin, &markdown);
                }
            }
            None if options.only.contains(&Part::Spin) => {
                panic!("--only spin: no spin binary (set SPIN_BIN, or put spin on PATH)")
            }
            None => eprintln!("bench: real Spin skipped: no spin binary (SPIN_BIN, PATH)"),
        }
    }
    if options.runs(Part::TokenFlood) {
        let rounds = token_flood::measure(options).await;
        let markdown = token_flood::section(options, &rounds);
        report::write_section(options, Part::TokenFlood, &markdown);
    }
}
