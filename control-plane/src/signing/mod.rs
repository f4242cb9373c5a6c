//! Signing keys, one PKCS#8 PEM file per key in a directory of the data directory: Ed25519
//! for access tokens and manifests (`keys`, `manifest-keys`), RSA for OpenID Connect
//! id_tokens (`id-token-keys`: RS256 is the one algorithm every OIDC client accepts by
//! default).
//!
//! The newest key signs; every key on disk verifies and is published in the JWKS, so a
//! rotation never invalidates tokens that are still in flight.

pub(crate) mod admin;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, spki::der::pem::LineEnding};
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm,
    OctetKeyPairParameters, OctetKeyPairType, PublicKeyUse, RSAKeyParameters, RSAKeyType,
};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};

/// Bits of a new RSA key.
const RSA_BITS: usize = 2048;

/// What a ring's keys are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// Ed25519, signing `EdDSA`.
    Ed25519,
    /// RSA, signing `RS256`.
    Rsa,
}

impl KeyKind {
    /// The JWS algorithm its keys sign with.
    pub fn algorithm(self) -> Algorithm {
        match self {
            Self::Ed25519 => Algorithm::EdDSA,
            Self::Rsa => Algorithm::RS256,
        }
    }
}

/// One signing key, ready for use.
pub struct SigningKeyEntry {
    /// Key id, written into every token's header.
    pub kid: String,
    /// Private half, for signing.
    pub encoding: EncodingKey,
    /// Public half, for verifying.
    pub decoding: DecodingKey,
    /// Public half as a JWK.
    pub jwk: Jwk,
    /// An RSA key's private half as PKCS#1 DER (what gateways sign backend JWTs with);
    /// empty for Ed25519.
    pub rsa_private_der: Vec<u8>,
}

/// The key ring: every key in the directory, newest last.
pub struct KeyRing {
    dir: PathBuf,
    kind: KeyKind,
    keys: RwLock<Vec<Arc<SigningKeyEntry>>>,
}

impl KeyRing {
    /// Loads the Ed25519 keys under `dir`, creating the first one when there is none.
    pub fn load_or_create(dir: &Path) -> anyhow::Result<Self> {
        Self::load_or_create_of(dir, KeyKind::Ed25519)
    }

    /// Loads the keys of `kind` under `dir`, creating the first one when there is none.
    pub fn load_or_create_of(dir: &Path, kind: KeyKind) -> anyhow::Result<Self> {
        private_dir(dir)?;
        let ring = KeyRing {
            dir: dir.to_path_buf(),
            kind,
            keys: RwLock::new(read_keys(dir, kind)?),
        };
        if ring.keys.read().expect("key ring lock").is_empty() {
            ring.rotate()?;
        }
        Ok(ring)
    }

    /// What its keys are.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The key that signs new tokens.
    pub fn active(&self) -> Arc<SigningKeyEntry> {
        let keys = self.keys.read().expect("key ring lock");
        keys.last().expect("the key ring is never empty").clone()
    }

    /// The key with this id, if it is still on the ring.
    pub fn by_kid(&self, kid: &str) -> Option<Arc<SigningKeyEntry>> {
        let keys = self.keys.read().expect("key ring lock");
        keys.iter().find(|k| k.kid == kid).cloned()
    }

    /// The public keys as a JWKS document.
    pub fn jwks(&self) -> JwkSet {
        let keys = self.keys.read().expect("key ring lock");
        JwkSet {
            keys: keys.iter().map(|k| k.jwk.clone()).collect(),
        }
    }

    /// Generates a new key, writes it to disk and makes it the active one.
    pub fn rotate(&self) -> anyhow::Result<String> {
        // Key ids sort by creation time, so the newest file is the active key.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let kid = format!(
            "{nanos:020}-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let pem = new_private_pem(self.kind)?;
        let path = self.dir.join(format!("{kid}.pem"));
        write_private(&path, pem.as_bytes())?;
        let entry = entry_from_pem(&kid, &pem, self.kind)?;
        self.keys
            .write()
            .expect("key ring lock")
            .push(Arc::new(entry));
        Ok(kid)
    }
}

/// A new private key of `kind`, as PKCS#8 PEM.
fn new_private_pem(kind: KeyKind) -> anyhow::Result<String> {
    let pem = match kind {
        KeyKind::Ed25519 => {
            let seed: [u8; 32] = rand::random();
            SigningKey::from_bytes(&seed)
                .to_pkcs8_pem(LineEnding::LF)
                .context("could not encode signing key")?
        }
        KeyKind::Rsa => {
            use rsa::pkcs8::EncodePrivateKey as _;
            rsa::RsaPrivateKey::new(&mut rand_core_06::OsRng, RSA_BITS)
                .context("could not generate an RSA key")?
                .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
                .context("could not encode signing key")?
        }
    };
    Ok(pem.to_string())
}

fn read_keys(dir: &Path, kind: KeyKind) -> anyhow::Result<Vec<Arc<SigningKeyEntry>>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "pem"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let kid = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            restrict_file(path)?;
            let pem = std::fs::read_to_string(path)
                .with_context(|| format!("could not read {}", path.display()))?;
            entry_from_pem(kid, &pem, kind)
                .with_context(|| format!("bad signing key {}", path.display()))
                .map(Arc::new)
        })
        .collect()
}

fn entry_from_pem(kid: &str, pem: &str, kind: KeyKind) -> anyhow::Result<SigningKeyEntry> {
    match kind {
        KeyKind::Ed25519 => ed25519_entry(kid, pem),
        KeyKind::Rsa => rsa_entry(kid, pem),
    }
}

fn rsa_entry(kid: &str, pem: &str) -> anyhow::Result<SigningKeyEntry> {
    use rsa::pkcs1::EncodeRsaPrivateKey as _;
    use rsa::pkcs8::DecodePrivateKey as _;
    use rsa::traits::PublicKeyParts as _;
    let private = rsa::RsaPrivateKey::from_pkcs8_pem(pem).context("not an RSA PKCS#8 key")?;
    let rsa_private_der = private
        .to_pkcs1_der()
        .context("could not encode an RSA key")?
        .as_bytes()
        .to_vec();
    let n = URL_SAFE_NO_PAD.encode(private.n().to_bytes_be());
    let e = URL_SAFE_NO_PAD.encode(private.e().to_bytes_be());
    Ok(SigningKeyEntry {
        kid: kid.to_string(),
        encoding: EncodingKey::from_rsa_pem(pem.as_bytes())?,
        decoding: DecodingKey::from_rsa_components(&n, &e)?,
        jwk: Jwk {
            common: CommonParameters {
                public_key_use: Some(PublicKeyUse::Signature),
                key_algorithm: Some(KeyAlgorithm::RS256),
                key_id: Some(kid.to_string()),
                ..Default::default()
            },
            algorithm: AlgorithmParameters::RSA(RSAKeyParameters {
                key_type: RSAKeyType::RSA,
                n,
                e,
            }),
        },
        rsa_private_der,
    })
}

fn ed25519_entry(kid: &str, pem: &str) -> anyhow::Result<SigningKeyEntry> {
    let signing = SigningKey::from_pkcs8_pem(pem).context("not an Ed25519 PKCS#8 key")?;
    let public = URL_SAFE_NO_PAD.encode(signing.verifying_key().as_bytes());
    Ok(SigningKeyEntry {
        kid: kid.to_string(),
        encoding: EncodingKey::from_ed_pem(pem.as_bytes())?,
        decoding: DecodingKey::from_ed_components(&public)?,
        jwk: public_jwk(kid, public),
        rsa_private_der: Vec::new(),
    })
}

fn public_jwk(kid: &str, x: String) -> Jwk {
    Jwk {
        common: CommonParameters {
            public_key_use: Some(PublicKeyUse::Signature),
            key_algorithm: Some(KeyAlgorithm::EdDSA),
            key_id: Some(kid.to_string()),
            ..Default::default()
        },
        algorithm: AlgorithmParameters::OctetKeyPair(OctetKeyPairParameters {
            key_type: OctetKeyPairType::OctetKeyPair,
            curve: EllipticCurve::Ed25519,
            x,
        }),
    }
}

/// Writes a new file readable by the owner only (keys, secrets).
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("could not create {}", path.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(())
}

/// Creates a directory (and its parents) that only the owner can enter, or narrows an
/// existing one to that (directories of earlier versions were made 0755).
pub fn private_dir(path: &Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(path)
        .with_context(|| format!("could not create directory {}", path.display()))?;
    restrict(path, 0o700)
}

/// Narrows an existing file to owner read and write, if it is wider (files of earlier
/// versions, or made by SQLite under a wide umask).
pub fn restrict_file(path: &Path) -> anyhow::Result<()> {
    restrict(path, 0o600)
}

#[cfg(unix)]
fn restrict(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let current = std::fs::metadata(path)
        .with_context(|| format!("could not read {}", path.display()))?
        .permissions()
        .mode();
    if current & 0o777 & !mode != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(current & mode))
            .with_context(|| format!("could not restrict {}", path.display()))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn restrict(_path: &Path, _mode: u32) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_survive_a_reload_and_rotation_keeps_old_keys() {
        let dir = std::env::temp_dir().join(format!("keys-{}", uuid::Uuid::new_v4()));
        let ring = KeyRing::load_or_create(&dir).unwrap();
        let first = ring.active().kid.clone();
        let second = ring.rotate().unwrap();
        let reloaded = KeyRing::load_or_create(&dir).unwrap();
        assert_eq!(reloaded.active().kid, second);
        assert!(reloaded.by_kid(&first).is_some());
        assert_eq!(reloaded.jwks().keys.len(), 2);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rsa_keys_sign_rs256_that_their_jwk_verifies() {
        let dir = std::env::temp_dir().join(format!("keys-{}", uuid::Uuid::new_v4()));
        let ring = KeyRing::load_or_create_of(&dir, KeyKind::Rsa).unwrap();
        let key = ring.active();
        let header = jsonwebtoken::Header::new(ring.kind().algorithm());
        let token =
            jsonwebtoken::encode(&header, &serde_json::json!({"sub": "a"}), &key.encoding).unwrap();
        let jwk = &KeyRing::load_or_create_of(&dir, KeyKind::Rsa)
            .unwrap()
            .jwks()
            .keys[0];
        let decoding = DecodingKey::from_jwk(jwk).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::RS256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        jsonwebtoken::decode::<serde_json::Value>(&token, &decoding, &validation).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
