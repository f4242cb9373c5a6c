//! The authorization code flow's front half (RFC 6749 §4.1, OAuth 2.1): the authorization
//! request and its rules (`rules`: exact redirect URIs, PKCE S256, resources), the sign-in
//! and consent pages that answer it (`oauth`), the codes issued and the consents given
//! (`queries`). The token endpoint redeems codes (`crate::tokens`).

mod queries;
mod records;
mod rules;

pub(crate) mod oauth;

pub use queries::{Redeemed, prune_codes, redeem, reused_family};
pub use records::CODE_SECS;
pub use rules::verifier_matches;

/// What a code is stored as: its SHA-256, never the code.
pub fn code_digest(code: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(code.as_bytes()))
}
