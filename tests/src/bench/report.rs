//! The report: targets with MET/MISSED, the data-plane table, the control-plane table and
//! the profile, printed and written into `BENCHMARKS.md` between its bench markers.

use std::fmt::Write as _;
use std::path::Path;

use super::Options;
use super::control::{ControlResults, Phase};
use super::dataplane::{Case, CaseRuns, DataPlane};
use super::load::Load;
use super::profile::Profile;
use super::propagation::Propagation;

const BEGIN: &str = "<!-- bench:begin: written by `cargo run --release -p e2e --bin bench`; \
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
            "## Latest run\n\n`cargo run --release -p e2e --bin bench -- --rounds {} --seconds {} \
             --connections {} --apis {}{}`, {}.\n",
            o.rounds,
            o.seconds,
            o.connections,
            o.apis,
            if o.skip_scale { " --skip-scale" } else { "" },
            super::machine::output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        );
        md.push_str(&self.machine_table());
        md.push_str(&self.targets());
        md.push_str(&self.data_plane());
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

    fn machine_table(&self) -> String {
        let mut md = String::from("### Machine\n\n| | |\n|---|---|\n");
        for (item, value) in &self.machine {
            let _ = writeln!(md, "| {item} | {value} |");
        }
        md.push('\n');
        md
    }

    fn targets(&self) -> String {
        let d = &self.data;
        let rate = |case| d.runs(case).rate();
        let (gateway, nginx, envoy) = (rate(Case::Gateway), rate(Case::Nginx), rate(Case::Envoy));
        let added = |case| added(d.runs(case), d.runs(Case::Backend), |l| l.p50_us);
        let (gw_added, envoy_added) = (added(Case::Gateway), added(Case::Envoy));
        let scale = self.control.scale.as_ref();
        let publish = scale.map(|s| &s.publish);
        let tokens = self.control.empty.client_credentials.rate;
        let rows = [
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
                "latency added at concurrency 1 (p50) ≤ Envoy's".into(),
                format!("{gw_added:.0} µs vs Envoy {envoy_added:.0} µs"),
                Some(gw_added <= envoy_added),
            ),
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
        ];
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

    fn data_plane(&self) -> String {
        let o = self.options;
        let c = o.connections;
        let mut md = format!(
            "### Data plane\n\nwrk (1 thread, keep-alive GET, same path and bearer token; the \
             backend answers 1 KiB), the proxy under test on CPU 1 with one worker, backend and \
             wrk on CPU 0. Medians of {} rounds of {} s per run, each case after a {} s warm-up; \
             every round runs every case. Cases 3 to 5 count every request against the API's \
             rate cap (10⁹/s, never reached); the tiers are Unlimited. Added latency: over case \
             1 at concurrency 1. CPU µs/req: the server's user + system time (nginx's \
             worker included) over the requests it answered at {c}.\n\n\
             | case | req/s at {c} | CPU µs/req at {c} | p50 µs at {c} | p99 µs at {c} | p50 µs at 1 | p99 µs at 1 \
             | added p50 µs at 1 | added p99 µs at 1 |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
            o.rounds, o.seconds, o.warmup
        );
        let backend = self.data.runs(Case::Backend);
        for runs in &self.data.cases {
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
        let rate = |case| self.data.runs(case).rate();
        let _ = writeln!(
            md,
            "\nRatios of throughput: case 4 / case 2 (nginx) **{:.2}**, case 4 / case 3 (Envoy) \
             **{:.2}**, case 5 / case 4 {:.2}.\n",
            rate(Case::Gateway) / rate(Case::Nginx),
            rate(Case::Gateway) / rate(Case::Envoy),
            rate(Case::GatewayOpen) / rate(Case::Gateway),
        );
        md.push_str("Every round, req/s at the fixed concurrency:\n\n");
        for runs in &self.data.cases {
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
        if self.data.waited > 0 {
            let _ = writeln!(
                md,
                "\n{} runs waited for another build to finish first.",
                self.data.waited
            );
        }
        md.push('\n');
        md
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
            "whole manifest: a fresh gateway's first request, snapshot pulled and applied (ms)",
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

fn profile(whose: &str, under: &str, profile: Option<&Profile>) -> String {
    let Some(profile) = profile else {
        return format!("### Where {whose} time goes\n\nNot profiled in this run.\n\n");
    };
    let mut md = format!(
        "### Where {whose} time goes\n\n`perf record -g` on {under} ({}); `perf report \
         --no-children --sort dso,sym`, self time.\n\n| share | binary |\n|--:|---|\n",
        profile.samples
    );
    for (share, dso) in &profile.by_dso {
        let _ = writeln!(md, "| {share:.1} % | {dso} |");
    }
    md.push_str("\n| share | its own code by crate, other binaries whole |\n|--:|---|\n");
    for (share, name) in &profile.by_crate {
        let _ = writeln!(md, "| {share:.1} % | {name} |");
    }
    md.push_str("\n| share | binary | symbol |\n|--:|---|---|\n");
    for (share, dso, symbol) in &profile.by_symbol {
        let symbol = symbol.replace('|', "\\|");
        let _ = writeln!(md, "| {share:.1} % | {dso} | `{symbol}` |");
    }
    md.push('\n');
    md
}

/// 12345.6 → "12,346".
fn int(value: f64) -> String {
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

/// Replaces the generated part of `path` (or creates it), keeping what people wrote around it.
fn write(path: &Path, generated: &str) {
    let block = format!("{BEGIN}\n{generated}\n{END}\n");
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    let text = match (existing.find(BEGIN), existing.find(END)) {
        (Some(begin), Some(end)) if begin < end => {
            let rest = existing[end + END.len()..].trim_start_matches('\n');
            let gap = if rest.is_empty() { "" } else { "\n" };
            format!("{}{block}{gap}{rest}", &existing[..begin])
        }
        _ if existing.is_empty() => format!("# Benchmarks\n\n{block}"),
        _ => format!("{}\n{block}", existing.trim_end()),
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
        let path = crate::temp_dir().join("BENCHMARKS.md");
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
}
