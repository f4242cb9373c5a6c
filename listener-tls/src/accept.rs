//! A connection a listener accepted, in clear or through its TLS handshake.
//!
//! On a TLS listener the first byte tells a TLS client (a handshake record, 0x16) from
//! one speaking plain HTTP, which is answered `400` with a sentence saying so, as nginx
//! does, instead of a handshake failure it cannot read. The handshake has a deadline, so
//! that a client sending nothing does not hold a connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// The first byte of a TLS record carrying a handshake (a ClientHello).
const TLS_HANDSHAKE: u8 = 0x16;

/// The answer to plain HTTP on a TLS port.
const PLAIN_ON_TLS_BODY: &str = "This port speaks TLS: the plain HTTP request was sent to an \
                                 HTTPS port. Use https:// to reach it.\n";

/// Longest the refusal of plain HTTP may take, writing it and reading what the client
/// sent (closing with unread bytes would reset the connection before it reads the answer).
const REFUSAL_LINGER: Duration = Duration::from_secs(2);
/// Most bytes of a plain request read (and dropped) before closing.
const REFUSAL_DRAIN_BYTES: u64 = 64 * 1024;

/// A connection, in clear or over TLS.
#[derive(Debug)]
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP, the handshake done.
    Tls(Box<TlsStream<TcpStream>>),
}

/// A TLS connection ready for HTTP, or `None` when it ended before (plain HTTP answered
/// with 400, a failed or overlong handshake).
pub type Accepted = Option<Stream>;

/// Takes `stream`, accepted on a TLS listener, through its handshake within `within`.
pub async fn handshake(acceptor: &TlsAcceptor, stream: TcpStream, within: Duration) -> Accepted {
    let peer = stream.peer_addr().ok();
    let first = tokio::time::timeout(within, first_byte(&stream)).await;
    match first {
        Ok(Some(TLS_HANDSHAKE)) => {}
        Ok(Some(_)) => {
            tracing::debug!(?peer, "plain HTTP on a TLS port: answered 400");
            refuse_plain(stream).await;
            return None;
        }
        Ok(None) | Err(_) => return None,
    }
    match tokio::time::timeout(within, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(Stream::Tls(Box::new(tls))),
        Ok(Err(err)) => {
            tracing::debug!(?peer, "TLS handshake failed: {err}");
            None
        }
        Err(_) => {
            tracing::debug!(?peer, "TLS handshake not done within {within:?}");
            None
        }
    }
}

/// The first byte the client sent, left unread; `None` when it closed first.
async fn first_byte(stream: &TcpStream) -> Option<u8> {
    let mut byte = [0u8; 1];
    match stream.peek(&mut byte).await {
        Ok(1) => Some(byte[0]),
        _ => None,
    }
}

/// Answers plain HTTP with 400 and a sentence, then closes.
async fn refuse_plain(mut stream: TcpStream) {
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{PLAIN_ON_TLS_BODY}",
        PLAIN_ON_TLS_BODY.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = tokio::io::sink();
        tokio::io::copy(&mut (&mut stream).take(REFUSAL_DRAIN_BYTES), &mut sink).await?;
        io::Result::Ok(())
    })
    .await;
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
