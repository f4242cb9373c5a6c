//! The `certificates` row and WSO2's `CertMetadata`, `CertificateInfo` and `Certificates`.

use serde::Serialize;

/// One certificate of a tenant, as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CertificateRow {
    pub tenant: String,
    pub alias: String,
    pub endpoint: String,
    pub pem: String,
    pub subject: String,
    pub version: String,
    pub not_before: i64,
    pub not_after: i64,
    pub created_at: i64,
}

/// The columns of [`CertificateRow`], in its order.
pub const CERTIFICATE_COLUMNS: &str =
    "tenant, alias, endpoint, pem, subject, version, not_before, not_after, created_at";

/// WSO2's `CertMetadata`, and how gateways trust the certificate (`trustedAs`, ours).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CertMetadata {
    alias: String,
    endpoint: String,
    trusted_as: Vec<&'static str>,
}

impl From<&CertificateRow> for CertMetadata {
    fn from(row: &CertificateRow) -> Self {
        CertMetadata {
            alias: row.alias.clone(),
            endpoint: row.endpoint.clone(),
            trusted_as: super::parse::trusted_as(&row.pem),
        }
    }
}

/// WSO2's `CertificateValidity`: Java's `Date.toString()`, in UTC.
#[derive(Debug, Serialize)]
pub struct CertificateValidity {
    from: String,
    to: String,
}

/// WSO2's `CertificateInfo`.
#[derive(Debug, Serialize)]
pub struct CertificateInfo {
    status: &'static str,
    validity: CertificateValidity,
    version: String,
    subject: String,
}

impl CertificateInfo {
    /// What a certificate says, `Active` or `Expired` at `now` (Unix seconds).
    pub fn of(row: &CertificateRow, now: i64) -> Self {
        CertificateInfo {
            status: if now > row.not_after {
                "Expired"
            } else {
                "Active"
            },
            validity: CertificateValidity {
                from: java_date(row.not_before),
                to: java_date(row.not_after),
            },
            version: row.version.clone(),
            subject: row.subject.clone(),
        }
    }
}

/// `Fri May 04 19:01:01 UTC 2018`, as WSO2 shows validity dates (`Date.toString()`).
fn java_date(unix_secs: i64) -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short] [month repr:short] [day] [hour]:[minute]:[second] UTC [year]"
    );
    time::OffsetDateTime::from_unix_timestamp(unix_secs)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

/// `pagination` of WSO2's `Certificates`.
#[derive(Debug, Serialize)]
pub struct Pagination {
    pub offset: i64,
    pub limit: i64,
    pub total: i64,
}

/// WSO2's `Certificates`: a page of them, listed under `certificates`.
#[derive(Debug, Serialize)]
pub struct Certificates {
    pub count: usize,
    pub next: String,
    pub previous: String,
    pub certificates: Vec<CertMetadata>,
    pub pagination: Pagination,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_like_java() {
        assert_eq!(java_date(1_525_460_461), "Fri May 04 19:01:01 UTC 2018");
    }
}
