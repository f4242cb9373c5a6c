//! Load while a fault happens: a few clients, each on its own keep-alive connection,
//! calling in a loop and recording every request (when it started, how long it took,
//! how it ended), until told to stop.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// An answer with this status.
    Status(u16),
    /// No connection: nothing listened (the request was never sent).
    Refused,
    /// No answer within the client's timeout.
    Timeout,
    /// The connection failed after the request was sent (reset, closed mid-answer).
    Broken,
}

impl Outcome {
    /// A 2xx answer.
    pub fn ok(&self) -> bool {
        matches!(self, Outcome::Status(s) if (200..300).contains(s))
    }

    fn of(err: &reqwest::Error) -> Self {
        if err.is_connect() {
            Outcome::Refused
        } else if err.is_timeout() {
            Outcome::Timeout
        } else {
            Outcome::Broken
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Status(s) => write!(f, "{s}"),
            Outcome::Refused => f.write_str("connection refused"),
            Outcome::Timeout => f.write_str("timeout"),
            Outcome::Broken => f.write_str("connection broken"),
        }
    }
}

/// One request.
#[derive(Debug, Clone)]
pub struct Sample {
    /// When it started.
    pub at: Instant,
    /// How long until it ended.
    pub took: Duration,
    /// How.
    pub outcome: Outcome,
    /// The answer carried `Retry-After`.
    pub retry_after: bool,
    /// The start of the body of an answer other than 2xx.
    pub detail: Option<String>,
}

/// Builds request number `n` of client `client` (its own keep-alive `reqwest::Client`).
pub type MakeRequest =
    Arc<dyn Fn(&reqwest::Client, usize, u64) -> reqwest::RequestBuilder + Send + Sync>;

/// Clients calling until [`Load::finish`].
pub struct Load {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
    tasks: Vec<JoinHandle<Vec<Sample>>>,
}

impl Load {
    /// `clients` clients, each waiting `pace` between requests (none: back to back) and
    /// 20 ms after a failure, each request bounded by `timeout`.
    pub fn start(clients: usize, pace: Duration, timeout: Duration, make: MakeRequest) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicUsize::new(0));
        let tasks = (0..clients)
            .map(|client| {
                let (stop, sent, make) = (stop.clone(), sent.clone(), make.clone());
                tokio::spawn(async move {
                    let http = reqwest::Client::builder()
                        .timeout(timeout)
                        .pool_max_idle_per_host(1)
                        .build()
                        .expect("HTTP client");
                    let mut samples = Vec::new();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let at = Instant::now();
                        sent.fetch_add(1, Ordering::Relaxed);
                        let mut retry_after = false;
                        let mut detail = None;
                        let outcome = match make(&http, client, n).send().await {
                            Ok(response) => {
                                let status = response.status().as_u16();
                                retry_after = response
                                    .headers()
                                    .contains_key(reqwest::header::RETRY_AFTER);
                                // Read the body whole: the connection is reused.
                                match response.bytes().await {
                                    Ok(body) => {
                                        if !(200..300).contains(&status) {
                                            let text = String::from_utf8_lossy(&body);
                                            detail = Some(text.chars().take(300).collect());
                                        }
                                        Outcome::Status(status)
                                    }
                                    Err(err) => Outcome::of(&err),
                                }
                            }
                            Err(err) => Outcome::of(&err),
                        };
                        let failed = !outcome.ok();
                        samples.push(Sample {
                            at,
                            took: at.elapsed(),
                            outcome,
                            retry_after,
                            detail,
                        });
                        n += 1;
                        if failed {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        } else if !pace.is_zero() {
                            tokio::time::sleep(pace).await;
                        }
                    }
                    samples
                })
            })
            .collect();
        Load { stop, sent, tasks }
    }

    /// Requests started so far.
    pub fn sent(&self) -> usize {
        self.sent.load(Ordering::Relaxed)
    }

    /// Stops the clients (each finishes the request it is in) and returns every request,
    /// in the order they started.
    pub async fn finish(self) -> Samples {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for task in self.tasks {
            all.extend(task.await.expect("load client"));
        }
        all.sort_by_key(|s| s.at);
        Samples(all)
    }
}

/// Requests a load made.
#[derive(Debug, Clone, Default)]
pub struct Samples(pub Vec<Sample>);

impl Samples {
    /// Those that started in `[from, to)`.
    pub fn between(&self, from: Instant, to: Instant) -> Samples {
        Samples(
            self.0
                .iter()
                .filter(|s| s.at >= from && s.at < to)
                .cloned()
                .collect(),
        )
    }

    /// Those that started before `t` and ended after it.
    pub fn in_flight_at(&self, t: Instant) -> Samples {
        Samples(
            self.0
                .iter()
                .filter(|s| s.at < t && s.at + s.took >= t)
                .cloned()
                .collect(),
        )
    }

    /// Those that ended before `t`.
    pub fn ended_before(&self, t: Instant) -> Samples {
        Samples(
            self.0
                .iter()
                .filter(|s| s.at + s.took < t)
                .cloned()
                .collect(),
        )
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// None at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Those not answered 2xx.
    pub fn failed(&self) -> Samples {
        Samples(self.0.iter().filter(|s| !s.outcome.ok()).cloned().collect())
    }

    /// Answered 2xx.
    pub fn ok(&self) -> usize {
        self.0.iter().filter(|s| s.outcome.ok()).count()
    }

    /// How many ended each way, e.g. `200 × 512, connection refused × 3`.
    pub fn outcomes(&self) -> String {
        let mut counts: BTreeMap<&Outcome, usize> = BTreeMap::new();
        for sample in &self.0 {
            *counts.entry(&sample.outcome).or_default() += 1;
        }
        if counts.is_empty() {
            return "none".into();
        }
        counts
            .iter()
            .map(|(outcome, n)| format!("{outcome} × {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The bodies of the first few answers other than 2xx, with their status.
    pub fn details(&self, at_most: usize) -> Vec<String> {
        self.0
            .iter()
            .filter_map(|s| Some(format!("{}: {}", s.outcome, s.detail.as_ref()?)))
            .take(at_most)
            .collect()
    }

    /// The longest request.
    pub fn max_took(&self) -> Duration {
        self.0.iter().map(|s| s.took).max().unwrap_or_default()
    }

    /// A percentile (0 to 100) of the requests' durations.
    pub fn percentile(&self, p: f64) -> Duration {
        let mut took: Vec<Duration> = self.0.iter().map(|s| s.took).collect();
        if took.is_empty() {
            return Duration::ZERO;
        }
        took.sort();
        let index = ((p / 100.0) * (took.len() - 1) as f64).round() as usize;
        took[index.min(took.len() - 1)]
    }

    /// The first request started at or after `from` that was answered 2xx.
    pub fn first_ok_after(&self, from: Instant) -> Option<&Sample> {
        self.0.iter().find(|s| s.at >= from && s.outcome.ok())
    }

    /// The last request that was answered 2xx and ended before `before`: when the
    /// service was last seen working.
    pub fn last_ok_before(&self, before: Instant) -> Option<&Sample> {
        self.0
            .iter()
            .filter(|s| s.outcome.ok() && s.at + s.took <= before)
            .max_by_key(|s| s.at + s.took)
    }
}

/// Milliseconds, for the report.
pub fn ms(duration: Duration) -> String {
    format!("{:.0} ms", duration.as_secs_f64() * 1000.0)
}
