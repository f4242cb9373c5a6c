//! TLS and HTTP/2 side by side with nginx and Envoy (`--only tls`, and after every full
//! run). One ECDSA P-256 certificate of the run ([`Listening`]: rcgen's default key) for
//! nginx (reverse proxy, `ssl http2`), Envoy (our policy behind a TLS transport socket)
//! and a second edge-gateway (full policy, `APIM_TLS_CERT`), each on CPU 1 with one worker
//! in front of the same 1 KiB backend as the plain cases, and three measures, interleaved
//! round by round, each with the server's CPU time:
//! - kept-alive TLS: wrk over `https://` (HTTP/1.1) at `--connections`, the secured
//!   resource with the JWT, as case 4;
//! - new TLS handshakes: [`handshakes`](super::handshakes), `--connections` loops of a new
//!   connection, a full TLS 1.3 handshake and one request for a path no server routes
//!   (each answers 404 itself: the cheapest request, the same for all);
//! - HTTP/2: h2load, `--h2-connections` × `--h2-streams` streams in flight, the secured
//!   resource with the JWT; edge-gateway also on its plain listener (h2c).

use std::fmt::Write as _;

use harness::tls::Listening;
use harness::{ServerProcess, machine};

use super::Options;
use super::backend::{BODY_BYTES, FastBackend};
use super::handshakes::{self, NewConnections};
use super::load::{H2load, Load, median_cpu_us, median_rate, with_cpu_of};
use super::platform::{BASE, Platform, SECURED, start_pinned_gateway};
use super::proxies::{self, Proxy};
use super::report::{int, section_head};
use super::spin_like::load_average;

/// A path no server routes: nginx, Envoy and edge-gateway each answer 404 themselves.
const NO_ROUTE: &str = "/no-such-api";

/// The servers under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// nginx, reverse proxy, TLS listener with `ssl http2`.
    Nginx,
    /// Envoy with our policy, TLS transport socket, codec by ALPN.
    Envoy,
    /// edge-gateway, full policy, TLS listener.
    Gateway,
    /// edge-gateway, full policy, its plain listener (HTTP/2 as h2c).
    GatewayPlain,
}

impl Server {
    /// Its row label.
    pub fn label(self) -> &'static str {
        match self {
            Server::Nginx => "nginx, reverse proxy",
            Server::Envoy => "Envoy, jwt_authn (cached) + local rate limit",
            Server::Gateway => "edge-gateway, full policy",
            Server::GatewayPlain => "edge-gateway, full policy, h2c (no TLS)",
        }
    }
}

/// The three measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// wrk over TLS, kept-alive HTTP/1.1.
    KeptAlive,
    /// New connections, a full handshake each.
    Handshakes,
    /// h2load, many streams per connection.
    H2,
}

impl Measure {
    /// Which servers it runs against, nginx first (the ratios' reference).
    fn servers(self) -> &'static [Server] {
        match self {
            Measure::KeptAlive | Measure::Handshakes => {
                &[Server::Nginx, Server::Envoy, Server::Gateway]
            }
            Measure::H2 => &[
                Server::Nginx,
                Server::Envoy,
                Server::Gateway,
                Server::GatewayPlain,
            ],
        }
    }
}

/// The runs of one measure against one server, one per round.
#[derive(Debug, Clone)]
pub struct CaseRuns {
    /// Which measure.
    pub measure: Measure,
    /// Against which server.
    pub server: Server,
    /// Rate (requests or completed handshakes per second) and the server's CPU per each.
    pub runs: Vec<Load>,
}

impl CaseRuns {
    /// Median rate.
    pub fn rate(&self) -> f64 {
        median_rate(&self.runs)
    }

    /// Median CPU µs per request or handshake (NaN when not measured).
    pub fn cpu_us(&self) -> f64 {
        median_cpu_us(&self.runs).unwrap_or(f64::NAN)
    }

    /// What one core could do at this CPU time each: the rate the server would reach
    /// busy all the time, whoever limited this run.
    pub fn per_cpu_second(&self) -> f64 {
        1e6 / self.cpu_us()
    }

    /// Failed connections or requests, and answers of another status, over the rounds.
    pub fn errors(&self) -> u64 {
        self.runs.iter().map(|l| l.errors).sum()
    }
}

/// What the TLS part measured.
#[derive(Debug, Clone)]
pub struct TlsResults {
    /// Every case, measures in order, nginx first in each.
    pub cases: Vec<CaseRuns>,
    /// Runs that waited for another build to finish first.
    pub waited: usize,
    /// The load average before each round.
    pub load_averages: Vec<String>,
}

impl TlsResults {
    /// The runs of `measure` against `server`.
    pub fn runs(&self, measure: Measure, server: Server) -> &CaseRuns {
        self.cases
            .iter()
            .find(|c| c.measure == measure && c.server == server)
            .expect("case")
    }

    fn of(&self, measure: Measure) -> impl Iterator<Item = &CaseRuns> {
        self.cases.iter().filter(move |c| c.measure == measure)
    }
}

/// The servers running, where each listens and which process does the work.
struct Servers {
    nginx: Proxy,
    envoy: Proxy,
    gateway: ServerProcess,
    plain_url: String,
    plain_pid: u32,
}

impl Servers {
    /// Starts nginx, Envoy and a TLS edge-gateway (on the platform's control plane) with
    /// the certificate of `tls`, and waits until the gateway serves the benchmark API.
    async fn start(backend: &FastBackend, platform: &Platform, tls: &Listening) -> Self {
        let dir = &platform.dir;
        let nginx = proxies::nginx(dir, &backend.url, Some(tls)).await;
        let (issuer, jwks) = (&platform.issuer, &platform.jwks);
        let envoy = proxies::envoy(dir, &backend.url, issuer, jwks, Some(tls)).await;
        let settings = [
            ("APIM_TLS_CERT", tls.default_cert.display().to_string()),
            ("APIM_TLS_KEY", tls.default_key.display().to_string()),
        ];
        let gateway = start_pinned_gateway(platform, &settings).await;
        Servers {
            nginx,
            envoy,
            gateway,
            plain_url: platform.stack.gw.base.clone(),
            plain_pid: platform.gateway_pid(),
        }
    }

    /// `scheme://127.0.0.1:<port>` of `server`.
    fn url(&self, server: Server) -> &str {
        match server {
            Server::Nginx => &self.nginx.url,
            Server::Envoy => &self.envoy.url,
            Server::Gateway => &self.gateway.url,
            Server::GatewayPlain => &self.plain_url,
        }
    }

    /// `127.0.0.1:<port>` of `server`.
    fn addr(&self, server: Server) -> &str {
        let url = self.url(server);
        url.split_once("://").map_or(url, |(_, addr)| addr)
    }

    /// The process whose CPU time is counted (nginx's master: its worker is a child).
    fn pid(&self, server: Server) -> u32 {
        match server {
            Server::Nginx => self.nginx.pid(),
            Server::Envoy => self.envoy.pid(),
            Server::Gateway => self.gateway.pid(),
            Server::GatewayPlain => self.plain_pid,
        }
    }

    async fn stop(self) {
        self.nginx.stop().await;
        self.envoy.stop().await;
        self.gateway.stop().await;
    }
}

/// Starts the platform and the servers, checks every case, runs the rounds, stops.
pub async fn measure(options: &Options) -> TlsResults {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let tls_dir = platform.dir.join("tls");
    std::fs::create_dir_all(&tls_dir).expect("certificate directory");
    let tls = Listening::new(&tls_dir);
    let servers = Servers::start(&backend, &platform, &tls).await;
    check(&servers, &platform).await;
    machine::pin_process(platform.control_plane_pid(), "0");
    let results = rounds(options, &servers, &platform).await;
    machine::pin_process(platform.control_plane_pid(), "0,1");
    servers.stop().await;
    platform.stop().await;
    results
}

/// Every round runs every case once: a warm-up run, then a measured one.
async fn rounds(options: &Options, servers: &Servers, platform: &Platform) -> TlsResults {
    let measures = [Measure::KeptAlive, Measure::Handshakes, Measure::H2];
    let mut results = TlsResults {
        cases: measures
            .iter()
            .flat_map(|&measure| {
                measure.servers().iter().map(move |&server| CaseRuns {
                    measure,
                    server,
                    runs: vec![],
                })
            })
            .collect(),
        waited: 0,
        load_averages: vec![],
    };
    let headers = vec![platform.bearer()];
    for round in 1..=options.rounds {
        results.load_averages.push(load_average());
        for case in &mut results.cases {
            eprintln!(
                "bench: round {round}/{}: TLS, {:?}, {}",
                options.rounds,
                case.measure,
                case.server.label()
            );
            if !options.busy_ok {
                results.waited += usize::from(machine::wait_for_quiet_cpu().await);
            }
            let (measure, server) = (case.measure, case.server);
            let run = |seconds| one_run(options, servers, (measure, server), &headers, seconds);
            run(options.warmup).await;
            let pid = servers.pid(server);
            let measured = with_cpu_of(pid, options.seconds as f64, run(options.seconds)).await;
            case.runs.push(measured);
        }
    }
    results
}

/// One run of `measure` against `server` for `seconds`.
async fn one_run(
    options: &Options,
    servers: &Servers,
    (measure, server): (Measure, Server),
    headers: &[String],
    seconds: u64,
) -> Load {
    let url = format!("{}{BASE}{SECURED}", servers.url(server));
    let duration = std::time::Duration::from_secs(seconds);
    match measure {
        Measure::KeptAlive => super::https::wrk(options, &url, headers, seconds).await,
        Measure::Handshakes => {
            NewConnections {
                addr: servers.addr(server),
                loops: options.connections,
                duration,
                path: NO_ROUTE,
                status: 404,
            }
            .run()
            .await
        }
        Measure::H2 => {
            H2load {
                url: &url,
                connections: options.h2_connections,
                streams: options.h2_streams,
                duration,
                headers,
            }
            .run()
            .await
        }
    }
}

/// Every case answers as it should before anything is measured: the secured resource
/// with the token 200 with the backend's body over HTTP/1.1 and over HTTP/2 (h2 by ALPN,
/// h2c on the plain listener), 401 without it where the policy is in force; the path no
/// server routes 404 on a new connection of the handshake client.
async fn check(servers: &Servers, platform: &Platform) {
    let path = format!("{BASE}{SECURED}");
    for &server in Measure::H2.servers() {
        let base = servers.url(server);
        let mut versions = vec![reqwest::Version::HTTP_2];
        if server != Server::GatewayPlain {
            versions.push(reqwest::Version::HTTP_11);
        }
        for version in versions {
            let client = client(version);
            let url = format!("{base}{path}");
            let what = format!("{} over {version:?} at {url}", server.label());
            let response = client.get(&url).bearer_auth(&platform.token).send().await;
            let response = response.unwrap_or_else(|e| panic!("{what}: {e}"));
            let (status, got) = (response.status(), response.version());
            let body = response.bytes().await.unwrap_or_default();
            assert!(
                status == 200 && body.len() == BODY_BYTES && got == version,
                "{what}: {status}, {} bytes, {got:?}",
                body.len()
            );
            if server != Server::Nginx {
                let anonymous = client.get(&url).send().await.expect("check request");
                assert_eq!(anonymous.status(), 401, "{what} without a token");
            }
        }
    }
    let connector = tokio_rustls::TlsConnector::from(handshakes::client_config());
    let request = handshakes::request(NO_ROUTE);
    for &server in Measure::Handshakes.servers() {
        let addr = servers.addr(server);
        let status = handshakes::connect_and_call(addr, &connector, &request).await;
        assert!(
            matches!(status, Ok(404)),
            "{} on a new TLS connection to {addr}{NO_ROUTE}: {status:?}",
            server.label()
        );
    }
}

/// A client trusting the run's certificate, speaking only `version` (HTTP/2 by prior
/// knowledge: h2 by ALPN over TLS, h2c in clear).
fn client(version: reqwest::Version) -> reqwest::Client {
    let builder = reqwest::Client::builder().add_root_certificate(harness::tls::listener_root());
    let builder = if version == reqwest::Version::HTTP_2 {
        builder.http2_prior_knowledge()
    } else {
        builder.http1_only()
    };
    builder.build().expect("HTTP client")
}

/// The report's section.
pub fn section(options: &Options, results: &TlsResults) -> String {
    let busy = if options.busy_ok { " --busy-ok" } else { "" };
    let command = format!(
        "--only tls --rounds {} --seconds {} --warmup {} --connections {} --h2-connections {} \
         --h2-streams {}{busy}",
        options.rounds,
        options.seconds,
        options.warmup,
        options.connections,
        options.h2_connections,
        options.h2_streams,
    );
    let mut md = section_head("TLS and HTTP/2 beside nginx and Envoy", &command);
    let _ = writeln!(
        md,
        "One ECDSA P-256 certificate made for the run (rcgen; the chain of it and its \
         authority) for all three servers: nginx (reverse proxy, `listen … ssl http2`), \
         Envoy (the policy of case 3 behind a TLS transport socket, codec by ALPN) and a \
         second edge-gateway on the same control plane (the full policy, `APIM_TLS_CERT`), \
         each on CPU 1 with one worker, in front of the same 1 KiB backend; load on CPU 0. \
         Each server's defaults otherwise (session tickets on). Every round runs every case \
         after a {} s warm-up; medians of {} rounds of {} s. CPU µs: the server's user + \
         system time (nginx's worker included) over the requests or handshakes counted. \
         Load average before each round: {}.{}\n",
        options.warmup,
        options.rounds,
        options.seconds,
        results.load_averages.join("; "),
        match results.waited {
            0 => String::new(),
            n => format!(" {n} runs waited for another build to finish first."),
        },
    );
    md.push_str(&targets(results));
    md.push_str(&kept_alive(options, results));
    md.push_str(&new_handshakes(options, results));
    md.push_str(&h2(options, results));
    md
}

fn targets(results: &TlsResults) -> String {
    let kept = |s| results.runs(Measure::KeptAlive, s);
    let (gateway, nginx) = (kept(Server::Gateway), kept(Server::Nginx));
    let kept_ratio = gateway.rate() / nginx.rate();
    let new = |s| results.runs(Measure::Handshakes, s);
    let (gateway_new, nginx_new) = (new(Server::Gateway), new(Server::Nginx));
    let core_ratio = gateway_new.per_cpu_second() / nginx_new.per_cpu_second();
    let rows = [
        (
            "kept-alive TLS, full policy: req/s ≥ 0.5 × nginx's TLS proxy",
            format!(
                "{kept_ratio:.2} × ({} vs {} req/s)",
                int(gateway.rate()),
                int(nginx.rate())
            ),
            kept_ratio >= 0.5,
        ),
        (
            "new TLS handshakes per second of one core ≥ 0.8 × nginx's",
            format!(
                "{core_ratio:.2} × ({} vs {} per CPU-second; measured {} vs {}/s)",
                int(gateway_new.per_cpu_second()),
                int(nginx_new.per_cpu_second()),
                int(gateway_new.rate()),
                int(nginx_new.rate())
            ),
            core_ratio >= 0.8,
        ),
    ];
    let mut md = String::from("| target | measured | |\n|---|---|---|\n");
    for (target, measured, met) in rows {
        let verdict = if met { "MET" } else { "MISSED" };
        let _ = writeln!(md, "| {target} | {measured} | **{verdict}** |");
    }
    md.push('\n');
    md
}

fn kept_alive(options: &Options, results: &TlsResults) -> String {
    let c = options.connections;
    let nginx = results.runs(Measure::KeptAlive, Server::Nginx);
    let mut md = format!(
        "**Kept-alive TLS.** wrk (1 thread, {c} connections, HTTP/1.1 over TLS 1.3) GETs \
         the secured resource with the JWT, as case 4.\n\n| server | req/s | CPU µs/req | \
         p99 µs | × nginx req/s | × nginx CPU/req | errors |\n|---|--:|--:|--:|--:|--:|--:|\n"
    );
    for case in results.of(Measure::KeptAlive) {
        let p99 = super::stats::median(case.runs.iter().map(|l| l.p99_us));
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {p99:.0} | {:.2} | {:.2} | {} |",
            case.server.label(),
            int(case.rate()),
            case.cpu_us(),
            case.rate() / nginx.rate(),
            case.cpu_us() / nginx.cpu_us(),
            case.errors(),
        );
    }
    md.push_str(&every_round(results, Measure::KeptAlive));
    md
}

fn new_handshakes(options: &Options, results: &TlsResults) -> String {
    let nginx = results.runs(Measure::Handshakes, Server::Nginx);
    let mut md = format!(
        "**New TLS handshakes.** {} loops on CPU 0 (the benchmark's own client, \
         `tools/src/bench/handshakes.rs`), each opening a connection, completing a full TLS \
         1.3 handshake (X25519, the server signing with ECDSA P-256; no resumption), \
         sending `GET {NO_ROUTE}` with `Connection: close` (each server answers 404 itself) \
         and reading until the server closes. Rate: connections completed per second. Per \
         CPU-second: 10⁶ / CPU µs per handshake, what one core of the server would complete \
         busy all the time (busy: the share of CPU 1 the server used, under 100 % when the \
         client on CPU 0 ran out first).\n\n| server | handshakes/s | CPU µs/handshake \
         | busy | per CPU-second | × nginx per CPU-second | errors |\n\
         |---|--:|--:|--:|--:|--:|--:|\n",
        options.connections
    );
    for case in results.of(Measure::Handshakes) {
        let busy = case.rate() * case.cpu_us() / 1e4;
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {busy:.0} % | {} | {:.2} | {} |",
            case.server.label(),
            int(case.rate()),
            case.cpu_us(),
            int(case.per_cpu_second()),
            case.per_cpu_second() / nginx.per_cpu_second(),
            case.errors(),
        );
    }
    md.push_str(&every_round(results, Measure::Handshakes));
    md
}

fn h2(options: &Options, results: &TlsResults) -> String {
    let nginx = results.runs(Measure::H2, Server::Nginx);
    let mut md = format!(
        "**HTTP/2, many streams per connection.** h2load (1 thread, {} connections × {} \
         streams in flight) GETs the secured resource with the JWT: h2 by ALPN over TLS; \
         edge-gateway also on its plain listener (h2c by prior knowledge). h2load gives no \
         percentiles.\n\n| server | req/s | CPU µs/req | × nginx req/s | × nginx CPU/req | \
         errors |\n|---|--:|--:|--:|--:|--:|\n",
        options.h2_connections, options.h2_streams
    );
    for case in results.of(Measure::H2) {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {:.2} | {:.2} | {} |",
            case.server.label(),
            int(case.rate()),
            case.cpu_us(),
            case.rate() / nginx.rate(),
            case.cpu_us() / nginx.cpu_us(),
            case.errors(),
        );
    }
    md.push_str(&every_round(results, Measure::H2));
    md
}

/// Each case's rate in every round, in a line.
fn every_round(results: &TlsResults, measure: Measure) -> String {
    let cases: Vec<String> = results
        .of(measure)
        .map(|case| {
            let rounds: Vec<String> = case.runs.iter().map(|l| int(l.rate)).collect();
            format!("{} {}", case.server.label(), rounds.join(" / "))
        })
        .collect();
    format!("\nEvery round: {}.\n\n", cases.join("; "))
}
