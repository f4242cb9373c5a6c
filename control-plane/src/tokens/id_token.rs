//! OpenID Connect id_tokens (Core §2): RS256, which every OIDC client library accepts by
//! default (`id_token_signed_response_alg` defaults to it, Registration §2).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Header;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::http::error::OAuthError;
use crate::state::AppState;

/// The claims of an id_token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdTokenClaims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    /// The client it was issued to (Core §2, for a single audience it equals `aud`).
    pub azp: String,
    pub exp: i64,
    pub iat: i64,
    /// When the user signed in.
    pub auth_time: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// The access token's hash (Core §3.3.2.11): the left half of its SHA-256.
    pub at_hash: String,
    /// The user's name (`profile`'s `preferred_username`).
    pub preferred_username: String,
}

impl IdTokenClaims {
    #[expect(clippy::too_many_arguments, reason = "every claim is its own")]
    pub fn new(
        state: &AppState,
        username: &str,
        client_id: &str,
        auth_time: i64,
        iat: i64,
        exp: i64,
        nonce: Option<String>,
        access_token: &str,
    ) -> Self {
        let digest = Sha256::digest(access_token.as_bytes());
        IdTokenClaims {
            iss: state.issuer.clone(),
            sub: username.to_string(),
            aud: client_id.to_string(),
            azp: client_id.to_string(),
            exp,
            iat,
            auth_time,
            nonce,
            at_hash: URL_SAFE_NO_PAD.encode(&digest[..16]),
            preferred_username: username.to_string(),
        }
    }
}

/// Signs `claims` with the active id_token key.
pub fn sign(state: &AppState, claims: &IdTokenClaims) -> Result<String, OAuthError> {
    let key = state.id_token_keys.active();
    let mut header = Header::new(state.id_token_keys.kind().algorithm());
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &key.encoding).map_err(OAuthError::server_error)
}

/// The claims of an id_token this service signed, expired or not (a logout's hint).
pub fn verify_hint(state: &AppState, token: &str) -> Option<IdTokenClaims> {
    let header = jsonwebtoken::decode_header(token).ok()?;
    let key = state.id_token_keys.by_kid(header.kid.as_deref()?)?;
    let mut validation = jsonwebtoken::Validation::new(state.id_token_keys.kind().algorithm());
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.set_issuer(&state.issuers);
    jsonwebtoken::decode::<IdTokenClaims>(token, &key.decoding, &validation)
        .ok()
        .map(|data| data.claims)
}
