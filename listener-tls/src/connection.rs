//! HTTP/1.1 and HTTP/2 on one listener: hyper's automatic builder reads the first bytes
//! of a connection (after TLS, whatever ALPN chose) and serves HTTP/2 on its preface,
//! HTTP/1.1 otherwise; so plain listeners take h2c by prior knowledge.
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

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

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
/// Bytes after which a connection's protocol is known: the length of HTTP/2's preface.
const PREFACE_LEN: usize = 24;

/// A builder serving HTTP/1.1 and HTTP/2 with the bounds above; each listener adds its own
/// HTTP/1.1 settings (`builder.http1()`).
pub fn builder() -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new());
    builder
        .http2()
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
    builder
}

/// A stream whose reads fail with `TimedOut` when they wait longer than `within` before
/// the connection's first [`PREFACE_LEN`] bytes have come: hyper reads them to choose
/// between HTTP/1.1 and HTTP/2 with no deadline of its own, so a client sending nothing,
/// or a few bytes, would hold the connection. Past them, the protocol's own deadlines
/// apply (the header timeout of HTTP/1.1, HTTP/2's pings).
#[derive(Debug)]
pub struct Preface<S> {
    inner: S,
    read: usize,
    within: Duration,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<S> Preface<S> {
    /// `inner`, with its first bytes due within `within` of each wait.
    pub fn new(inner: S, within: Duration) -> Self {
        Self {
            inner,
            read: 0,
            within,
            timer: None,
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
        if this.read >= PREFACE_LEN {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if poll.is_ready() {
            this.read += buf.filled().len() - before;
            this.timer = None;
            return poll;
        }
        let within = this.within;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(within)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no request within the header timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
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
    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::{TcpListener, TcpStream};

    /// Serves `ok` on every request, HTTP/1.1 or HTTP/2, with [`builder`]; the address.
    async fn server() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let builder = std::sync::Arc::new(builder());
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let builder = builder.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|_request| async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(String::from("ok")))
                    });
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        addr
    }

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    const HEADERS: u8 = 0x1;
    const RST_STREAM: u8 = 0x3;
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    const CONTINUATION: u8 = 0x9;
    const END_STREAM: u8 = 0x1;
    const END_HEADERS: u8 = 0x4;
    /// `:method GET`, `:scheme http`, `:path /` from HPACK's static table.
    const GET_ROOT: [u8; 3] = [0x82, 0x86, 0x84];

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let length = u32::try_from(payload.len()).unwrap().to_be_bytes();
        let mut frame = vec![length[1], length[2], length[3], kind, flags];
        frame.extend_from_slice(&stream.to_be_bytes());
        frame.extend_from_slice(payload);
        frame
    }

    /// A connection that has sent HTTP/2's preface and its SETTINGS.
    async fn h2_connection(addr: std::net::SocketAddr) -> TcpStream {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut hello = PREFACE.to_vec();
        hello.extend(frame(SETTINGS, 0, 0, &[]));
        stream.write_all(&hello).await.unwrap();
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

    #[tokio::test]
    async fn a_client_silent_before_its_first_bytes_is_cut_and_one_past_them_is_not() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut server = Preface::new(server, Duration::from_millis(200));
        let mut byte = [0u8; 1];
        let err = server.read_exact(&mut byte).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);

        let (mut client2, server2) = tokio::io::duplex(64);
        let mut server2 = Preface::new(server2, Duration::from_millis(200));
        client2.write_all(&[b'x'; PREFACE_LEN]).await.unwrap();
        let mut preface = [0u8; PREFACE_LEN];
        server2.read_exact(&mut preface).await.unwrap();
        // Past the preface, waiting is the protocol's business.
        let late = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            client2.write_all(b"y").await.unwrap();
            client2
        });
        server2.read_exact(&mut byte).await.unwrap();
        assert_eq!(&byte, b"y");
        drop(late.await.unwrap());
        client.shutdown().await.unwrap();
    }
}
