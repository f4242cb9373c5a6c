//! What the benchmark's figures were measured on.

use harness::machine::{all_output, output};

/// What the figures were measured on, as `(item, value)` rows.
pub fn describe() -> Vec<(String, String)> {
    let cpu = first_line_after(&all_output("lscpu", &[]), "Model name:");
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .map(|m| first_line_after(&m, "MemTotal:"))
        .and_then(|kib| kib.split_whitespace().next()?.parse::<f64>().ok())
        .map(|kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0))
        .unwrap_or_default();
    let commit = output("git", &["rev-parse", "--short", "HEAD"]);
    let dirty = !output("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    vec![
        ("CPU".into(), cpu),
        // --all: this thread is pinned to one CPU by now.
        ("cores".into(), output("nproc", &["--all"])),
        ("memory".into(), memory),
        ("kernel".into(), output("uname", &["-sr"])),
        (
            "load average before the run".into(),
            std::fs::read_to_string("/proc/loadavg").unwrap_or_default(),
        ),
        ("rustc".into(), output("rustc", &["-V"])),
        ("nginx".into(), output("nginx", &["-v"])),
        ("envoy".into(), super::tools::envoy_version()),
        ("wrk".into(), output("wrk", &["-v"])),
        (
            "git commit".into(),
            format!(
                "{commit}{}",
                if dirty { " (with local changes)" } else { "" }
            ),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.trim().to_string()))
    .collect()
}

fn first_line_after(text: &str, label: &str) -> String {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .unwrap_or_default()
        .trim()
        .to_string()
}
