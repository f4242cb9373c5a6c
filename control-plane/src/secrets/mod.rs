//! Secrets at rest: client secrets, consumer secrets and backend passwords are stored
//! encrypted with a **data key** (XChaCha20-Poly1305, a random nonce per value, the table,
//! column and row bound in as associated data), so that a copy of the database alone
//! reveals none of them.
//!
//! A stored value reads `enc:v1:<key id>:<base64url(nonce | ciphertext)>`; the key id
//! names the data key, so keys can be rotated: [`reseal_all`] re-encrypts every value not
//! under the active key (at every start, and by `control-plane rotate-data-key`). Values
//! written in clear by earlier versions are read as they are until then.
//!
//! Data keys are 32 random bytes, base64, one per file: the operator's
//! (`APIM_DATA_KEY_FILE`, a comma-separated list whose first key encrypts and the others
//! only decrypt), or else `<data dir>/data-keys/<id>.key`, created on first start, the
//! newest encrypting. Keys in the data directory always decrypt, so a move to an
//! operator's key is one rotation.

mod keys;
pub mod reseal;

pub use keys::{DataKeys, Field};

/// What a bearer secret of the sign-in flow (a code, a session cookie) is stored as: its
/// SHA-256, base64url, so that the database never holds one that works.
pub fn stored_digest(secret: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(secret.as_bytes()))
}
