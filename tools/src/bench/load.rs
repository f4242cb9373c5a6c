//! The load generators: wrk on CPU 0, one thread, keep-alive connections, and what its
//! `--latency` report says; h2load likewise for HTTP/2 (many streams per connection); and
//! the CPU time the server under test spent meanwhile.

use std::path::{Path, PathBuf};
use std::time::Duration;

use harness::machine;

use super::Options;
use super::stats::median;

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

/// The wrk command that loads `url` with `headers` as the runs do, for `--hold`.
pub fn wrk_command(url: &str, headers: &[String]) -> String {
    let headers: String = headers.iter().map(|h| format!("-H '{h}' ")).collect();
    format!("wrk -t1 -c32 -d10s --latency {headers}{url}")
}

/// A warm-up, then a measured run with the CPU time per request of `pid`.
pub async fn counted(
    options: &Options,
    url: &str,
    headers: &[String],
    lua: Option<&std::path::Path>,
    pid: u32,
) -> Load {
    let wrk = |seconds| Wrk {
        url,
        connections: options.connections,
        duration: Duration::from_secs(seconds),
        headers,
        script: lua,
    };
    wrk(options.warmup).run().await;
    with_cpu_of(pid, options.seconds as f64, wrk(options.seconds).run()).await
}

/// Median requests/s of `runs`.
pub fn median_rate(runs: &[Load]) -> f64 {
    median(runs.iter().map(|l| l.rate))
}

/// Median CPU µs per request of `runs`, where measured.
pub fn median_cpu_us(runs: &[Load]) -> Option<f64> {
    let measured: Vec<f64> = runs.iter().filter_map(|l| l.cpu_us).collect();
    (!measured.is_empty()).then(|| median(measured))
}

/// [`median_cpu_us`] as a report's cell: one decimal, a dash where not measured.
pub fn cpu_cell(runs: &[Load]) -> String {
    median_cpu_us(runs).map_or("–".to_string(), |us| format!("{us:.1}"))
}

/// Runs `load` (of `seconds`) and sets its CPU time per request: what process `pid` and its
/// children (nginx's worker) spent meanwhile, user + system, over the requests answered.
pub async fn with_cpu_of(
    pid: u32,
    seconds: f64,
    load: impl std::future::Future<Output = Load>,
) -> Load {
    let before = machine::cpu_us(&[pid]);
    let mut load = load.await;
    let requests = load.rate * seconds;
    if requests > 0.0 {
        load.cpu_us = Some((machine::cpu_us(&[pid]) - before) / requests);
    }
    load
}

/// One h2load run: HTTP/2 (over TLS by ALPN for `https://`, h2c by prior knowledge for
/// `http://`), one thread on CPU 0, `connections` × `streams` requests in flight.
pub struct H2load<'a> {
    /// Target URL.
    pub url: &'a str,
    /// Connections.
    pub connections: usize,
    /// Streams in flight on each connection.
    pub streams: usize,
    /// How long.
    pub duration: Duration,
    /// Extra request headers, `Name: value`.
    pub headers: &'a [String],
}

impl H2load<'_> {
    /// Runs h2load and reads its report (req/s and failures; it gives no percentiles);
    /// panics when it fails to run, or when a TLS server did not choose h2.
    pub async fn run(&self) -> Load {
        let mut command = tokio::process::Command::new("taskset");
        command.args([
            "-c",
            "0",
            "h2load",
            "-t1",
            &format!("-c{}", self.connections),
            &format!("-m{}", self.streams),
            &format!("-D{}", self.duration.as_secs().max(1)),
        ]);
        for header in self.headers {
            // HTTP/2 header names are lower case.
            let (name, value) = header.split_once(": ").expect("Name: value");
            command.args(["-H", &format!("{}: {value}", name.to_lowercase())]);
        }
        let out = command.arg(self.url).output().await.expect("run h2load");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "h2load failed on {}: {report}{}",
            self.url,
            String::from_utf8_lossy(&out.stderr)
        );
        if self.url.starts_with("https://") {
            assert!(
                report.contains("Application protocol: h2"),
                "h2load on {}: the server did not choose h2 by ALPN:\n{report}",
                self.url
            );
        }
        let load = parse_h2load(&report);
        if load.errors > 0 {
            eprintln!(
                "bench: {} failed or non-2xx requests from {}",
                load.errors, self.url
            );
        }
        load
    }
}

/// Reads requests/s and the failures (failed requests and answers other than 2xx) of an
/// h2load report.
pub fn parse_h2load(report: &str) -> Load {
    let mut load = Load {
        p50_us: f64::NAN,
        p99_us: f64::NAN,
        ..Load::default()
    };
    // The count before `label` in "…, 12 failed, 0 errored, …".
    let count = |line: &str, label: &str| -> u64 {
        line.split(',')
            .filter_map(|part| part.trim().strip_suffix(label))
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum()
    };
    for line in report.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("finished in ") {
            // "finished in 10.00s, 35261.40 req/s, 37.98MB/s"
            load.rate = rest
                .split(',')
                .find_map(|part| part.trim().strip_suffix(" req/s")?.parse().ok())
                .unwrap_or(0.0);
        } else if let Some(rest) = line.strip_prefix("requests:") {
            load.errors +=
                count(rest, " failed") + count(rest, " errored") + count(rest, " timeout");
        } else if let Some(rest) = line.strip_prefix("status codes:") {
            load.errors += count(rest, " 3xx") + count(rest, " 4xx") + count(rest, " 5xx");
        }
    }
    load
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

    #[test]
    fn reads_an_h2load_report() {
        let report = "starting benchmark...
spawning thread #0: 4 total client(s). Timing-based test with 0s of warm-up time and 10s of main duration for measurements.
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2

finished in 10.00s, 35261.40 req/s, 37.98MB/s
requests: 352614 total, 352742 started, 352614 done, 352610 succeeded, 4 failed, 1 errored, 2 timeout
status codes: 352600 2xx, 0 3xx, 10 4xx, 0 5xx
traffic: 379.78MB (398227082) total, 1.35MB (1412000) headers (space savings 95.55%), 344.35MB (361076736) data
";
        let load = parse_h2load(report);
        assert_eq!(load.rate, 35261.4);
        assert_eq!(load.errors, 17);
        assert!(load.p99_us.is_nan());
    }
}
