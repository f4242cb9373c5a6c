//! Case 4 against an HTTPS backend, beside the same case against the plain one: the
//! benchmark's resource on a second API whose endpoint is the same 1 KiB backend behind
//! TLS (a certificate of an authority made for the run, trusted through the certificates
//! API, as an operator would), interleaved round by round with case 4 itself. Connection
//! reuse shows as TLS handshakes per 1,000 requests, counted at the backend.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::Options;
use super::backend::{app, on_cpu_0};
use super::load::{Load, Wrk, cpu_cell, with_cpu_of};
use super::platform::{BASE, Platform, RATE_CAP, SECURED, subscribe};
use super::stats::median;
use harness::machine;
use harness::tls::Authority;

/// `/<context>/<version>` of the API on the HTTPS backend.
const TLS_BASE: &str = "/bench-tls/v1.0.0";

/// Both sides' runs, one per round.
#[derive(Debug, Clone, Default)]
pub struct HttpsRuns {
    /// Case 4, plain backend.
    pub plain: Vec<Load>,
    /// Case 4, HTTPS backend.
    pub https: Vec<Load>,
    /// TLS handshakes the HTTPS backend completed per 1,000 requests, per round.
    pub handshakes_per_1000: Vec<f64>,
}

/// The 1 KiB backend behind TLS, on a thread of its own pinned to CPU 0.
struct TlsBackend {
    url: String,
    handshakes: Arc<AtomicUsize>,
}

impl TlsBackend {
    fn start(authority: &Authority) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind backend");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("https://{}", listener.local_addr().expect("addr"));
        let server = authority.server_config();
        let handshakes = server.1.clone();
        on_cpu_0("tls-backend", move || async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            harness::tls::serve(listener, server, app()).await;
        });
        TlsBackend { url, handshakes }
    }
}

/// Publishes the API on the HTTPS backend with its certificate, then runs the rounds.
pub async fn measure(options: &Options, platform: &Platform) -> HttpsRuns {
    let authority = Authority::new("bench backend authority");
    let backend = TlsBackend::start(&authority);
    let stack = &platform.stack;
    stack
        .steps()
        .add_certificate("bench-tls", &backend.url, &authority.ca_pem)
        .await
        .expect("certificate");
    let endpoint = json!({"url": backend.url, "config": null});
    let changes = json!({
        "context": "/bench-tls",
        "apiDefinition": super::platform::swagger().to_string(),
        "endpointConfig": json!({"production_endpoints": endpoint, "sandbox_endpoints": endpoint,
                                 "endpoint_type": "http"}).to_string(),
        "endpointSecurity": null,
        // As the benchmark API's: every request counts, none is refused.
        "maxTps": {"production": RATE_CAP, "sandbox": RATE_CAP},
    });
    let api = stack.api("BenchTls", changes, &["Publish"]).await;
    subscribe(stack, &platform.application, &api).await;
    let url = format!("{}{TLS_BASE}{SECURED}", stack.gw.base);
    super::propagation::poll(
        &stack.gw,
        &format!("{TLS_BASE}{SECURED}"),
        &platform.token,
        |r| r.status == 200,
    )
    .await;

    let plain = format!("{}{BASE}{SECURED}", stack.gw.base);
    let headers = vec![platform.bearer()];
    let pid = platform.gateway_pid();
    machine::pin_process(platform.control_plane_pid(), "0");
    let mut runs = HttpsRuns::default();
    for round in 1..=options.rounds {
        eprintln!(
            "bench: round {round}/{}: case 4 on an HTTPS backend",
            options.rounds
        );
        machine::wait_for_quiet_cpu().await;
        wrk(options, &plain, &headers, options.warmup).await;
        runs.plain
            .push(counted(options, &plain, &headers, pid).await);
        wrk(options, &url, &headers, options.warmup).await;
        let before = backend.handshakes.load(Ordering::Relaxed);
        let load = counted(options, &url, &headers, pid).await;
        let handshakes = backend.handshakes.load(Ordering::Relaxed) - before;
        let requests = load.rate * options.seconds as f64;
        runs.handshakes_per_1000
            .push(handshakes as f64 * 1000.0 / requests.max(1.0));
        runs.https.push(load);
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    runs
}

/// A measured run at `--connections`, with the CPU time per request of `pid` (and its
/// children).
pub(super) async fn counted(options: &Options, url: &str, headers: &[String], pid: u32) -> Load {
    let run = wrk(options, url, headers, options.seconds);
    with_cpu_of(pid, options.seconds as f64, run).await
}

/// A wrk run at `--connections` for `seconds`.
pub(super) async fn wrk(options: &Options, url: &str, headers: &[String], seconds: u64) -> Load {
    Wrk {
        url,
        connections: options.connections,
        duration: std::time::Duration::from_secs(seconds),
        headers,
        script: None,
    }
    .run()
    .await
}

/// The report's table.
pub fn table(options: &Options, runs: &HttpsRuns) -> String {
    let c = options.connections;
    let mut md = format!(
        "{}Case 4, interleaved round by round with the same case on a second API whose endpoint is the same backend behind \
         TLS (rustls, TLS 1.3, a certificate of an authority made for the run, trusted for \
         that endpoint through the certificates API). Handshakes: TLS handshakes the backend \
         completed during the measured run (after a warm-up), per 1,000 requests (0 when \
         the gateway reuses every connection it opened during the warm-up). Medians of {} \
         rounds; errors: non-2xx answers and socket errors over all measured runs (any makes \
         the row invalid).\n\n| backend | req/s at {c} | CPU µs/req at {c} | p99 µs at {c} | TLS \
         handshakes per 1,000 requests | errors |\n|---|--:|--:|--:|--:|--:|\n",
        super::report::section_head(
            "Full policy against an HTTPS backend",
            &format!(
                "--only https --rounds {} --seconds {} --connections {c}",
                options.rounds, options.seconds
            )
        ),
        options.rounds
    );
    let rows = [
        ("http", &runs.plain, None),
        ("https", &runs.https, Some(&runs.handshakes_per_1000)),
    ];
    for (backend, loads, handshakes) in rows {
        let cpu = cpu_cell(loads);
        let handshakes = handshakes.map_or("–".to_string(), |h| {
            format!("{:.3}", median(h.iter().copied()))
        });
        let _ = writeln!(
            md,
            "| {backend} | {:.0} | {cpu} | {:.0} | {handshakes} | {} |",
            median(loads.iter().map(|l| l.rate)),
            median(loads.iter().map(|l| l.p99_us)),
            loads.iter().map(|l| l.errors).sum::<u64>(),
        );
    }
    md.push('\n');
    md
}
