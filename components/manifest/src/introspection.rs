//! What the control plane's introspection endpoint (RFC 7662, `POST /oauth2/introspect`,
//! for gateways) answers about a token, and what a gateway reads of it: one definition for
//! both sides.

use serde::{Deserialize, Serialize};

/// An introspection answer. Inactive tokens (unknown, expired, revoked, of a deleted
/// application) are `{"active":false}` and nothing else (RFC 7662 §2.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Introspection {
    /// Whether the token may be used now.
    pub active: bool,
    /// Granted scopes, space separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The consumer key it was issued to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The end user (the application's owner for client credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Always `Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// Expiry, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    /// Issued at, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// The end user, as a JWT's `sub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// The token's id, which revocations name (as they name a JWT's `jti`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// The store application of the consumer key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    /// PRODUCTION or SANDBOX.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,
}
