//! What HTTPS to backends trusts: the Mozilla roots, this machine's, and the certificate
//! authorities of `APIM_BACKEND_CA_FILE`, plus, for one endpoint's host and port only, the
//! certificates the manifest binds to it ([`crate::endpoint_trust`]): each pinned as that
//! endpoint's own certificate, and those that are authorities trusted as roots; TLS 1.2
//! and 1.3 (all rustls speaks), server names sent (SNI) and, on a chain to a root,
//! verified against the certificate.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, SubjectPublicKeyInfoDer, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The roots every backend connection trusts.
pub fn roots(ca_file: Option<&Path>) -> anyhow::Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    let (added, _ignored) = roots.add_parsable_certificates(native.certs);
    tracing::debug!(
        added,
        "this machine's certificate authorities trusted for backends"
    );
    if let Some(path) = ca_file {
        for certificate in authorities_in(path)? {
            roots
                .add(certificate)
                .with_context(|| format!("{}: a certificate is not usable", path.display()))?;
        }
    }
    Ok(roots)
}

/// The connector of the host's own calls to the control plane (its long poll, the
/// analytics reports): `http://`, or `https://` trusting `roots` (so a control plane
/// behind TLS with a private authority needs only `APIM_BACKEND_CA_FILE`).
pub type ControlPlaneConnector =
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// See [`ControlPlaneConnector`].
pub fn control_plane_connector(
    roots: rustls::RootCertStore,
) -> anyhow::Result<ControlPlaneConnector> {
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(client_config(roots)?)
        .https_or_http()
        .enable_http1()
        .build())
}

/// The client configuration of connections that trust `roots`.
pub fn client_config(roots: rustls::RootCertStore) -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// The client configuration of connections to an endpoint that trusts `certificates`
/// (PEM, each a backend's own or an authority's) beside `roots`: the endpoint is trusted
/// when it presents one of them as its own certificate, whatever that certificate says
/// of itself (the upload is the trust decision, as a certificate in WSO2's trust store
/// is), or a chain that verifies, for the name it was reached by, to `roots` or to one of
/// them that is a certificate authority.
pub fn trusting(
    roots: &rustls::RootCertStore,
    certificates: &[String],
) -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut anchors = roots.clone();
    let mut pinned = Vec::with_capacity(certificates.len());
    for pem in certificates {
        let certificate = CertificateDer::from_pem_slice(pem.as_bytes())
            .context("an endpoint certificate is not PEM")?;
        let (authority, key) = authority_and_key(&certificate)?;
        if authority {
            anchors
                .add(certificate.clone())
                .context("an endpoint authority is not usable")?;
        }
        pinned.push(Pinned { certificate, key });
    }
    let chains = if anchors.is_empty() {
        None
    } else {
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            anchors.into(),
            provider.clone(),
        )
        .build()
        .context("an endpoint's verifier")?;
        Some(verifier)
    };
    let verifier = PinnedOrChained {
        pinned,
        chains,
        algorithms: provider.signature_verification_algorithms,
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(config)
}

/// Whether `certificate` says it is a certificate authority (basicConstraints `cA`), and
/// its public key (DER `SubjectPublicKeyInfo`).
fn authority_and_key(
    certificate: &CertificateDer<'_>,
) -> anyhow::Result<(bool, SubjectPublicKeyInfoDer<'static>)> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate)
        .map_err(|err| anyhow::anyhow!("an endpoint certificate is not X.509: {err}"))?;
    let authority = parsed
        .basic_constraints()
        .ok()
        .flatten()
        .is_some_and(|constraints| constraints.value.ca);
    let key = SubjectPublicKeyInfoDer::from(parsed.public_key().raw.to_vec());
    Ok((authority, key))
}

/// A certificate trusted as its endpoint's own, and its key.
#[derive(Debug)]
struct Pinned {
    certificate: CertificateDer<'static>,
    key: SubjectPublicKeyInfoDer<'static>,
}

/// An endpoint's server verification: its own certificate pinned, or a verified chain.
#[derive(Debug)]
struct PinnedOrChained {
    pinned: Vec<Pinned>,
    chains: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

/// Whether TLS 1.3 allows a handshake signed with `scheme` (RFC 8446 4.2.3: neither
/// PKCS #1 v1.5 nor SHA-1).
fn allowed_in_tls13(scheme: SignatureScheme) -> bool {
    !matches!(
        scheme,
        SignatureScheme::RSA_PKCS1_SHA1
            | SignatureScheme::RSA_PKCS1_SHA256
            | SignatureScheme::RSA_PKCS1_SHA384
            | SignatureScheme::RSA_PKCS1_SHA512
            | SignatureScheme::ECDSA_SHA1_Legacy
    )
}

/// rustls's verification of a handshake signature with a certificate's key.
type VerifySignature = fn(
    &[u8],
    &CertificateDer<'_>,
    &DigitallySignedStruct,
    &rustls::crypto::WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, rustls::Error>;

impl PinnedOrChained {
    /// Verifies a handshake signature: with the pinned key when `certificate` is pinned
    /// (read whatever its version), else as `by_webpki` does.
    fn verify_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
        by_webpki: VerifySignature,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        match self.pinned_key(certificate) {
            Some(key) => self.verify_with_key(message, key, signed),
            None => by_webpki(message, certificate, signed, &self.algorithms),
        }
    }

    /// The key of `end_entity` when it is pinned, byte for byte.
    fn pinned_key(
        &self,
        end_entity: &CertificateDer<'_>,
    ) -> Option<&SubjectPublicKeyInfoDer<'static>> {
        self.pinned
            .iter()
            .find(|p| p.certificate.as_ref() == end_entity.as_ref())
            .map(|p| &p.key)
    }

    /// Verifies a handshake signature with a pinned certificate's key, read from the
    /// certificate whatever its version, trying each algorithm the scheme may stand for.
    fn verify_with_key(
        &self,
        message: &[u8],
        key: &SubjectPublicKeyInfoDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let unverified =
            || rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature);
        let key = webpki::RawPublicKeyEntity::try_from(key).map_err(|_| unverified())?;
        let candidates = self
            .algorithms
            .mapping
            .iter()
            .find(|(scheme, _)| *scheme == signed.scheme)
            .map(|(_, algorithms)| *algorithms)
            .ok_or(rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme)?;
        candidates
            .iter()
            .find(|algorithm| {
                key.verify_signature(**algorithm, message, signed.signature())
                    .is_ok()
            })
            .map(|_| HandshakeSignatureValid::assertion())
            .ok_or_else(unverified)
    }
}

impl ServerCertVerifier for PinnedOrChained {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // Byte-equal, dates not read: Java's trust store trusts a certificate it holds
        // as the end entity without checking its validity; an expired one is refused
        // when it is uploaded instead.
        if self.pinned_key(end_entity).is_some() {
            return Ok(ServerCertVerified::assertion());
        }
        match &self.chains {
            Some(chains) => chains.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            ),
            None => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            )),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let by_webpki = rustls::crypto::verify_tls12_signature;
        self.verify_signature(message, certificate, signed, by_webpki)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // webpki's own TLS 1.3 check refuses the same schemes on the chained path.
        if !allowed_in_tls13(signed.scheme) {
            return Err(rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme.into());
        }
        let by_webpki = rustls::crypto::verify_tls13_signature;
        self.verify_signature(message, certificate, signed, by_webpki)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The certificates of a PEM file; none at all is an error, so that a wrong file is
/// noticed at start rather than as failing backends.
fn authorities_in(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certificates = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{} is not PEM", path.display()))?;
    anyhow::ensure!(
        !certificates.is_empty(),
        "{} holds no certificate",
        path.display()
    );
    Ok(certificates)
}
