//! What HTTPS to backends trusts: the Mozilla roots, this machine's, and the certificate
//! authorities of `APIM_BACKEND_CA_FILE`, plus, for one endpoint's host and port only, the
//! certificates the manifest binds to it ([`crate::endpoint_trust`]); TLS 1.2 and 1.3 (all
//! rustls speaks), server names sent (SNI) and verified against the certificate.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

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
/// (PEM, each a backend's own or an authority's) beside `roots`.
pub fn trusting(
    roots: &rustls::RootCertStore,
    certificates: &[String],
) -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = roots.clone();
    for pem in certificates {
        let certificate = CertificateDer::from_pem_slice(pem.as_bytes())
            .context("an endpoint certificate is not PEM")?;
        roots
            .add(certificate)
            .context("an endpoint certificate is not usable")?;
    }
    client_config(roots)
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
