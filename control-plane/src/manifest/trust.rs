//! The endpoints' trust entries: every tenant's certificates, grouped by the host and port
//! of the endpoint each is bound to. Uploads are refused past the manifest's bounds; rows
//! past them anyway (written before the bounds, or straight into the database) are left
//! out here, so that one endpoint can never make an entry gateways refuse.

use std::collections::{BTreeMap, HashSet};

use apim_manifest::bounds::{MAX_CERTIFICATES_PER_ENDPOINT, MAX_TRUSTED_CERTIFICATE_BYTES};
use apim_manifest::entries::json;
use apim_manifest::key;
use apim_manifest::trust::{EndpointTrust, endpoint_of};
use sqlx::AnyPool;

use super::compile::Entries;

/// The trust entries of every endpoint with certificates, or of `only` these (host and
/// port); an endpoint left without certificates has no entry.
pub async fn entries(db: &AnyPool, only: Option<&HashSet<(String, u16)>>) -> sqlx::Result<Entries> {
    let bindings = crate::certificates::bindings(db).await?;
    let mut trusted: BTreeMap<(String, u16), EndpointTrust> = BTreeMap::new();
    for (url, pem) in bindings {
        let Some(endpoint) = endpoint_of(&url) else {
            continue;
        };
        if only.is_some_and(|only| !only.contains(&endpoint)) {
            continue;
        }
        let trust = trusted.entry(endpoint).or_default();
        if within_bounds(trust, &pem, &url) {
            trust.certificates.push(pem);
        }
    }
    Ok(trusted
        .into_iter()
        .map(|((host, port), trust)| (key::trust(&host, port), json(&trust)))
        .collect())
}

/// Whether `pem` still fits in `trust`; logged when it does not.
fn within_bounds(trust: &EndpointTrust, pem: &str, url: &str) -> bool {
    let fits = trust.certificates.len() < MAX_CERTIFICATES_PER_ENDPOINT
        && pem.len() <= MAX_TRUSTED_CERTIFICATE_BYTES;
    if !fits {
        tracing::error!(endpoint = %url, "a certificate past the manifest's bounds is left out of the endpoint's trust");
    }
    fits
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn bind(db: &AnyPool, tenant: &str, alias: &str, endpoint: &str, pem: &str) {
        // language=SQL
        sqlx::query(
            "INSERT INTO certificates (tenant, alias, endpoint, pem, subject, version, not_before, not_after, created_at)
             VALUES ($1, $2, $3, $4, 'CN=x', 'V3', 0, 0, 0)",
        )
        .bind(tenant)
        .bind(alias)
        .bind(endpoint)
        .bind(pem)
        .execute(db)
        .await
        .unwrap();
    }

    /// Certificates group by host and port whatever the URL's path or case, a touched
    /// endpoint compiles alone, and rows past the bounds are left out.
    #[tokio::test]
    async fn certificates_group_by_host_and_port_within_bounds() {
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        bind(&db, "carbon.super", "a", "https://B.example/api", "A").await;
        bind(&db, "acme.com", "b", "https://b.example:443", "B").await;
        bind(&db, "carbon.super", "c", "https://b.example:8443/", "C").await;
        let large = "x".repeat(MAX_TRUSTED_CERTIFICATE_BYTES + 1);
        bind(&db, "carbon.super", "d", "https://b.example:8443/", &large).await;
        for n in 0..MAX_CERTIFICATES_PER_ENDPOINT + 2 {
            bind(
                &db,
                "carbon.super",
                &format!("many{n}"),
                "https://m.example",
                "M",
            )
            .await;
        }

        let all = entries(&db, None).await.unwrap();
        let trust = |key: &str| -> EndpointTrust { serde_json::from_str(&all[key]).unwrap() };
        assert_eq!(trust("trust:b.example:443").certificates, ["B", "A"]);
        assert_eq!(trust("trust:b.example:8443").certificates, ["C"]);
        let many = trust("trust:m.example:443").certificates.len();
        assert_eq!(many, MAX_CERTIFICATES_PER_ENDPOINT);

        let only = HashSet::from([("b.example".to_string(), 8443)]);
        let touched = entries(&db, Some(&only)).await.unwrap();
        assert_eq!(touched.keys().collect::<Vec<_>>(), ["trust:b.example:8443"]);
    }
}
