//! Endpoint certificates: what a gateway trusts for one backend host and port beside its
//! roots, from the certificates uploaded through the publisher's `/certificates`, each
//! bound to an endpoint URL as WSO2 2.6 binds them. One entry per host and port
//! ([`key::trust`](crate::key::trust)); a gateway reads it where it makes the TLS
//! connection, and nothing else uses it.

use serde::{Deserialize, Serialize};

use crate::bounds::{MAX_CERTIFICATES_PER_ENDPOINT, MAX_TRUSTED_CERTIFICATE_BYTES};

/// The certificates trusted for one endpoint's host and port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointTrust {
    /// Each certificate alone, PEM, in the order of their aliases.
    pub certificates: Vec<String>,
}

/// Where a certificate's endpoint URL is trusted: its host (lower-case, without brackets)
/// and port (the scheme's when the URL has none); `None` for what is not an http(s) or
/// ws(s) URL.
pub fn endpoint_of(url: &str) -> Option<(String, u16)> {
    apim_http::egress::host_and_port(url)
}

/// Why these certificates cannot all be trusted for one endpoint, if they cannot: more
/// than [`MAX_CERTIFICATES_PER_ENDPOINT`], or one longer than
/// [`MAX_TRUSTED_CERTIFICATE_BYTES`].
pub fn check(pems: &[&str]) -> Result<(), String> {
    if pems.len() > MAX_CERTIFICATES_PER_ENDPOINT {
        return Err(format!(
            "At most {MAX_CERTIFICATES_PER_ENDPOINT} certificates may be bound to one endpoint host and port"
        ));
    }
    if pems
        .iter()
        .any(|pem| pem.len() > MAX_TRUSTED_CERTIFICATE_BYTES)
    {
        return Err(format!(
            "An endpoint certificate must be at most {MAX_TRUSTED_CERTIFICATE_BYTES} bytes of PEM"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_host_and_port() {
        assert_eq!(
            endpoint_of("https://Backend.Example/api"),
            Some(("backend.example".into(), 443))
        );
        assert_eq!(
            endpoint_of("https://[::1]:9443/"),
            Some(("::1".into(), 9443))
        );
        assert_eq!(endpoint_of("http://b:8080"), Some(("b".into(), 8080)));
        assert_eq!(endpoint_of("backend.example"), None);
    }

    #[test]
    fn counts_and_sizes_are_bounded() {
        let small = "x".repeat(100);
        let pems = vec![small.as_str(); MAX_CERTIFICATES_PER_ENDPOINT];
        assert!(check(&pems).is_ok());
        let too_many = vec![small.as_str(); MAX_CERTIFICATES_PER_ENDPOINT + 1];
        assert!(check(&too_many).is_err());
        let large = "x".repeat(MAX_TRUSTED_CERTIFICATE_BYTES + 1);
        assert!(check(&[large.as_str()]).is_err());
    }
}
