//! One rule for request bodies, whether their length is announced (`Content-Length`) or
//! not (chunked): a gateway-wide limit ([`SETTING`]), checked from the head when the
//! length is announced and counted as the body arrives otherwise; over it, 413. WSO2 2.6
//! has no request-body limit per API (its pass-through transport streams bodies whatever
//! their size, and the API record has no such field), so there is none per API here.

use crate::MAX_BODY_BYTES;

/// The setting naming the largest request body a gateway takes, in bytes (edge-gateway's
/// `APIM_MAX_REQUEST_BODY_BYTES`, a variable on Spin); unset or empty: see [`limit`].
pub const SETTING: &str = "max_request_body_bytes";

/// Largest body an API's mediation reads whole, bytes: a request's its in flow reads
/// or makes (a longer one is 413), a backend's answer its out flow needs (a longer one
/// is 500). Parsed, converted and copied into a component's memory, a body takes a few
/// times its size there.
pub const MAX_MEDIATED_BYTES: usize = 4 * 1024 * 1024;

/// How a host carries a request's body to the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carriage {
    /// Streamed as it arrives (edge-gateway's host forwarding).
    Streamed,
    /// Read whole into the component first (`wasi:http`, as on Spin).
    Held,
}

/// Parses the setting's value: a positive number of bytes; `None` when empty.
pub fn parse(value: &str) -> Result<Option<u64>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    match value.parse::<u64>() {
        Ok(bytes) if bytes > 0 => Ok(Some(bytes)),
        _ => Err(format!(
            "{SETTING} must be a positive number of bytes, got {value:?}"
        )),
    }
}

/// The configured limit, from the setting's value (`None`: not set). A value that is not
/// a positive number counts as [`MAX_BODY_BYTES`]: a typo must not lift every cap
/// (edge-gateway refuses to start with one; Spin cannot check variables before use).
pub fn configured(value: Option<&str>) -> Option<u64> {
    match value.map(parse) {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(bytes))) => Some(bytes),
        Some(Err(_)) => Some(MAX_BODY_BYTES as u64),
    }
}

/// The limit in effect for a body carried as `carriage`: a streamed body has only the
/// configured one (none by default, as WSO2's gateway); a held body never more than
/// [`MAX_BODY_BYTES`], what a component holds.
pub fn limit(configured: Option<u64>, carriage: Carriage) -> Option<u64> {
    match carriage {
        Carriage::Streamed => configured,
        Carriage::Held => Some(configured.map_or(MAX_BODY_BYTES as u64, |bytes| {
            bytes.min(MAX_BODY_BYTES as u64)
        })),
    }
}

/// Whether a body of `length` bytes is over `limit`.
pub fn exceeds(limit: Option<u64>, length: u64) -> bool {
    limit.is_some_and(|limit| length > limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_is_a_positive_number_of_bytes() {
        assert_eq!(parse(" 4096 "), Ok(Some(4096)));
        assert_eq!(parse(""), Ok(None));
        for bad in ["0", "-1", "10MiB", "1e6", "18446744073709551616"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(configured(None), None);
        assert_eq!(configured(Some("")), None);
        assert_eq!(configured(Some("4096")), Some(4096));
        assert_eq!(configured(Some("lots")), Some(MAX_BODY_BYTES as u64));
    }

    #[test]
    fn streamed_bodies_have_no_cap_unless_configured_held_ones_what_is_held() {
        let held = MAX_BODY_BYTES as u64;
        assert_eq!(limit(None, Carriage::Streamed), None);
        assert_eq!(limit(Some(1 << 40), Carriage::Streamed), Some(1 << 40));
        assert_eq!(limit(None, Carriage::Held), Some(held));
        assert_eq!(limit(Some(4096), Carriage::Held), Some(4096));
        assert_eq!(limit(Some(1 << 40), Carriage::Held), Some(held));
        assert!(!exceeds(None, u64::MAX));
        assert!(!exceeds(Some(4096), 4096));
        assert!(exceeds(Some(4096), 4097));
    }
}
