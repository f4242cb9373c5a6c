//! HTTPS backends of the tests' own: a certificate authority made for the run, the
//! certificates it signs (or a certificate signed by its own key), and a server speaking
//! HTTP/1.1 over TLS with them. And the certificates of our own listeners when a test
//! starts them with TLS ([`Listening`]), signed by an authority every test client trusts.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject as _;
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
        Self::signed_by_its_key(name, vec!["127.0.0.1".to_string()])
    }

    /// A certificate named `name` in its CN, with `names` as its subjectAltName (none
    /// without), signed by its own key.
    fn signed_by_its_key(name: &str, names: Vec<String>) -> Self {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(names).expect("certificate params");
        params.distinguished_name.push(DnType::CommonName, name);
        let certificate = params.self_signed(&key).expect("self-signed certificate");
        Self {
            ca_pem: certificate.pem(),
            leaf: certificate.der().clone(),
            leaf_key: key.serialize_der(),
            handshakes: Arc::default(),
        }
    }

    /// A self-signed certificate as `openssl req -x509` makes it with its defaults (an RSA
    /// key, the name in the CN alone, basicConstraints `CA:TRUE`), with `subjectAltName`
    /// `IP:127.0.0.1` beside when `with_san`.
    pub fn openssl_self_signed(name: &str, with_san: bool) -> Self {
        let dir = crate::temp_dir();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let mut req = openssl(&[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
        ]);
        req.arg("-subj").arg(format!("/CN={name}"));
        req.arg("-keyout").arg(&key).arg("-out").arg(&cert);
        if with_san {
            req.args(["-addext", "subjectAltName=IP:127.0.0.1"]);
        }
        run(req);
        Self::read_openssl(dir, &cert, &key)
    }

    /// A certificate as `openssl x509 -req -signkey` makes it from a request: X.509 v1,
    /// the name in the CN alone, no extensions at all.
    pub fn openssl_v1(name: &str) -> Self {
        let dir = crate::temp_dir();
        let (request, cert, key) = (
            dir.join("req.csr"),
            dir.join("cert.pem"),
            dir.join("key.pem"),
        );
        let mut req = openssl(&["req", "-new", "-newkey", "rsa:2048", "-nodes"]);
        req.arg("-subj").arg(format!("/CN={name}"));
        req.arg("-keyout").arg(&key).arg("-out").arg(&request);
        run(req);
        let mut sign = openssl(&["x509", "-req", "-days", "30", "-in"]);
        sign.arg(&request)
            .arg("-signkey")
            .arg(&key)
            .arg("-out")
            .arg(&cert);
        run(sign);
        Self::read_openssl(dir, &cert, &key)
    }

    /// The certificate and key openssl wrote into `dir`, which goes.
    fn read_openssl(
        dir: std::path::PathBuf,
        cert: &std::path::Path,
        key: &std::path::Path,
    ) -> Self {
        let ca_pem = std::fs::read_to_string(cert).expect("openssl's certificate");
        let key_pem = std::fs::read(key).expect("openssl's key");
        let _ = std::fs::remove_dir_all(dir);
        Self {
            leaf: CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("certificate PEM"),
            leaf_key: PrivatePkcs8KeyDer::from_pem_slice(&key_pem)
                .expect("a PKCS#8 key")
                .secret_pkcs8_der()
                .to_vec(),
            ca_pem,
            handshakes: Arc::default(),
        }
    }

    /// A self-signed certificate as `keytool -genkeypair` is often used: the name in the
    /// CN alone, no subjectAltName, no basicConstraints.
    pub fn keytool_like(name: &str) -> Self {
        Self::signed_by_its_key(name, Vec::new())
    }

    /// Writes the authority's certificate into `dir`; the file's path.
    pub fn write_ca(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("backend-ca.pem");
        std::fs::write(&path, &self.ca_pem).expect("write the CA certificate");
        path
    }

    /// A server configuration presenting the certificate, counting handshakes.
    pub fn server_config(&self) -> (Arc<rustls::ServerConfig>, Arc<AtomicUsize>) {
        self.server_config_of(rustls::DEFAULT_VERSIONS)
    }

    /// The same, speaking TLS 1.2 only (a backend that never moved to 1.3).
    pub fn tls12_server_config(&self) -> (Arc<rustls::ServerConfig>, Arc<AtomicUsize>) {
        self.server_config_of(&[&rustls::version::TLS12])
    }

    fn server_config_of(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> (Arc<rustls::ServerConfig>, Arc<AtomicUsize>) {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.clone()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        // Not `with_single_cert`: its check of the key against the certificate reads v3
        // certificates only, and a backend may present any.
        let signing = provider
            .key_provider
            .load_private_key(key)
            .expect("server key");
        let certified = rustls::sign::CertifiedKey::new(vec![self.leaf.clone()], signing);
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .expect("TLS versions")
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(certified)));
        (Arc::new(config), self.handshakes.clone())
    }
}

/// The `openssl` command with `args`.
fn openssl(args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new("openssl");
    command.args(args);
    command
}

/// Runs an openssl command, which must succeed.
fn run(mut command: std::process::Command) {
    let done = command
        .output()
        .expect("openssl is needed to make certificates");
    assert!(
        done.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&done.stderr)
    );
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

/// The authority that signs the certificates of the listeners the tests start with TLS
/// (one per run); every [`crate::Client`] of an `https://` URL trusts it.
fn listener_authority() -> &'static (String, Issuer<'static, KeyPair>) {
    static AUTHORITY: std::sync::OnceLock<(String, Issuer<'static, KeyPair>)> =
        std::sync::OnceLock::new();
    AUTHORITY.get_or_init(|| {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "apim tests' listener authority");
        let certificate = params.self_signed(&key).expect("CA certificate");
        (certificate.pem(), Issuer::new(params, key))
    })
}

/// The listener authority's certificate, PEM.
pub fn listener_ca_pem() -> &'static str {
    &listener_authority().0
}

/// The listener authority's certificate, for a reqwest client.
pub fn listener_root() -> reqwest::Certificate {
    reqwest::Certificate::from_pem(listener_ca_pem().as_bytes()).expect("the authority's PEM")
}

/// A rustls client configuration trusting the listener authority, speaking `versions`
/// and offering `alpn`.
pub fn listener_client_config(
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(listener_ca_pem().as_bytes()).expect("CA PEM"))
        .expect("CA certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// The names the default certificate of a test listener is for.
pub const DEFAULT_NAMES: [&str; 3] = ["127.0.0.1", "localhost", "gateway.apim.test"];
/// The name the second certificate of a test listener is for.
pub const OTHER_NAME: &str = "other.apim.test";

/// The certificate files of a test listener in a directory: a default certificate (for
/// [`DEFAULT_NAMES`]) and another (for [`OTHER_NAME`]), each a chain of the certificate
/// and the listener authority, signed by the authority every test client trusts.
pub struct Listening {
    /// Default chain, PEM.
    pub default_cert: std::path::PathBuf,
    /// Its key.
    pub default_key: std::path::PathBuf,
    /// Second chain, PEM.
    pub other_cert: std::path::PathBuf,
    /// Its key.
    pub other_key: std::path::PathBuf,
    /// The authority's certificate, PEM (for a gateway talking to a TLS control plane).
    pub ca: std::path::PathBuf,
}

impl Listening {
    /// Writes the files into `dir`.
    pub fn new(dir: &std::path::Path) -> Self {
        let listening = Self {
            default_cert: dir.join("listener.crt"),
            default_key: dir.join("listener.key"),
            other_cert: dir.join("other.crt"),
            other_key: dir.join("other.key"),
            ca: dir.join("listener-ca.pem"),
        };
        std::fs::write(&listening.ca, listener_ca_pem()).expect("write the CA");
        write_leaf(
            &DEFAULT_NAMES,
            &listening.default_cert,
            &listening.default_key,
        );
        write_leaf(&[OTHER_NAME], &listening.other_cert, &listening.other_key);
        listening
    }

    /// The settings naming both pairs, the default first, under `cert` and `key` (e.g.
    /// `APIM_TLS_CERT`, `APIM_TLS_KEY`).
    pub fn settings(&self, cert: &'static str, key: &'static str) -> Vec<(&'static str, String)> {
        let both = |a: &std::path::PathBuf, b: &std::path::PathBuf| {
            format!("{},{}", a.display(), b.display())
        };
        vec![
            (cert, both(&self.default_cert, &self.other_cert)),
            (key, both(&self.default_key, &self.other_key)),
        ]
    }

    /// Replaces the default certificate and its key on disk with new ones for the same
    /// names (each file replaced whole, by renaming).
    pub fn renew_default(&self) {
        write_leaf(&DEFAULT_NAMES, &self.default_cert, &self.default_key);
    }

    /// The chain in the default certificate's file, DER.
    pub fn default_chain(&self) -> Vec<Vec<u8>> {
        CertificateDer::pem_file_iter(&self.default_cert)
            .expect("read the chain")
            .map(|c| c.expect("PEM").to_vec())
            .collect()
    }
}

/// Writes a certificate for `names` signed by the listener authority, followed by the
/// authority's, and its key; the key file first, each by a rename.
fn write_leaf(names: &[&str], cert: &std::path::Path, key: &std::path::Path) {
    let (ca_pem, issuer) = listener_authority();
    let leaf_key = KeyPair::generate().expect("key");
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let leaf = CertificateParams::new(names)
        .expect("params")
        .signed_by(&leaf_key, issuer)
        .expect("certificate");
    replace(key, &leaf_key.serialize_pem());
    replace(cert, &format!("{}{ca_pem}", leaf.pem()));
}

fn replace(path: &std::path::Path, text: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, text).expect("write");
    std::fs::rename(&next, path).expect("rename");
}

/// Connects to `addr` over TLS with `config`, asking for `server_name`; the chain the
/// server presented (DER) and the protocol ALPN chose, or the handshake's error.
pub async fn handshake(
    addr: &str,
    server_name: &str,
    config: Arc<rustls::ClientConfig>,
) -> Result<(Vec<Vec<u8>>, Option<Vec<u8>>), std::io::Error> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls::pki_types::ServerName::try_from(server_name)
        .map_err(|e| std::io::Error::other(e.to_string()))?
        .to_owned();
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, stream)
        .await?;
    let (_, session) = tls.get_ref();
    let chain = session
        .peer_certificates()
        .unwrap_or_default()
        .iter()
        .map(|c| c.to_vec())
        .collect();
    Ok((chain, session.alpn_protocol().map(<[u8]>::to_vec)))
}

/// A client configuration that accepts any certificate, to see which one a listener
/// presents for a name it has none for (a verifying client stops before).
pub fn presented_to_anyone(alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// Takes whatever certificate comes (checking only that the handshake is signed by it).
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Sends a ClientHello offering TLS 1.1 (`0x0302`) or 1.0 (`0x0301`) only, as an old
/// client would (rustls cannot speak them), and reads the server's first record: the
/// description of an alert (e.g. `Some(40)`, handshake_failure); `None` when the server
/// answered otherwise, or not at all.
pub async fn old_client_hello(addr: &str, version: u16) -> Option<u8> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let [major, minor] = version.to_be_bytes();
    let mut body = vec![major, minor];
    body.extend_from_slice(&[0x42; 32]); // random
    body.push(0); // no session id
    // TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, TLS_RSA_WITH_AES_128_CBC_SHA
    body.extend_from_slice(&[0x00, 0x04, 0xc0, 0x13, 0x00, 0x2f]);
    body.extend_from_slice(&[0x01, 0x00]); // null compression
    let length = u32::try_from(body.len()).expect("short").to_be_bytes();
    let mut handshake = vec![0x01, length[1], length[2], length[3]]; // ClientHello
    handshake.extend_from_slice(&body);
    let record_length = u16::try_from(handshake.len()).expect("short").to_be_bytes();
    let mut record = vec![0x16, major, minor, record_length[0], record_length[1]];
    record.extend_from_slice(&handshake);
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.write_all(&record).await.ok()?;
    let mut answer = [0u8; 7];
    stream.read_exact(&mut answer).await.ok()?;
    // An alert record (21) of two bytes: level, description.
    (answer[0] == 0x15).then_some(answer[6])
}
