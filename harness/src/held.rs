//! Kept-alive connections held open as many clients hold them: each opened, called once
//! with a request written by hand, its answer read, then left idle. The load test and the
//! benchmark's idle case hold ten thousand this way.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// A `GET path` head for a kept-alive connection, with the bearer `token`.
pub fn get(path: &str, token: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer {token}\r\n\r\n")
        .into_bytes()
}

/// Reads one answer (head, then a body framed by `Content-Length`); its status.
pub async fn read_response<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<u16> {
    let mut buffer = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    Ok(status)
}

/// Sends `request` on `stream` and reads its answer: the status, and how long it took.
pub async fn call<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    request: &[u8],
) -> std::io::Result<(u16, Duration)> {
    let asked = Instant::now();
    stream.write_all(request).await?;
    let status = read_response(stream).await?;
    Ok((status, asked.elapsed()))
}

/// Raises this process's open-file limit as far as it may go (a client holding ten
/// thousand sockets needs more than the usual 1024); the limit in effect.
pub fn raise_file_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).unwrap_or(0)
}

/// Opens `count` connections to `addr` (`host:port`), at most `opening` at once (the
/// listen backlog holds the rest), and calls `request` once on each: the connections
/// answered 200, held open, and what went wrong with the others.
pub async fn hold(
    addr: &str,
    request: &[u8],
    count: usize,
    opening: usize,
) -> (Vec<TcpStream>, Vec<String>) {
    let (addr, request) = (Arc::<str>::from(addr), Arc::<[u8]>::from(request));
    hold_with(count, opening, move || {
        let (addr, request) = (addr.clone(), request.clone());
        async move {
            let mut stream = TcpStream::connect(&*addr).await?;
            let (status, _) = call(&mut stream, &request).await?;
            Ok((stream, status))
        }
    })
    .await
}

/// Opens `count` connections with `open` (which connects and calls once: the connection
/// and the status it was answered), at most `opening` at once: those answered 200, held
/// open, and what went wrong with the others.
pub async fn hold_with<C, F, Opened>(count: usize, opening: usize, open: F) -> (Vec<C>, Vec<String>)
where
    C: Send + 'static,
    F: Fn() -> Opened,
    Opened: Future<Output = std::io::Result<(C, u16)>> + Send + 'static,
{
    let opening = Arc::new(Semaphore::new(opening.max(1)));
    let mut clients = JoinSet::new();
    for _ in 0..count {
        let (opening, opened) = (opening.clone(), open());
        clients.spawn(async move {
            let _turn = opening.acquire().await.expect("semaphore");
            opened.await
        });
    }
    let mut held = Vec::with_capacity(count);
    let mut failures = Vec::new();
    while let Some(joined) = clients.join_next().await {
        match joined.expect("client task") {
            Ok((connection, 200)) => held.push(connection),
            Ok((_, status)) => failures.push(format!("answered {status}")),
            Err(err) => failures.push(err.to_string()),
        }
    }
    (held, failures)
}
