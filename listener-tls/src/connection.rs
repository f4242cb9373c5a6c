//! HTTP/1.1 and HTTP/2 on one listener: the first bytes of a connection (after TLS,
//! whatever ALPN chose) tell HTTP/2's preface from an HTTP/1.1 request, so plain listeners
//! take h2c by prior knowledge ([`Builders::serve`]).
//!
//! The protocol is read here rather than by hyper-util's automatic builder, whose
//! connection is as large as an HTTP/2 one (1.5 KiB) for every connection: an idle
//! HTTP/1.1 connection's task then holds only HTTP/1.1's state (0.6 KiB).
//!
//! HTTP/2 lets one client ask for much on one connection; these bound it:
//! - streams open at once ([`MAX_CONCURRENT_STREAMS`]), and the memory each may hold
//!   (flow-control windows, the send buffer);
//! - the header list ([`MAX_HEADER_LIST_SIZE`]), which also ends a CONTINUATION flood: the
//!   `h2` crate counts the header block as it comes, frame by frame, and refuses it past
//!   the limit;
//! - rapid reset (CVE-2023-44487): streams the client resets before they are answered
//!   are counted, and past [`MAX_PENDING_ACCEPT_RESET_STREAMS`] the connection is closed
//!   (GOAWAY); so are streams the server had to reset for the client's errors;
//! - PING and SETTINGS floods: `h2` answers at most one pending PING acknowledgement and
//!   one SETTINGS acknowledgement at a time, reading no more frames until they are sent;
//! - a dead peer: a PING every [`KEEP_ALIVE_INTERVAL`], and the connection is closed when
//!   it goes unanswered for [`KEEP_ALIVE_TIMEOUT`].
//!
//! A flood costs the connection carrying it, each on its own task: others are not held.

use std::error::Error as StdError;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::rt::bounds::Http2ServerConnExec;
use hyper::server::conn::{http1, http2};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::sync::watch;

use crate::h2_frames::PREFACE as H2_PREFACE;

/// Streams one HTTP/2 connection may have open at once (nginx's default).
pub const MAX_CONCURRENT_STREAMS: u32 = 128;
/// Largest header list of an HTTP/2 request, decoded (Envoy allows 60 KiB).
pub const MAX_HEADER_LIST_SIZE: u32 = 64 * 1024;
/// What a stream may receive before the server reads it (its flow-control window).
pub const STREAM_WINDOW: u32 = 1024 * 1024;
/// What a connection may receive before the server reads it, all streams together.
pub const CONNECTION_WINDOW: u32 = 2 * 1024 * 1024;
/// Most bytes of an answer queued per stream for a client that reads slowly.
pub const MAX_SEND_BUFFER: usize = 128 * 1024;
/// Streams reset by the client before they were answered, that a connection may hold.
pub const MAX_PENDING_ACCEPT_RESET_STREAMS: usize = 20;
/// Streams reset by the server for the client's errors before the connection is closed.
pub const MAX_LOCAL_ERROR_RESET_STREAMS: usize = 256;
/// How often an HTTP/2 client is pinged.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// How long a ping may go unanswered.
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// What a connection's failure may be: hyper's, or the wait for its first bytes.
pub type ServeError = Box<dyn StdError + Send + Sync>;

/// A listener's HTTP/1.1 and HTTP/2 settings, HTTP/2's with the bounds above; each
/// listener adds its own HTTP/1.1 settings (`builders.http1`).
#[derive(Clone, Debug)]
pub struct Builders {
    /// HTTP/1.1 (with upgrades, for WebSocket).
    pub http1: http1::Builder,
    /// HTTP/2.
    pub http2: http2::Builder<TokioExecutor>,
}

/// Both builders, with hyper's timers and HTTP/2's bounds.
pub fn builders() -> Builders {
    let mut http1 = http1::Builder::new();
    http1.timer(TokioTimer::new());
    let mut http2 = http2::Builder::new(TokioExecutor::new());
    http2
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_header_list_size(MAX_HEADER_LIST_SIZE)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .adaptive_window(false)
        .max_send_buf_size(MAX_SEND_BUFFER)
        .max_pending_accept_reset_streams(MAX_PENDING_ACCEPT_RESET_STREAMS)
        .max_local_error_reset_streams(MAX_LOCAL_ERROR_RESET_STREAMS)
        .keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT);
    Builders { http1, http2 }
}

impl Builders {
    /// Serves one connection until it ends: HTTP/2 when its first bytes are HTTP/2's
    /// preface, else HTTP/1.1 with upgrades. `within` is the listener's header timeout:
    /// - the first bytes are due within it (hyper has no deadline of its own before it
    ///   knows the protocol, so a client sending nothing, or a few bytes, would hold the
    ///   connection);
    /// - then HTTP/1.1's header timeout cuts a kept-alive connection that brings no
    ///   request for that long, and an HTTP/2 connection that opens no stream for that
    ///   long (at most twice that) is closed gracefully, by GOAWAY after what is in
    ///   flight: a client answering pings would otherwise hold it for ever.
    ///
    /// When `watcher`'s drain ends its connections, this one finishes what is in flight
    /// and closes.
    pub async fn serve<S, Svc, B>(
        &self,
        stream: S,
        within: Duration,
        service: Svc,
        mut watcher: Watcher,
    ) -> Result<(), ServeError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        Svc: Service<Request<Incoming>, Response = Response<B>>,
        Svc::Error: Into<ServeError>,
        B: Body + 'static,
        B::Error: Into<ServeError>,
        TokioExecutor: Http2ServerConnExec<Svc::Future, B>,
    {
        // A connection that has not yet said what it speaks has nothing in flight: the
        // drain ends it at once.
        let (protocol, stream) = tokio::select! {
            read = Preface::read(stream, within) => read?,
            () = watcher.ended() => return Ok(()),
        };
        let io = TokioIo::new(stream);
        match protocol {
            Protocol::Http1 => {
                let connection = self.http1.serve_connection(io, service).with_upgrades();
                let connection = std::pin::pin!(connection);
                watcher
                    .watch(connection, std::future::pending(), |connection| {
                        http1::UpgradeableConnection::graceful_shutdown(
                            connection.get_mut().as_mut(),
                        )
                    })
                    .await?;
            }
            Protocol::Http2 => {
                let streams = Arc::new(AtomicBool::new(false));
                let service = Opening {
                    inner: service,
                    opened: streams.clone(),
                };
                // Boxed, so that an HTTP/1.1 connection's task is not as large as this.
                let connection = Box::pin(self.http2.serve_connection(io, service));
                watcher
                    .watch(connection, no_stream_for(&streams, within), |connection| {
                        http2::Connection::graceful_shutdown(connection.get_mut().as_mut())
                    })
                    .await?;
            }
        }
        Ok(())
    }
}

/// A service that marks each request (each HTTP/2 stream) as it comes.
struct Opening<S> {
    inner: S,
    opened: Arc<AtomicBool>,
}

impl<S: Service<Request<Incoming>>> Service<Request<Incoming>> for Opening<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        self.opened.store(true, Ordering::Relaxed);
        self.inner.call(request)
    }
}

/// Resolves once a whole `idle` has passed with no stream opened (marked in `opened`).
async fn no_stream_for(opened: &AtomicBool, idle: Duration) {
    loop {
        tokio::time::sleep(idle).await;
        if !opened.swap(false, Ordering::Relaxed) {
            return;
        }
    }
}

/// The protocol a connection speaks, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// A listener's open connections, and the word that ends them gracefully: each
/// connection holds a [`Watcher`] as long as it is open (and so does what outlives its
/// connection, such as a relayed WebSocket: clones of the drain hand out watchers too).
#[derive(Debug, Clone)]
pub struct Drain {
    signal: watch::Sender<bool>,
}

impl Default for Drain {
    fn default() -> Self {
        Self::new()
    }
}

impl Drain {
    /// No connection yet.
    pub fn new() -> Self {
        Self {
            signal: watch::Sender::new(false),
        }
    }

    /// What a new connection holds while it is open.
    pub fn watcher(&self) -> Watcher {
        Watcher {
            signal: self.signal.subscribe(),
        }
    }

    /// The connections open.
    pub fn count(&self) -> usize {
        self.signal.receiver_count()
    }

    /// Tells every connection to finish what is in flight and close; resolves once all
    /// have closed.
    pub async fn shutdown(self) {
        self.signal.send_replace(true);
        self.signal.closed().await;
    }
}

/// One open connection's part of a [`Drain`].
#[derive(Debug)]
pub struct Watcher {
    signal: watch::Receiver<bool>,
}

impl Watcher {
    /// Runs `connection` to its end, calling `graceful_shutdown` on it once the drain
    /// says so or `idle` resolves.
    pub async fn watch<C: Future + Unpin>(
        mut self,
        mut connection: C,
        idle: impl Future<Output = ()>,
        graceful_shutdown: impl FnOnce(Pin<&mut C>),
    ) -> C::Output {
        tokio::select! {
            output = &mut connection => return output,
            () = self.ended() => {}
            () = idle => {}
        }
        graceful_shutdown(Pin::new(&mut connection));
        connection.await
    }

    /// Resolves once the drain ends its connections (or is gone).
    pub async fn ended(&mut self) {
        let _ = self.signal.wait_for(|ended| *ended).await;
    }
}

/// A stream whose first bytes, read to tell the protocol, are read again by hyper.
#[derive(Debug)]
struct Preface<S> {
    inner: S,
    first: [u8; H2_PREFACE.len()],
    read: u8,
    replayed: u8,
}

impl<S: AsyncRead + Unpin> Preface<S> {
    /// Reads `inner`'s first bytes, within `within`, until they differ from HTTP/2's
    /// preface (HTTP/1.1), make it whole (HTTP/2) or end (HTTP/1.1: hyper sees the end).
    async fn read(inner: S, within: Duration) -> io::Result<(Protocol, Self)> {
        let mut preface = Self {
            inner,
            first: [0; H2_PREFACE.len()],
            read: 0,
            replayed: 0,
        };
        let protocol = tokio::time::timeout(within, preface.protocol())
            .await
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no request within the header timeout",
                )
            })??;
        Ok((protocol, preface))
    }

    async fn protocol(&mut self) -> io::Result<Protocol> {
        loop {
            let read = usize::from(self.read);
            let got = self.inner.read(&mut self.first[read..]).await?;
            let read = read + got;
            self.read = read as u8;
            if got == 0 || self.first[..read] != H2_PREFACE[..read] {
                return Ok(Protocol::Http1);
            }
            if read == H2_PREFACE.len() {
                return Ok(Protocol::Http2);
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Preface<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let (replayed, read) = (usize::from(this.replayed), usize::from(this.read));
        if replayed < read {
            let count = (read - replayed).min(buf.remaining());
            buf.put_slice(&this.first[replayed..replayed + count]);
            this.replayed = (replayed + count) as u8;
            // The bytes that followed come in the same read: given the first bytes alone,
            // hyper would parse a partial head and reserve its whole read buffer again
            // past them (16 KiB where a request takes 8 KiB), and read once more.
            if usize::from(this.replayed) == read && buf.remaining() > 0 {
                let filled = buf.filled().len();
                if let Poll::Ready(Err(_)) = Pin::new(&mut this.inner).poll_read(cx, buf) {
                    // The first bytes are delivered now; the next read meets the error
                    // again (or the end of the stream).
                    buf.set_filled(filled);
                }
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Preface<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2_frames::*;
    use tokio::io::AsyncWriteExt as _;
    use tokio::net::{TcpListener, TcpStream};

    /// Answers `ok`.
    async fn ok(_request: Request<Incoming>) -> Result<Response<String>, std::convert::Infallible> {
        Ok(Response::new(String::from("ok")))
    }

    /// Serves [`ok`] on every request, HTTP/1.1 or HTTP/2, with [`builders`]; the address.
    async fn server() -> std::net::SocketAddr {
        server_within(Duration::from_secs(5)).await
    }

    /// The same with `within` as the header timeout.
    async fn server_within(within: Duration) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let builders = std::sync::Arc::new(builders());
            let drain = Drain::new();
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let (builders, watcher) = (builders.clone(), drain.watcher());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(ok);
                    let _ = builders.serve(stream, within, service, watcher).await;
                });
            }
        });
        addr
    }

    /// `:method GET`, `:scheme http`, `:path /` from HPACK's static table.
    const GET_ROOT: [u8; 3] = [0x82, 0x86, 0x84];

    /// A connection that has sent HTTP/2's preface and its SETTINGS.
    async fn h2_connection(addr: std::net::SocketAddr) -> TcpStream {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(&hello()).await.unwrap();
        stream
    }

    /// The frames the server sends until it closes the connection, or until one of type
    /// `until` (its kind and payload); what came.
    async fn frames_until(stream: &mut TcpStream, until: u8) -> Vec<(u8, Vec<u8>)> {
        let mut frames = Vec::new();
        loop {
            let mut head = [0u8; 9];
            if stream.read_exact(&mut head).await.is_err() {
                return frames;
            }
            let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; length];
            if stream.read_exact(&mut payload).await.is_err() {
                return frames;
            }
            frames.push((head[3], payload));
            if head[3] == until {
                return frames;
            }
        }
    }

    /// The error code of a GOAWAY frame's payload.
    fn goaway_code(payload: &[u8]) -> u32 {
        u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]])
    }

    const ENHANCE_YOUR_CALM: u32 = 0xb;

    #[tokio::test]
    async fn a_request_over_h2c_is_answered() {
        let addr = server().await;
        let mut stream = h2_connection(addr).await;
        let request = frame(HEADERS, END_STREAM | END_HEADERS, 1, &GET_ROOT);
        stream.write_all(&request).await.unwrap();
        let frames = frames_until(&mut stream, HEADERS).await;
        let (kind, block) = frames.last().expect("an answer");
        assert_eq!(*kind, HEADERS);
        // `:status 200` is index 8 of the static table.
        assert_eq!(block[0], 0x88);
    }

    /// Rapid reset (CVE-2023-44487): streams opened and reset at once, again and again,
    /// close the connection with ENHANCE_YOUR_CALM; another connection is served.
    #[tokio::test]
    async fn a_rapid_reset_flood_ends_its_connection_only() {
        let addr = server().await;
        let mut flood = h2_connection(addr).await;
        let mut frames = Vec::new();
        for index in 0..1000u32 {
            let stream = 2 * index + 1;
            frames.extend(frame(HEADERS, END_STREAM | END_HEADERS, stream, &GET_ROOT));
            frames.extend(frame(RST_STREAM, 0, stream, &8u32.to_be_bytes()));
        }
        // The server may close before it has read it all.
        let _ = flood.write_all(&frames).await;
        let answered = frames_until(&mut flood, GOAWAY).await;
        let (kind, payload) = answered.last().expect("a GOAWAY");
        assert_eq!(*kind, GOAWAY);
        assert_eq!(goaway_code(payload), ENHANCE_YOUR_CALM);

        assert_another_connection_is_served(addr).await;
    }

    /// A fresh connection to `addr` is answered.
    async fn assert_another_connection_is_served(addr: std::net::SocketAddr) {
        let mut other = h2_connection(addr).await;
        let request = frame(HEADERS, END_STREAM | END_HEADERS, 1, &GET_ROOT);
        other.write_all(&request).await.unwrap();
        let frames = frames_until(&mut other, HEADERS).await;
        assert_eq!(frames.last().map(|(kind, _)| *kind), Some(HEADERS));
    }

    /// A header block sent in CONTINUATION frames past the header list limit is refused
    /// and its connection closed before it has all been sent; another is served.
    #[tokio::test]
    async fn a_continuation_flood_ends_its_connection_only() {
        let addr = server().await;
        let mut flood = h2_connection(addr).await;
        let mut first = GET_ROOT.to_vec();
        // A literal header `x: aaa...` without indexing, never ending.
        first.extend_from_slice(&[0x00, 0x01, b'x', 0x7f, 0xff, 0xff, 0x03]);
        let _ = flood
            .write_all(&frame(HEADERS, END_STREAM, 1, &first))
            .await;
        let filler = vec![b'a'; 16 * 1024];
        let mut sent = 0usize;
        for _ in 0..64 {
            if flood
                .write_all(&frame(CONTINUATION, 0, 1, &filler))
                .await
                .is_err()
            {
                break;
            }
            sent += filler.len();
        }
        let answered = frames_until(&mut flood, GOAWAY).await;
        assert!(
            answered.iter().all(|(kind, _)| *kind != HEADERS),
            "answered a request whose header block never ended ({sent} bytes sent)"
        );
        if let Some((GOAWAY, payload)) = answered.last() {
            assert_ne!(goaway_code(payload), 0, "closed without an error");
        }

        assert_another_connection_is_served(addr).await;
    }

    /// An HTTP/2 connection answering pings but opening no stream is closed gracefully,
    /// by GOAWAY with no error, once its requests are answered.
    #[tokio::test]
    async fn an_idle_h2_connection_is_closed_gracefully() {
        let addr = server_within(Duration::from_millis(300)).await;
        let mut stream = h2_connection(addr).await;
        let request = frame(HEADERS, END_STREAM | END_HEADERS, 1, &GET_ROOT);
        stream.write_all(&request).await.unwrap();
        let started = std::time::Instant::now();
        let frames = frames_until(&mut stream, GOAWAY).await;
        assert!(
            frames.iter().any(|(kind, _)| *kind == HEADERS),
            "answered first"
        );
        let (kind, payload) = frames.last().expect("a GOAWAY");
        assert_eq!(*kind, GOAWAY);
        assert_eq!(goaway_code(payload), 0);
        assert!(started.elapsed() >= Duration::from_millis(300));
    }

    #[tokio::test]
    async fn a_client_silent_before_its_first_bytes_is_cut() {
        let (_client, server) = tokio::io::duplex(64);
        let err = Preface::read(server, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    /// The protocol, and what the server then reads, once `sent` has come.
    async fn read_after(sent: &[u8]) -> (Protocol, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(1024);
        client.write_all(sent).await.unwrap();
        let (protocol, mut preface) = Preface::read(server, Duration::from_millis(200))
            .await
            .unwrap();
        drop(client);
        let mut again = Vec::new();
        preface.read_to_end(&mut again).await.unwrap();
        (protocol, again)
    }

    #[tokio::test]
    async fn a_short_http1_request_is_known_at_once_and_read_whole() {
        // 18 bytes, fewer than HTTP/2's preface: its first byte tells.
        let request = b"GET / HTTP/1.0\r\n\r\n";
        assert_eq!(
            read_after(request).await,
            (Protocol::Http1, request.to_vec())
        );
        // A request sharing the preface's first bytes.
        let request = b"PRIVATE / HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(
            read_after(request).await,
            (Protocol::Http1, request.to_vec())
        );
    }

    #[tokio::test]
    async fn the_first_read_after_the_preface_brings_what_followed_it() {
        // A request longer than the bytes read to tell the protocol: hyper gets it in
        // one read, so it never parses a partial head and grows its buffer past it.
        let request = b"GET /a/long/enough/path HTTP/1.1\r\nHost: x\r\n\r\n";
        let (mut client, server) = tokio::io::duplex(1024);
        client.write_all(request).await.unwrap();
        let (protocol, mut preface) = Preface::read(server, Duration::from_millis(200))
            .await
            .unwrap();
        assert_eq!(protocol, Protocol::Http1);
        let mut buf = [0u8; 256];
        let got = preface.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..got], request);
    }

    #[tokio::test]
    async fn http2s_preface_is_known_and_read_again() {
        let sent = hello();
        assert_eq!(read_after(&sent).await, (Protocol::Http2, sent));
    }

    #[tokio::test]
    async fn a_drain_ends_a_connection_that_has_sent_nothing_at_once() {
        let (_client, server) = tokio::io::duplex(64);
        let drain = Drain::new();
        let watcher = drain.watcher();
        let served = tokio::spawn(async move {
            let service = hyper::service::service_fn(ok);
            builders()
                .serve(server, Duration::from_secs(60), service, watcher)
                .await
        });
        tokio::time::timeout(Duration::from_secs(5), drain.shutdown())
            .await
            .expect("the silent connection closes before its header timeout");
        served.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_drain_ends_idle_connections_and_counts_them() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let drain = Drain::new();
        let watcher = drain.watcher();
        let served = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let service = hyper::service::service_fn(ok);
            builders()
                .serve(stream, Duration::from_secs(5), service, watcher)
                .await
        });
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = [0u8; 12];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"HTTP/1.1 200");
        assert_eq!(drain.count(), 1);
        tokio::time::timeout(Duration::from_secs(5), drain.shutdown())
            .await
            .expect("the idle connection closes");
        served.await.unwrap().unwrap();
    }
}
