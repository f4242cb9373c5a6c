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

/// The filesystem `path` lives on, as `/proc/mounts` names it (`ext4 on /dev/vda`): a
/// commit costs what that filesystem makes a sync cost (nothing on a tmpfs).
pub fn filesystem_of(path: &std::path::Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (device, point, kind) = (fields.next()?, fields.next()?, fields.next()?);
            path.starts_with(point)
                .then_some((point.len(), kind, device))
        })
        .max_by_key(|(length, ..)| *length)
        .map(|(_, kind, device)| format!("{kind} on {device}"))
        .unwrap_or_else(|| "unknown".into())
}

/// What a process has written so far (`/proc/PID/io`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Writes {
    /// Bytes it caused to be sent to storage (`write_bytes`).
    pub bytes: f64,
    /// Write system calls (`syscw`).
    pub calls: f64,
}

impl Writes {
    /// The process's counts now (zero when unreadable).
    pub fn of(pid: u32) -> Self {
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
        let field = |name: &str| {
            io.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
                .unwrap_or_default()
        };
        Writes {
            bytes: field("write_bytes:"),
            calls: field("syscw:"),
        }
    }

    /// What was written since `before`, per one of `requests`.
    pub fn per_request_since(self, before: Writes, requests: f64) -> Writes {
        let requests = requests.max(1.0);
        Writes {
            bytes: (self.bytes - before.bytes) / requests,
            calls: (self.calls - before.calls) / requests,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_filesystem_of_a_path() {
        let named = filesystem_of(std::path::Path::new("/proc/self"));
        assert!(named.starts_with("proc on "), "{named}");
    }

    #[test]
    fn counts_what_this_process_wrote() {
        let before = Writes::of(std::process::id());
        std::fs::write(std::env::temp_dir().join("apim-writes-test"), b"x").unwrap();
        let after = Writes::of(std::process::id());
        assert!(after.calls > before.calls);
    }
}
