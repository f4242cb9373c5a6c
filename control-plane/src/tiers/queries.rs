//! Queries on `tiers` and `tier_permissions`, always within one tenant and level (but
//! for [`all`], which the manifest compiler reads).

use sqlx::AnyPool;

use super::records::{PermissionRow, TIER_COLUMNS, TierRow};

/// A tenant's stored tiers of a level, by name.
pub async fn of_level(db: &AnyPool, tenant: &str, level: &str) -> sqlx::Result<Vec<TierRow>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {TIER_COLUMNS} FROM tiers WHERE tenant = $1 AND level = $2 ORDER BY name"
    ))
    .bind(tenant)
    .bind(level)
    .fetch_all(db)
    .await
}

/// Every stored tier of every tenant.
pub async fn all(db: &AnyPool) -> sqlx::Result<Vec<TierRow>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {TIER_COLUMNS} FROM tiers ORDER BY tenant, level, name"
    ))
    .fetch_all(db)
    .await
}

/// Stores a tier; a unique violation when the tenant has one of its name at its level.
pub async fn insert(db: &AnyPool, row: &TierRow) -> sqlx::Result<()> {
    write(db, row, "").await
}

/// Stores a tier in place of the one of its name (a default changed for the first time
/// has no row yet).
pub async fn upsert(db: &AnyPool, row: &TierRow) -> sqlx::Result<()> {
    // language=SQL
    let replace =
        "ON CONFLICT (tenant, level, name) DO UPDATE SET description = excluded.description,
             request_count = excluded.request_count, unit_time = excluded.unit_time,
             tier_plan = excluded.tier_plan, stop_on_quota_reach = excluded.stop_on_quota_reach,
             attributes = excluded.attributes";
    write(db, row, replace).await
}

/// Inserts `row`, with `on_conflict` (empty: none) deciding what a row of its name does.
async fn write(db: &AnyPool, row: &TierRow, on_conflict: &str) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(&format!(
        "INSERT INTO tiers ({TIER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         {on_conflict}"
    ))
    .bind(&row.tenant)
    .bind(&row.level)
    .bind(&row.name)
    .bind(&row.description)
    .bind(row.request_count)
    .bind(row.unit_time)
    .bind(&row.tier_plan)
    .bind(row.stop_on_quota_reach)
    .bind(&row.attributes)
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes a tier and its permissions; whether it existed.
pub async fn delete(db: &AnyPool, tenant: &str, level: &str, name: &str) -> sqlx::Result<bool> {
    let mut tx = db.begin().await?;
    // language=SQL
    let done = sqlx::query("DELETE FROM tiers WHERE tenant = $1 AND level = $2 AND name = $3")
        .bind(tenant)
        .bind(level)
        .bind(name)
        .execute(&mut *tx)
        .await?;
    // language=SQL
    sqlx::query("DELETE FROM tier_permissions WHERE tenant = $1 AND level = $2 AND name = $3")
        .bind(tenant)
        .bind(level)
        .bind(name)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(done.rows_affected() > 0)
}

/// A tenant's tier permissions of a level.
pub async fn permissions(
    db: &AnyPool,
    tenant: &str,
    level: &str,
) -> sqlx::Result<Vec<PermissionRow>> {
    // language=SQL
    sqlx::query_as(
        "SELECT name, permission_type, roles FROM tier_permissions WHERE tenant = $1 AND level = $2",
    )
    .bind(tenant)
    .bind(level)
    .fetch_all(db)
    .await
}

/// Sets who may use a tier.
pub async fn set_permission(
    db: &AnyPool,
    tenant: &str,
    level: &str,
    name: &str,
    permission_type: &str,
    roles: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO tier_permissions (tenant, level, name, permission_type, roles) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant, level, name) DO UPDATE SET permission_type = excluded.permission_type,
             roles = excluded.roles",
    )
    .bind(tenant)
    .bind(level)
    .bind(name)
    .bind(permission_type)
    .bind(roles)
    .execute(db)
    .await?;
    Ok(())
}
