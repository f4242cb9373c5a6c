//! The gateway's own endpoints (`/_apim/...`: signed manifest pages pushed, the position
//! held, pull requests). They answer only to callers that prove the gateway secret with
//! `Authorization: Bearer <gateway_secret>`, checked from the request head before any
//! body is read; without a configured secret they answer nobody.

use subtle::ConstantTimeEq;

use crate::auth;
use crate::faults::Fault;
use crate::host::{Headers, Host, header};
use crate::sync::settings;

/// Whether a canonical path names one of the gateway's own endpoints.
pub fn is_internal(path: &str) -> bool {
    path == "/_apim" || path == "/_apim/" || path.starts_with("/_apim/")
}

/// `Ok` when the request proves the gateway secret; the refusal otherwise.
pub fn authorize(host: &dyn Host, headers: &Headers) -> Result<(), Fault> {
    let secret = host.setting(settings::GATEWAY_SECRET);
    let presented = auth::bearer(header(headers, "authorization"));
    match (secret, presented) {
        (Some(secret), Some(token)) if bool::from(secret.as_bytes().ct_eq(token.as_bytes())) => {
            Ok(())
        }
        (_, None) => Err(Fault::missing_credentials()),
        _ => Err(Fault::internal_unauthorized()),
    }
}
