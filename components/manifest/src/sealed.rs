//! Backend credentials sealed for the gateways: an API entry carries the `Authorization`
//! value for its backend encrypted (XChaCha20-Poly1305) under a key both sides derive
//! (HKDF-SHA256) from the gateway secret, so that the manifest pages, the control plane's
//! recorded entries and the gateways' key-value stores never hold it in clear; a gateway
//! opens it when it forwards.
//!
//! Sealing is deterministic (the nonce is an HMAC of the API id and the credential, the
//! SIV construction): the same credential seals to the same text, so that a recompile of
//! an unchanged API changes no entry. It tells equal credentials of one API apart from
//! changed ones, nothing more; the API id is bound in as associated data, so a sealed
//! value moved to another API's entry does not open.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What a sealed value starts with: the scheme's version.
const PREFIX: &str = "v1.";
/// Nonce bytes of XChaCha20-Poly1305.
const NONCE_BYTES: usize = 24;
/// HKDF salt: names this scheme, so the derived keys serve nothing else.
const SALT: &[u8] = b"apim gateway backend credentials";

/// The key gateways open backend credentials with, derived from the gateway secret.
#[derive(Clone)]
pub struct GatewayKey {
    cipher: XChaCha20Poly1305,
    nonce_key: [u8; 32],
}

impl std::fmt::Debug for GatewayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GatewayKey(..)")
    }
}

impl GatewayKey {
    /// The key of a gateway secret (`APIM_GATEWAY_SECRET`, the variable `gateway_secret`).
    pub fn derive(gateway_secret: &str) -> Self {
        let hkdf = hkdf::Hkdf::<Sha256>::new(Some(SALT), gateway_secret.as_bytes());
        let mut okm = [0u8; 64];
        hkdf.expand(b"v1 encryption and nonce keys", &mut okm)
            .expect("64 bytes is a valid HKDF-SHA256 length");
        let (encryption, nonce) = okm.split_at(32);
        GatewayKey {
            cipher: XChaCha20Poly1305::new(encryption.into()),
            nonce_key: nonce.try_into().expect("32 bytes"),
        }
    }

    /// `credential` sealed for the API `api_id`.
    pub fn seal(&self, api_id: &str, credential: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.nonce_key)
            .expect("HMAC takes any key length");
        mac.update(&(api_id.len() as u64).to_be_bytes());
        mac.update(api_id.as_bytes());
        mac.update(credential.as_bytes());
        let tag = mac.finalize().into_bytes();
        let nonce: [u8; NONCE_BYTES] = tag[..NONCE_BYTES]
            .try_into()
            .expect("HMAC-SHA256 is longer");
        let nonce = XNonce::from(nonce);
        let sealed = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: credential.as_bytes(),
                    aad: api_id.as_bytes(),
                },
            )
            .expect("XChaCha20-Poly1305 seals any credential");
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The credential sealed for `api_id`; `None` when it was not sealed under this key
    /// for that API (another gateway secret, another API, altered).
    pub fn open(&self, api_id: &str, sealed: &str) -> Option<String> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed.strip_prefix(PREFIX)?).ok()?;
        let (nonce, ciphertext) = bytes.split_at_checked(NONCE_BYTES)?;
        let nonce = XNonce::from(<[u8; NONCE_BYTES]>::try_from(nonce).ok()?);
        let clear = self
            .cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: ciphertext,
                    aad: api_id.as_bytes(),
                },
            )
            .ok()?;
        String::from_utf8(clear).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_credentials_open_only_for_their_api_and_secret() {
        let key = GatewayKey::derive("gateway-secret");
        let sealed = key.seal("api-1", "Basic dTpw");
        assert!(!sealed.contains("dTpw"));
        assert_eq!(key.open("api-1", &sealed).as_deref(), Some("Basic dTpw"));
        assert_eq!(key.open("api-2", &sealed), None, "bound to its API");
        assert_eq!(GatewayKey::derive("other").open("api-1", &sealed), None);
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 2;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            key.open("api-1", &String::from_utf8(altered).unwrap()),
            None
        );
        for junk in ["", "v1.", "v1.AAAA", "Basic dTpw", "v2.abc"] {
            assert_eq!(key.open("api-1", junk), None, "{junk}");
        }
    }

    #[test]
    fn sealing_is_deterministic_per_api_and_credential() {
        let key = GatewayKey::derive("gateway-secret");
        assert_eq!(key.seal("a", "Basic x"), key.seal("a", "Basic x"));
        assert_ne!(key.seal("a", "Basic x"), key.seal("a", "Basic y"));
        assert_ne!(key.seal("a", "Basic x"), key.seal("b", "Basic x"));
    }
}
