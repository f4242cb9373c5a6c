//! An authorization request as the endpoint reads it, and a code as it is stored.

/// Longest a code is valid, seconds (RFC 6749 §4.1.2 recommends ten minutes at most;
/// OAuth 2.1 deployments use one).
pub const CODE_SECS: i64 = 60;

/// The parameters of an authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3,
/// OpenID Connect Core §3.1.2.1, RFC 8707 §2), each as sent.
#[derive(Debug, Clone, Default)]
pub struct AuthorizationRequest {
    pub client_id: String,
    /// As sent; the one to use is [`Admitted::redirect_uri`].
    pub redirect_uri: Option<String>,
    pub response_type: String,
    pub scope: String,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub nonce: Option<String>,
    pub resources: Vec<String>,
    pub prompt: Option<String>,
}

/// A request whose client and redirect URI check out: from here on, refusals go back to
/// the client's redirect URI.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub request: AuthorizationRequest,
    /// Where the answer goes: the redirect URI named, or the client's only one.
    pub redirect_uri: String,
    /// What the pages call the client.
    pub client_name: String,
}

/// A code issued, as stored (beside its digest).
#[derive(Debug, Clone)]
pub struct IssuedCode {
    pub client_id: String,
    pub username: String,
    pub redirect_uri: String,
    pub scope: String,
    pub code_challenge: String,
    pub resources: Vec<String>,
    pub nonce: String,
    pub auth_time: i64,
}
