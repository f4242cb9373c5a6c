//! Outbound HTTP for `wasi:http/outgoing-handler`, over a shared connection pool.
//!
//! wasmtime-wasi-http's default sender opens a new TCP connection for every
//! request; [`OutboundClient`] implements [`WasiHttpHooks::send_request`] with
//! one [`BackendPool`] shared by all instances instead, so backend connections
//! are kept alive and reused.
//!
//! Timeouts come from the request's `request-options`, each falling back to
//! the configured default:
//! - connect: applied to establishing a new connection (not to reusing one);
//! - first byte: the response head must arrive within connect + first-byte;
//! - between bytes: the longest pause between two frames of the response body.
//!
//! `http` and `https` (rustls, with [`crate::backend_tls`]'s trust, and an endpoint's own
//! certificates through a client of its own, [`crate::endpoint_trust`]): a certificate
//! that does not verify fails the request (the guest gets `TLS-certificate-error`), and
//! TLS connections are pooled and reused like plain ones. Other schemes get
//! `HTTP-protocol-error`.
//!
//! Every new connection goes only where the egress policy allows ([`EgressGuard`]): the
//! destination's name is resolved here and each address checked, so a name cannot
//! smuggle in an address the policy refuses; this host's own listener is never a
//! destination, and the control plane's listener only under the name the components'
//! settings give it.
//!
//! A request that fails does so with the host's [`Failure`]; the component gets the
//! `wasi:http` error code its kind stands for ([`error_code`]).

use std::error::Error as StdError;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http::uri::Scheme;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

use apim_http::egress::EgressPolicy;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::backend_pool::{BackendPool, PooledBody, default_port};
use crate::endpoint_trust::TrustBook;
use crate::failure::{Failure, Kind};
use crate::kv::KvStore;

/// Idle pooled connections are closed after this long.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Most idle connections kept per backend host.
const POOL_MAX_IDLE_PER_HOST: usize = 512;
/// TCP keep-alive probe interval on backend connections.
const TCP_KEEPALIVE: Duration = Duration::from_secs(60);

/// The three timeouts of one outbound request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing a new connection.
    pub connect: Duration,
    /// Waiting for the response head (after connecting).
    pub first_byte: Duration,
    /// Pause between two frames of the response body.
    pub between_bytes: Duration,
}

impl Timeouts {
    /// All three set to `default`.
    pub fn uniform(default: Duration) -> Self {
        Self {
            connect: default,
            first_byte: default,
            between_bytes: default,
        }
    }

    /// The guest's options where set, these defaults elsewhere.
    pub fn resolve(self, options: Option<RequestOptions>) -> Self {
        let options = options.unwrap_or_default();
        Self {
            connect: options.connect_timeout.unwrap_or(self.connect),
            first_byte: options.first_byte_timeout.unwrap_or(self.first_byte),
            between_bytes: options.between_bytes_timeout.unwrap_or(self.between_bytes),
        }
    }
}

/// Where outbound connections may go.
#[derive(Debug, Default)]
pub struct EgressGuard {
    policy: EgressPolicy,
    /// The control plane's host (lower-case) and port, as the components' settings name it.
    control_plane: Option<(String, u16)>,
    /// This host's own listener(s), known once bound.
    own: RwLock<Vec<SocketAddr>>,
}

impl EgressGuard {
    /// A guard for `policy`; `control_plane_url` is the components' `control_plane_url`.
    pub fn new(policy: EgressPolicy, control_plane_url: Option<&str>) -> Self {
        Self {
            policy,
            control_plane: control_plane_url.and_then(apim_http::egress::host_and_port),
            own: RwLock::default(),
        }
    }

    /// Never connects to these addresses (this host's listeners, once bound).
    pub fn refuse_listeners(&self, listeners: &[SocketAddr]) {
        let mut own = self.own.write().unwrap_or_else(|p| p.into_inner());
        own.extend_from_slice(listeners);
    }

    /// The address to connect to for `uri`: the first its host resolves to that the policy
    /// allows, as a URI; `PermissionDenied` when none is.
    async fn destination(&self, uri: &Uri) -> io::Result<Uri> {
        let host = uri.host().unwrap_or_default().trim_matches(['[', ']']);
        let port = uri.port_u16().unwrap_or(default_port(uri));
        let named_control_plane = self
            .control_plane
            .as_ref()
            .is_some_and(|(h, p)| h.eq_ignore_ascii_case(host) && *p == port);
        let mut refusal = format!("{host} resolves to no address");
        for addr in tokio::net::lookup_host((host, port)).await? {
            match self.check(host, addr, named_control_plane).await {
                Ok(()) => {
                    return format!("http://{addr}")
                        .parse()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
                }
                Err(why) => refusal = why,
            }
        }
        tracing::warn!(%host, port, "outbound connection refused by the egress policy: {refusal}");
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("egress policy: {refusal}"),
        ))
    }

    async fn check(
        &self,
        host: &str,
        addr: SocketAddr,
        named_control_plane: bool,
    ) -> Result<(), String> {
        if self.is_own_listener(addr) {
            return Err(format!("{addr} is this gateway's own listener"));
        }
        if named_control_plane {
            return Ok(());
        }
        if self.is_control_plane(addr).await {
            return Err(format!("{addr} is the control plane's listener"));
        }
        self.policy
            .check_address(host, addr.ip(), addr.port())
            .map_err(|denied| denied.0)
    }

    fn is_own_listener(&self, addr: SocketAddr) -> bool {
        let own = self.own.read().unwrap_or_else(|p| p.into_inner());
        own.iter()
            .any(|listener| apim_http::egress::reaches_listener(addr.ip(), addr.port(), *listener))
    }

    async fn is_control_plane(&self, addr: SocketAddr) -> bool {
        let Some((host, port)) = &self.control_plane else {
            return false;
        };
        if *port != addr.port() {
            return false;
        }
        match tokio::net::lookup_host((host.as_str(), *port)).await {
            Ok(mut addrs) => addrs.any(|cp| cp.ip() == addr.ip()),
            // Unknown where it is: refuse its port rather than guess.
            Err(_) => true,
        }
    }
}

/// [`HttpConnector`] that connects only where the [`EgressGuard`] allows (the pool bounds
/// its time). Under TLS it is handed the `https` URI, whose name the TLS layer sends and
/// verifies; it connects to a checked address.
#[derive(Clone)]
struct GuardedConnector {
    inner: HttpConnector,
    guard: Arc<EgressGuard>,
}

type ConnectFuture = Pin<
    Box<dyn Future<Output = Result<TokioIo<TcpStream>, Box<dyn StdError + Send + Sync>>> + Send>,
>;

impl tower_service::Service<Uri> for GuardedConnector {
    type Response = TokioIo<TcpStream>;
    type Error = Box<dyn StdError + Send + Sync>;
    type Future = ConnectFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let (guard, mut inner) = (self.guard.clone(), self.inner.clone());
        Box::pin(async move {
            let destination = guard.destination(&uri).await?;
            let stream = inner.call(destination).await?;
            Ok::<_, Box<dyn StdError + Send + Sync>>(stream)
        })
    }
}

/// A pooled client with one trust.
type PooledClient = BackendPool<HttpsConnector<GuardedConnector>, WasiBody>;

/// Pooled HTTP/1.1 client used as the `wasi:http` hooks of every store.
#[derive(Clone)]
pub struct OutboundClient {
    /// For every backend but those with certificates of their own.
    client: PooledClient,
    /// Clients of the endpoints with certificates, from the manifest in `kv`.
    endpoints: Arc<TrustBook<PooledClient>>,
    defaults: Timeouts,
}

impl OutboundClient {
    /// A client whose timeouts default to `default_timeout`, connecting where `guard`
    /// allows, trusting `roots` for `https` backends, and beside them the certificates
    /// the manifest in `kv` binds to an endpoint.
    pub fn new(
        default_timeout: Duration,
        guard: Arc<EgressGuard>,
        roots: rustls::RootCertStore,
        kv: KvStore,
    ) -> anyhow::Result<Self> {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.set_keepalive(Some(TCP_KEEPALIVE));
        let guarded = GuardedConnector { inner: http, guard };
        let client = pooled(
            guarded.clone(),
            crate::backend_tls::client_config(roots.clone())?,
        );
        let endpoints = TrustBook::new(kv, roots, move |tls| pooled(guarded.clone(), tls));
        Ok(Self {
            client,
            endpoints: Arc::new(endpoints),
            defaults: Timeouts::uniform(default_timeout),
        })
    }

    /// The endpoint's own client for `uri` when the manifest binds certificates to it;
    /// `None`: the shared one (not cloned: a clone is several reference counts to count
    /// up and down on every request).
    async fn endpoint_client(&self, uri: &Uri) -> Option<PooledClient> {
        if uri.scheme() != Some(&Scheme::HTTPS) {
            return None;
        }
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(443);
        self.endpoints.client(&host, port).await
    }

    /// Sends `request` (absolute `http://` or `https://` URI) and returns the response
    /// with a body that enforces the between-bytes timeout.
    pub async fn send(
        &self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> Result<http::Response<WasiBody>, Failure> {
        if !request.uri().scheme().is_some_and(supported) {
            let unsupported = "a backend is reached by http or https only";
            return Err(Failure::new(Kind::Protocol, unsupported));
        }
        let timeouts = self.defaults.resolve(options);
        let own = self.endpoint_client(request.uri()).await;
        let client = own.as_ref().unwrap_or(&self.client);
        let pending = client.send(request, timeouts.connect);
        let head_deadline = timeouts.connect.saturating_add(timeouts.first_byte);
        let response = match tokio::time::timeout(head_deadline, pending).await {
            Err(_) => {
                let late = "waiting for the backend's response head";
                return Err(Failure::new(Kind::ReadTimedOut, late));
            }
            Ok(Err(failure)) => return Err(failure),
            Ok(Ok(response)) => response,
        };
        Ok(response.map(|body| TimedBody::new(body, timeouts.between_bytes).boxed_unsync()))
    }
}

/// A pooled client connecting through `guarded`, with `tls` for `https` backends.
fn pooled(guarded: GuardedConnector, tls: rustls::ClientConfig) -> PooledClient {
    let connector = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(guarded);
    BackendPool::new(connector, POOL_IDLE_TIMEOUT, POOL_MAX_IDLE_PER_HOST)
}

/// The schemes backends are reached by.
fn supported(scheme: &Scheme) -> bool {
    *scheme == Scheme::HTTP || *scheme == Scheme::HTTPS
}

/// The `wasi:http` error code closest to what the failure was, which the component gets.
pub fn error_code(failure: &Failure) -> Error {
    match failure.kind() {
        Kind::ConnectTimedOut => Error::ConnectionTimeout,
        Kind::ReadTimedOut => Error::ConnectionReadTimeout,
        Kind::EgressRefused => Error::DestinationIpProhibited,
        Kind::ConnectionRefused => Error::ConnectionRefused,
        Kind::ConnectionClosed => Error::ConnectionTerminated,
        Kind::NameNotResolved(answer) => Error::DnsError {
            rcode: Some(answer.clone()),
            info_code: None,
        },
        Kind::InvalidCertificate => Error::TlsCertificateError,
        Kind::TlsAlert(alert) => Error::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        Kind::Tls => Error::TlsProtocolError,
        Kind::Protocol => Error::HttpProtocolError,
        Kind::Unreachable => Error::DestinationUnavailable,
        _ => Error::InternalError(Some(failure.to_string())),
    }
}

/// The failure of a backend's body that the host reads itself, from the error the
/// component would get reading it (the between-bytes timeout, or hyper's).
pub fn body_failure(err: Error) -> Failure {
    let timed_out = matches!(
        err,
        Error::ConnectionTimeout
            | Error::ConnectionReadTimeout
            | Error::ConnectionWriteTimeout
            | Error::HttpResponseTimeout
    );
    let kind = if timed_out {
        Kind::ReadTimedOut
    } else {
        Kind::Exchange
    };
    Failure::because(kind, "reading the backend's body", err)
}

impl WasiHttpHooks for OutboundClient {
    fn is_supported_scheme(&mut self, scheme: &Scheme) -> bool {
        supported(scheme)
    }

    fn default_scheme(&mut self) -> Option<Scheme> {
        Some(Scheme::HTTP)
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), Error>> + Send>,
                    ),
                    Error,
                >,
            > + Send,
    > {
        // The pool drives connection I/O in its own tasks, so there is no
        // per-request I/O future to report on and nothing to do with `fut`.
        drop(fut);
        let client = self.clone();
        Box::new(async move {
            let sent = client.send(request, options).await;
            let response = sent.map_err(|failure| error_code(&failure))?;
            let io_done: Box<dyn Future<Output = Result<(), Error>> + Send> =
                Box::new(std::future::ready(Ok(())));
            Ok((response, io_done))
        })
    }
}

/// Response body that fails when no frame arrives within `limit`. The timer is set up
/// the first time the body has to wait, so a body that is there at once (most small
/// answers) costs none.
struct TimedBody {
    inner: PooledBody<WasiBody>,
    limit: Duration,
    timer: Option<Pin<Box<Sleep>>>,
}

impl TimedBody {
    fn new(inner: PooledBody<WasiBody>, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            timer: None,
        }
    }
}

impl Body for TimedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(timer) = &mut this.timer {
                    timer.as_mut().reset(Instant::now() + this.limit);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(Error::Hyper(err)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let limit = this.limit;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                ready!(timer.as_mut().poll(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_options_override_defaults() {
        let defaults = Timeouts::uniform(Duration::from_secs(10));
        assert_eq!(defaults.resolve(None), defaults);
        let options = RequestOptions {
            connect_timeout: Some(Duration::from_millis(100)),
            first_byte_timeout: None,
            between_bytes_timeout: Some(Duration::from_secs(1)),
        };
        let resolved = defaults.resolve(Some(options));
        assert_eq!(resolved.connect, Duration::from_millis(100));
        assert_eq!(resolved.first_byte, Duration::from_secs(10));
        assert_eq!(resolved.between_bytes, Duration::from_secs(1));
    }

    #[tokio::test]
    async fn refused_connection_is_classified() {
        // Bind then drop a listener to get a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let guard = EgressGuard::new(EgressPolicy::parse("127.0.0.1").unwrap(), None);
        let roots = crate::backend_tls::roots(None).unwrap();
        let client = OutboundClient::new(
            Duration::from_secs(2),
            Arc::new(guard),
            roots,
            KvStore::memory(),
        )
        .unwrap();
        let body = http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        let request = http::Request::get(format!("http://127.0.0.1:{port}/"))
            .body(body)
            .unwrap();
        let failure = client.send(request, None).await.unwrap_err();
        let err = error_code(&failure);
        assert!(matches!(err, Error::ConnectionRefused), "{err:?}");
    }
}
