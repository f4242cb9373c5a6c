//! Listeners (HTTP/1.1 with upgrades for WebSocket APIs, and HTTP/2, in clear or over
//! TLS: `apim_tls`), accept loop and graceful shutdown.
//!
//! A listener is either bound here or inherited from a supervisor that holds it
//! (systemd-style socket activation: `LISTEN_FDS`, `LISTEN_PID`), so that a gateway can
//! be replaced while connections wait in the socket's backlog instead of being refused.
//! On shutdown the host stops accepting, answers what kept-alive connections still bring
//! with `Connection: close` for a short while, then closes the idle ones and waits for
//! in-flight requests, all within the shutdown grace.

use std::convert::Infallible;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use apim_tls::Stream;
use apim_tls::TlsAcceptor;
use apim_tls::connection::{Builders, Drain};
use http::HeaderValue;
use http::header::CONNECTION;
use hyper::service::service_fn;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use crate::dispatch::{Addresses, Gateway};
use crate::responses::ResponseBody;
use crate::scheme::{Arrival, TrustedProxies};

/// Pause after a failed `accept` (e.g. out of file descriptors).
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);
/// How often the drain looks whether every connection has closed.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// Listening sockets passed by a supervisor (systemd socket activation: `LISTEN_FDS`
/// descriptors from fd 3, for this process when `LISTEN_PID` says so), in the order the
/// listeners are configured: the gateway's first, then each `--extra-component`'s.
#[derive(Debug, Default)]
pub struct Inherited {
    listeners: Vec<Option<std::net::TcpListener>>,
}

impl Inherited {
    /// Takes the sockets named by the environment and removes `LISTEN_FDS`/`LISTEN_PID`
    /// from it, so that no child process takes them for its own. Call it before any other
    /// thread starts: it changes the environment.
    pub fn from_env() -> anyhow::Result<Self> {
        let mut passed = listenfd::ListenFd::from_env();
        let listeners = (0..passed.len())
            .map(|index| {
                passed.take_tcp_listener(index).with_context(|| {
                    format!("socket {index} of LISTEN_FDS is not a listening TCP socket")
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { listeners })
    }

    /// How many sockets were passed.
    pub fn len(&self) -> usize {
        self.listeners.len()
    }

    /// None was passed.
    pub fn is_empty(&self) -> bool {
        self.listeners.is_empty()
    }

    /// The socket for listener number `index`, if one was passed.
    pub fn take(&mut self, index: usize) -> Option<std::net::TcpListener> {
        self.listeners.get_mut(index)?.take()
    }
}

/// The listener for `addr`: the inherited socket when there is one (whatever address it
/// has), otherwise a socket bound here.
pub async fn listen(
    addr: SocketAddr,
    inherited: Option<std::net::TcpListener>,
) -> anyhow::Result<TcpListener> {
    let Some(socket) = inherited else {
        return TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"));
    };
    socket
        .set_nonblocking(true)
        .context("cannot make the inherited socket non-blocking")?;
    let listener =
        TcpListener::from_std(socket).context("cannot use the inherited listening socket")?;
    let bound = listener.local_addr()?;
    if bound != addr {
        tracing::info!(%bound, configured = %addr, "listening on an inherited socket");
    } else {
        tracing::info!(%bound, "listening on an inherited socket");
    }
    Ok(listener)
}

/// Prints the `Serving HTTP on http://ADDR/` line on stdout (`Serving HTTPS on
/// https://ADDR/` with TLS), and logs what it serves: the listener is accepting from now
/// on (supervisors and tests wait for it).
pub fn announce(listener: &TcpListener, tls: bool) -> anyhow::Result<()> {
    let bound = listener.local_addr()?;
    tracing::info!(%bound, serves = apim_tls::describe(tls), "listener serving");
    let mut stdout = std::io::stdout().lock();
    if tls {
        writeln!(stdout, "Serving HTTPS on https://{bound}/")?;
    } else {
        writeln!(stdout, "Serving HTTP on http://{bound}/")?;
    }
    stdout.flush()?;
    Ok(())
}

/// What a service manager is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supervised {
    /// Every listener is announced and serving (systemd's `Type=notify` readiness).
    Ready,
    /// A stop signal came: the listeners drain.
    Stopping,
}

/// Tells the service manager that started the gateway with `NOTIFY_SOCKET` (systemd's
/// `Type=notify`, or any manager speaking its protocol) how it stands; nothing without
/// one. A unit that waits for `READY=1` starts what depends on the gateway only once it
/// serves, manifest pulled.
pub fn tell_supervisor(state: Supervised) {
    let state = match state {
        Supervised::Ready => sd_notify::NotifyState::Ready,
        Supervised::Stopping => sd_notify::NotifyState::Stopping,
    };
    if let Err(err) = sd_notify::notify(false, &[state]) {
        tracing::warn!(%err, "could not notify the service manager");
    }
}

/// How a listener treats its connections.
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    /// Longest a client may take to send a request head (also while a kept-alive
    /// connection waits for the next one).
    pub header_timeout: Duration,
    /// How long in-flight requests may take to finish once shutdown begins.
    pub grace: Duration,
    /// How long, within `grace`, kept-alive connections may still bring a request
    /// (answered with `Connection: close`) before the idle ones are closed.
    pub keepalive_drain: Duration,
}

/// What a listener's connections speak, and whose word on the scheme they take.
#[derive(Clone, Default)]
pub struct Transport {
    /// The TLS handshake its connections begin with; none: plain HTTP.
    pub tls: Option<TlsAcceptor>,
    /// Whose `X-Forwarded-Proto` its requests' scheme follows ([`crate::scheme`]).
    pub trusted: Arc<TrustedProxies>,
}

/// Raises the process's limit of open files to what the system allows, so that the
/// gateway holds as many connections as it may (tens of thousands, where a default soft
/// limit of 1024 would refuse them); the limit in effect.
pub fn raise_file_limit() -> Option<u64> {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => Some(limit),
        Err(err) => {
            tracing::warn!("cannot raise the open-file limit: {err}");
            None
        }
    }
}

/// Serves connections (through their TLS handshake where `transport` has TLS) until
/// `shutdown` resolves, then drains them (see [`drain`]).
pub async fn serve(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()>,
    connections: Connections,
    transport: Transport,
) -> anyhow::Result<()> {
    let local = listener.local_addr()?;
    let graceful = Drain::new();
    let draining = Arc::new(AtomicBool::new(false));
    let builders = Arc::new(connection_builders(&connections));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let connection = Connection {
                        peer,
                        local,
                        draining: draining.clone(),
                        drain: graceful.clone(),
                    };
                    let listener = ListenerParts {
                        builders: builders.clone(),
                        transport: transport.clone(),
                        header_timeout: connections.header_timeout,
                    };
                    serve_connection(listener, stream, connection, gateway.clone());
                }
                Err(err) => {
                    tracing::warn!("accept failed: {err}");
                    tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                }
            },
        }
    }
    // Another process holding the same socket (the next gateway, or the supervisor)
    // keeps it open: connections still waiting in its backlog are accepted there.
    drop(listener);
    draining.store(true, Ordering::Relaxed);
    drain(graceful, connections).await;
    Ok(())
}

/// Once the listener is closed: for `keepalive_drain`, connections stay open and every
/// answer carries `Connection: close`, so a client sending on a kept-alive connection is
/// answered and reconnects (closing an idle connection at once races a request being sent
/// on it); the process is done as soon as they have all closed. Then idle connections are
/// closed and in-flight requests finish, until `grace` has passed since the start.
async fn drain(graceful: Drain, connections: Connections) {
    let began = Instant::now();
    let deadline = began + connections.grace;
    tracing::info!(
        open = graceful.count(),
        "shutting down: answering kept-alive connections with `Connection: close` for up \
         to {:?}",
        connections.keepalive_drain
    );
    let quiet_until = began + connections.keepalive_drain;
    while graceful.count() > 0 && Instant::now() < quiet_until {
        tokio::time::sleep(DRAIN_POLL).await;
    }
    let open = graceful.count();
    if open == 0 {
        tracing::info!("all connections closed");
        return;
    }
    tracing::info!(
        open,
        "closing idle connections; waiting up to {:?} for in-flight requests",
        deadline.saturating_duration_since(Instant::now())
    );
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep_until(deadline) => {
            tracing::warn!("grace period over; dropping open connections");
        }
    }
}

/// The connection builders: HTTP/1.1 with keep-alive and the header deadline, HTTP/2 with
/// `apim_tls`'s bounds.
///
/// HTTP/1.1 allows half-closed connections: a client that shuts its side once its request
/// is sent (`nc -N`, some HTTP/1.0 clients) is answered, as nginx answers it. hyper then
/// also stops reading a connection while its request is in flight, a read that cost a
/// fresh 8 KiB buffer per request (the request's headers still held the last one); a
/// client that leaves is noticed when its answer is written.
fn connection_builders(connections: &Connections) -> Builders {
    let mut builders = apim_tls::connection::builders();
    builders
        .http1
        .keep_alive(true)
        .half_close(true)
        .header_read_timeout(connections.header_timeout);
    builders
}

/// What every connection of a listener shares.
struct ListenerParts {
    builders: Arc<Builders>,
    transport: Transport,
    header_timeout: Duration,
}

/// One accepted connection: its addresses, the listener's draining flag, and the
/// listener's graceful shutdown, which it and the WebSocket relays it opens watch.
struct Connection {
    peer: SocketAddr,
    local: SocketAddr,
    draining: Arc<AtomicBool>,
    drain: Drain,
}

/// Serves one connection on a task of its own, after its TLS handshake if the listener
/// has TLS (a handshake counts as an open connection for the drain).
fn serve_connection(
    listener: ListenerParts,
    stream: TcpStream,
    connection: Connection,
    gateway: Arc<Gateway>,
) {
    let Connection {
        peer,
        local,
        draining,
        drain,
    } = connection;
    let watcher = drain.watcher();
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(%peer, "cannot set TCP_NODELAY: {err}");
    }
    let transport = &listener.transport;
    let arrival = Arrival::of(transport.tls.is_some(), peer.ip(), &transport.trusted);
    let addresses = Addresses::new(peer, local)
        .arriving(arrival)
        .draining(drain);
    let service = connection_service(gateway, addresses, draining);
    tokio::spawn(async move {
        let stream = match &listener.transport.tls {
            Some(acceptor) => {
                match apim_tls::accept::handshake(acceptor, stream, listener.header_timeout).await {
                    Some(stream) => stream,
                    None => return,
                }
            }
            None => Stream::Plain(stream),
        };
        let served = listener
            .builders
            .serve(stream, listener.header_timeout, service, watcher)
            .await;
        if let Err(err) = served {
            tracing::debug!(%peer, "connection ended with error: {err}");
        }
    });
}

/// A request's answer, on its way.
type Answer =
    Pin<Box<dyn Future<Output = Result<http::Response<ResponseBody>, Infallible>> + Send>>;

/// What answers one connection's requests, from the client at `addresses`.
///
/// Each request's future is boxed: hyper keeps a connection's slot for the request in
/// flight allocated at that future's full size for as long as the connection lives (the
/// whole policy's state machine, kilobytes), where a box costs a pointer while the
/// connection idles between requests.
fn connection_service(
    gateway: Arc<Gateway>,
    addresses: Addresses,
    draining: Arc<AtomicBool>,
) -> impl hyper::service::Service<
    http::Request<hyper::body::Incoming>,
    Response = http::Response<ResponseBody>,
    Error = Infallible,
    Future = Answer,
> + Clone {
    service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let (gateway, addresses, draining) = (gateway.clone(), addresses.clone(), draining.clone());
        // HTTP/2 has no `Connection` header: a draining HTTP/2 connection ends by GOAWAY.
        let http1 = request.version() < http::Version::HTTP_2;
        let answer: Answer = Box::pin(async move {
            let mut response = gateway.serve(request, &addresses).await;
            // hyper closes the connection once this answer is written.
            if http1 && draining.load(Ordering::Relaxed) {
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, Infallible>(response)
        });
        answer
    })
}

/// Ctrl-C / SIGTERM listener, registered when created so that a signal
/// arriving at any later point is caught.
pub struct ShutdownSignal {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl ShutdownSignal {
    /// Installs the signal handlers.
    pub fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                terminate: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
                interrupt: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Resolves on the first SIGTERM or Ctrl-C.
    pub async fn recv(mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.terminate.recv() => tracing::info!("SIGTERM received"),
            _ = self.interrupt.recv() => tracing::info!("Ctrl-C received"),
        }
        #[cfg(not(unix))]
        {
            let _ = &mut self;
            if let Err(err) = tokio::signal::ctrl_c().await {
                tracing::error!("cannot listen for Ctrl-C: {err}");
                std::future::pending::<()>().await;
            }
            tracing::info!("Ctrl-C received");
        }
    }
}
