//! The fault command behind `cargo run --release -p tools --bin faults`:
//! the platform started on loopback and broken on purpose, one case after another, each
//! printing what was sent, what was acknowledged, what was lost and how long convergence
//! took. Every loop is bounded and every process is its own (stopped at the end).
//!
//! | case | what breaks |
//! |---|---|
//! | `cp-kill-sqlite`, `cp-kill-postgres` | `kill -9` of the control plane during concurrent writes |
//! | `gateway-restart` | a gateway restarted under load, with SIGTERM and with `kill -9` |
//! | `cp-outage` | the control plane down for `--outage-secs` under serving gateways |
//! | `redis-outage` | the gateway's Redis down for `--redis-outage-secs` and back |
//! | `postgres-restart` | PostgreSQL restarted under the control plane |

pub mod cases;
pub mod handover;
pub mod load;
pub mod rig;
pub mod writes;

use std::time::{Duration, Instant};

/// Every case, in the order they run.
pub const CASES: &[&str] = &[
    "cp-kill-sqlite",
    "cp-kill-postgres",
    "gateway-restart",
    "cp-outage",
    "redis-outage",
    "postgres-restart",
];

/// Command-line options of the fault command.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "faults",
    about = "Breaks the platform on purpose (kills, restarts, outages) and reports what was lost"
)]
pub struct Options {
    /// Run only these cases (repeatable; a prefix such as `cp-kill` picks both databases):
    /// cp-kill-sqlite, cp-kill-postgres, gateway-restart, cp-outage, redis-outage,
    /// postgres-restart.
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,
    /// Writes (API creates and publishes) of the control-plane kill cases.
    #[arg(long, default_value_t = 1000)]
    pub writes: usize,
    /// Concurrent writers of the control-plane kill cases.
    #[arg(long, default_value_t = 32)]
    pub writers: usize,
    /// Keep-alive clients calling through the gateway (or the control plane) under load.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Seconds of load before and after each fault.
    #[arg(long, default_value_t = 3)]
    pub load_secs: u64,
    /// Seconds the control plane stays down in `cp-outage`.
    #[arg(long, default_value_t = 60)]
    pub outage_secs: u64,
    /// Seconds Redis stays down in `redis-outage`.
    #[arg(long, default_value_t = 10)]
    pub redis_outage_secs: u64,
    /// PostgreSQL restarts in `postgres-restart` (`--load-secs` apart).
    #[arg(long, default_value_t = 3)]
    pub pg_restarts: usize,
}

impl Options {
    /// Seconds of load around a fault.
    pub fn load_time(&self) -> Duration {
        Duration::from_secs(self.load_secs)
    }

    fn selected(&self) -> Vec<&'static str> {
        if self.cases.is_empty() {
            return CASES.to_vec();
        }
        for asked in &self.cases {
            assert!(
                CASES.iter().any(|case| case.starts_with(asked.as_str())),
                "unknown case {asked}; the cases are {}",
                CASES.join(", ")
            );
        }
        CASES
            .iter()
            .copied()
            .filter(|case| {
                self.cases
                    .iter()
                    .any(|asked| case.starts_with(asked.as_str()))
            })
            .collect()
    }
}

/// What one case found: figures, whether its expectation held, and notes.
#[derive(Debug, Clone)]
pub struct CaseReport {
    /// The case's name (`--case`).
    pub name: &'static str,
    /// One line on what was done.
    pub title: String,
    /// `(figure, value)` rows.
    pub rows: Vec<(String, String)>,
    /// What did not hold (empty: everything expected held).
    pub problems: Vec<String>,
    /// How long the case took.
    pub took: Duration,
}

impl CaseReport {
    fn new(name: &'static str, title: impl Into<String>) -> Self {
        CaseReport {
            name,
            title: title.into(),
            rows: Vec::new(),
            problems: Vec::new(),
            took: Duration::ZERO,
        }
    }

    /// Adds a figure.
    pub fn row(&mut self, figure: impl Into<String>, value: impl Into<String>) {
        self.rows.push((figure.into(), value.into()));
    }

    /// Records an expectation: `problem` is reported unless `held`.
    pub fn expect(&mut self, held: bool, problem: impl Into<String>) {
        if !held {
            self.problems.push(problem.into());
        }
    }

    fn print(&self) {
        println!("\n### {}: {}\n", self.name, self.title);
        println!("| figure | value |\n|---|---|");
        for (figure, value) in &self.rows {
            println!("| {figure} | {value} |");
        }
        if self.problems.is_empty() {
            println!(
                "\nheld: everything expected ({:.0} s)",
                self.took.as_secs_f64()
            );
        } else {
            println!("\nDID NOT HOLD ({:.0} s):", self.took.as_secs_f64());
            for problem in &self.problems {
                println!("- {problem}");
            }
        }
    }
}

/// Runs the selected cases and prints each report; the exit code is 1 if any expectation
/// did not hold.
pub fn run(options: Options) -> std::process::ExitCode {
    let selected = options.selected();
    // Builds the release binaries and the component before anything is broken.
    harness::gateway_component();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    println!(
        "## Faults: {} (machine: {})",
        selected.join(", "),
        machine()
    );
    let reports: Vec<CaseReport> = runtime.block_on(async {
        let mut reports = Vec::new();
        for case in selected {
            eprintln!("faults: running {case}");
            let began = Instant::now();
            let load_average = load_average();
            let mut report = match case {
                "cp-kill-sqlite" => cases::control_plane_kill(&options, false).await,
                "cp-kill-postgres" => cases::control_plane_kill(&options, true).await,
                "gateway-restart" => cases::gateway_restart(&options).await,
                "cp-outage" => cases::control_plane_outage(&options).await,
                "redis-outage" => cases::redis_outage(&options).await,
                "postgres-restart" => cases::postgres_restart(&options).await,
                _ => unreachable!("checked by Options::selected"),
            };
            report.took = began.elapsed();
            report.row("machine load when the case began", load_average);
            report.print();
            reports.push(report);
        }
        reports
    });
    println!("\n## Summary ({:.0} s)\n", started.elapsed().as_secs_f64());
    for report in &reports {
        let verdict = if report.problems.is_empty() {
            "held".to_string()
        } else {
            format!("DID NOT HOLD: {}", report.problems.join("; "))
        };
        println!("- {}: {verdict}", report.name);
    }
    if reports.iter().all(|r| r.problems.is_empty()) {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// The 1-minute load average, and whether compilers were running (other work on these
/// cores stretches start-up and latency figures).
fn load_average() -> String {
    let average = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_default();
    let compiling = std::process::Command::new("pgrep")
        .args(["-x", "rustc"])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    format!(
        "{average} (1 min){}",
        if compiling { ", rustc running" } else { "" }
    )
}

/// CPU model, cores and memory, in one line.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).trim().to_string())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|kib| kib.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map(|kib| format!("{:.0} GiB", kib / 1024.0 / 1024.0))
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {memory}")
}
