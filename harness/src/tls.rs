//! HTTPS backends of the tests' own: a certificate authority made for the run, the
//! certificates it signs (or a certificate signed by its own key), and a server speaking
//! HTTP/1.1 over TLS with them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate authority and one certificate it signed for 127.0.0.1.
pub struct Authority {
    /// The authority's certificate, PEM (what a gateway is told to trust).
    pub ca_pem: String,
    leaf: CertificateDer<'static>,
    leaf_key: Vec<u8>,
    /// TLS handshakes completed by servers using it.
    pub handshakes: Arc<AtomicUsize>,
}

impl Authority {
    /// A new authority named `name`, and a certificate for 127.0.0.1 signed by it.
    pub fn new(name: &str) -> Self {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, name);
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);
        let leaf_key = KeyPair::generate().expect("leaf key");
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .expect("leaf params")
            .signed_by(&leaf_key, &issuer)
            .expect("leaf certificate");
        Self {
            ca_pem: ca_cert.pem(),
            leaf: leaf.der().clone(),
            leaf_key: leaf_key.serialize_der(),
            handshakes: Arc::default(),
        }
    }

    /// A backend certificate for 127.0.0.1 signed by its own key, no authority behind it:
    /// what a gateway must be given to trust (its `ca_pem`).
    pub fn self_signed(name: &str) -> Self {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("certificate params");
        params.distinguished_name.push(DnType::CommonName, name);
        let certificate = params.self_signed(&key).expect("self-signed certificate");
        Self {
            ca_pem: certificate.pem(),
            leaf: certificate.der().clone(),
            leaf_key: key.serialize_der(),
            handshakes: Arc::default(),
        }
    }

    /// Writes the authority's certificate into `dir`; the file's path.
    pub fn write_ca(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("backend-ca.pem");
        std::fs::write(&path, &self.ca_pem).expect("write the CA certificate");
        path
    }

    /// A server configuration presenting the certificate, counting handshakes.
    pub fn server_config(&self) -> (Arc<rustls::ServerConfig>, Arc<AtomicUsize>) {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.clone()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![self.leaf.clone()], key)
            .expect("server certificate");
        (Arc::new(config), self.handshakes.clone())
    }
}

/// Serves `app` over TLS on `listener` until dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    (config, handshakes): (Arc<rustls::ServerConfig>, Arc<AtomicUsize>),
    app: axum::Router,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (acceptor, app, handshakes) = (acceptor.clone(), app.clone(), handshakes.clone());
        tokio::spawn(async move {
            // A client that refuses the certificate ends here.
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            handshakes.fetch_add(1, Ordering::Relaxed);
            let service = hyper_util::service::TowerToHyperService::new(app);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
        });
    }
}
