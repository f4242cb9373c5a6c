//! The management listener's connections: HTTP/1.1 and HTTP/2, in clear or over TLS
//! (`apim_tls`), with a deadline for each request head (and for the next one on a
//! kept-alive connection) and for the TLS handshake, an idle timeout on every connection,
//! a cap on connections served at once, the client's address for the handlers, and
//! graceful shutdown. (Request bodies get their deadline in `http`.)

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use apim_tls::connection::{Builders, Drain};
use apim_tls::{Stream, TlsAcceptor};
use axum::Router;
use axum::extract::ConnectInfo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};

/// Pause after a failed `accept` (e.g. out of file descriptors).
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);
/// How long requests in flight may take to finish once shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Deadlines and cap of the listener.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// For a request head, from the first moment the connection waits for one.
    pub header_timeout: Duration,
    /// For a connection on which no byte moves either way.
    pub idle_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
}

/// Serves `app` on `listener` (through each connection's TLS handshake with `tls`) until
/// `shutdown` resolves, then lets requests in flight finish (up to a grace period).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
    tls: Option<TlsAcceptor>,
) -> anyhow::Result<()> {
    let graceful = Drain::new();
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let builders = Arc::new(connection_builders(&limits));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = connections.clone().acquire_owned() => slot?,
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!("accept failed: {err}");
                    tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                    continue;
                }
            },
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(%peer, "cannot set TCP_NODELAY: {err}");
        }
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut request| {
            request.extensions_mut().insert(ConnectInfo(peer));
            tower_service::Service::call(&mut app.clone(), request)
        });
        let (builders, tls, watcher) = (builders.clone(), tls.clone(), graceful.watcher());
        tokio::spawn(async move {
            let stream = match tls {
                Some(acceptor) => {
                    apim_tls::accept::handshake(&acceptor, stream, limits.header_timeout).await
                }
                None => Some(Stream::Plain(stream)),
            };
            if let Some(stream) = stream {
                let io = IdleTimeout::new(stream, limits.idle_timeout);
                let served = builders
                    .serve(io, limits.header_timeout, service, watcher)
                    .await;
                if let Err(err) = served {
                    tracing::debug!(%peer, "connection ended: {err}");
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            tracing::warn!("shutdown grace over; dropping open connections");
        }
    }
    Ok(())
}

/// HTTP/1.1 with the header deadline, HTTP/2 with `apim_tls`'s bounds.
fn connection_builders(limits: &Limits) -> Builders {
    let mut builders = apim_tls::connection::builders();
    builders.http1.header_read_timeout(limits.header_timeout);
    builders
}

/// A stream that fails with `TimedOut` once a read or write has waited `idle` since the
/// last one that moved bytes: a client that neither sends nor reads cannot hold a
/// connection (and one of the capped places) for ever.
struct IdleTimeout<S> {
    inner: S,
    idle: Duration,
    timer: Pin<Box<Sleep>>,
    /// Whether `timer` runs, i.e. something waits since the last progress.
    waiting: bool,
}

impl<S> IdleTimeout<S> {
    fn new(inner: S, idle: Duration) -> Self {
        IdleTimeout {
            inner,
            idle,
            timer: Box::pin(tokio::time::sleep(idle)),
            waiting: false,
        }
    }

    /// Passes a result on, noting progress; on `Pending`, fails once idle for too long.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.waiting = false;
            return poll;
        }
        if !self.waiting {
            self.waiting = true;
            let deadline = Instant::now() + self.idle;
            self.timer.as_mut().reset(deadline);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection idle for too long",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for IdleTimeout<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        self.watch(cx, poll)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for IdleTimeout<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn connections_past_the_cap_wait_for_a_place() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let limits = Limits {
            header_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            max_connections: 1,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            app,
            limits,
            async {
                let _ = stopped.await;
            },
            None,
        ));
        // One connection that sends nothing holds the only place...
        let holder = tokio::net::TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let request = tokio::spawn(async move {
            reqwest::get(format!("http://{addr}/"))
                .await
                .unwrap()
                .status()
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!request.is_finished(), "served past the cap");
        // ...until it goes.
        drop(holder);
        assert_eq!(request.await.unwrap(), 200);
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_stream_with_no_progress_times_out_and_one_with_progress_does_not() {
        let (client, server) = tokio::io::duplex(64);
        let mut server = IdleTimeout::new(server, Duration::from_millis(1000));
        let mut client = client;
        let writer = tokio::spawn(async move {
            for _ in 0..4 {
                tokio::time::sleep(Duration::from_millis(400)).await;
                client.write_all(b"x").await.unwrap();
            }
            // Then nothing, with the stream left open.
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(client);
        });
        let mut byte = [0u8; 1];
        for _ in 0..4 {
            server.read_exact(&mut byte).await.unwrap();
        }
        let err = server.read_exact(&mut byte).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        writer.abort();
    }
}
