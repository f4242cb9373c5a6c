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
