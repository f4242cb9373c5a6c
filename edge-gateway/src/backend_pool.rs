//! The connections to backends, kept open and reused (HTTP/1.1, plain or over TLS).
//!
//! A request takes the connection most recently given back for its backend (the warmest;
//! the least used ones age out), or opens one through the connector within the connect
//! timeout, TLS included. The connection is given back once the response body has been
//! read to its end (at once for an empty one), and never after a failure or a switch of
//! protocols (`101`: the connection then belongs to the upgrade). A request that a reused
//! connection closed before taking goes on a fresh one. Idle connections are closed after
//! the idle timeout, by a task that runs only while the pool lives.
//!
//! Each backend is found by its scheme and authority without hashing them more than once
//! or spawning anything per request: the pool sits on the path of every API call.
//!
//! A request that gets no response fails with the host's [`Failure`], its kind told here
//! from the errors the connector, TLS and hyper give (what the pool was doing, and the
//! first error along the chain that says what happened).

use std::collections::HashMap;
use std::error::Error as StdError;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use http::uri::{Authority, Scheme};
use http::{HeaderValue, Request, Response, StatusCode, Uri};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::rt::{Read, Write};
use tokio::time::Instant;
use tower_service::Service;

use crate::failure::{Failure, Kind};
use crate::responses::BoxError;

/// What a failure to open a connection says the pool was doing.
const CONNECTING: &str = "connecting to the backend";
/// What a failure on an open connection says the pool was doing.
const EXCHANGING: &str = "exchanging with the backend";

/// Connections to backends, shared by clones.
pub struct BackendPool<C, B> {
    connector: C,
    book: Arc<IdleBook<B>>,
}

impl<C: Clone, B> Clone for BackendPool<C, B> {
    fn clone(&self) -> Self {
        Self {
            connector: self.connector.clone(),
            book: self.book.clone(),
        }
    }
}

impl<C, B> BackendPool<C, B>
where
    C: Service<Uri> + Clone + Send + 'static,
    C::Response: Read + Write + Unpin + Send + 'static,
    C::Error: Into<BoxError>,
    C::Future: Send,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    /// A pool opening connections through `connector`, keeping at most
    /// `max_idle_per_backend` idle ones per backend, each for at most `idle_timeout`.
    pub fn new(connector: C, idle_timeout: Duration, max_idle_per_backend: usize) -> Self {
        Self {
            connector,
            book: Arc::new(IdleBook {
                by_backend: Mutex::default(),
                idle_timeout,
                max_idle_per_backend,
                reaping: AtomicBool::new(false),
            }),
        }
    }

    /// Sends `request` (absolute URI) to its backend, with a `Host` header when it has
    /// none; `connect_timeout` bounds opening a connection when none is idle.
    pub async fn send(
        &self,
        mut request: Request<B>,
        connect_timeout: Duration,
    ) -> Result<Response<PooledBody<B>>, Failure> {
        let uri = std::mem::take(request.uri_mut());
        let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
            let unnamed = "the backend URI names no scheme and host";
            return Err(Failure::new(Kind::InvalidUrl, unnamed));
        };
        let https = *scheme == Scheme::HTTPS;
        if !request.headers().contains_key(http::header::HOST)
            && let Some(host) = host_header(&uri)
        {
            request.headers_mut().insert(http::header::HOST, host);
        }
        *request.uri_mut() = origin_form(&uri);
        while let Some(mut reused) = self.book.checkout(https, authority.as_str()) {
            if reused.sender.ready().await.is_err() {
                continue;
            }
            match reused.sender.try_send_request(request).await {
                Ok(response) => return Ok(self.book.lend(response, reused)),
                Err(mut failed) => match failed.take_message() {
                    // Closed before it took the request: try the next connection.
                    Some(unsent) => request = unsent,
                    None => return Err(exchange_failure(failed.into_error())),
                },
            }
        }
        // Boxed: held inline, connecting's large future (name resolution, the TLS
        // handshake) made every request's future larger to move, while nearly every
        // request reuses a connection and never takes this path.
        let mut fresh = Box::pin(self.connect(&uri, https, authority, connect_timeout)).await?;
        let response = fresh.sender.send_request(request).await;
        Ok(self.book.lend(response.map_err(exchange_failure)?, fresh))
    }

    /// A new connection to the backend of `uri`, its I/O driven by a task of its own.
    async fn connect(
        &self,
        uri: &Uri,
        https: bool,
        authority: &Authority,
        timeout: Duration,
    ) -> Result<Connection<B>, Failure> {
        let (mut connector, uri) = (self.connector.clone(), uri.clone());
        let opening = async move {
            poll_fn(|cx| connector.poll_ready(cx))
                .await
                .map_err(Into::into)?;
            let io = connector.call(uri).await.map_err(Into::into)?;
            let (sender, connection) = http1::handshake(io).await?;
            tokio::spawn(async move {
                if let Err(err) = connection.with_upgrades().await {
                    tracing::debug!("backend connection ended: {err}");
                }
            });
            Ok::<_, BoxError>(sender)
        };
        let sender = match tokio::time::timeout(timeout, opening).await {
            Ok(opened) => opened.map_err(connect_failure)?,
            Err(_) => {
                let late = io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
                return Err(Failure::because(Kind::ConnectTimedOut, CONNECTING, late));
            }
        };
        Ok(Connection {
            sender,
            backend: Backend {
                authority: Arc::from(authority.as_str()),
                https,
            },
        })
    }
}

/// A connection that could not be opened, because of `cause`.
fn connect_failure(cause: BoxError) -> Failure {
    Failure::because(kind_of(&*cause, true), CONNECTING, cause)
}

/// An open connection that failed while the request was sent or the response head read.
fn exchange_failure(cause: hyper::Error) -> Failure {
    Failure::because(kind_of(&cause, false), EXCHANGING, cause)
}

/// What the first error along `cause`'s chain that tells one says happened: TLS, the
/// socket's kind of failure, hyper's, or the resolver's; else, while `connecting`, the
/// backend is unreachable, and afterwards the exchange failed.
fn kind_of(cause: &(dyn StdError + 'static), connecting: bool) -> Kind {
    let mut next = Some(cause);
    while let Some(cause) = next {
        if let Some(tls) = tls_error(cause) {
            return match tls {
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => {
                    Kind::InvalidCertificate
                }
                rustls::Error::AlertReceived(alert) => Kind::TlsAlert(*alert),
                _ => Kind::Tls,
            };
        }
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            return match io.kind() {
                io::ErrorKind::TimedOut => Kind::ConnectTimedOut,
                io::ErrorKind::PermissionDenied => Kind::EgressRefused,
                io::ErrorKind::ConnectionRefused => Kind::ConnectionRefused,
                io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
                    Kind::ConnectionClosed
                }
                _ if connecting => Kind::Unreachable,
                _ => Kind::Exchange,
            };
        }
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() || hyper.is_closed() || hyper.is_canceled() {
                return Kind::ConnectionClosed;
            }
            if hyper.is_timeout() {
                return Kind::ReadTimedOut;
            }
            if hyper.is_parse() || hyper.is_parse_status() {
                return Kind::Protocol;
            }
        }
        if cause.to_string().starts_with("dns error") {
            return Kind::NameNotResolved(cause.to_string());
        }
        next = cause.source();
    }
    if connecting {
        Kind::Unreachable
    } else {
        Kind::Exchange
    }
}

/// The TLS failure behind `cause`, if it is one (rustls reports through `io::Error`).
fn tls_error<'a>(cause: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    cause.downcast_ref::<rustls::Error>().or_else(|| {
        cause
            .downcast_ref::<io::Error>()?
            .get_ref()?
            .downcast_ref::<rustls::Error>()
    })
}

/// The `Host` header for `uri`: its host, with the port only when it is not the scheme's
/// default, never its user information.
fn host_header(uri: &Uri) -> Option<HeaderValue> {
    let authority = uri.authority()?;
    let text = match authority.port_u16() {
        Some(port) if port != default_port(uri) => authority.as_str(),
        _ => authority.host(),
    };
    let without_userinfo = text.rsplit_once('@').map_or(text, |(_, host)| host);
    HeaderValue::from_str(without_userinfo).ok()
}

/// The port a backend URI means when it names none: 443 for `https`, else 80.
pub fn default_port(uri: &Uri) -> u16 {
    if uri.scheme() == Some(&Scheme::HTTPS) {
        443
    } else {
        80
    }
}

/// The path and query of `uri`, as an HTTP/1.1 request line names them.
fn origin_form(uri: &Uri) -> Uri {
    match uri.path_and_query() {
        Some(path_and_query) => Uri::from(path_and_query.clone()),
        None => Uri::from_static("/"),
    }
}

/// Which backend a connection goes to.
struct Backend {
    authority: Arc<str>,
    https: bool,
}

/// An open connection, ready for a request or lent to one.
struct Connection<B> {
    sender: SendRequest<B>,
    backend: Backend,
}

/// Idle connections by backend, for `http` and `https` apart (no scheme in the key).
struct ByBackend<B> {
    http: Idle<B>,
    https: Idle<B>,
}

type Idle<B> = HashMap<Arc<str>, Vec<Idled<B>>, foldhash::fast::RandomState>;

struct Idled<B> {
    connection: Connection<B>,
    since: Instant,
}

impl<B> Default for ByBackend<B> {
    fn default() -> Self {
        Self {
            http: Idle::default(),
            https: Idle::default(),
        }
    }
}

impl<B> ByBackend<B> {
    fn of(&mut self, https: bool) -> &mut Idle<B> {
        if https {
            &mut self.https
        } else {
            &mut self.http
        }
    }
}

struct IdleBook<B> {
    by_backend: Mutex<ByBackend<B>>,
    idle_timeout: Duration,
    max_idle_per_backend: usize,
    /// Whether the task closing connections idle too long has started.
    reaping: AtomicBool,
}

impl<B: Send + 'static> IdleBook<B> {
    fn idle(&self) -> std::sync::MutexGuard<'_, ByBackend<B>> {
        self.by_backend
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The most recently idled open connection to the backend, if any.
    fn checkout(&self, https: bool, authority: &str) -> Option<Connection<B>> {
        let mut idle = self.idle();
        let waiting = idle.of(https).get_mut(authority)?;
        std::iter::from_fn(|| waiting.pop())
            .map(|idled| idled.connection)
            .find(|connection| !connection.sender.is_closed())
    }

    /// `response` with a body that gives `connection` back once read to its end.
    fn lend(
        self: &Arc<Self>,
        response: Response<Incoming>,
        connection: Connection<B>,
    ) -> Response<PooledBody<B>> {
        let mut lent = (response.status() != StatusCode::SWITCHING_PROTOCOLS).then(|| Lent {
            connection,
            book: self.clone(),
        });
        if response.body().is_end_stream()
            && let Some(lent) = lent.take()
        {
            lent.give_back();
        }
        response.map(|body| PooledBody { body, lent })
    }

    fn give_back(self: &Arc<Self>, connection: Connection<B>) {
        if connection.sender.is_closed() {
            return;
        }
        let mut idle = self.idle();
        let by_backend = idle.of(connection.backend.https);
        let waiting = match by_backend.get_mut(&connection.backend.authority) {
            Some(waiting) => waiting,
            None => by_backend
                .entry(connection.backend.authority.clone())
                .or_default(),
        };
        if waiting.len() < self.max_idle_per_backend {
            let since = Instant::now();
            waiting.push(Idled { connection, since });
        }
        drop(idle);
        self.start_reaping();
    }

    /// Starts the task that closes connections idle too long, once, inside a runtime.
    fn start_reaping(self: &Arc<Self>) {
        if self.reaping.load(Ordering::Relaxed) || self.reaping.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.reaping.store(false, Ordering::Release);
            return;
        };
        let book = Arc::downgrade(self);
        let period = (self.idle_timeout / 2).max(Duration::from_millis(10));
        runtime.spawn(reap_every(period, book));
    }

    /// Closes the connections idle longer than the idle timeout, or closed by the backend.
    fn reap(&self) {
        let mut idle = self.idle();
        let ByBackend { http, https } = &mut *idle;
        for by_backend in [http, https] {
            by_backend.retain(|_, waiting| {
                waiting.retain(|idled| {
                    idled.since.elapsed() < self.idle_timeout
                        && !idled.connection.sender.is_closed()
                });
                !waiting.is_empty()
            });
        }
    }
}

async fn reap_every<B: Send + 'static>(period: Duration, book: Weak<IdleBook<B>>) {
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match book.upgrade() {
            Some(book) => book.reap(),
            None => return,
        }
    }
}

/// A connection lent to one response, and the book it goes back to.
struct Lent<B> {
    connection: Connection<B>,
    book: Arc<IdleBook<B>>,
}

impl<B: Send + 'static> Lent<B> {
    fn give_back(self) {
        self.book.give_back(self.connection);
    }
}

/// A backend's response body; its connection goes back to the pool at its end.
pub struct PooledBody<B> {
    body: Incoming,
    lent: Option<Lent<B>>,
}

impl<B: Send + 'static> Body for PooledBody<B> {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(_))) => this.body.is_end_stream(),
            Poll::Ready(Some(Err(_))) => {
                this.lent = None;
                false
            }
            Poll::Pending => false,
        };
        if ended && let Some(lent) = this.lent.take() {
            lent.give_back();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backend_host_names_the_port_only_when_it_is_not_the_default() {
        let host = |uri: &str| host_header(&uri.parse().unwrap());
        assert_eq!(host("http://backend:8080/pets").unwrap(), "backend:8080");
        assert_eq!(host("http://backend:80/pets").unwrap(), "backend");
        assert_eq!(host("http://backend/pets").unwrap(), "backend");
        assert_eq!(host("https://backend:443/").unwrap(), "backend");
        assert_eq!(host("https://backend:80/").unwrap(), "backend:80");
        assert_eq!(host("http://[::1]:9000/").unwrap(), "[::1]:9000");
        assert_eq!(host("/relative"), None);
    }

    #[test]
    fn user_information_never_reaches_the_host_header() {
        let host = |uri: &str| host_header(&uri.parse().unwrap()).unwrap();
        assert_eq!(host("http://user:secret@backend:8080/"), "backend:8080");
        assert_eq!(host("https://user:secret@backend/"), "backend");
    }

    #[test]
    fn requests_name_only_their_path_and_query() {
        let origin = |uri: &str| origin_form(&uri.parse().unwrap()).to_string();
        assert_eq!(origin("http://backend:8080/pets?x=1"), "/pets?x=1");
        assert_eq!(origin("https://backend"), "/");
    }

    use std::convert::Infallible;
    use std::sync::atomic::AtomicUsize;

    use bytes::Bytes;
    use http_body_util::{BodyExt as _, Empty, Full};
    use hyper_util::client::legacy::connect::HttpConnector;
    use hyper_util::rt::TokioIo;

    type TestPool = BackendPool<HttpConnector, Empty<Bytes>>;

    /// A backend on a socket of its own answering with the request's `Host` header as its
    /// body (and closing the connection after each answer when `close`), and the count of
    /// connections it accepted.
    async fn backend(close: bool) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                counted.fetch_add(1, Ordering::SeqCst);
                let answer = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let host = request.headers()[http::header::HOST].as_bytes().to_vec();
                    let mut response = Response::new(Full::new(Bytes::from(host)));
                    if close {
                        let close = HeaderValue::from_static("close");
                        response
                            .headers_mut()
                            .insert(http::header::CONNECTION, close);
                    }
                    async move { Ok::<_, Infallible>(response) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), answer);
                tokio::spawn(connection);
            }
        });
        (url, accepted)
    }

    fn pool() -> TestPool {
        BackendPool::new(HttpConnector::new(), Duration::from_secs(90), 8)
    }

    fn get(url: &str) -> Request<Empty<Bytes>> {
        Request::get(format!("{url}/pets"))
            .body(Empty::new())
            .unwrap()
    }

    async fn body(response: Response<PooledBody<Empty<Bytes>>>) -> Bytes {
        response.into_body().collect().await.unwrap().to_bytes()
    }

    const CONNECT: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn requests_one_after_another_share_one_connection() {
        let (url, accepted) = backend(false).await;
        let pool = pool();
        for _ in 0..3 {
            let answer = body(pool.send(get(&url), CONNECT).await.unwrap()).await;
            assert_eq!(answer, url.trim_start_matches("http://"));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_is_lent_until_its_body_is_read() {
        let (url, accepted) = backend(false).await;
        let pool = pool();
        let unread = pool.send(get(&url), CONNECT).await.unwrap();
        body(pool.send(get(&url), CONNECT).await.unwrap()).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        body(unread).await;
        body(pool.send(get(&url), CONNECT).await.unwrap()).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_connection_the_backend_closes_is_not_used_again() {
        let (url, accepted) = backend(true).await;
        let pool = pool();
        for _ in 0..2 {
            body(pool.send(get(&url), CONNECT).await.unwrap()).await;
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    /// A connector whose connections never open.
    #[derive(Clone)]
    struct Stalled;

    impl Service<Uri> for Stalled {
        type Response = TokioIo<tokio::net::TcpStream>;
        type Error = io::Error;
        type Future = std::future::Pending<io::Result<Self::Response>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Uri) -> Self::Future {
            std::future::pending()
        }
    }

    #[tokio::test]
    async fn opening_a_connection_is_bounded_by_the_connect_timeout() {
        let pool: BackendPool<Stalled, Empty<Bytes>> =
            BackendPool::new(Stalled, Duration::from_secs(90), 8);
        let started = std::time::Instant::now();
        let failed = pool
            .send(get("http://backend"), Duration::from_millis(50))
            .await;
        let failure = match failed {
            Err(failure) => failure,
            Ok(_) => panic!("answered"),
        };
        assert_eq!(failure.kind(), &Kind::ConnectTimedOut, "{failure}");
        assert_eq!(
            failure.to_string(),
            "connecting to the backend: connect timed out"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_uri_without_a_host_is_refused() {
        let failed = pool().send(get(""), CONNECT).await;
        assert!(matches!(failed, Err(failure) if failure.kind() == &Kind::InvalidUrl));
    }
}
