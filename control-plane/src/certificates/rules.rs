//! What an endpoint certificate's alias and endpoint must be, whether gateways could
//! trust it beside those bound to its endpoint already, and its row.

use apim_manifest::trust;

use super::parse::ParsedCertificate;
use super::queries;
use super::records::CertificateRow;
use crate::error::{Error, Result};
use crate::state::AppState;

/// Longest alias and endpoint taken.
const MAX_ALIAS_CHARS: usize = 100;
const MAX_ENDPOINT_CHARS: usize = 2048;

/// An alias is a path segment: letters, digits and `.`, `_`, `-`, `@`, at most 100.
pub(super) fn check_alias(alias: &str) -> Result<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@');
    if alias.is_empty() || alias.chars().count() > MAX_ALIAS_CHARS || !alias.chars().all(allowed) {
        return Err(Error::Invalid(format!(
            "The alias must be 1 to {MAX_ALIAS_CHARS} letters, digits, '.', '_', '-' or '@'"
        )));
    }
    Ok(())
}

/// The endpoint a certificate is for: an `http(s)://` URL, or a WebSocket API's `wss://`,
/// without spaces.
pub(super) fn check_endpoint(endpoint: &str) -> Result<()> {
    let url = ["https://", "http://", "wss://"]
        .iter()
        .find_map(|scheme| endpoint.strip_prefix(scheme));
    let fine = url.is_some_and(|rest| !rest.is_empty())
        && trust::endpoint_of(endpoint).is_some()
        && endpoint.chars().count() <= MAX_ENDPOINT_CHARS
        && !endpoint
            .chars()
            .any(|c| c.is_whitespace() || c.is_control());
    if !fine {
        return Err(Error::Invalid(format!(
            "The endpoint must be an http://, https:// or wss:// URL of at most {MAX_ENDPOINT_CHARS} characters"
        )));
    }
    Ok(())
}

/// Refuses a certificate gateways could not trust beside those bound to the same host and
/// port already (by any tenant: a gateway trusts them together) and those `pending` with
/// it (an import's), past the manifest's bounds.
pub(super) async fn check_room(
    state: &AppState,
    endpoint: &str,
    parsed: &ParsedCertificate,
    pending: &[CertificateRow],
) -> Result<()> {
    let bound_here = trust::endpoint_of(endpoint);
    let bindings = queries::bindings(&state.db).await?;
    let pending = pending
        .iter()
        .map(|row| (row.endpoint.clone(), row.pem.clone()));
    let all: Vec<(String, String)> = bindings.into_iter().chain(pending).collect();
    let mut pems: Vec<&str> = all
        .iter()
        .filter(|(other, _)| trust::endpoint_of(other) == bound_here)
        .map(|(_, pem)| pem.as_str())
        .collect();
    pems.push(&parsed.pem);
    trust::check(&pems).map_err(Error::Invalid)
}

/// The row of a checked certificate.
pub(super) fn row_of(
    tenant: &str,
    alias: &str,
    endpoint: &str,
    parsed: ParsedCertificate,
    now: i64,
) -> CertificateRow {
    CertificateRow {
        tenant: tenant.to_string(),
        alias: alias.to_string(),
        endpoint: endpoint.to_string(),
        pem: parsed.pem,
        subject: parsed.subject,
        version: parsed.version,
        not_before: parsed.not_before,
        not_after: parsed.not_after,
        created_at: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_and_endpoints_are_checked() {
        assert!(check_alias("wso2carbon").is_ok());
        assert!(check_alias("backend-1.example_x@acme").is_ok());
        for bad in ["", "a/b", "a b", "../x", &"a".repeat(101), "é"] {
            assert!(check_alias(bad).is_err(), "{bad}");
        }
        assert!(check_endpoint("https://www.abc.com").is_ok());
        for bad in ["www.abc.com", "https://", "https://a b", "ftp://x"] {
            assert!(check_endpoint(bad).is_err(), "{bad}");
        }
    }
}
