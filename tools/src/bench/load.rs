//! The load generator: wrk on CPU 0, one thread, keep-alive connections, and what its
//! `--latency` report says.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// What one wrk run measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct Load {
    /// Requests per second.
    pub rate: f64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// Answers other than 2xx/3xx plus socket errors (any makes the run suspect).
    pub errors: u64,
    /// CPU time (user + system) of the server under test per request, µs; `None` where
    /// not measured.
    pub cpu_us: Option<f64>,
}

/// One wrk run description.
pub struct Wrk<'a> {
    /// Target URL.
    pub url: &'a str,
    /// Keep-alive connections (concurrency).
    pub connections: usize,
    /// How long.
    pub duration: Duration,
    /// Extra request headers, `Name: value`.
    pub headers: &'a [String],
    /// A Lua script (method, body) when plain GETs will not do.
    pub script: Option<&'a Path>,
}

impl Wrk<'_> {
    /// Runs wrk and parses its report; panics when wrk fails to run at all.
    pub async fn run(&self) -> Load {
        let mut command = tokio::process::Command::new("taskset");
        command.args([
            "-c",
            "0",
            "wrk",
            "-t1",
            &format!("-c{}", self.connections),
            &format!("-d{}s", self.duration.as_secs().max(1)),
            "--timeout",
            "5s",
            "--latency",
        ]);
        for header in self.headers {
            command.args(["-H", header]);
        }
        if let Some(script) = self.script {
            command.arg("-s").arg(script);
        }
        let out = command.arg(self.url).output().await.expect("run wrk");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "wrk failed on {}: {report}{}",
            self.url,
            String::from_utf8_lossy(&out.stderr)
        );
        let load = parse(&report);
        if load.errors > 0 {
            eprintln!(
                "bench: {} errors or non-2xx answers from {}",
                load.errors, self.url
            );
        }
        load
    }
}

/// Reads requests/s, the 50% and 99% latencies and the error counts of a wrk report.
pub fn parse(report: &str) -> Load {
    let mut load = Load::default();
    for line in report.lines().map(str::trim) {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("Requests/sec:"), Some(rate)) => load.rate = rate.parse().unwrap_or(0.0),
            (Some("50%"), Some(latency)) => load.p50_us = micros(latency),
            (Some("99%"), Some(latency)) => load.p99_us = micros(latency),
            _ => {}
        }
        if let Some(count) = line.strip_prefix("Non-2xx or 3xx responses:") {
            load.errors += count.trim().parse::<u64>().unwrap_or(0);
        }
        if let Some(counts) = line.strip_prefix("Socket errors:") {
            // "connect 0, read 0, write 0, timeout 0"
            load.errors += counts
                .split(',')
                .filter_map(|c| c.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    load
}

/// wrk's "330.00us", "1.20ms", "2.00s" in µs.
fn micros(text: &str) -> f64 {
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().unwrap_or(f64::NAN);
    match unit {
        "us" => value,
        "ms" => value * 1e3,
        "s" => value * 1e6,
        "m" => value * 60e6,
        _ => f64::NAN,
    }
}

/// Writes a wrk script that sends `method` with a form `body` and `headers`.
pub fn script(dir: &Path, name: &str, method: &str, body: &str, headers: &[String]) -> PathBuf {
    let mut lua = format!(
        "wrk.method = \"{method}\"\nwrk.body = \"{body}\"\n\
         wrk.headers[\"Content-Type\"] = \"application/x-www-form-urlencoded\"\n"
    );
    for header in headers {
        let (name, value) = header.split_once(": ").expect("Name: value");
        lua.push_str(&format!("wrk.headers[\"{name}\"] = \"{value}\"\n"));
    }
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, lua).expect("write wrk script");
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_wrk_report() {
        let report = "Running 10s test @ http://127.0.0.1:8080/
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   344.05us  100.23us   3.58ms   80.04%
    Req/Sec    93.54k     4.62k  100.14k    70.00%
  Latency Distribution
     50%  330.00us
     75%  386.00us
     90%  451.00us
     99%    1.71ms
  930791 requests in 10.00s, 1.10GB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 5
Requests/sec:  93063.65
Transfer/sec:    112.34MB
";
        let load = parse(report);
        assert_eq!(load.rate, 93063.65);
        assert_eq!(load.p50_us, 330.0);
        assert_eq!(load.p99_us, 1710.0);
        assert_eq!(load.errors, 8);
    }
}
