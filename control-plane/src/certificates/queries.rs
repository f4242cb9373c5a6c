//! Queries on `certificates`, always within one tenant.

use sqlx::AnyPool;

use super::records::{CERTIFICATE_COLUMNS, CertificateRow};

/// Inserts a certificate; a unique violation when the alias is taken in the tenant.
pub async fn insert(
    db: impl sqlx::Executor<'_, Database = sqlx::Any>,
    row: &CertificateRow,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(&format!(
        "INSERT INTO certificates ({CERTIFICATE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    ))
    .bind(&row.tenant)
    .bind(&row.alias)
    .bind(&row.endpoint)
    .bind(&row.pem)
    .bind(&row.subject)
    .bind(&row.version)
    .bind(row.not_before)
    .bind(row.not_after)
    .bind(row.created_at)
    .execute(db)
    .await?;
    Ok(())
}

/// A tenant's certificate by alias.
pub async fn find(db: &AnyPool, tenant: &str, alias: &str) -> sqlx::Result<Option<CertificateRow>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {CERTIFICATE_COLUMNS} FROM certificates WHERE tenant = $1 AND alias = $2"
    ))
    .bind(tenant)
    .bind(alias)
    .fetch_optional(db)
    .await
}

/// A tenant's certificates, by alias, those of `alias` and `endpoint` when given.
pub async fn list(
    db: &AnyPool,
    tenant: &str,
    alias: Option<&str>,
    endpoint: Option<&str>,
) -> sqlx::Result<Vec<CertificateRow>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {CERTIFICATE_COLUMNS} FROM certificates
         WHERE tenant = $1 AND ($2 = '' OR alias = $2) AND ($3 = '' OR endpoint = $3)
         ORDER BY alias"
    ))
    .bind(tenant)
    .bind(alias.unwrap_or_default())
    .bind(endpoint.unwrap_or_default())
    .fetch_all(db)
    .await
}

/// Replaces a certificate's content (alias and endpoint stay); whether it existed.
pub async fn replace(db: &AnyPool, row: &CertificateRow) -> sqlx::Result<bool> {
    // language=SQL
    let done = sqlx::query(
        "UPDATE certificates SET pem = $3, subject = $4, version = $5, not_before = $6, not_after = $7
         WHERE tenant = $1 AND alias = $2",
    )
    .bind(&row.tenant)
    .bind(&row.alias)
    .bind(&row.pem)
    .bind(&row.subject)
    .bind(&row.version)
    .bind(row.not_before)
    .bind(row.not_after)
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Deletes a certificate; whether it existed.
pub async fn delete(db: &AnyPool, tenant: &str, alias: &str) -> sqlx::Result<bool> {
    // language=SQL
    let done = sqlx::query("DELETE FROM certificates WHERE tenant = $1 AND alias = $2")
        .bind(tenant)
        .bind(alias)
        .execute(db)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Every tenant's certificates as gateways trust them: endpoint URL and PEM, by tenant and
/// alias (the order a gateway's trust lists them in).
pub async fn bindings(db: &AnyPool) -> sqlx::Result<Vec<(String, String)>> {
    // language=SQL
    sqlx::query_as("SELECT endpoint, pem FROM certificates ORDER BY tenant, alias")
        .fetch_all(db)
        .await
}
