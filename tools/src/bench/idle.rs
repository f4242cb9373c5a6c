//! Memory per idle connection (`--only idle`), for each kind of connection a client may
//! hold (plain HTTP/1.1, HTTP/1.1 over TLS 1.3, h2c: HTTP/2 by prior knowledge), each on a
//! platform of its own: `--idle-connections` clients each open a kept-alive connection to
//! edge-gateway (full policy), call the benchmark's secured resource once and then hold
//! the connection idle; the gateway's resident memory before and while they are held
//! gives the cost of one. Meanwhile a fresh client of the same kind, on a connection of
//! its own, is timed over `--idle-probes` calls, one after the other.

use std::fmt::Write as _;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::Request;
use axum::http::header::AUTHORIZATION;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::Options;
use super::backend::FastBackend;
use super::platform::{BASE, Platform, SECURED};
use super::report::{int, section_head};
use super::stats::Latencies;
use harness::held;
use harness::machine;

/// Connections being opened at once (the listen backlog holds the rest).
const OPENING: usize = 256;
/// Calls on connections of their own before the baseline is read, so that instances,
/// pools and caches are as they are under load, and only connections differ.
pub const WARM_CONNECTIONS: usize = 512;
/// Pause before each reading of resident memory: freed memory returns to the system.
const SETTLE: Duration = Duration::from_secs(2);

/// A kind of connection held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// HTTP/1.1 in clear.
    Plain,
    /// HTTP/1.1 over TLS 1.3 (ALPN `http/1.1`).
    Tls,
    /// HTTP/2 in clear by prior knowledge, one stream per connection.
    #[value(name = "h2c")]
    H2c,
}

impl Kind {
    /// Every kind, in the report's order.
    const ALL: [Kind; 3] = [Kind::Plain, Kind::Tls, Kind::H2c];

    /// How the report names it.
    fn label(self) -> &'static str {
        match self {
            Kind::Plain => "HTTP/1.1",
            Kind::Tls => "HTTP/1.1 over TLS 1.3",
            Kind::H2c => "h2c (HTTP/2, prior knowledge)",
        }
    }
}

/// What one kind of connection measured.
#[derive(Debug, Clone)]
pub struct IdleCase {
    /// The kind of connection.
    pub kind: Kind,
    /// Connections held.
    pub connections: usize,
    /// The gateway's resident memory, warm, before they were opened, MiB.
    pub before_mib: f64,
    /// The same with every connection held, MiB.
    pub held_mib: f64,
    /// The difference per connection, KiB.
    pub per_connection_kib: f64,
    /// A fresh client's calls while they are held.
    pub fresh: Latencies,
    /// Connections that were not answered 200 (opening or calling).
    pub failures: usize,
}

/// What the idle case measured, one entry per kind.
#[derive(Debug, Clone, Default)]
pub struct IdleResults {
    /// Each kind's figures.
    pub cases: Vec<IdleCase>,
}

/// Runs the idle case: each kind on a platform of its own.
pub async fn measure(options: &Options) -> IdleResults {
    let limit = held::raise_file_limit();
    let count = options.idle_connections;
    assert!(
        limit as usize > count + 100,
        "open-file limit {limit} is too low for {count} connections"
    );
    let backend = FastBackend::start();
    let mut cases = Vec::new();
    let kinds = if options.idle_kinds.is_empty() {
        &Kind::ALL[..]
    } else {
        &options.idle_kinds[..]
    };
    for &kind in kinds {
        let platform = match kind {
            Kind::Tls => Platform::start_tls(&backend.url).await,
            Kind::Plain | Kind::H2c => Platform::start(&backend.url).await,
        };
        let target = Target::new(kind, &platform);
        cases.push(held_connections(options, &platform, &target).await);
        platform.stop().await;
    }
    IdleResults { cases }
}

/// Warms the gateway, reads its memory, holds the connections and reads it again.
async fn held_connections(options: &Options, platform: &Platform, target: &Target) -> IdleCase {
    let pid = platform.gateway_pid();
    let (warm, _) = hold(target, WARM_CONNECTIONS).await;
    drop(warm);
    tokio::time::sleep(SETTLE).await;
    let before_mib = machine::rss_mib(pid);
    let count = options.idle_connections;
    let label = target.kind.label();
    eprintln!("bench: idle: holding {count} connections, {label}");
    let (connections, failures) = hold(target, count).await;
    tokio::time::sleep(SETTLE).await;
    let held_mib = machine::rss_mib(pid);
    let fresh = target.timed_calls(options.idle_probes).await;
    let per_connection_kib = (held_mib - before_mib) * 1024.0 / connections.len().max(1) as f64;
    eprintln!(
        "bench: idle: {label}: {before_mib:.1} → {held_mib:.1} MiB with {} held \
         ({per_connection_kib:.1} KiB each; {} failed); a fresh client p50 {:.3} ms, p99 \
         {:.3} ms",
        connections.len(),
        failures.len(),
        fresh.p50_ms,
        fresh.p99_ms
    );
    IdleCase {
        kind: target.kind,
        connections: connections.len(),
        before_mib,
        held_mib,
        per_connection_kib,
        fresh,
        failures: failures.len(),
    }
}

/// `count` connections of the target's kind, each called once: those answered 200, and
/// what went wrong with the others.
async fn hold(target: &Target, count: usize) -> (Vec<Client>, Vec<String>) {
    let target = Arc::new(target.clone());
    held::hold_with(count, OPENING, move || {
        let target = target.clone();
        async move {
            let mut client = Client::open(&target).await?;
            let (status, _) = client.call(&target).await?;
            Ok((client, status))
        }
    })
    .await
}

/// Where and how the clients of one kind connect, and what they ask.
#[derive(Clone)]
pub struct Target {
    kind: Kind,
    /// `host:port` of the gateway.
    addr: String,
    /// The HTTP/1.1 request, written as is.
    request: Vec<u8>,
    /// The secured resource's URI with the gateway's authority (HTTP/2).
    uri: String,
    /// `Bearer …`.
    authorization: String,
    /// TLS 1.3 only, offering `http/1.1`, trusting the listener authority.
    tls: Arc<rustls::ClientConfig>,
}

impl Target {
    /// Clients of `kind` of the platform's gateway, calling the secured resource.
    pub fn new(kind: Kind, platform: &Platform) -> Self {
        let base = &platform.stack.gw.base;
        let addr = base
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        Self {
            kind,
            request: held::get(&format!("{BASE}{SECURED}"), &platform.token),
            uri: format!("http://{addr}{BASE}{SECURED}"),
            authorization: format!("Bearer {}", platform.token),
            addr,
            tls: harness::tls::listener_client_config(&[&rustls::version::TLS13], &[b"http/1.1"]),
        }
    }

    /// `host:port` of the gateway.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `probes` calls, one after the other, on a new kept-alive connection.
    pub async fn timed_calls(&self, probes: usize) -> Latencies {
        let mut client = Client::open(self).await.expect("fresh client connects");
        let mut samples = Vec::with_capacity(probes);
        for _ in 0..probes {
            let (status, took) = client.call(self).await.expect("fresh client answered");
            assert_eq!(status, 200, "a fresh client is served");
            samples.push(took);
        }
        Latencies::of(&samples)
    }
}

/// One client's connection.
enum Client {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    /// The connection itself runs on a task of its own (answering the server's pings);
    /// it closes once this handle is dropped.
    H2c(h2::client::SendRequest<Bytes>),
}

impl Client {
    /// Connects (TLS handshake, or HTTP/2's preface and settings, included).
    async fn open(target: &Target) -> io::Result<Self> {
        let stream = TcpStream::connect(&target.addr).await?;
        stream.set_nodelay(true)?;
        match target.kind {
            Kind::Plain => Ok(Client::Plain(stream)),
            Kind::Tls => {
                let name = rustls::pki_types::ServerName::try_from("127.0.0.1")
                    .map_err(io::Error::other)?;
                let tls = tokio_rustls::TlsConnector::from(target.tls.clone())
                    .connect(name, stream)
                    .await?;
                Ok(Client::Tls(Box::new(tls)))
            }
            Kind::H2c => {
                let (send, connection) = h2::client::handshake(stream)
                    .await
                    .map_err(io::Error::other)?;
                tokio::spawn(connection);
                Ok(Client::H2c(send))
            }
        }
    }

    /// One call of the secured resource: its status, and how long it took.
    async fn call(&mut self, target: &Target) -> io::Result<(u16, Duration)> {
        match self {
            Client::Plain(stream) => held::call(stream, &target.request).await,
            Client::Tls(stream) => held::call(stream.as_mut(), &target.request).await,
            Client::H2c(send) => {
                let asked = Instant::now();
                let status = h2_call(send, target).await.map_err(io::Error::other)?;
                Ok((status, asked.elapsed()))
            }
        }
    }
}

/// A GET of the secured resource on its own stream, its body read: the status.
async fn h2_call(
    send: &mut h2::client::SendRequest<Bytes>,
    target: &Target,
) -> anyhow::Result<u16> {
    let request = Request::get(&target.uri)
        .header(AUTHORIZATION, &target.authorization)
        .body(())?;
    let mut ready = send.clone().ready().await?;
    let (response, _) = ready.send_request(request, true)?;
    let response = response.await?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        body.flow_control().release_capacity(chunk.len())?;
    }
    Ok(status)
}

/// The idle case's section of the report.
pub fn section(options: &Options, results: &IdleResults) -> String {
    let command = format!(
        "--only idle --idle-connections {}",
        options.idle_connections
    );
    let mut md = section_head("Memory per idle connection", &command);
    let _ = writeln!(
        md,
        "edge-gateway (full policy, on CPU 1) holds kept-alive connections of each kind, on \
         a platform of its own, each opened by a client on CPU 0 that called the secured \
         resource once and then left it idle. Resident memory (`VmRSS`) is read two seconds \
         after {WARM} warm-up connections of the same kind have come and gone, and again two \
         seconds after the last held connection was answered; meanwhile a fresh client of \
         the same kind makes {} calls, one after the other, on a connection of its own.\n",
        options.idle_probes,
        WARM = WARM_CONNECTIONS,
    );
    md.push_str(
        "| connection | held (failed) | resident before → holding | per idle connection | \
         fresh client p50 / p99 ms |\n|---|--:|--:|--:|--:|\n",
    );
    for case in &results.cases {
        let _ = writeln!(
            md,
            "| {} | {} ({}) | {:.1} → {:.1} MiB | **{:.1} KiB** | {:.3} / {:.3} |",
            case.kind.label(),
            int(case.connections as f64),
            case.failures,
            case.before_mib,
            case.held_mib,
            case.per_connection_kib,
            case.fresh.p50_ms,
            case.fresh.p99_ms
        );
    }
    md
}
