//! HTTP/1.1 listener, accept loop and graceful shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};

use crate::gateway::{Addresses, Gateway};

/// Pause after a failed `accept` (e.g. out of file descriptors).
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);

/// Binds `addr` and prints the `Serving HTTP on http://ADDR/` line on stdout.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "Serving HTTP on http://{bound}/")?;
    stdout.flush()?;
    Ok(listener)
}

/// How a listener treats its connections.
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    /// Longest a client may take to send a request head (also while a kept-alive
    /// connection waits for the next one).
    pub header_timeout: Duration,
    /// How long in-flight requests may take to finish once shutdown begins.
    pub grace: Duration,
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

/// Serves connections until `shutdown` resolves, then waits up to `grace` for
/// in-flight requests to finish.
pub async fn serve(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()>,
    connections: Connections,
) -> anyhow::Result<()> {
    let Connections {
        header_timeout,
        grace,
    } = connections;
    let local = listener.local_addr()?;
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    serve_connection(&builder, &graceful, stream, peer, local, gateway.clone());
                }
                Err(err) => {
                    tracing::warn!("accept failed: {err}");
                    tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                }
            },
        }
    }
    drop(listener);
    tracing::info!("shutting down: waiting up to {grace:?} for in-flight requests");
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(grace) => tracing::warn!("grace period over; dropping open connections"),
    }
    Ok(())
}

fn serve_connection(
    builder: &http1::Builder,
    graceful: &GracefulShutdown,
    stream: TcpStream,
    peer: SocketAddr,
    local: SocketAddr,
    gateway: Arc<Gateway>,
) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(%peer, "cannot set TCP_NODELAY: {err}");
    }
    let addresses = Addresses::new(peer, local);
    let service = service_fn(move |request| {
        let (gateway, addresses) = (gateway.clone(), addresses.clone());
        async move { Ok::<_, Infallible>(gateway.serve(request, &addresses).await) }
    });
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    let connection = graceful.watch(connection);
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!(%peer, "connection ended with error: {err}");
        }
    });
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
