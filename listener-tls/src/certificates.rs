//! Certificate chains and their keys from PEM files, and the names each is chosen for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use x509_parser::extensions::GeneralName;

/// A certificate chain file (leaf first, then intermediates) and its private key's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// PEM certificates.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Pairs `certs` with `keys` in order; `what` names the settings in an error (e.g.
/// `APIM_TLS_CERT and APIM_TLS_KEY`). No files at all: no TLS.
pub fn pairs(certs: &[PathBuf], keys: &[PathBuf], what: &str) -> anyhow::Result<Vec<Pair>> {
    if certs.len() != keys.len() {
        bail!(
            "{what} must name as many files each (a key for every certificate, in the same \
             order): got {} certificates and {} keys",
            certs.len(),
            keys.len()
        );
    }
    Ok(certs
        .iter()
        .zip(keys)
        .map(|(cert, key)| Pair {
            cert: cert.clone(),
            key: key.clone(),
        })
        .collect())
}

/// The certificates in force: each by the names it is valid for, and the default (the
/// first configured) for a client that sends no name, or one no certificate has.
#[derive(Debug)]
pub struct Certificates {
    exact: HashMap<String, Arc<CertifiedKey>>,
    /// By the part after `*.` of a wildcard name.
    wildcard: HashMap<String, Arc<CertifiedKey>>,
    default: Arc<CertifiedKey>,
}

impl Certificates {
    /// Reads every pair; the first problem names its file.
    pub fn load(pairs: &[Pair], provider: &CryptoProvider) -> anyhow::Result<Self> {
        let mut loaded = Vec::with_capacity(pairs.len());
        for pair in pairs {
            loaded.push(load_pair(pair, provider)?);
        }
        let mut chosen = loaded.into_iter();
        let Some((default, default_names)) = chosen.next() else {
            bail!("no TLS certificate is configured");
        };
        let mut certificates = Certificates {
            exact: HashMap::new(),
            wildcard: HashMap::new(),
            default: default.clone(),
        };
        // Where two certificates claim a name, the one configured first keeps it.
        for (key, names) in std::iter::once((default, default_names)).chain(chosen) {
            for name in names {
                let (map, name) = match name.strip_prefix("*.") {
                    Some(parent) => (&mut certificates.wildcard, parent.to_string()),
                    None => (&mut certificates.exact, name.clone()),
                };
                map.entry(name).or_insert_with(|| key.clone());
            }
        }
        Ok(certificates)
    }

    /// The certificate for `server_name` (SNI), the default where none has it.
    pub fn choose(&self, server_name: Option<&str>) -> Arc<CertifiedKey> {
        let Some(name) = server_name.map(|name| name.trim_end_matches('.').to_ascii_lowercase())
        else {
            return self.default.clone();
        };
        if let Some(key) = self.exact.get(&name) {
            return key.clone();
        }
        let parent = name.split_once('.').map(|(_, parent)| parent);
        parent
            .and_then(|parent| self.wildcard.get(parent))
            .unwrap_or(&self.default)
            .clone()
    }
}

/// One chain and its key, checked to belong together, and the names it is for.
fn load_pair(
    pair: &Pair,
    provider: &CryptoProvider,
) -> anyhow::Result<(Arc<CertifiedKey>, Vec<String>)> {
    let chain = chain_in(&pair.cert)?;
    let key = key_in(&pair.key)?;
    let names = names_of(&chain[0])
        .with_context(|| format!("{}: the first certificate", pair.cert.display()))?;
    let certified = CertifiedKey::from_der(chain, key, provider).with_context(|| {
        format!(
            "{} is not the key of the certificate in {}",
            pair.key.display(),
            pair.cert.display()
        )
    })?;
    Ok((Arc::new(certified), names))
}

/// The certificates of a PEM file, leaf first; none is an error.
fn chain_in(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let chain = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("cannot read the TLS certificate file {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{} is not a PEM certificate file", path.display()))?;
    if chain.is_empty() {
        bail!("{} holds no PEM certificate", path.display());
    }
    Ok(chain)
}

/// The private key of a PEM file.
fn key_in(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    // Read first, so that a missing or unreadable file says so rather than "no key".
    let pem = std::fs::read(path)
        .with_context(|| format!("cannot read the TLS key file {}", path.display()))?;
    PrivateKeyDer::from_pem_slice(&pem)
        .with_context(|| format!("{} holds no PEM private key", path.display()))
}

/// The DNS names of a certificate's subject alternative names, lower case; its common
/// name where it has none.
fn names_of(certificate: &CertificateDer<'_>) -> anyhow::Result<Vec<String>> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate)
        .map_err(|err| anyhow::anyhow!("not an X.509 certificate: {err}"))?;
    let alternative = parsed
        .subject_alternative_name()
        .map_err(|err| anyhow::anyhow!("unreadable subject alternative names: {err}"))?;
    let mut names: Vec<String> = alternative
        .map(|extension| {
            extension
                .value
                .general_names
                .iter()
                .filter_map(|name| match name {
                    GeneralName::DNSName(dns) => Some(dns.to_ascii_lowercase()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        names.extend(
            parsed
                .subject()
                .iter_common_name()
                .filter_map(|cn| cn.as_str().ok())
                .map(str::to_ascii_lowercase),
        );
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> CryptoProvider {
        rustls::crypto::ring::default_provider()
    }

    /// Writes a self-signed certificate for `names` and its key into `dir`.
    fn write_pair(dir: &Path, file: &str, names: &[&str]) -> Pair {
        let key = rcgen::KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let cert = rcgen::CertificateParams::new(names)
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let pair = Pair {
            cert: dir.join(format!("{file}.crt")),
            key: dir.join(format!("{file}.key")),
        };
        std::fs::write(&pair.cert, cert.pem()).unwrap();
        std::fs::write(&pair.key, key.serialize_pem()).unwrap();
        pair
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("apim-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn leaf(key: &CertifiedKey) -> Vec<u8> {
        key.cert[0].to_vec()
    }

    #[test]
    fn names_choose_their_certificate_and_others_get_the_default() {
        let dir = temp_dir("sni");
        let first = write_pair(&dir, "first", &["api.example.com"]);
        let second = write_pair(&dir, "second", &["*.shop.example", "other.example"]);
        let certificates = Certificates::load(&[first, second], &provider()).unwrap();
        let default = leaf(&certificates.choose(None));
        assert_eq!(leaf(&certificates.choose(Some("api.example.com"))), default);
        let other = leaf(&certificates.choose(Some("other.example")));
        assert_ne!(other, default);
        assert_eq!(leaf(&certificates.choose(Some("Www.Shop.Example"))), other);
        // A wildcard covers one label only.
        assert_eq!(
            leaf(&certificates.choose(Some("a.b.shop.example"))),
            default
        );
        assert_eq!(leaf(&certificates.choose(Some("unknown.example"))), default);
    }

    #[test]
    fn a_missing_file_or_a_foreign_key_is_named() {
        let dir = temp_dir("errors");
        let good = write_pair(&dir, "good", &["a.example"]);
        let other = write_pair(&dir, "other", &["b.example"]);
        let missing = Pair {
            cert: dir.join("missing.crt"),
            key: good.key.clone(),
        };
        let err = format!(
            "{:#}",
            Certificates::load(&[missing], &provider()).unwrap_err()
        );
        assert!(err.contains("missing.crt"), "{err}");
        let foreign = Pair {
            cert: good.cert.clone(),
            key: other.key.clone(),
        };
        let err = format!(
            "{:#}",
            Certificates::load(&[foreign], &provider()).unwrap_err()
        );
        assert!(
            err.contains("other.key") && err.contains("good.crt"),
            "{err}"
        );
        let not_pem = Pair {
            cert: good.key.clone(),
            key: good.key.clone(),
        };
        let err = format!(
            "{:#}",
            Certificates::load(&[not_pem], &provider()).unwrap_err()
        );
        assert!(err.contains("good.key"), "{err}");
        assert!(Certificates::load(&[good], &provider()).is_ok());
    }

    #[test]
    fn certificates_and_keys_pair_in_order() {
        let certs = [PathBuf::from("a.crt"), PathBuf::from("b.crt")];
        let keys = [PathBuf::from("a.key")];
        assert!(pairs(&certs, &keys, "X").is_err());
        let paired = pairs(&certs[..1], &keys, "X").unwrap();
        assert_eq!(paired[0].key, PathBuf::from("a.key"));
        assert!(pairs(&[], &[], "X").unwrap().is_empty());
    }
}
