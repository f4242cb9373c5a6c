//! What the control plane's and edge-gateway's listeners share.
//!
//! - TLS 1.2 and 1.3 through rustls (ring): certificate chains and keys from PEM files,
//!   several chosen by SNI with the first as the default ([`certificates`]), reloaded when
//!   their files change or on SIGHUP without touching open connections ([`reload`]),
//!   session resumption by tickets and by a session cache, ALPN (`h2`, `http/1.1`).
//! - Accepting: a plain-HTTP request sent to a TLS port answered with a clear 400, the
//!   handshake bounded in time ([`accept`]).
//! - HTTP/1.1 and HTTP/2 on one listener, with HTTP/2's bounds ([`connection`]); raw
//!   HTTP/2 frames that probe them ([`h2_frames`]).

pub mod accept;
pub mod certificates;
pub mod connection;
pub mod h2_frames;
pub mod reload;

use std::sync::Arc;

use anyhow::Context as _;
use arc_swap::ArcSwap;
use rustls::server::{ClientHello, ResolvesServerCert, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;

pub use accept::{Accepted, Stream};
pub use certificates::{Pair, pairs};
pub use tokio_rustls::TlsAcceptor;

use crate::certificates::Certificates;

/// TLS sessions a listener remembers for resumption by session id (TLS 1.2 clients that
/// do not take tickets); tickets need no memory here.
const SESSION_CACHE: usize = 4096;

/// A listener's TLS: the configuration handshakes use, and the certificates it presents,
/// which [`reload`] replaces.
pub struct Tls {
    config: Arc<rustls::ServerConfig>,
    resolver: Arc<Resolver>,
    pairs: Vec<Pair>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("pairs", &self.pairs).finish()
    }
}

impl Tls {
    /// Reads the certificates of `pairs` (the first is the default); `None` without any.
    /// A file that is missing, unreadable or wrong stops the start, named in the error.
    pub fn load(pairs: Vec<Pair>) -> anyhow::Result<Option<Arc<Self>>> {
        if pairs.is_empty() {
            return Ok(None);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certificates = Certificates::load(&pairs, &provider)?;
        let resolver = Arc::new(Resolver {
            current: ArcSwap::from_pointee(certificates),
        });
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .context("TLS versions")?
            .with_no_client_auth()
            .with_cert_resolver(resolver.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
        config.ticketer = rustls::crypto::ring::Ticketer::new().context("TLS session tickets")?;
        Ok(Some(Arc::new(Self {
            config: Arc::new(config),
            resolver,
            pairs,
        })))
    }

    /// The acceptor of this configuration's handshakes.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.clone())
    }

    /// Reads the files again and, when they all load, presents them from the next
    /// handshake on; otherwise keeps the certificates in force.
    pub fn reload(&self) -> anyhow::Result<()> {
        let provider = self.config.crypto_provider();
        let certificates = Certificates::load(&self.pairs, provider)?;
        self.resolver.current.store(Arc::new(certificates));
        Ok(())
    }

    /// The certificate and key files.
    pub fn pairs(&self) -> &[Pair] {
        &self.pairs
    }
}

/// Chooses the certificate of each handshake from those in force.
#[derive(Debug)]
struct Resolver {
    current: ArcSwap<Certificates>,
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load().choose(hello.server_name()))
    }
}

/// What a listener serves, for its announcement and its log line.
pub fn describe(tls: bool) -> &'static str {
    if tls {
        "TLS 1.2/1.3 (h2 and HTTP/1.1 by ALPN)"
    } else {
        "plain HTTP/1.1 and h2c (prior knowledge)"
    }
}
