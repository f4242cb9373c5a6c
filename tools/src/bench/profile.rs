//! Where a server's time goes under load: `perf record -g` on its process while wrk runs
//! (edge-gateway under case 4, the control plane issuing tokens), summarised by
//! `perf report --no-children --sort dso,sym`.

use std::time::Duration;

use super::Options;
use super::load::Wrk;
use super::platform::{BASE, Platform, SECURED};

/// Seconds of sampling.
const SAMPLE_SECONDS: u64 = 5;

/// A profile summary: shares of the samples by binary, and the top symbols.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Samples taken.
    pub samples: String,
    /// (share %, binary), largest first.
    pub by_dso: Vec<(f64, String)>,
    /// (share %, crate or binary): edge-gateway's samples by the crate of their symbol.
    pub by_crate: Vec<(f64, String)>,
    /// (share %, binary, symbol), largest first.
    pub by_symbol: Vec<(f64, String, String)>,
}

/// Profiles the gateway under case 4.
pub async fn gateway(options: &Options, platform: &Platform) -> Option<Profile> {
    eprintln!("bench: profiling edge-gateway under case 4");
    harness::machine::wait_for_quiet_cpu().await;
    let url = format!("{}{BASE}{SECURED}", platform.stack.gw.base);
    let headers = [platform.bearer()];
    let load = Wrk {
        url: &url,
        connections: options.connections,
        duration: Duration::default(),
        headers: &headers,
        script: None,
    };
    record(platform, platform.gateway_pid(), "edge-gateway", load).await
}

/// Samples process `pid` (binary `binary`) for a few seconds while `load` runs (its
/// duration is set here); None (with a note on stderr) when perf fails.
pub async fn record(
    platform: &Platform,
    pid: u32,
    binary: &str,
    mut load: Wrk<'_>,
) -> Option<Profile> {
    let data = platform.dir.join(format!("{binary}.perf.data"));
    load.duration = Duration::from_secs(SAMPLE_SECONDS + 2);
    let perf = async {
        // Start sampling once the load is steady.
        tokio::time::sleep(Duration::from_secs(1)).await;
        tokio::process::Command::new("perf")
            .args(["record", "-g", "-F", "999", "-o"])
            .arg(&data)
            .args(["-p", &pid.to_string(), "--"])
            .args(["sleep", &SAMPLE_SECONDS.to_string()])
            .output()
            .await
    };
    let (_, recorded) = tokio::join!(load.run(), perf);
    match recorded {
        Ok(out) if out.status.success() => {}
        other => {
            eprintln!("bench: perf record failed: {other:?}");
            return None;
        }
    }
    let report = |sort: &str| {
        let out = std::process::Command::new("perf")
            .args(["report", "--stdio", "--no-children", "-g", "none"])
            .args(["--sort", sort, "-i"])
            .arg(&data)
            .output()
            .ok()?;
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let by_dso = report("dso")?;
    let symbols: Vec<(f64, String, String)> = rows(&report("dso,sym")?)
        .map(|(share, rest)| {
            let (dso, symbol) = split_symbol(rest);
            (share, dso, symbol)
        })
        .collect();
    Some(Profile {
        samples: samples(&by_dso),
        by_dso: rows(&by_dso)
            .filter(|(share, _)| *share >= 0.5)
            .map(|(share, dso)| (share, dso.to_string()))
            .collect(),
        by_crate: by_crate(&symbols, binary),
        by_symbol: symbols
            .into_iter()
            .take(20)
            .map(|(share, dso, symbol)| (share, dso, shorten(&symbol)))
            .collect(),
    })
}

/// Sums the shares by crate (the profiled binary's own symbols) or by binary (the rest).
fn by_crate(symbols: &[(f64, String, String)], binary: &str) -> Vec<(f64, String)> {
    let mut totals: Vec<(f64, String)> = Vec::new();
    for (share, dso, symbol) in symbols {
        let name = if dso == binary {
            format!("{binary}: {}", crate_of(symbol))
        } else {
            dso.clone()
        };
        match totals.iter_mut().find(|(_, n)| *n == name) {
            Some((total, _)) => *total += share,
            None => totals.push((*share, name)),
        }
    }
    totals.sort_by(|a, b| b.0.total_cmp(&a.0));
    totals.retain(|(share, _)| *share >= 0.5);
    totals
}

/// "<hyper::proto::h1::Conn<…> as …>::poll" → "hyper"; drop glue counts for its type;
/// symbols without a path are C (mimalloc, SQLite), `<T as …>` generic glue.
fn crate_of(symbol: &str) -> &str {
    let mut symbol = symbol.trim_start_matches(['<', '&']);
    if let Some(inner) = symbol.strip_prefix("core::ptr::drop_in_place<") {
        symbol = inner.trim_start_matches(['<', '&']);
    }
    match symbol.split_once("::") {
        None => "(C code)",
        Some((head, _)) if head.contains(" as ") => "(generic glue)",
        Some((head, _)) => head,
    }
}

/// "# Samples: 4K of event 'cpu-clock'" → "4K of event 'cpu-clock'".
fn samples(report: &str) -> String {
    report
        .lines()
        .find_map(|l| l.strip_prefix("# Samples: "))
        .unwrap_or_default()
        .to_string()
}

/// The report's rows: the share and the rest of the line.
fn rows(report: &str) -> impl Iterator<Item = (f64, &str)> + '_ {
    report
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let (share, rest) = line.trim().split_once('%')?;
            Some((share.parse::<f64>().ok()?, rest.trim()))
        })
}

/// "[JIT] tid 12  [.] 0x00007f…" → ("[JIT] tid 12", "0x00007f…"): binary names may hold
/// spaces, the symbol starts after perf's `[.]` (user) or `[k]` (kernel) mark.
fn split_symbol(rest: &str) -> (String, String) {
    for mark in ["[.]", "[k]"] {
        if let Some((dso, symbol)) = rest.split_once(mark) {
            return (dso.trim().to_string(), symbol.trim().to_string());
        }
    }
    (rest.to_string(), String::new())
}

/// Rust symbols can run to hundreds of characters of generics; keep the readable start.
fn shorten(symbol: &str) -> String {
    const MAX: usize = 110;
    if symbol.chars().count() <= MAX {
        return symbol.to_string();
    }
    let cut: String = symbol.chars().take(MAX).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_perf_report_rows() {
        let report = "# Samples: 4K of event 'cpu-clock'\n#\n    31.20%  [kernel.kallsyms]  [k] copy_user_generic\n     4.00%  edge-gateway       [.] wasmtime::runtime::vm::Instance::new\n";
        assert_eq!(samples(report), "4K of event 'cpu-clock'");
        let rows: Vec<_> = rows(report).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, 31.2);
        let (dso, symbol) = split_symbol(rows[1].1);
        assert_eq!(dso, "edge-gateway");
        assert_eq!(symbol, "wasmtime::runtime::vm::Instance::new");
        assert_eq!(split_symbol("[JIT] tid 7  [.] 0x1").0, "[JIT] tid 7");
        assert_eq!(crate_of("<hyper::proto::h1::Conn<T> as X>::poll"), "hyper");
        assert_eq!(
            crate_of("core::ptr::drop_in_place<wasmtime::Store<T>>"),
            "wasmtime"
        );
        assert_eq!(
            crate_of("<&curve25519_dalek::F as Mul>::mul"),
            "curve25519_dalek"
        );
        assert_eq!(crate_of("<F as axum::Handler>::call"), "(generic glue)");
        assert_eq!(crate_of("mi_free"), "(C code)");
    }
}
