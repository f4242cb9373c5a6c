//! The `applications` table (WSO2 store operations on applications).

use sqlx::{Any, AnyPool, Executor};

use super::records::{APP_COLUMNS, StoredApplication};
use crate::db::{now, rows_in};

/// Creates the user's DefaultApplication unless it exists; whether it was created.
pub(super) async fn insert_default(
    db: &AnyPool,
    id: &str,
    owner: &str,
    name: &str,
) -> sqlx::Result<bool> {
    // language=SQL
    let created = sqlx::query(
        "INSERT INTO applications (id, owner, name, throttling_tier, description, callback_url, group_id, token_type, status, attributes, created_at)
         VALUES ($1, $2, $3, 'Unlimited', 'This is the default application', '', '', 'DEFAULT', 'APPROVED', '{}', $4)
         ON CONFLICT (owner, name) DO NOTHING",
    )
    .bind(id)
    .bind(owner)
    .bind(name)
    .bind(now())
    .execute(db)
    .await?;
    Ok(created.rows_affected() == 1)
}

/// The application with this id, if any.
pub async fn find(db: &AnyPool, id: &str) -> sqlx::Result<Option<StoredApplication>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {APP_COLUMNS} FROM applications WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(db)
    .await
}

/// A user's applications, by name.
pub async fn owned_by(db: &AnyPool, owner: &str) -> sqlx::Result<Vec<StoredApplication>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {APP_COLUMNS} FROM applications WHERE owner = $1 ORDER BY name"
    ))
    .bind(owner)
    .fetch_all(db)
    .await
}

/// The applications of a tenant's users, by owner and name.
pub async fn of_tenant(db: &AnyPool, tenant: &str) -> sqlx::Result<Vec<StoredApplication>> {
    // The super tenant's users have no domain; a tenant's end with `@<domain>`. The
    // pattern narrows, the tenant of each owner decides (`_` in a domain is a wildcard).
    let (sql, pattern) = if tenant == crate::users::SUPER_TENANT {
        ("owner NOT LIKE $1", "%@%".to_string())
    } else {
        ("owner LIKE $1", format!("%@{tenant}"))
    };
    // language=SQL
    let rows: Vec<StoredApplication> = sqlx::query_as(&format!(
        "SELECT {APP_COLUMNS} FROM applications WHERE {sql} ORDER BY owner, name"
    ))
    .bind(pattern)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter(|app| crate::users::tenant_of(&app.owner) == tenant)
        .collect())
}

/// A new application's columns.
pub struct NewApplication<'a> {
    pub id: &'a str,
    pub owner: &'a str,
    pub name: &'a str,
    pub tier: &'a str,
    pub description: String,
    pub callback_url: String,
    pub group_id: String,
    pub token_type: String,
    pub attributes: String,
    /// APPROVED, or CREATED while its creation waits for an approval.
    pub status: &'a str,
}

/// Inserts an application; a unique violation when the owner has one of that name.
pub async fn insert<'e>(
    db: impl Executor<'e, Database = Any>,
    app: NewApplication<'_>,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO applications (id, owner, name, throttling_tier, description, callback_url, group_id, token_type, status, attributes, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(app.id)
    .bind(app.owner)
    .bind(app.name)
    .bind(app.tier)
    .bind(app.description)
    .bind(app.callback_url)
    .bind(app.group_id)
    .bind(app.token_type)
    .bind(app.status)
    .bind(app.attributes)
    .bind(now())
    .execute(db)
    .await?;
    Ok(())
}

/// Sets an application's status (its creation approved or rejected).
pub async fn set_status<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
    status: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("UPDATE applications SET status = $1 WHERE id = $2")
        .bind(status)
        .bind(id)
        .execute(db)
        .await?;
    Ok(())
}

/// Replaces an application's changeable columns (all but id, owner and status); a unique
/// violation when the owner has another of that name.
pub(super) async fn update(db: &AnyPool, app: &StoredApplication) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "UPDATE applications SET name = $1, throttling_tier = $2, description = $3, callback_url = $4,
         group_id = $5, token_type = $6, attributes = $7 WHERE id = $8",
    )
    .bind(&app.name)
    .bind(&app.throttling_tier)
    .bind(&app.description)
    .bind(&app.callback_url)
    .bind(&app.group_id)
    .bind(&app.token_type)
    .bind(&app.attributes)
    .bind(&app.id)
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes an application with its subscriptions, keys and the workflows about them, in
/// one transaction.
pub(super) async fn delete(db: &AnyPool, id: &str) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    crate::workflows::forget_application(&mut *tx, id).await?;
    for statement in [
        "DELETE FROM subscriptions WHERE application_id = $1",
        "DELETE FROM oauth_clients WHERE application_id = $1",
        "DELETE FROM applications WHERE id = $1",
    ] {
        sqlx::query(statement).bind(id).execute(&mut *tx).await?;
    }
    tx.commit().await
}

/// These applications (those that exist) as gateways see them.
pub async fn gateway_rows_of(db: &AnyPool, ids: &[&str]) -> sqlx::Result<Vec<GatewayRow>> {
    // language=SQL
    let select = "SELECT id, throttling_tier, name, owner FROM applications WHERE id";
    rows_in(db, select, ids).await
}

/// Every application as gateways see it.
pub async fn gateway_rows(db: &AnyPool) -> sqlx::Result<Vec<GatewayRow>> {
    // language=SQL
    sqlx::query_as("SELECT id, throttling_tier, name, owner FROM applications")
        .fetch_all(db)
        .await
}

/// An application as gateways see it: id, tier, name, owner.
pub type GatewayRow = (String, String, String, String);

/// The owners of applications on a tier of this name (any tenant's: the caller keeps its
/// own).
pub async fn owners_on_tier(db: &AnyPool, tier: &str) -> sqlx::Result<Vec<String>> {
    // language=SQL
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT owner FROM applications WHERE throttling_tier = $1")
            .bind(tier)
            .fetch_all(db)
            .await?;
    Ok(rows.into_iter().map(|(owner,)| owner).collect())
}
