//! The report: targets with MET/MISSED, the data-plane table, the control-plane table and
//! the profile, printed and written into `BENCHMARKS.md` between its bench markers.

use std::fmt::Write as _;
use std::path::Path;

use super::control::{ControlResults, Phase};
use super::dataplane::{Case, CaseRuns, DataPlane};
use super::fleet::FleetResults;
use super::load::Load;
use super::profile::Profile;
use super::propagation::Propagation;
use super::stats::{Latencies, median};
use super::throttling::{ThrottlingResults, Windows};
use super::{Options, Part};

const BEGIN: &str = "<!-- bench:begin: written by `cargo run --release -p tools --bin bench`; \
                     everything up to bench:end is replaced on each run -->";
const END: &str = "<!-- bench:end -->";

/// Everything one run measured.
pub struct Report<'a> {
    /// How it was run.
    pub options: &'a Options,
    /// The machine, as `(item, value)` rows.
    pub machine: Vec<(String, String)>,
    /// Cases 1 to 5.
    pub data: DataPlane,
    /// Control plane and propagation.
    pub control: ControlResults,
    /// The gateway's profile under case 4.
    pub profile: Option<Profile>,
}

impl Report<'_> {
    /// Prints the report and writes it to `--out`.
    pub fn print_and_write(&self) {
        let markdown = self.markdown();
        println!("{markdown}");
        write(&self.options.out, &markdown);
        eprintln!("bench: written to {}", self.options.out.display());
    }

    fn markdown(&self) -> String {
        let o = self.options;
        let mut md = String::new();
        let _ = writeln!(
            md,
            "## Latest run\n\n`cargo run --release -p tools --bin bench -- --rounds {} --seconds {} \
             --connections {} --apis {}{}`, {}.\n",
            o.rounds,
            o.seconds,
            o.connections,
            o.apis,
            if o.skip_scale { " --skip-scale" } else { "" },
            harness::machine::output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        );
        md.push_str(&machine_table(&self.machine));
        md.push_str(&self.targets());
        md.push_str(&data_plane(self.options, &self.data));
        md.push_str(&self.control_plane());
        md.push_str(&profile(
            "the gateway's",
            "edge-gateway under case 4",
            self.profile.as_ref(),
        ));
        md.push_str(&profile(
            "the control plane's",
            "the control plane issuing client_credentials tokens (empty database, CPU 1)",
            self.control.empty.token_profile.as_ref(),
        ));
        md
    }

    fn targets(&self) -> String {
        let scale = self.control.scale.as_ref();
        let publish = scale.map(|s| &s.publish);
        let tokens = self.control.empty.client_credentials.rate;
        let mut rows = data_plane_targets(&self.data);
        rows.extend([
            (
                format!(
                    "publish → live p99 < 200 ms with {} APIs",
                    int(self.options.apis as f64)
                ),
                publish.map_or("not measured (--skip-scale)".into(), publish_cell),
                publish.map(|p| p.failures == 0 && p.total.p99_ms < 200.0),
            ),
            (
                "client_credentials tokens/s ≥ 5,000 (empty database)".into(),
                format!("{}/s", int(tokens)),
                Some(tokens >= 5000.0),
            ),
            (
                format!(
                    "control plane resident < 128 MiB with {} APIs, after the token runs",
                    int(self.options.apis as f64)
                ),
                scale.map_or("not measured (--skip-scale)".into(), |s| {
                    format!("{:.0} MiB", s.control_plane_rss_mib)
                }),
                scale.map(|s| s.control_plane_rss_mib < 128.0),
            ),
        ]);
        targets_table(rows)
    }

    fn control_plane(&self) -> String {
        let control = &self.control;
        let mut phases = vec![("empty database".to_string(), &control.empty)];
        if let Some(scale) = &control.scale {
            phases.push((format!("with {} APIs", int(scale.apis as f64)), scale));
        }
        let header: Vec<&str> = phases.iter().map(|(name, _)| name.as_str()).collect();
        let md = format!(
            "### Control plane and propagation\n\nSQLite; control plane on both CPUs, gateway on \
             CPU 1. Each change is timed from sending its request to the first gateway answer that \
             shows it (polled about every millisecond), starting from a quiet platform, {} times \
             per database size. Publish: the API exists (CREATED); the benchmark application \
             subscribes right after Publish answers 200 (a store cannot subscribe to an \
             unpublished API), and the time runs to its first 200 through the gateway. The split \
             into compile and delivery comes from the control plane's log. Token issuance: wrk \
             ({} connections, {} s) on CPU 0 against `POST /oauth2/token`, the control plane \
             moved to CPU 1.\n\n| | {} |\n|---|{}\n",
            self.options.changes,
            self.options.connections,
            self.options.seconds,
            header.join(" | "),
            "--:|".repeat(phases.len()),
        );
        let mut table = PhaseTable {
            md,
            phases: phases.iter().map(|(_, p)| *p).collect(),
        };
        table.propagation("publish → first 200", |p| &p.publish);
        table.propagation("revocation → 401", |p| &p.revoke);
        table.propagation("unsubscribe → 403 900908", |p| &p.unsubscribe);
        table.row("client_credentials tokens/s", |p| {
            token_cell(&p.client_credentials)
        });
        table.row("password-grant tokens/s", |p| token_cell(&p.password));
        table.row(
            "manifests compiled during the client_credentials run",
            |p| p.manifests_during_tokens.to_string(),
        );
        table.row("API list, page of 25 (p50 / p99 ms)", |p| p.list.cell());
        table.row("whole manifest: entries, signed snapshot pages", |p| {
            format!(
                "{} entries, {:.1} MiB in {} pages",
                int(p.full.entries as f64),
                p.full.bytes as f64 / 1048576.0,
                p.full.pages
            )
        });
        table.row("whole manifest: reading and signing every page (ms)", |p| {
            format!("{:.0}", p.full.read_ms)
        });
        table.row(
            "whole manifest: compiled from scratch by a starting control plane (ms)",
            |p| {
                p.full
                    .compile_ms
                    .map_or("–".into(), |ms| format!("{ms:.0}"))
            },
        );
        table.row(
            "whole manifest: a fresh gateway started, snapshot pulled and applied, first request answered (ms)",
            |p| {
                p.full
                    .fresh_gateway_ms
                    .map_or("**failed**".into(), |ms| format!("{ms:.0}"))
            },
        );
        table.row(
            "gateway resident memory (serving the benchmark; a fresh one with the whole manifest)",
            |p| {
                format!(
                    "{:.0} MiB; {:.0} MiB",
                    p.gateway_rss_mib, p.full.fresh_gateway_rss_mib
                )
            },
        );
        table.row("control-plane resident memory", |p| {
            format!("{:.0} MiB", p.control_plane_rss_mib)
        });
        let mut md = table.md;
        if let Some(setup) = &control.setup {
            let _ = writeln!(
                md,
                "\nSetting up: {} APIs created, published and each subscribed through the REST \
                 API, 16 requests at a time, in {:.0} s ({:.0} APIs/s); {} manifests were \
                 compiled meanwhile.",
                int(setup.apis as f64),
                setup.elapsed.as_secs_f64(),
                setup.apis as f64 / setup.elapsed.as_secs_f64(),
                setup.manifests,
            );
        }
        md.push('\n');
        md
    }
}

/// Rows of the control-plane table: one column per database size.
struct PhaseTable<'a> {
    md: String,
    phases: Vec<&'a Phase>,
}

impl PhaseTable<'_> {
    fn row(&mut self, label: &str, cell: impl Fn(&Phase) -> String) {
        let cells: Vec<String> = self.phases.iter().map(|p| cell(p)).collect();
        let _ = writeln!(self.md, "| {label} | {} |", cells.join(" | "));
    }

    /// A change's total, and its split into compile and delivery.
    fn propagation(&mut self, label: &str, of: fn(&Phase) -> &Propagation) {
        self.row(&format!("{label} (p50 / p99 ms)"), |p| {
            let failed = match (of(p).failures, &of(p).refused) {
                (0, _) => String::new(),
                (n, None) => format!(", **{n} never**"),
                (n, Some(why)) => format!(", **{n} never: pushes refused, {why}**"),
            };
            format!("{}{failed}", of(p).total.cell())
        });
        self.row("  of which request → manifest compiled", |p| {
            of(p).compiled.cell()
        });
        self.row("  of which compiled → delivered to the gateway", |p| {
            of(p).delivered.cell()
        });
        self.row("  of which delivered → first answer showing it", |p| {
            of(p).applied.cell()
        });
    }
}

fn publish_cell(publish: &Propagation) -> String {
    match (publish.failures, &publish.refused) {
        (0, _) => format!("{:.1} ms", publish.total.p99_ms),
        (n, None) => format!("{n} of {} never showed", n + publish.total.count),
        (n, Some(why)) => format!(
            "{n} of {} never showed: pushes refused, {why}",
            n + publish.total.count
        ),
    }
}

fn token_cell(load: &Load) -> String {
    let errors = match load.errors {
        0 => String::new(),
        n => format!(" ({n} errors)"),
    };
    format!(
        "{} (p50 {:.1} ms){errors}",
        int(load.rate),
        load.p50_us / 1000.0
    )
}

/// Latency of `runs` over the backend's at concurrency 1 (medians), µs.
fn added(runs: &CaseRuns, backend: &CaseRuns, figure: fn(&Load) -> f64) -> f64 {
    CaseRuns::median(&runs.single, figure) - CaseRuns::median(&backend.single, figure)
}

pub(super) fn profile(whose: &str, under: &str, profile: Option<&Profile>) -> String {
    let Some(profile) = profile else {
        return format!("### Where {whose} time goes\n\nNot profiled in this run.\n\n");
    };
    let shares = |rows: &[(f64, String)]| {
        rows.iter()
            .take(PROFILE_ROWS)
            .map(|(share, name)| format!("{name} {share:.1} %"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut md = format!(
        "### Where {whose} time goes\n\n`perf record -g` on {under} ({}); `perf report \
         --no-children`, self time. By binary: {}. By crate of its own code (other binaries \
         whole): {}.\n\n| share | binary | symbol |\n|--:|---|---|\n",
        profile.samples,
        shares(&profile.by_dso),
        shares(&profile.by_crate),
    );
    for (share, dso, symbol) in profile.by_symbol.iter().take(SYMBOL_ROWS) {
        let symbol = symbol.replace('|', "\\|");
        let _ = writeln!(md, "| {share:.1} % | {dso} | `{symbol}` |");
    }
    md.push('\n');
    md
}

/// Binaries and crates a profile's sentence names.
const PROFILE_ROWS: usize = 10;
/// Symbols a profile's table gives.
const SYMBOL_ROWS: usize = 4;

/// When and where a section was measured: the command, the date, the machine in a line.
pub(super) fn section_head(title: &str, command: &str) -> String {
    let machine = super::machine::describe();
    let item = |name: &str| {
        machine
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    format!(
        "## {title}\n\n`cargo run --release -p tools --bin bench -- {command}`, {}; {}, {} cores, \
         {}; load average before: {}; commit {}.\n\n",
        harness::machine::output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        item("CPU"),
        item("cores"),
        item("memory"),
        item("load average before the run"),
        item("git commit"),
    )
}

/// "p50 / p99 / max" in ms.
fn spread_cell(latencies: &Latencies) -> String {
    if latencies.count == 0 {
        return "–".into();
    }
    format!(
        "{:.1} / {:.1} / {:.1}",
        latencies.p50_ms, latencies.p99_ms, latencies.max_ms
    )
}

/// The fleet case's section.
pub fn fleet(options: &Options, f: &FleetResults) -> String {
    let command = format!(
        "--only fleet --fleet-gateways {} --fleet-publishes {} --fleet-poll-ms {}",
        options.fleet_gateways, options.fleet_publishes, options.fleet_poll_ms
    );
    let mut md = section_head(
        &format!(
            "Publish → live on every gateway of a fleet of {}",
            f.gateways
        ),
        &command,
    );
    let _ = writeln!(
        md,
        "{} edge-gateway processes on this machine, each with its own in-memory store \
         (`APIM_WORKER_THREADS=1`, `APIM_MAX_INSTANCES=4`), each long-polling one control \
         plane (SQLite) for changes and pulling them itself; **pushes off** (no \
         `APIM_GATEWAYS`). {} APIs, created beforehand, are published one after the other, \
         each once the previous one is live everywhere, every process has been idle for 100 \
         ms and the machine is quiet (no rustc, under 15 % busy). A publish is timed from \
         sending its request until a gateway answers its route with 401 (no token: route \
         known; 404 before), each gateway asked every {} ms \
         (so about {} requests a second while a publish travels). Starting the fleet took \
         {:.0} s (the first compiles the component into the compilation cache they share, \
         the others read it from there).\n",
        f.gateways,
        f.publishes,
        f.poll_ms,
        int(f.gateways as f64 * 1000.0 / f.poll_ms.max(1) as f64),
        f.start_secs,
    );
    let _ = writeln!(
        md,
        "| publish → | p50 / p99 / max ms | samples |\n|---|--:|--:|"
    );
    let rows = [
        (format!("live on all {}", f.gateways), &f.all),
        ("live on the first gateway".into(), &f.first),
        (
            "live on one gateway (every publish × gateway)".into(),
            &f.each,
        ),
        ("  last gateway less first".into(), &f.spread),
        ("  of which request → manifest compiled".into(), &f.compiled),
    ];
    for (label, latencies) in rows {
        let _ = writeln!(
            md,
            "| {label} | {} | {} |",
            spread_cell(latencies),
            latencies.count
        );
    }
    if f.failures > 0 {
        let _ = writeln!(
            md,
            "\n**{} gateway answers never showed a publish within 30 s.**",
            f.failures
        );
    }
    let gateways: Vec<f64> = f.per_gateway_p50_ms.clone();
    let (fastest, slowest) = gateways
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    let _ = writeln!(
        md,
        "\nEach gateway's median over the publishes ranged from {fastest:.1} to {slowest:.1} ms.\n"
    );
    let rss = &f.rss_mib;
    let (lo, hi) = rss.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(*v), hi.max(*v))
    });
    let _ = writeln!(
        md,
        "Resident memory after the run: per gateway {:.0} MiB median ({lo:.0} to {hi:.0}), {:.0} \
         MiB for all {}; control plane {:.0} MiB.{}\n",
        median(rss.iter().copied()),
        rss.iter().sum::<f64>(),
        rss.len(),
        f.control_plane_rss_mib,
        match f.waited {
            0 => String::new(),
            n => format!(" {n} publishes waited for another build to finish first."),
        }
    );
    md
}

/// The throttling case's section.
pub fn throttling(options: &Options, t: &ThrottlingResults) -> String {
    let command = format!(
        "--only throttling --max-tps {} --seconds {} --throttle-minutes {} --overload {} \
         --rounds {} --connections {} --warmup {}",
        options.max_tps,
        options.seconds,
        options.throttle_minutes,
        options.overload,
        options.rounds,
        options.connections,
        options.warmup
    );
    let mut md = section_head("Throttling across three nodes sharing Redis", &command);
    let _ = writeln!(
        md,
        "Three edge-gateway nodes (`APIM_WORKER_THREADS=1`) with `APIM_KV_URL` on a Redis of \
         the benchmark's own and a namespace of its own; one control plane (SQLite). A paced \
         load ({}× each limit, evenly spaced, over keep-alive connections spread over the \
         three nodes in turn) and what each window **of the clock** admitted. A call counts in \
         the window holding the midpoint of its sending and its answer; the backend also \
         notes when each admitted call reached it (right after the gateway decided), by its \
         own clock. Windows slide: the \
         previous window weighs in by the share of it the last window's length still covers, \
         rounded down, so calls are spread over a clock window right after a full one rather \
         than admitted at its start; the first window has nothing before it. \"Most in any span\" counts the calls the backend received in any span of \
         one window's length, wherever it starts.\n",
        options.overload
    );
    md.push_str(WINDOWS_HEADER);
    for limit in [&t.tps, &t.app_tier, &t.sub_tier] {
        md.push_str(&windows_row(limit));
    }
    md.push_str(
        "\nRefused: 503 900801 for `maxTps`, 429 900803 and 900804 for the tiers. Later: \
         every window after the first.\n\n",
    );
    let _ = writeln!(
        md,
        "The nodes left {} keys in their Redis namespace.\n",
        t.redis_keys
    );
    let _ = writeln!(
        md,
        "**CPU per request, one node counting in memory and in Redis.** wrk ({} connections, \
         {} s after {} s of warm-up) on CPU 0 against one node on CPU 1 (one worker), an API \
         whose `maxTps` (10⁹/s) counts every call and refuses none: with Redis, the node \
         counts in grants asked of Redis ahead of the calls (`edge-gateway/src/counters.rs`). \
         Medians of {} rounds, the two nodes taking turns.\n\n\
         | counters | req/s | node CPU µs/req (each round) | Redis CPU µs/req | Redis commands \
         /req | p50 / p99 µs | errors |\n|---|--:|--:|--:|--:|--:|--:|",
        options.connections,
        options.seconds,
        options.warmup,
        options.rounds.max(1)
    );
    for run in &t.cpu {
        let rounds: Vec<String> = run.gateway_us.iter().map(|us| format!("{us:.1}")).collect();
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} ({}) | {} | {} | {:.0} / {:.0} | {} |",
            run.store,
            int(run.load(|l| l.rate)),
            run.gateway(),
            rounds.join(", "),
            run.redis().map_or("–".into(), |us| format!("{us:.1}")),
            run.redis_commands()
                .map_or("–".into(), |n| format!("{n:.3}")),
            run.load(|l| l.p50_us),
            run.load(|l| l.p99_us),
            run.loads.iter().map(|l| l.errors).sum::<u64>(),
        );
    }
    if let [memory, redis] = &t.cpu[..] {
        let _ = writeln!(
            md,
            "\nCounting in Redis adds {:.1} µs of the node's CPU per request ({:+.0} %), and \
             Redis spends {:.1} µs more.",
            redis.gateway() - memory.gateway(),
            (redis.gateway() / memory.gateway() - 1.0) * 100.0,
            redis.redis().unwrap_or(f64::NAN),
        );
    }
    if t.waited {
        md.push_str("\nThe run waited for another build to finish first.\n");
    }
    md.push('\n');
    md
}

/// The header of the table [`windows_row`] fills.
const WINDOWS_HEADER: &str = "| limit | offered /s | windows | first admitted | later: mean (fewest – most) \
     | all admitted against the limit | most received in any span | refused | other | p50 / p99 ms |\n\
     |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";

/// A limit's windows in one row: what the first admitted, what the later ones did, the
/// whole run against the limit, and the most the backend received in any window's length.
fn windows_row(w: &Windows) -> String {
    let later: Vec<usize> = w.after_first().collect();
    let first = w.rows.first().map_or(0, |r| r.admitted);
    let limit = w.limit as f64;
    let mean = later.iter().sum::<usize>() as f64 / later.len().max(1) as f64;
    let total: usize = w.rows.iter().map(|r| r.admitted).sum();
    let allowed = limit * w.rows.len() as f64;
    let refused: usize = w.rows.iter().map(|r| r.refused).sum();
    let other: usize = w.rows.iter().map(|r| r.other).sum();
    format!(
        "| {} | {:.1} | {} | {} | {mean:.1} ({} – {}) | {} of {} ({:+.2} %) | {} ({:+.1} %) | {} | {} | {:.1} / {:.1} |\n",
        w.label,
        w.offered_rate,
        w.rows.len(),
        int(first as f64),
        later.iter().min().copied().unwrap_or(0),
        later.iter().max().copied().unwrap_or(0),
        int(total as f64),
        int(allowed),
        (total as f64 / allowed - 1.0) * 100.0,
        int(w.max_in_any_span as f64),
        (w.max_in_any_span as f64 / limit - 1.0) * 100.0,
        int(refused as f64),
        other,
        w.latency.p50_ms,
        w.latency.p99_ms,
    )
}

/// 12345.6 → "12,346".
pub(super) fn int(value: f64) -> String {
    if !value.is_finite() {
        return "–".into();
    }
    let digits = format!("{:.0}", value.abs());
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if value < -0.5 {
        format!("-{grouped}")
    } else {
        grouped
    }
}

/// A target, what was measured, and whether it was met (`None`: not measured).
type Target = (String, String, Option<bool>);

/// The targets the data plane's cases decide.
fn data_plane_targets(d: &DataPlane) -> Vec<Target> {
    let rate = |case| d.runs(case).rate();
    let (gateway, nginx, envoy) = (rate(Case::Gateway), rate(Case::Nginx), rate(Case::Envoy));
    let cpu = |case| d.runs(case).cpu_us();
    let added = |case| added(d.runs(case), d.runs(Case::Backend), |l| l.p50_us);
    let (gw_added, envoy_added) = (added(Case::Gateway), added(Case::Envoy));
    let spin_like = rate(Case::SpinLike);
    let cpu_ratio = match (cpu(Case::Gateway), cpu(Case::Nginx)) {
        (Some(gateway), Some(nginx)) => (
            format!("{:.2} × ({gateway:.1} vs {nginx:.1} µs)", gateway / nginx),
            Some(gateway <= 1.5 * nginx),
        ),
        _ => ("not measured".into(), None),
    };
    let backend_jwt_cost = match (cpu(Case::GatewayBackendJwt), cpu(Case::Gateway)) {
        (Some(with), Some(without)) => (
            format!("{:.3} × ({with:.1} vs {without:.1} µs)", with / without),
            Some(with <= 1.05 * without),
        ),
        _ => ("not measured".into(), None),
    };
    vec![
        (
            "case 4 throughput ≥ 0.6 × nginx (case 2)".to_string(),
            format!(
                "{:.2} × ({} vs {} req/s)",
                gateway / nginx,
                int(gateway),
                int(nginx)
            ),
            Some(gateway >= 0.6 * nginx),
        ),
        (
            "case 4 CPU per request ≤ 1.5 × nginx's (case 2)".into(),
            cpu_ratio.0,
            cpu_ratio.1,
        ),
        (
            "case 4j (backend JWT sent) CPU per request ≤ 1.05 × case 4's".into(),
            backend_jwt_cost.0,
            backend_jwt_cost.1,
        ),
        (
            "case 4 throughput ahead of Envoy with the same policy (case 3)".into(),
            format!(
                "{:.2} × ({} vs {} req/s)",
                gateway / envoy,
                int(gateway),
                int(envoy)
            ),
            Some(gateway > envoy),
        ),
        (
            "case 6 (Spin-like, full policy, the benchmark's API: counters batched) ≥ 2,500 req/s on one core".into(),
            format!("{} req/s", int(spin_like)),
            Some(spin_like >= 2500.0),
        ),
        (
            "latency added at concurrency 1 (p50) ≤ Envoy's".into(),
            format!("{gw_added:.0} µs vs Envoy {envoy_added:.0} µs"),
            Some(gw_added <= envoy_added),
        ),
    ]
}

fn targets_table(rows: Vec<Target>) -> String {
    let mut md = String::from("### Targets\n\n| target | measured | |\n|---|---|---|\n");
    for (target, measured, met) in rows {
        let verdict = match met {
            Some(true) => "MET",
            Some(false) => "MISSED",
            None => "–",
        };
        let _ = writeln!(md, "| {target} | {measured} | **{verdict}** |");
    }
    md.push('\n');
    md
}

fn machine_table(machine: &[(String, String)]) -> String {
    let mut md = String::from("### Machine\n\n| | |\n|---|---|\n");
    for (item, value) in machine {
        let _ = writeln!(md, "| {item} | {value} |");
    }
    md.push('\n');
    md
}

/// `--only data-plane`: the machine, the data plane's targets and its table, as a
/// section of their own.
pub fn data_plane_section(o: &Options, machine: &[(String, String)], data: &DataPlane) -> String {
    let mut md = format!(
        "## The data plane alone\n\n`cargo run --release -p tools --bin bench -- --only \
         data-plane --rounds {} --seconds {} --connections {}`, {}.\n\n",
        o.rounds,
        o.seconds,
        o.connections,
        harness::machine::output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
    );
    md.push_str(&machine_table(machine));
    md.push_str(&targets_table(data_plane_targets(data)));
    md.push_str(&data_plane(o, data));
    md
}

/// The data-plane table, its ratios and every round's rate.
fn data_plane(o: &Options, data: &DataPlane) -> String {
    let c = o.connections;
    let mut md = format!(
        "### Data plane\n\nwrk (1 thread, keep-alive GET, same path and bearer token; the \
         backend answers 1 KiB), the proxy under test on CPU 1 with one worker, backend and \
         wrk on CPU 0. Medians of {} rounds of {} s per run, each case after a {} s warm-up; \
         every round runs every case. Case 4 sends a JWT (an application of tokenType JWT), \
         4b an opaque token (tokenType OAUTH: introspected at the control plane on first \
         use, then remembered). Cases 3 to 5 count every request against the API's \
         rate cap (10⁹/s, never reached); the tiers are Unlimited. Added latency: over case \
         1 at concurrency 1. CPU µs/req: the server's user + system time (nginx's \
         worker included) over the requests it answered at {c}. nginx and edge-gateway each \
         write a JSON access-log line per request, buffered and written every 100 ms \
         (Envoy logs nothing). What each side keeps \
         between requests: Envoy caches verified tokens (`jwt_cache_config`, 100) and \
         routes the API by one prefix; edge-gateway keeps verified tokens and the \
         manifest entries it has read in each reused instance, and the component \
         compiled.\n\n\
         | case | req/s at {c} | CPU µs/req at {c} | p50 µs at {c} | p99 µs at {c} | p50 µs at 1 | p99 µs at 1 \
         | added p50 µs at 1 | added p99 µs at 1 |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
        o.rounds, o.seconds, o.warmup
    );
    let backend = data.runs(Case::Backend);
    for runs in &data.cases {
        let m = |loads: &[Load], f: fn(&Load) -> f64| CaseRuns::median(loads, f);
        let (added50, added99) = if runs.case == Case::Backend {
            ("–".to_string(), "–".to_string())
        } else {
            let added = |f: fn(&Load) -> f64| format!("{:.0}", added(runs, backend, f));
            (added(|l| l.p50_us), added(|l| l.p99_us))
        };
        let cpu = runs
            .cpu_us()
            .map_or("–".to_string(), |us| format!("{us:.1}"));
        let _ = writeln!(
            md,
            "| {} | {} | {cpu} | {:.0} | {:.0} | {:.0} | {:.0} | {added50} | {added99} |",
            runs.case.label(),
            int(runs.rate()),
            m(&runs.loaded, |l| l.p50_us),
            m(&runs.loaded, |l| l.p99_us),
            m(&runs.single, |l| l.p50_us),
            m(&runs.single, |l| l.p99_us),
        );
    }
    let rate = |case| data.runs(case).rate();
    let _ = writeln!(
        md,
        "\nRatios of throughput: case 4 / case 2 (nginx) **{:.2}**, case 4 / case 3 (Envoy) \
         **{:.2}**, case 4j / case 4 (backend JWT sent / not) {:.2}, case 4b / case 4 \
         (opaque / JWT) {:.2}, case 5 / case 4 {:.2}.\n",
        rate(Case::Gateway) / rate(Case::Nginx),
        rate(Case::Gateway) / rate(Case::Envoy),
        rate(Case::GatewayBackendJwt) / rate(Case::Gateway),
        rate(Case::GatewayOpaque) / rate(Case::Gateway),
        rate(Case::GatewayOpen) / rate(Case::Gateway),
    );
    md.push_str("Every round, req/s at the fixed concurrency:\n\n");
    for runs in &data.cases {
        let rounds: Vec<String> = runs.loaded.iter().map(|l| int(l.rate)).collect();
        let errors = match runs.errors() {
            0 => String::new(),
            n => format!(" (**{n} errors or non-2xx answers**)"),
        };
        let _ = writeln!(
            md,
            "- {}: {}{errors}",
            runs.case.label(),
            rounds.join(" / ")
        );
    }
    if data.waited > 0 {
        let _ = writeln!(
            md,
            "\n{} runs waited for another build to finish first.",
            data.waited
        );
    }
    md.push('\n');
    md
}

/// Replaces the generated part of `path` (or creates it), keeping what people wrote around it.
fn write(path: &Path, generated: &str) {
    write_between(path, BEGIN, END, generated);
}

/// The markers around a case's own section of the report.
fn section_markers(part: Part) -> (String, String) {
    let name = match part {
        Part::Fleet => "fleet",
        Part::Throttling => "throttling",
        Part::SpinLike => "spin-like",
        Part::Idle => "idle",
        Part::Artefacts => "artefacts",
        Part::Https => "https",
        Part::Tls => "tls",
        Part::Floods => "floods",
        Part::TokenFlood => "token-flood",
        Part::DataPlane => "data-plane",
        Part::Portal => "portal",
        Part::Mcp => "mcp",
        Part::Mediation => "mediation",
        Part::Spin => "spin",
    };
    (
        format!(
            "<!-- bench:{name}:begin: written by `cargo run --release -p tools --bin bench` (or \
             with `-- --only {name}`); everything up to bench:{name}:end is replaced on each run -->"
        ),
        format!("<!-- bench:{name}:end -->"),
    )
}

/// Prints a case's section and writes it between its own markers in `--out` (appended when
/// they are missing), leaving the rest of the file as it is.
pub fn write_section(options: &Options, part: Part, generated: &str) {
    println!("{generated}");
    let (begin, end) = section_markers(part);
    write_between(&options.out, &begin, &end, generated);
    eprintln!("bench: {part:?} written to {}", options.out.display());
}

fn write_between(path: &Path, begin_marker: &str, end_marker: &str, generated: &str) {
    let block = format!("{begin_marker}\n{}\n{end_marker}\n", generated.trim_end());
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    let text = match (existing.find(begin_marker), existing.find(end_marker)) {
        (Some(begin), Some(end)) if begin < end => {
            let rest = existing[end + end_marker.len()..].trim_start_matches('\n');
            let gap = if rest.is_empty() { "" } else { "\n" };
            format!("{}{block}{gap}{rest}", &existing[..begin])
        }
        _ if existing.is_empty() => format!("# Benchmarks\n\n{block}"),
        _ => format!("{}\n\n{block}", existing.trim_end()),
    };
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(int(1234567.4), "1,234,567");
        assert_eq!(int(999.0), "999");
        assert_eq!(int(-1500.0), "-1,500");
    }

    #[test]
    fn replaces_only_the_generated_part() {
        let path = harness::temp_dir().join("BENCHMARKS.md");
        std::fs::write(
            &path,
            format!("# B\n\nintro\n\n{BEGIN}\nold\n{END}\n\n## Notes\n"),
        )
        .unwrap();
        write(&path, "new");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!("# B\n\nintro\n\n{BEGIN}\nnew\n{END}\n\n## Notes\n")
        );
    }

    #[test]
    fn a_section_of_its_own_leaves_the_rest() {
        let path = harness::temp_dir().join("BENCHMARKS.md");
        let main = format!("# B\n\n{BEGIN}\nold\n{END}\n\n## Notes\n");
        std::fs::write(&path, &main).unwrap();
        let (begin, end) = section_markers(Part::Fleet);
        write_between(&path, &begin, &end, "fleet 1");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{main}\n{begin}\nfleet 1\n{end}\n"));
        std::fs::write(&path, format!("{text}\n## Fleet notes\n")).unwrap();
        write_between(&path, &begin, &end, "fleet 2");
        write(&path, "new");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!(
                "# B\n\n{BEGIN}\nnew\n{END}\n\n## Notes\n\n{begin}\nfleet 2\n{end}\n\n## Fleet notes\n"
            )
        );
    }
}
