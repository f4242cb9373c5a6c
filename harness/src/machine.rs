//! The machine's processes: CPU placement, waiting for a quiet CPU, CPU time and
//! resident memory.

use std::process::Command;
use std::time::{Duration, Instant};

/// Pins the calling thread to `cpus` (taskset syntax). Processes and threads it starts
/// afterwards inherit the mask, and a tokio runtime sizes itself by it.
pub fn pin_thread(cpus: &str) {
    taskset(&["-p", "-c", cpus, &thread_id()]);
}

/// Gives the calling thread the lowest priority (nice 19): it takes what CPU time the
/// others on its CPUs leave.
pub fn lowest_priority_thread() {
    let tid = thread_id();
    let status = Command::new("renice")
        .args(["-n", "19", "-p", &tid])
        .stdout(std::process::Stdio::null())
        .status();
    assert!(
        status.is_ok_and(|s| s.success()),
        "renice -n 19 -p {tid} failed"
    );
}

/// The calling thread's id: "/proc/thread-self" links to "<pid>/task/<tid>" (no libc).
fn thread_id() -> String {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name()
        .and_then(|t| t.to_str())
        .expect("thread id")
        .to_string()
}

/// Pins every thread of process `pid` to `cpus`.
pub fn pin_process(pid: u32, cpus: &str) {
    taskset(&["-a", "-p", "-c", cpus, &pid.to_string()]);
}

fn taskset(args: &[&str]) {
    let status = Command::new("taskset")
        .args(args)
        .stdout(std::process::Stdio::null())
        .status();
    assert!(
        status.is_ok_and(|s| s.success()),
        "taskset {} failed",
        args.join(" ")
    );
}

/// Waits while compilers run or anything else keeps the CPUs busy (another build or load
/// on these two cores makes figures garbage; the benchmark's own servers are idle when
/// this is called); true when it had to wait.
pub async fn wait_for_quiet_cpu() -> bool {
    let started = Instant::now();
    let mut announced = false;
    while compilers_running() || cpu_busy().await > 0.15 {
        if !announced {
            eprintln!("bench: rustc or another load is running; waiting for a quiet machine");
            announced = true;
        }
        if started.elapsed() > Duration::from_secs(30 * 60) {
            eprintln!("bench: still compiling after 30 min; measuring anyway");
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    announced
}

fn compilers_running() -> bool {
    // Only rustc: cargo itself is this program's parent under `cargo run`.
    Command::new("pgrep")
        .args(["-x", "rustc"])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Share of both CPUs busy over half a second, 0 to 1.
async fn cpu_busy() -> f64 {
    // First line of /proc/stat: "cpu user nice system idle iowait irq softirq steal ...".
    let sample = || -> (u64, u64) {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let ticks: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .filter_map(|t| t.parse().ok())
            .collect();
        let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
        (ticks.iter().take(8).sum(), idle)
    };
    let (total_before, idle_before) = sample();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (total, idle) = sample();
    let elapsed = total.saturating_sub(total_before).max(1);
    1.0 - idle.saturating_sub(idle_before) as f64 / elapsed as f64
}

/// CPU time (user + system) used so far by these processes and their children, µs.
pub fn cpu_us(pids: &[u32]) -> f64 {
    let ticks_per_sec: f64 = output("getconf", &["CLK_TCK"]).parse().unwrap_or(100.0);
    let children = children_of(pids);
    let ticks: u64 = pids
        .iter()
        .chain(&children)
        .filter_map(|pid| stat_fields(*pid))
        .map(|f| f.ticks)
        .sum();
    ticks as f64 * 1e6 / ticks_per_sec
}

/// The processes whose parent is one of `pids`.
pub fn children_of(pids: &[u32]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat_fields(*pid).is_some_and(|f| pids.contains(&f.parent)))
        .collect()
}

/// A process's parent and its CPU ticks (utime + stime), from `/proc/<pid>/stat`.
struct StatFields {
    parent: u32,
    ticks: u64,
}

fn stat_fields(pid: u32) -> Option<StatFields> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields start after its closing parenthesis.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(StatFields {
        parent: fields.get(1)?.parse().ok()?,
        ticks: fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?,
    })
}

/// Resident memory of a process, MiB.
pub fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            let line = status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))?
                .to_string();
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map(|kib| kib / 1024.0)
        .unwrap_or(f64::NAN)
}

/// The first line of what `program` prints.
pub fn output(program: &str, args: &[&str]) -> String {
    all_output(program, args)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// What `program` prints on stdout, else on stderr (`nginx -v` writes there).
pub fn all_output(program: &str, args: &[&str]) -> String {
    let Ok(out) = Command::new(program)
        .args(args)
        .current_dir(crate::workspace_root())
        .output()
    else {
        return format!("({program} not found)");
    };
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    String::from_utf8_lossy(&text).into_owned()
}
