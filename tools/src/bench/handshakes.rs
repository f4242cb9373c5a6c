//! The load generator of new TLS connections: loops that each connect, complete a full
//! TLS 1.3 handshake (no resumption), send one request with `Connection: close`, read the
//! answer until the server closes, and start over, for a fixed time, on CPU 0.
//!
//! Written here rather than taken from `openssl s_time` (one connection at a time per
//! process, and it checks the server's signature) or h2load (no loop of new
//! connections): the client does as little as a TLS client can, so that the server on
//! CPU 1, not the client on CPU 0, is what runs out. It checks no certificate and no
//! signature (trust is not under test; the server signs all the same) and offers only
//! ECDSA P-256 with SHA-256 for the server's signature, so a server without that key
//! fails the handshake rather than measuring another.

use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_rustls::TlsConnector;

use super::load::Load;

/// Longest one connection may take, connect to close (wrk's `--timeout` as well).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// A run of new connections against one TLS listener.
pub struct NewConnections<'a> {
    /// `127.0.0.1:<port>` of the TLS listener.
    pub addr: &'a str,
    /// Loops running at once (connections in flight).
    pub loops: usize,
    /// How long the loops start new connections.
    pub duration: Duration,
    /// The path requested on each connection.
    pub path: &'a str,
    /// The status each answer must have to count.
    pub status: u16,
}

impl NewConnections<'_> {
    /// Runs the loops; the rate is completed connections (handshake and answer) per
    /// second, the errors those that failed or were answered otherwise.
    pub async fn run(&self) -> Load {
        let connector = TlsConnector::from(client_config());
        let request: Arc<[u8]> = request(self.path).into();
        let started = Instant::now();
        let deadline = started + self.duration;
        let mut loops = tokio::task::JoinSet::new();
        for _ in 0..self.loops {
            let (connector, request) = (connector.clone(), request.clone());
            let (addr, status) = (self.addr.to_string(), self.status);
            loops.spawn(async move {
                let mut counts = (0u64, 0u64);
                while Instant::now() < deadline {
                    let answered = connect_and_call(&addr, &connector, &request).await;
                    match answered {
                        Ok(got) if got == status => counts.0 += 1,
                        _ => counts.1 += 1,
                    }
                }
                counts
            });
        }
        let (mut completed, mut errors) = (0, 0);
        while let Some(counts) = loops.join_next().await {
            let (done, failed) = counts.expect("a connection loop");
            completed += done;
            errors += failed;
        }
        if errors > 0 {
            eprintln!(
                "bench: {errors} new TLS connections to {} failed",
                self.addr
            );
        }
        Load {
            rate: completed as f64 / started.elapsed().as_secs_f64(),
            p50_us: f64::NAN,
            p99_us: f64::NAN,
            errors,
            cpu_us: None,
        }
    }
}

/// One new connection: its answer's status, or why there was none.
pub async fn connect_and_call(
    addr: &str,
    connector: &TlsConnector,
    request: &[u8],
) -> io::Result<u16> {
    let call = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        // An IP address: no SNI, so every server presents its one certificate.
        let name = ServerName::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST).into());
        let mut tls = connector.connect(name, tcp).await?;
        tls.write_all(request).await?;
        let mut answer = Vec::with_capacity(2048);
        // Until the server closes (it does so first, keeping the TIME_WAIT on its side);
        // one closing without close_notify ends in UnexpectedEof, its answer whole.
        match tls.read_to_end(&mut answer).await {
            Err(e) if e.kind() != io::ErrorKind::UnexpectedEof => return Err(e),
            _ => {}
        }
        status_of(&answer)
    };
    tokio::time::timeout(CONNECTION_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
}

/// A GET of `path` asking the server to close the connection after answering.
pub fn request(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").into_bytes()
}

/// The status of an HTTP/1.1 answer (`HTTP/1.1 404 Not Found…`).
fn status_of(answer: &[u8]) -> io::Result<u16> {
    answer
        .strip_prefix(b"HTTP/1.1 ")
        .and_then(|rest| std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok())
        .ok_or_else(|| io::Error::other("not an HTTP/1.1 answer"))
}

/// TLS 1.3 only, no resumption (every connection a full handshake), HTTP/1.1 by ALPN,
/// the server's signature asked for in ECDSA P-256 and not checked.
pub fn client_config() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Unchecked))
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Takes any certificate and signature: the load generator's CPU goes to the handshake's
/// own work, which the server does as well.
#[derive(Debug)]
struct Unchecked;

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    /// What the client offers in `signature_algorithms`: the server must sign with it.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ECDSA_NISTP256_SHA256]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_status_line() {
        assert_eq!(status_of(b"HTTP/1.1 404 Not Found\r\n\r\n").unwrap(), 404);
        assert!(status_of(b"HTTP/1.0 200 OK").is_err());
        assert!(status_of(b"HTTP/1.1 ").is_err());
        assert!(status_of(b"").is_err());
    }
}
