//! How large one API, one entry and one page may be, shared by the control plane (which
//! refuses APIs past them at create and update, and never records or sends anything
//! larger) and the gateway (whose body limit is the page bound). One API past them must
//! never stop pages, revocations included, from reaching every gateway.
//!
//! The counts and lengths give a publisher a clear reason early; the entry bound is what
//! actually keeps pages small, and is measured on the entries the compiler makes.

/// Most paths (swagger path items) one API defines. WSO2 APIs rarely have more than a
/// few hundred resources.
pub const MAX_PATHS_PER_API: usize = 1_000;

/// Most operations (method and path) one API defines.
pub const MAX_OPERATIONS_PER_API: usize = 2_000;

/// Longest path template, bytes.
pub const MAX_PATH_TEMPLATE_BYTES: usize = 1_024;

/// Longest context as stored (tenants' under `/t/<domain>`), bytes.
pub const MAX_CONTEXT_BYTES: usize = 256;

/// Most bytes of one entry's JSON: an API's `api:` entry, the `route:` entries it makes,
/// or any other entry. A version of entries (512 KiB) always has room for one.
pub const MAX_ENTRY_BYTES: usize = 512 * 1024;

/// Most certificates trusted for one endpoint host and port (a backend's certificate and
/// its replacement during a rotation, a few private authorities).
pub const MAX_CERTIFICATES_PER_ENDPOINT: usize = 8;

/// Longest endpoint certificate, bytes of PEM (a certificate is one to a few KiB). With
/// [`MAX_CERTIFICATES_PER_ENDPOINT`], an endpoint's trust entry stays far within
/// [`MAX_ENTRY_BYTES`].
pub const MAX_TRUSTED_CERTIFICATE_BYTES: usize = 16 * 1024;

/// Largest signed page (compact JWS) a gateway takes: its body limit
/// (`apim_http::MAX_BODY_BYTES`, which the gateway checks this against).
pub const MAX_PAGE_BYTES: usize = 10 * 1024 * 1024;

/// Room in a signed page for everything but its base64url payload: the header (algorithm,
/// type, key id), the two dots and the Ed25519 signature (86 characters).
pub const JWS_OVERHEAD_BYTES: usize = 1_024;

/// Bytes of a compact JWS whose payload is `json_bytes` of JSON: base64url (no padding)
/// makes every 3 bytes 4 characters.
pub const fn signed_page_bytes(json_bytes: usize) -> usize {
    JWS_OVERHEAD_BYTES + (json_bytes * 4).div_ceil(3)
}

/// Most bytes of a page's JSON that still make a signed page within [`MAX_PAGE_BYTES`].
pub const MAX_PAGE_JSON_BYTES: usize = (MAX_PAGE_BYTES - JWS_OVERHEAD_BYTES) / 4 * 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_page_json_still_signs_within_the_page_bound() {
        assert!(signed_page_bytes(MAX_PAGE_JSON_BYTES) <= MAX_PAGE_BYTES);
        assert!(signed_page_bytes(MAX_PAGE_JSON_BYTES + 3) > MAX_PAGE_BYTES);
        assert_eq!(signed_page_bytes(3), JWS_OVERHEAD_BYTES + 4);
        assert_eq!(signed_page_bytes(4), JWS_OVERHEAD_BYTES + 6);
    }

    #[test]
    fn an_endpoints_trust_fits_in_an_entry() {
        // Each PEM is JSON-escaped (its newlines doubled at most) and quoted.
        let entry = MAX_CERTIFICATES_PER_ENDPOINT * (2 * MAX_TRUSTED_CERTIFICATE_BYTES + 3) + 64;
        assert!(entry < MAX_ENTRY_BYTES);
    }
}
