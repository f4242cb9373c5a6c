//! The `backend_jwt_tenants` table.

use sqlx::AnyPool;

use crate::db::now;

/// The tenants that switched the backend JWT on, sorted.
pub async fn enabled_tenants(db: &AnyPool) -> sqlx::Result<Vec<String>> {
    // language=SQL
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT tenant FROM backend_jwt_tenants ORDER BY tenant")
            .fetch_all(db)
            .await?;
    Ok(rows.into_iter().map(|(tenant,)| tenant).collect())
}

/// Whether `tenant` switched it on.
pub(super) async fn is_enabled(db: &AnyPool, tenant: &str) -> sqlx::Result<bool> {
    // language=SQL
    let row: Option<(String,)> =
        sqlx::query_as("SELECT tenant FROM backend_jwt_tenants WHERE tenant = $1")
            .bind(tenant)
            .fetch_optional(db)
            .await?;
    Ok(row.is_some())
}

/// Switches it on or off for `tenant`; whether that changed anything.
pub(super) async fn set_enabled(db: &AnyPool, tenant: &str, enabled: bool) -> sqlx::Result<bool> {
    let result = if enabled {
        // language=SQL
        sqlx::query(
            "INSERT INTO backend_jwt_tenants (tenant, changed_at) VALUES ($1, $2)
             ON CONFLICT (tenant) DO NOTHING",
        )
        .bind(tenant)
        .bind(now())
        .execute(db)
        .await?
    } else {
        // language=SQL
        sqlx::query("DELETE FROM backend_jwt_tenants WHERE tenant = $1")
            .bind(tenant)
            .execute(db)
            .await?
    };
    Ok(result.rows_affected() > 0)
}
