//! Case 6 on its own (`--only spin-like`, and after every full run): edge-gateway hosting
//! the component as Spin hosts a WASI 0.2 component (a fresh instance per request, the
//! `wasi:http` forwarding path, every key in a SQLite file as Spin's default store) beside
//! case 4 (edge-gateway's own hosting), round by round on the same platform, then `perf`
//! on case 6's gateway to show where its time goes.
//!
//! Case 6 runs twice a round: on the benchmark's API, whose `maxTps` is never reached and
//! whose tiers are all Unlimited (a counter batched to about one write per 256 calls), and
//! on an API as users publish one ([`publish_as_users_do`]): the seed's `maxTps` for
//! sandbox keys (5,000 a second: counted, batched while far from it; the 1,000 of
//! production keys would refuse what a faster gateway passes), a subscription tier of
//! requests per minute (counted, never reached) and a two-endpoint `load_balance` list
//! (its turn written on every call).

use std::fmt::Write as _;

use serde_json::json;

use super::Options;
use super::backend::FastBackend;
use super::https::{counted, wrk};
use super::load::{Load, Wrk, cpu_cell};
use super::machine::{Writes, filesystem_of};
use super::platform::{BASE, Platform, SECURED, swagger};
use super::profile::{self, Profile};
use super::propagation;
use super::report::{int, section_head};
use super::stats::median;
use harness::machine;
use harness::steps::TokenType;

/// `/<context>/<version>` of the API as users publish it.
pub(super) const PUBLISHED: &str = "/published/v1.0.0";
/// Its subscription tier: requests per minute, as WSO2's `Gold` (5,000), sized above
/// what `maxTps` admits in a minute, so that only `maxTps` could refuse a call.
const GOLD_LIKE: (&str, i64) = ("GoldLike", 1_000_000);

/// Both cases' runs, one per round.
#[derive(Debug, Clone, Default)]
pub struct SpinLikeRuns {
    /// Case 4 at `--connections`.
    pub native: Vec<Load>,
    /// Case 6 at `--connections`.
    pub spin_like: Vec<Load>,
    /// Case 6 at concurrency 1.
    pub spin_like_single: Vec<Load>,
    /// Case 6 on the API as users publish it, at `--connections`.
    pub published: Vec<Load>,
    /// The same at concurrency 1.
    pub published_single: Vec<Load>,
    /// What case 6's gateway wrote per request: on the benchmark's API, and on the
    /// published one (at `--connections`).
    pub writes: Vec<(Writes, Writes)>,
    /// The filesystem of case 6's SQLite file.
    pub filesystem: String,
    /// The load average before each round.
    pub load_averages: Vec<String>,
    /// Case 6's gateway under load.
    pub profile: Option<Profile>,
}

/// Starts the platform, runs the rounds and the profile, and stops it.
pub async fn measure(options: &Options) -> SpinLikeRuns {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let headers = vec![platform.bearer()];
    let native = format!("{}{BASE}{SECURED}", platform.stack.gw.base);
    let spin_like = format!("{}{BASE}{SECURED}", platform.spin_like_url());
    let second_backend = FastBackend::start();
    let backends = [backend.url.as_str(), second_backend.url.as_str()];
    let published_headers =
        vec![publish_as_users_do(&platform, backends, &[platform.spin_like_url()]).await];
    let published = format!("{}{PUBLISHED}{SECURED}", platform.spin_like_url());
    machine::pin_process(platform.control_plane_pid(), "0");
    let mut runs = SpinLikeRuns {
        filesystem: filesystem_of(&platform.stack.data_dir),
        ..SpinLikeRuns::default()
    };
    for round in 1..=options.rounds {
        eprintln!("bench: round {round}/{}: cases 4 and 6", options.rounds);
        if !options.busy_ok {
            machine::wait_for_quiet_cpu().await;
        }
        runs.load_averages.push(load_average());
        wrk(options, &native, &headers, options.warmup).await;
        let pid = platform.gateway_pid();
        runs.native
            .push(counted(options, &native, &headers, pid).await);
        let pid = platform.spin_like_pid();
        let (load, today) = written(options, &spin_like, &headers, pid).await;
        runs.spin_like.push(load);
        runs.spin_like_single
            .push(single(options, &spin_like, &headers).await);
        let (load, as_published) = written(options, &published, &published_headers, pid).await;
        runs.published.push(load);
        runs.published_single
            .push(single(options, &published, &published_headers).await);
        runs.writes.push((today, as_published));
    }
    if !options.no_profile {
        eprintln!("bench: profiling edge-gateway under case 6");
        let load = Wrk {
            url: &spin_like,
            connections: options.connections,
            duration: options.run_time(),
            headers: &headers,
            script: None,
        };
        runs.profile =
            profile::record(&platform, platform.spin_like_pid(), "edge-gateway", load).await;
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    platform.stop().await;
    runs
}

/// A warm-up and a measured run at `--connections` against `pid`, with what it wrote per
/// request meanwhile.
async fn written(options: &Options, url: &str, headers: &[String], pid: u32) -> (Load, Writes) {
    wrk(options, url, headers, options.warmup).await;
    let before = Writes::of(pid);
    let load = counted(options, url, headers, pid).await;
    let requests = load.rate * options.seconds as f64;
    (load, Writes::of(pid).per_request_since(before, requests))
}

/// A measured run at concurrency 1.
async fn single(options: &Options, url: &str, headers: &[String]) -> Load {
    Wrk {
        url,
        connections: 1,
        duration: options.run_time(),
        headers,
        script: None,
    }
    .run()
    .await
}

/// Publishes the API as users publish one (the seed's record: `maxTps` 5,000 a second
/// for sandbox keys, basic credentials for the backend), with a subscription tier of
/// [`GOLD_LIKE`] and a `load_balance` list of `backends`, and subscribes a JWT
/// application to it on that tier, with sandbox keys; the `Authorization` header of its token, once every
/// gateway of `serving` (base URLs) serves the API.
pub(super) async fn publish_as_users_do(
    platform: &Platform,
    backends: [&str; 2],
    serving: &[String],
) -> String {
    let stack = &platform.stack;
    let admin = stack
        .mgmt
        .login(
            "admin",
            harness::ADMIN_PASSWORD,
            harness::stack::TIER_SCOPES,
        )
        .await;
    let (name, per_minute) = GOLD_LIKE;
    let tier = harness::steps::tier_record(name, per_minute, 60_000);
    stack
        .mgmt
        .post_json(&format!("{}/tiers/api", harness::PUBLISHER), &admin, &tier)
        .await
        .expect(201);
    let endpoints: Vec<_> = backends
        .iter()
        .map(|url| json!({"url": url, "config": null}))
        .collect();
    let changes = json!({
        "apiDefinition": swagger().to_string(),
        "endpointConfig": json!({
            "endpoint_type": "load_balance",
            "production_endpoints": endpoints,
            "sandbox_endpoints": endpoints,
        }).to_string(),
        "tiers": [name],
    });
    let api = stack.api("Published", changes, &["Publish"]).await;
    let steps = stack.steps();
    let application = steps
        .create_typed_application("PublishedApp", "Unlimited", TokenType::Jwt)
        .await
        .unwrap();
    steps.subscribe(&application, &api, name).await.unwrap();
    let keys = steps
        .generate_keys(&application, &sandbox_keys_request())
        .await
        .unwrap();
    let token = harness::steps::client_credentials_token(&stack.mgmt, "/oauth2/token", &keys)
        .await
        .unwrap();
    let path = format!("{PUBLISHED}{SECURED}");
    for base in serving {
        let gateway = harness::Client::new(base);
        propagation::poll(&gateway, &path, &token, |r| r.status == 200)
            .await
            .unwrap_or_else(|| panic!("the gateway at {base} serves the published API"));
    }
    format!("Authorization: Bearer {token}")
}

/// A key request for sandbox keys, otherwise as the harness asks.
fn sandbox_keys_request() -> serde_json::Value {
    let mut request = harness::steps::keys_request();
    request["keyType"] = json!("SANDBOX");
    request
}

/// The first three fields of `/proc/loadavg`.
pub(super) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The section of the report.
pub fn section(options: &Options, runs: &SpinLikeRuns) -> String {
    let c = options.connections;
    let busy = if options.busy_ok { " --busy-ok" } else { "" };
    let command = format!(
        "--only spin-like --rounds {} --seconds {}{busy}",
        options.rounds, options.seconds
    );
    let mut md = section_head("The component hosted as Spin hosts it (case 6)", &command);
    let _ = write!(
        md,
        "Case 6: a second edge-gateway (CPU 1, one worker) hosting the component as Spin \
         hosts a WASI 0.2 component: a fresh instance per request, forwarding through \
         `wasi:http`, every key in one SQLite file with SQLite's defaults (a synced commit \
         per write; the file on {fs}), requests catching up with the control plane once a \
         second, the access log written by the component. Full policy with a JWT, beside \
         case 4 round by round, on two APIs: the benchmark's (`maxTps` never reached, tiers \
         Unlimited: a batched counter) and one as users publish it (the seed's `maxTps` for \
         sandbox keys, its tokens', 5,000/s, counted in batches while far from it; a \
         `{tier}` subscription tier of {per_minute} a minute; a two-endpoint \
         `load_balance` list, its turn written on every call). \
         Medians of {} rounds of {} s after {} s of warm-up; load average before each \
         round: {}. Written: bytes sent to storage and write calls per request.\n\n\
         | case | req/s at {c} | CPU µs/req | p50 / p99 µs at {c} | p50 / p99 µs at 1 | written per request | non-2xx |\n\
         |---|--:|--:|--:|--:|--:|--:|\n",
        options.rounds,
        options.seconds,
        options.warmup,
        runs.load_averages.join("; "),
        fs = runs.filesystem,
        tier = GOLD_LIKE.0,
        per_minute = int(GOLD_LIKE.1 as f64),
    );
    let today = runs
        .writes
        .iter()
        .map(|(today, _)| *today)
        .collect::<Vec<_>>();
    let published = runs.writes.iter().map(|(_, p)| *p).collect::<Vec<_>>();
    for (label, at_c, at_1, writes) in [
        ("4. edge-gateway, full policy", &runs.native, None, None),
        (
            "6. Spin-like, the benchmark's API",
            &runs.spin_like,
            Some(&runs.spin_like_single),
            Some(&today),
        ),
        (
            "6. Spin-like, as users publish",
            &runs.published,
            Some(&runs.published_single),
            Some(&published),
        ),
    ] {
        md.push_str(&row(label, at_c, at_1, writes));
    }
    let rounds = |loads: &[Load]| {
        loads
            .iter()
            .map(|l| int(l.rate))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let _ = writeln!(
        md,
        "\nEvery round, req/s at {c}: case 4 {}; case 6 {}; as users publish {}.\n",
        rounds(&runs.native),
        rounds(&runs.spin_like),
        rounds(&runs.published),
    );
    md.push_str(&super::report::profile(
        "case 6's gateway's",
        "edge-gateway hosting the component as Spin does, under case 6 (the benchmark's API)",
        runs.profile.as_ref(),
    ));
    md
}

/// One row of the section's table: medians of the rounds.
fn row(
    label: &str,
    at_c: &[Load],
    at_1: Option<&Vec<Load>>,
    writes: Option<&Vec<Writes>>,
) -> String {
    let m = |loads: &[Load], f: fn(&Load) -> f64| median(loads.iter().map(f));
    let latency = |loads: &[Load]| {
        format!(
            "{:.0} / {:.0}",
            m(loads, |l| l.p50_us),
            m(loads, |l| l.p99_us)
        )
    };
    let cpu = cpu_cell(at_c);
    let written = writes.map_or("–".to_string(), |w| {
        format!(
            "{:.0} B, {:.1} calls",
            median(w.iter().map(|w| w.bytes)),
            median(w.iter().map(|w| w.calls))
        )
    });
    let errors: u64 = at_c
        .iter()
        .chain(at_1.into_iter().flatten())
        .map(|l| l.errors)
        .sum();
    format!(
        "| {label} | {} | {cpu} | {} | {} | {written} | {errors} |\n",
        int(m(at_c, |l| l.rate)),
        latency(at_c),
        at_1.map_or("–".to_string(), |l| latency(l)),
    )
}
