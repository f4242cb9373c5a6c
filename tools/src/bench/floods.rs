//! HTTP/2 floods against another client (`--only floods`): a fresh h2c client of
//! edge-gateway (full policy, on CPU 1) calls the secured resource `--flood-probes` times,
//! one after the other, on a quiet gateway, then while an attacker on a thread of its own
//! floods the same listener, one connection at a time, reconnecting whenever the gateway
//! ends one, each of `--flood-rounds` rounds:
//! - rapid reset (CVE-2023-44487): requests for the secured resource, with the token,
//!   each reset at once ([`RESETS_PER_CONNECTION`] a connection);
//! - CONTINUATION: a header block that never ends, [`CONTINUATION_BYTES`] each frame.
//!
//! The attacker runs at the lowest priority (nice 19) on the gateway's CPU, so that it
//! takes only what the gateway leaves while the kernel's work on its packets falls on the
//! gateway's core. The bound held: the other client's p99 within 2× of its quiet value
//! (medians over the rounds).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use apim_tls::h2_frames::{
    CANCEL, CONTINUATION, END_HEADERS, END_STREAM, HEADERS, RST_STREAM, frame, hello, hpack_literal,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::Options;
use super::backend::FastBackend;
use super::idle::{Kind, Target};
use super::platform::{BASE, Platform, SECURED};
use super::report::{int, section_head};
use super::stats::{Latencies, median};

/// Requests opened and reset at once on each flooding connection.
const RESETS_PER_CONNECTION: u32 = 1_000;
/// Filler of each CONTINUATION frame (the default largest frame).
const CONTINUATION_BYTES: usize = 16 * 1024;
/// CONTINUATION frames sent on a connection at most (1 MiB of header block).
const CONTINUATIONS_PER_CONNECTION: usize = 64;
/// Longest an attacker waits for the gateway to end its connection.
const ATTACK_READ_LIMIT: Duration = Duration::from_secs(5);
/// Where the attacker runs: the gateway's CPU.
const ATTACKER_CPU: &str = "1";
/// The bound held: the other client's p99 against its quiet value.
const P99_BOUND: f64 = 2.0;

/// A flood, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// No attacker.
    Quiet,
    /// Rapid reset.
    RapidReset,
    /// A CONTINUATION flood.
    Continuation,
}

/// What the attacker sends.
#[derive(Debug, Clone, Copy)]
enum Flood {
    RapidReset,
    Continuation,
}

impl Condition {
    /// The flood beside the client, if any.
    fn flood(self) -> Option<Flood> {
        match self {
            Condition::Quiet => None,
            Condition::RapidReset => Some(Flood::RapidReset),
            Condition::Continuation => Some(Flood::Continuation),
        }
    }

    /// The order of each round: quiet first, the reference.
    const RUN: [Condition; 3] = [
        Condition::Quiet,
        Condition::RapidReset,
        Condition::Continuation,
    ];

    fn label(self) -> &'static str {
        match self {
            Condition::Quiet => "quiet",
            Condition::RapidReset => "rapid reset (HEADERS + RST_STREAM)",
            Condition::Continuation => "CONTINUATION flood",
        }
    }
}

/// One condition's figures in one round.
#[derive(Debug, Clone)]
pub struct FloodRun {
    /// What ran beside the client.
    pub condition: Condition,
    /// The other client's calls.
    pub client: Latencies,
    /// Flooding connections the gateway ended meanwhile.
    pub flood_connections: u64,
}

/// Runs the part: `--flood-rounds` rounds of each condition in [`Condition::RUN`]'s
/// order, on one platform. The attacker runs beside the gateway on CPU 1, where a real
/// attacker's packets cost: in the kernel of the machine that receives them (on loopback
/// the sender's CPU does that work). On CPU 0, the backend's, it would take the client's
/// CPU rather than the gateway's (p99 1.7× quiet there, 1.0–1.1× on CPU 1).
pub async fn measure(options: &Options) -> Vec<FloodRun> {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let target = Target::new(Kind::H2c, &platform);
    let attack = Attack::new(&target, &platform.token);
    let mut runs = Vec::new();
    for round in 1..=options.flood_rounds {
        for condition in Condition::RUN {
            let flooding = Flooding::start(condition, attack.clone());
            // Let the flood reach its pace before timing.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let client = target.timed_calls(options.flood_probes).await;
            let flood_connections = flooding.stop();
            eprintln!(
                "bench: floods: round {round}: {}: p50 {:.3} ms, p99 {:.3} ms; \
                 {flood_connections} flooding connections",
                condition.label(),
                client.p50_ms,
                client.p99_ms
            );
            runs.push(FloodRun {
                condition,
                client,
                flood_connections,
            });
        }
    }
    platform.stop().await;
    runs
}

/// What the attacker sends, built once.
#[derive(Clone)]
struct Attack {
    addr: String,
    rapid_reset: Arc<Vec<u8>>,
    continuation_head: Arc<Vec<u8>>,
}

impl Attack {
    /// Floods of `target`'s gateway, their requests with `token`.
    fn new(target: &Target, token: &str) -> Self {
        let addr = target.addr().to_string();
        let request = request_block(&addr, &format!("{BASE}{SECURED}"), token);
        let mut rapid_reset = hello();
        for index in 0..RESETS_PER_CONNECTION {
            let stream = 2 * index + 1;
            rapid_reset.extend(frame(HEADERS, END_STREAM | END_HEADERS, stream, &request));
            rapid_reset.extend(frame(RST_STREAM, 0, stream, &CANCEL.to_be_bytes()));
        }
        let mut never_ending = request;
        // A literal header `x`, without indexing, whose value (about 2 MiB) never comes.
        never_ending.extend_from_slice(&[0x00, 0x01, b'x', 0x7f, 0x81, 0xff, 0x7f]);
        let mut continuation_head = hello();
        continuation_head.extend(frame(HEADERS, END_STREAM, 1, &never_ending));
        Self {
            addr,
            rapid_reset: Arc::new(rapid_reset),
            continuation_head: Arc::new(continuation_head),
        }
    }

    /// One flooding connection, until the gateway ends it.
    async fn once(&self, flood: Flood) -> std::io::Result<()> {
        let mut stream = TcpStream::connect(&self.addr).await?;
        match flood {
            // The gateway may close before it has read it all.
            Flood::RapidReset => {
                let _ = stream.write_all(&self.rapid_reset).await;
            }
            Flood::Continuation => {
                stream.write_all(&self.continuation_head).await?;
                let filler = frame(CONTINUATION, 0, 1, &[b'a'; CONTINUATION_BYTES]);
                for _ in 0..CONTINUATIONS_PER_CONNECTION {
                    if stream.write_all(&filler).await.is_err() {
                        break;
                    }
                }
            }
        }
        let mut sink = vec![0u8; 64 * 1024];
        let _ = tokio::time::timeout(ATTACK_READ_LIMIT, async {
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        })
        .await;
        Ok(())
    }
}

/// An attacker on a thread of its own, one connection after another.
struct Flooding {
    stop: Arc<AtomicBool>,
    connections: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Flooding {
    fn start(condition: Condition, attack: Attack) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU64::new(0));
        let thread = condition.flood().map(|flood| {
            let (stop, connections) = (stop.clone(), connections.clone());
            std::thread::spawn(move || {
                // Beside the gateway, taking only the CPU it leaves: what the flood costs
                // the gateway's core is then its packets, received.
                harness::machine::pin_thread(ATTACKER_CPU);
                harness::machine::lowest_priority_thread();
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("attacker runtime");
                runtime.block_on(async move {
                    while !stop.load(Ordering::Relaxed) {
                        if attack.once(flood).await.is_ok() {
                            connections.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            })
        });
        Self {
            stop,
            connections,
            thread,
        }
    }

    /// Stops the attacker; the connections it flooded.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("attacker thread");
        }
        self.connections.load(Ordering::Relaxed)
    }
}

/// The HPACK block of `GET http://{authority}{path}` with `Authorization: Bearer {token}`:
/// static-table entries and literals without indexing.
fn request_block(authority: &str, path: &str, token: &str) -> Vec<u8> {
    // `:method GET`, `:scheme http`.
    let mut block = vec![0x82, 0x86];
    // Static-table indexes of `:authority`, `:path` and `authorization`.
    hpack_literal(&mut block, 1, authority.as_bytes());
    hpack_literal(&mut block, 4, path.as_bytes());
    hpack_literal(&mut block, 23, format!("Bearer {token}").as_bytes());
    block
}

/// The part's section of the report: per condition, the medians over the rounds.
pub fn section(options: &Options, runs: &[FloodRun]) -> String {
    let command = format!(
        "--only floods --flood-probes {} --flood-rounds {}",
        options.flood_probes, options.flood_rounds
    );
    let mut md = section_head("HTTP/2 floods and another client", &command);
    let _ = writeln!(
        md,
        "edge-gateway (full policy, on CPU 1); a fresh h2c client (the benchmark's own \
         thread, not pinned) calls the secured resource {} times, one after the other, while an attacker on a thread of its own \
         floods the same listener one connection at a time, reconnecting as soon as the \
         gateway ends one: rapid reset ({RESETS_PER_CONNECTION} requests for the secured \
         resource, with the token, each reset at once) or a header block that never ends \
         (up to {CONTINUATIONS_PER_CONNECTION} CONTINUATION frames of {} KiB). The attacker \
         runs on the gateway's CPU at nice 19: it takes only the CPU the gateway leaves, and \
         the kernel's work of receiving its packets falls on the gateway's core, as it would \
         on a machine of the gateway's own (on loopback the sender does that work). {} \
         rounds, each quiet, rapid reset, CONTINUATION; figures are medians over the rounds. \
         Target: the client's p99 under either flood within {P99_BOUND}× of its quiet value.\n",
        options.flood_probes,
        CONTINUATION_BYTES / 1024,
        options.flood_rounds,
    );
    md.push_str(
        "| beside the client | client p50 / p99 / max ms | p99 ÷ quiet | p99 of each round, ms \
         | flooding connections ended, each round |\n|---|--:|--:|--:|--:|\n",
    );
    let of = |condition: Condition| -> Vec<&FloodRun> {
        runs.iter()
            .filter(|run| run.condition == condition)
            .collect()
    };
    let quiet = median(of(Condition::Quiet).iter().map(|run| run.client.p99_ms));
    for condition in Condition::RUN {
        let rounds = of(condition);
        let p99 = median(rounds.iter().map(|run| run.client.p99_ms));
        let ratio = p99 / quiet;
        let verdict = match condition {
            Condition::Quiet => String::new(),
            _ if ratio <= P99_BOUND => " (MET)".into(),
            _ => " (MISSED)".into(),
        };
        let each = |figure: fn(&FloodRun) -> String| -> String {
            rounds
                .iter()
                .map(|run| figure(run))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            md,
            "| {} | {:.3} / {p99:.3} / {:.3} | {ratio:.2}×{verdict} | {} | {} |",
            condition.label(),
            median(rounds.iter().map(|run| run.client.p50_ms)),
            median(rounds.iter().map(|run| run.client.max_ms)),
            each(|run| format!("{:.3}", run.client.p99_ms)),
            each(|run| int(run.flood_connections as f64)),
        );
    }
    md
}
