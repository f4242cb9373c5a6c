//! Made-up opaque tokens against the gateway (`--only token-flood`): edge-gateway (full
//! policy, CPU 1) while `--flood-tokens` requests, each with a random UUID as its bearer
//! token, arrive paced at `--flood-token-rate` a second from 100 client addresses
//! (127.0.0.10 to 127.0.0.109, so that the bound per address does not hide the
//! gateway's own). Beside the flood, and alone for as long before it, one client calls
//! the secured resource one call after another, alternating a JWT and a known opaque
//! token: their p50 / p99 flooded against quiet. The control plane's
//! `apim_token_introspections_total` says how many questions the flood cost it, and a
//! freshly issued opaque token is used for the first time, from an address of its own,
//! one second into the flood, retried as its `Retry-After` says.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::Options;
use super::backend::FastBackend;
use super::platform::{BASE, Platform, SECURED, fresh_opaque_token};
use super::report::{int, section_head};
use super::stats::{Latencies, median};

/// Client addresses the flood comes from.
const FLOOD_ADDRESSES: u8 = 100;
/// The first of them: 127.0.0.10.
const FIRST_FLOOD_ADDRESS: u8 = 10;
/// The address of the real token's first use.
const FIRST_USE_ADDRESS: &str = "127.0.0.2";
/// The bounds held: the others' p99 against quiet, and questions the flood cost.
const P99_BOUND: f64 = 2.0;
const INTROSPECTION_BOUND: f64 = 500.0;
/// The gateway's longest wait for an introspection: questions still in flight when the
/// flood ends have landed by then.
const QUESTIONS_LAND: Duration = Duration::from_secs(2);
/// Tries of the real token's first use.
const FIRST_USE_TRIES: u32 = 10;

/// One round: quiet, then flooded.
#[derive(Debug, Clone, Default)]
pub struct FloodRound {
    /// The JWT client's calls, quiet and flooded.
    pub jwt: (Latencies, Latencies),
    /// The known opaque token's calls, quiet and flooded.
    pub opaque: (Latencies, Latencies),
    /// Introspections the control plane answered during the flood.
    pub introspections: f64,
    /// The flood's answers: 401, 503 (with `Retry-After`), anything else.
    pub answers: [usize; 3],
    /// The flood's length, s.
    pub seconds: f64,
    /// The real token's first use: tries until it was admitted, and how long that took, s;
    /// `None` when it never was.
    pub first_use: Option<(u32, f64)>,
}

/// Runs the part: `--flood-rounds` rounds on one platform.
pub async fn measure(options: &Options) -> Vec<FloodRound> {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let ops = platform.control_plane_ops();
    let url = format!("{}{BASE}{SECURED}", platform.stack.gw.base);
    let flood_length =
        Duration::from_secs_f64(options.flood_tokens as f64 / options.flood_token_rate);
    let mut rounds = Vec::new();
    for round in 1..=options.flood_rounds {
        if !options.busy_ok {
            harness::machine::wait_for_quiet_cpu().await;
        }
        let (jwt_quiet, opaque_quiet) = probe(&url, &platform, flood_length).await;
        let fresh = fresh_opaque_token(&platform).await;
        let before = introspections(&ops).await;
        let started = Instant::now();
        let (answers, (jwt, opaque), first_use) = tokio::join!(
            flood(&url, options.flood_tokens, options.flood_token_rate),
            probe(&url, &platform, flood_length),
            first_use(&url, &fresh),
        );
        let seconds = started.elapsed().as_secs_f64();
        tokio::time::sleep(QUESTIONS_LAND).await;
        let run = FloodRound {
            jwt: (jwt_quiet, jwt),
            opaque: (opaque_quiet, opaque),
            introspections: introspections(&ops).await - before,
            answers,
            seconds,
            first_use,
        };
        eprintln!(
            "bench: token flood: round {round}: {} introspections; JWT p99 {:.3} → {:.3} ms, \
             opaque p99 {:.3} → {:.3} ms; first use {:?}",
            run.introspections,
            run.jwt.0.p99_ms,
            run.jwt.1.p99_ms,
            run.opaque.0.p99_ms,
            run.opaque.1.p99_ms,
            run.first_use,
        );
        rounds.push(run);
    }
    platform.stop().await;
    rounds
}

/// `tokens` requests with random bearer tokens, evenly paced at `rate` a second over
/// [`FLOOD_ADDRESSES`] addresses; how many were answered 401, 503 with `Retry-After`,
/// and otherwise.
async fn flood(url: &str, tokens: usize, rate: f64) -> [usize; 3] {
    let start = Instant::now();
    let mut senders = JoinSet::new();
    for k in 0..FLOOD_ADDRESSES {
        let client = from_address(&format!("127.0.0.{}", FIRST_FLOOD_ADDRESS + k));
        let url = url.to_string();
        senders.spawn(async move {
            let mut answers = [0; 3];
            let step = FLOOD_ADDRESSES as usize;
            for n in (usize::from(k)..tokens).step_by(step) {
                let at = start + Duration::from_secs_f64(n as f64 / rate);
                tokio::time::sleep_until(at.into()).await;
                let token = uuid::Uuid::new_v4().to_string();
                let answer = client.get(&url).bearer_auth(token).send().await;
                let slot = match answer {
                    Ok(reply) if reply.status() == 401 => 0,
                    Ok(reply)
                        if reply.status() == 503 && reply.headers().contains_key("retry-after") =>
                    {
                        1
                    }
                    _ => 2,
                };
                answers[slot] += 1;
            }
            answers
        });
    }
    let mut answers = [0; 3];
    while let Some(joined) = senders.join_next().await {
        for (total, part) in answers.iter_mut().zip(joined.expect("flood sender")) {
            *total += part;
        }
    }
    answers
}

/// Calls one after another for `length`, alternating the JWT and the known opaque token;
/// the latencies of each.
async fn probe(url: &str, platform: &Platform, length: Duration) -> (Latencies, Latencies) {
    let client = from_address("127.0.0.1");
    let (mut jwt, mut opaque) = (Vec::new(), Vec::new());
    let until = Instant::now() + length;
    while Instant::now() < until {
        for (token, samples) in [
            (&platform.token, &mut jwt),
            (&platform.opaque_token, &mut opaque),
        ] {
            let sent = Instant::now();
            let status = match client.get(url).bearer_auth(token).send().await {
                Ok(reply) => {
                    let status = reply.status().as_u16();
                    let _ = reply.bytes().await;
                    status
                }
                Err(_) => 0,
            };
            // A refused probe would measure the refusal: it counts as never answered.
            samples.push(if status == 200 {
                sent.elapsed()
            } else {
                Duration::from_secs(60)
            });
        }
    }
    (Latencies::of(&jwt), Latencies::of(&opaque))
}

/// A real token's first use one second into the flood, retried as `Retry-After` says:
/// the tries until it was admitted and how long that took.
async fn first_use(url: &str, token: &str) -> Option<(u32, f64)> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let client = from_address(FIRST_USE_ADDRESS);
    let started = Instant::now();
    for tries in 1..=FIRST_USE_TRIES {
        let reply = client.get(url).bearer_auth(token).send().await.ok()?;
        match reply.status().as_u16() {
            200 => return Some((tries, started.elapsed().as_secs_f64())),
            503 => {
                let wait = reply
                    .headers()
                    .get("retry-after")?
                    .to_str()
                    .ok()?
                    .parse::<u64>()
                    .ok()?;
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
            _ => return None,
        }
    }
    None
}

/// A client whose connections leave from `address`.
fn from_address(address: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(address.parse::<IpAddr>().expect("an address"))
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
}

/// Introspections the control plane has answered, active or not.
async fn introspections(ops: &str) -> f64 {
    let text = reqwest::get(format!("{ops}/metrics"))
        .await
        .expect("the control plane's metrics")
        .text()
        .await
        .unwrap_or_default();
    text.lines()
        .filter(|line| line.starts_with("apim_token_introspections_total{"))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// The part's section of the report: medians over the rounds.
pub fn section(options: &Options, rounds: &[FloodRound]) -> String {
    let command = format!(
        "--only token-flood --flood-tokens {} --flood-token-rate {} --flood-rounds {}",
        options.flood_tokens, options.flood_token_rate, options.flood_rounds
    );
    let mut md = section_head("Made-up opaque tokens and other clients", &command);
    let _ = writeln!(
        md,
        "edge-gateway (full policy, CPU 1). {} requests, each with a random UUID as its \
         bearer token, paced at {}/s from {FLOOD_ADDRESSES} client addresses; beside them, \
         and alone for as long before, one client calling the secured resource one call \
         after another, alternating a JWT and a known opaque token. Introspections: what \
         the control plane answered (`apim_token_introspections_total`) during the flood; \
         bounds: {INTROSPECTION_BOUND} of them, and each client's p99 within {P99_BOUND}× \
         of quiet. A fresh opaque token is used for the first time one second into each \
         flood, from an address of its own, retried as `Retry-After` says. Medians of {} \
         rounds.\n",
        int(options.flood_tokens as f64),
        int(options.flood_token_rate),
        options.flood_rounds,
    );
    md.push_str(
        "| client | quiet p50 / p99 ms | flooded p50 / p99 ms | p99 ÷ quiet |\n|---|--:|--:|--:|\n",
    );
    for (label, pick) in [
        (
            "JWT",
            (|r: &FloodRound| r.jwt) as fn(&FloodRound) -> (Latencies, Latencies),
        ),
        ("known opaque token", |r: &FloodRound| r.opaque),
    ] {
        let quiet = |f: fn(&Latencies) -> f64| median(rounds.iter().map(|r| f(&pick(r).0)));
        let flooded = |f: fn(&Latencies) -> f64| median(rounds.iter().map(|r| f(&pick(r).1)));
        let ratio = flooded(|l| l.p99_ms) / quiet(|l| l.p99_ms);
        let verdict = if ratio <= P99_BOUND { "MET" } else { "MISSED" };
        let _ = writeln!(
            md,
            "| {label} | {:.3} / {:.3} | {:.3} / {:.3} | {ratio:.2}× ({verdict}) |",
            quiet(|l| l.p50_ms),
            quiet(|l| l.p99_ms),
            flooded(|l| l.p50_ms),
            flooded(|l| l.p99_ms),
        );
    }
    let each = |figure: &dyn Fn(&FloodRound) -> String| {
        rounds.iter().map(figure).collect::<Vec<_>>().join(", ")
    };
    let most = rounds.iter().map(|r| r.introspections).fold(0.0, f64::max);
    let verdict = if most <= INTROSPECTION_BOUND {
        "MET"
    } else {
        "MISSED"
    };
    let _ = writeln!(
        md,
        "\nIntrospections each flood: {} ({verdict}: at most {INTROSPECTION_BOUND}); each \
         flood lasted {} s. Its answers (401 / 503 with `Retry-After` / other): {}. The real \
         token's first use (tries, seconds to its 200): {}.\n",
        each(&|r| int(r.introspections)),
        each(&|r| format!("{:.1}", r.seconds)),
        each(&|r| format!("{} / {} / {}", r.answers[0], r.answers[1], r.answers[2])),
        each(&|r| match r.first_use {
            Some((tries, seconds)) => format!("{tries}, {seconds:.1}"),
            None => "never admitted".into(),
        }),
    );
    md
}
