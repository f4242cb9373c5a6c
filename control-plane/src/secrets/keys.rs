//! Data keys: sealing and opening secrets at rest, bound to their table, column and row.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

/// A stored value, opened.
enum Opened {
    /// Its clear text.
    Clear(String),
    /// It is there but does not decrypt: why.
    Altered(anyhow::Error),
}
use crate::signing::{private_dir, restrict_file, write_private};

/// What every sealed value starts with.
const PREFIX: &str = "enc:v1:";
/// Nonce bytes of XChaCha20-Poly1305: random nonces of this length never repeat in practice.
const NONCE_BYTES: usize = 24;
/// Bytes of a data key.
const KEY_BYTES: usize = 32;
/// Extension of data-key files in the data directory.
const KEY_EXTENSION: &str = "key";

/// Which secret a value is: part of the associated data, so that a value copied into
/// another column or row does not decrypt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `oauth_clients.client_secret`, by client id (registered clients' and consumer secrets).
    ClientSecret,
    /// `endpointSecurity.password` of an API record, by API id.
    BackendPassword,
    /// A browser's cookie holding what a web application keeps for it (a signed-in
    /// user's tokens), by cookie name: never stored, only sent back.
    BrowserCookie,
}

impl Field {
    fn label(self) -> &'static str {
        match self {
            Field::ClientSecret => "oauth_clients.client_secret",
            Field::BackendPassword => "apis.record.endpointSecurity.password",
            Field::BrowserCookie => "cookie",
        }
    }

    fn associated_data(self, row: &str) -> Vec<u8> {
        [self.label().as_bytes(), b"\0", row.as_bytes()].concat()
    }
}

/// One data key.
struct DataKey {
    id: String,
    cipher: XChaCha20Poly1305,
}

impl DataKey {
    /// The clear text of `sealed` (nonce and ciphertext, base64) as `field` of `row`.
    fn decrypt(&self, field: Field, row: &str, sealed: &str) -> anyhow::Result<String> {
        let label = field.label();
        let bytes = URL_SAFE_NO_PAD
            .decode(sealed)
            .ok()
            .filter(|b| b.len() >= NONCE_BYTES)
            .with_context(|| format!("{label} of {row} is malformed"))?;
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        let nonce: [u8; NONCE_BYTES] = nonce.try_into().expect("split at the nonce's length");
        let payload = Payload {
            msg: ciphertext,
            aad: &field.associated_data(row),
        };
        let clear = self
            .cipher
            .decrypt(&XNonce::from(nonce), payload)
            .ok()
            .with_context(|| {
                let id = &self.id;
                format!("{label} of {row} does not decrypt with data key {id} (altered, or moved from another row)")
            })?;
        String::from_utf8(clear).with_context(|| format!("{label} of {row} is not text"))
    }
}

/// The keys known, and which one encrypts.
struct Ring {
    keys: Vec<DataKey>,
    active: String,
}

/// The data keys: the active one encrypts, every one decrypts.
pub struct DataKeys {
    /// `<data dir>/data-keys`; `None` for keys that live in memory only (tests).
    dir: Option<PathBuf>,
    /// The operator's key files, the encrypting one first.
    operator: Vec<PathBuf>,
    ring: RwLock<Ring>,
}

impl std::fmt::Debug for DataKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataKeys")
            .field("active", &self.active_id())
            .finish_non_exhaustive()
    }
}

impl DataKeys {
    /// The operator's keys (`operator`, the encrypting one first) and those under
    /// `<data_dir>/data-keys`; without an operator's key, the first data-directory key is
    /// created when there is none.
    pub fn load(data_dir: &Path, operator: &[PathBuf]) -> anyhow::Result<Self> {
        let dir = data_dir.join("data-keys");
        private_dir(&dir)?;
        let keys = DataKeys {
            dir: Some(dir),
            operator: operator.to_vec(),
            ring: RwLock::new(Ring {
                keys: Vec::new(),
                active: String::new(),
            }),
        };
        if keys.operator.is_empty() && keys.directory_keys()?.is_empty() {
            keys.new_directory_key()?;
        }
        keys.reload()?;
        Ok(keys)
    }

    /// One random key in memory, for tests.
    #[cfg(test)]
    pub fn ephemeral() -> Self {
        let key = DataKey::new("test".into(), &rand::random::<[u8; KEY_BYTES]>());
        DataKeys {
            dir: None,
            operator: Vec::new(),
            ring: RwLock::new(Ring {
                active: key.id.clone(),
                keys: vec![key],
            }),
        }
    }

    /// The id of the key that encrypts.
    pub fn active_id(&self) -> String {
        self.ring.read().expect("data key lock").active.clone()
    }

    /// `clear` encrypted under the active key for `field` of `row`.
    pub fn seal(&self, field: Field, row: &str, clear: &str) -> String {
        let ring = self.ring.read().expect("data key lock");
        let key = ring
            .keys
            .iter()
            .find(|k| k.id == ring.active)
            .expect("the active data key is on the ring");
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let ciphertext = key
            .cipher
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: clear.as_bytes(),
                    aad: &field.associated_data(row),
                },
            )
            .expect("XChaCha20-Poly1305 encrypts any value");
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&ciphertext);
        format!("{PREFIX}{}:{}", key.id, URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The clear text of a stored value of `field` of `row`: decrypted, or as it is when it
    /// was stored in clear by an earlier version. A key this process does not know yet
    /// (added by a rotation elsewhere) is looked for on disk once.
    pub fn open(&self, field: Field, row: &str, stored: &str) -> anyhow::Result<String> {
        match self.open_checked(field, row, stored)? {
            Opened::Clear(clear) => Ok(clear),
            Opened::Altered(why) => Err(why),
        }
    }

    /// As [`DataKeys::open`], but a value that is there and does not decrypt (altered, or
    /// moved from another row: a write to the database behind the control plane's back)
    /// is `None`, logged, rather than an error: whoever presents the secret it stood for
    /// cannot be verified, which is not the control plane failing. A missing data key is
    /// still an error (the operator's to fix).
    pub fn open_if_intact(
        &self,
        field: Field,
        row: &str,
        stored: &str,
    ) -> anyhow::Result<Option<String>> {
        match self.open_checked(field, row, stored)? {
            Opened::Clear(clear) => Ok(Some(clear)),
            Opened::Altered(why) => {
                tracing::error!(error = %format!("{why:#}"), "a stored secret is unusable");
                Ok(None)
            }
        }
    }

    /// A value a client brought back (a cookie), opened only when it is sealed under a
    /// key this control plane holds now: never taken as clear text, never a reason to
    /// read the key files again or to log (anyone can send anything).
    pub fn open_presented(&self, field: Field, row: &str, presented: &str) -> Option<String> {
        let (id, sealed) = parse(presented)?;
        let ring = self.ring.read().expect("data key lock");
        let key = ring.keys.iter().find(|k| k.id == id)?;
        key.decrypt(field, row, sealed).ok()
    }

    /// Opens a stored value; an error only when the key it names cannot be had.
    fn open_checked(&self, field: Field, row: &str, stored: &str) -> anyhow::Result<Opened> {
        let Some((id, sealed)) = parse(stored) else {
            return Ok(Opened::Clear(stored.to_string()));
        };
        if !self.knows(id) {
            self.reload()?;
        }
        let ring = self.ring.read().expect("data key lock");
        let key = ring.keys.iter().find(|k| k.id == id).with_context(|| {
            format!(
                "{} of {row} is encrypted with data key {id}, which this control plane does not have (APIM_DATA_KEY_FILE, <data dir>/data-keys)",
                field.label()
            )
        })?;
        Ok(match key.decrypt(field, row, sealed) {
            Ok(clear) => Opened::Clear(clear),
            Err(why) => Opened::Altered(why),
        })
    }

    /// Whether a stored value is not (yet) encrypted under the active key.
    pub fn needs_resealing(&self, stored: &str) -> bool {
        parse(stored).is_none_or(|(id, _)| id != self.active_id())
    }

    /// Makes a new data-directory key the active one; its id. With an operator's key
    /// there is nothing to make: the first of `APIM_DATA_KEY_FILE` is the active key.
    pub fn rotate(&self) -> anyhow::Result<String> {
        if self.operator.is_empty() {
            self.new_directory_key()?;
        }
        self.reload()?;
        Ok(self.active_id())
    }

    fn knows(&self, id: &str) -> bool {
        let ring = self.ring.read().expect("data key lock");
        ring.keys.iter().any(|k| k.id == id)
    }

    /// Reads every key again from the operator's files and the data directory.
    fn reload(&self) -> anyhow::Result<()> {
        if self.dir.is_none() {
            return Ok(());
        }
        let mut keys = Vec::new();
        for path in &self.operator {
            keys.push(read_operator_key(path)?);
        }
        let directory = self.directory_keys()?;
        let active = match (keys.first(), directory.last()) {
            (Some(operator), _) => operator.id.clone(),
            (None, Some(newest)) => newest.id.clone(),
            (None, None) => anyhow::bail!("no data key"),
        };
        keys.extend(directory);
        *self.ring.write().expect("data key lock") = Ring { keys, active };
        Ok(())
    }

    /// The data directory's keys, oldest first (their ids sort by creation time).
    fn directory_keys(&self) -> anyhow::Result<Vec<DataKey>> {
        let Some(dir) = &self.dir else {
            return Ok(Vec::new());
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("could not read {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|ext| ext == KEY_EXTENSION))
            .collect();
        files.sort();
        files
            .iter()
            .map(|path| {
                restrict_file(path)?;
                let id = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                Ok(DataKey::new(id.to_string(), &read_key(path)?))
            })
            .collect()
    }

    fn new_directory_key(&self) -> anyhow::Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let id = format!(
            "{nanos:020}-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let key: [u8; KEY_BYTES] = rand::random();
        let path = dir.join(format!("{id}.{KEY_EXTENSION}"));
        write_private(&path, format!("{}\n", STANDARD.encode(key)).as_bytes())
    }
}

impl DataKey {
    fn new(id: String, key: &[u8; KEY_BYTES]) -> Self {
        DataKey {
            id,
            cipher: XChaCha20Poly1305::new(key.into()),
        }
    }
}

/// `(key id, base64 of nonce and ciphertext)` of a sealed value; `None` for clear text.
fn parse(stored: &str) -> Option<(&str, &str)> {
    stored.strip_prefix(PREFIX)?.split_once(':')
}

/// A key file: 32 bytes, base64 (surrounding whitespace ignored).
fn read_key(path: &Path) -> anyhow::Result<[u8; KEY_BYTES]> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("could not read data key {}", path.display()))?;
    STANDARD
        .decode(text.trim())
        .ok()
        .and_then(|bytes| <[u8; KEY_BYTES]>::try_from(bytes).ok())
        .with_context(|| {
            format!(
                "data key {} must hold 32 bytes in base64 (e.g. `head -c 32 /dev/urandom | base64`)",
                path.display()
            )
        })
}

/// An operator's key, named by a digest of the key itself (so the same file gives the same
/// id wherever it is mounted, and the id says nothing of the key).
fn read_operator_key(path: &Path) -> anyhow::Result<DataKey> {
    let key = read_key(path)?;
    let digest = Sha256::new()
        .chain_update(b"apim data key id\0")
        .chain_update(key)
        .finalize();
    let id: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    Ok(DataKey::new(format!("op-{id}"), &key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> PathBuf {
        std::env::temp_dir().join(format!("apim-data-keys-{}", uuid::Uuid::new_v4()))
    }

    #[test]
    fn values_open_only_as_the_field_and_row_they_were_sealed_for() {
        let keys = DataKeys::ephemeral();
        let sealed = keys.seal(Field::ClientSecret, "client-1", "s3cret");
        assert!(sealed.starts_with("enc:v1:test:") && !sealed.contains("s3cret"));
        assert_ne!(sealed, keys.seal(Field::ClientSecret, "client-1", "s3cret"));
        let open = |field, row: &str, stored: &str| keys.open(field, row, stored);
        assert_eq!(
            open(Field::ClientSecret, "client-1", &sealed).unwrap(),
            "s3cret"
        );
        assert!(open(Field::ClientSecret, "client-2", &sealed).is_err());
        assert!(open(Field::BackendPassword, "client-1", &sealed).is_err());
        let mut altered = sealed.clone();
        let last = altered.pop().unwrap();
        altered.push(if last == 'A' { 'B' } else { 'A' });
        assert!(open(Field::ClientSecret, "client-1", &altered).is_err());
        let unknown = sealed.replacen(":test:", ":gone:", 1);
        assert!(open(Field::ClientSecret, "client-1", &unknown).is_err());
        // Values from before encryption read as they are, and want resealing.
        assert_eq!(
            open(Field::ClientSecret, "client-1", "legacy").unwrap(),
            "legacy"
        );
        assert!(keys.needs_resealing("legacy"));
        assert!(!keys.needs_resealing(&sealed));
    }

    #[test]
    fn what_a_client_presents_opens_only_when_sealed_here() {
        let keys = DataKeys::ephemeral();
        let sealed = keys.seal(
            Field::BrowserCookie,
            "apim_devportal",
            "{\"user\":\"erin\"}",
        );
        let open =
            |row: &str, presented: &str| keys.open_presented(Field::BrowserCookie, row, presented);
        assert_eq!(
            open("apim_devportal", &sealed).as_deref(),
            Some("{\"user\":\"erin\"}")
        );
        assert_eq!(open("apim_publisher", &sealed), None, "bound to its cookie");
        assert_eq!(
            open("apim_devportal", "{\"user\":\"admin\"}"),
            None,
            "clear text is not taken"
        );
        assert_eq!(
            open("apim_devportal", &sealed.replacen(":test:", ":gone:", 1)),
            None
        );
        assert_eq!(open("apim_devportal", "enc:v1:test:AAAA"), None);
        assert_eq!(
            keys.open_presented(Field::ClientSecret, "apim_devportal", &sealed),
            None
        );
    }

    #[test]
    fn directory_keys_persist_rotate_and_keep_decrypting() {
        let dir = temp_dir();
        let keys = DataKeys::load(&dir, &[]).unwrap();
        let first = keys.active_id();
        let sealed = keys.seal(Field::BackendPassword, "api", "pw");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let key_dir = dir.join("data-keys");
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&key_dir), 0o700);
            let file = key_dir.join(format!("{first}.key"));
            assert_eq!(mode(&file), 0o600);
        }
        let reloaded = DataKeys::load(&dir, &[]).unwrap();
        assert_eq!(reloaded.active_id(), first);
        let second = reloaded.rotate().unwrap();
        assert_ne!(second, first);
        assert!(reloaded.needs_resealing(&sealed));
        // A process that loaded before the rotation finds the new key when it meets it.
        let newer = reloaded.seal(Field::BackendPassword, "api", "pw2");
        assert_eq!(
            keys.open(Field::BackendPassword, "api", &newer).unwrap(),
            "pw2"
        );
        assert_eq!(
            reloaded
                .open(Field::BackendPassword, "api", &sealed)
                .unwrap(),
            "pw"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_operator_key_encrypts_and_directory_keys_still_decrypt() {
        let dir = temp_dir();
        let own = DataKeys::load(&dir, &[]).unwrap();
        let before = own.seal(Field::ClientSecret, "c", "old");
        let file = dir.join("operator.key");
        std::fs::write(&file, format!("{}\n", STANDARD.encode([7u8; 32]))).unwrap();
        let keys = DataKeys::load(&dir, std::slice::from_ref(&file)).unwrap();
        assert!(keys.active_id().starts_with("op-"));
        assert_eq!(keys.rotate().unwrap(), keys.active_id(), "nothing to make");
        assert_eq!(keys.open(Field::ClientSecret, "c", &before).unwrap(), "old");
        assert!(keys.needs_resealing(&before));
        let again = DataKeys::load(&dir, std::slice::from_ref(&file)).unwrap();
        assert_eq!(again.active_id(), keys.active_id(), "same file, same id");

        std::fs::write(&file, "not a key").unwrap();
        let err = DataKeys::load(&dir, &[file]).unwrap_err();
        assert!(format!("{err:#}").contains("32 bytes in base64"), "{err:#}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
