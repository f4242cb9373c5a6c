//! What a request came to, reported to a host that forwards by itself (for its metrics
//! and access log), never to clients.

/// What a request came to, as far as it got: its API, resource and caller, and the code
/// of the fault it was refused with. Only ever reported to the host, never to clients.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Call {
    /// The API's name.
    pub api: String,
    /// The API's id.
    pub api_id: String,
    /// The API's version.
    pub version: String,
    /// The matched operation's URL template.
    pub resource: String,
    /// The calling application's id.
    pub application: String,
    /// The token's key type.
    pub key_type: String,
    /// The token's end user.
    pub user: String,
    /// Answered from the response cache.
    pub cached: bool,
    /// WSO2 fault code of the refusal that answers it; 0 when none does.
    pub fault_code: u32,
}
