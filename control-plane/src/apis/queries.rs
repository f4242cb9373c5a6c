//! The `apis` table: every query on it (WSO2 publisher and store operations on APIs,
//! the compiler's reads, the data key's resealing).

use sqlx::{Any, AnyPool, Transaction};

use super::records::{API_COLUMNS, ApiRecord, ApiRow, StoredApi};
use super::search::Criterion;
use crate::db::{now, rows_in};
use crate::error::Result;
use crate::http::pagination::Page;

/// The API with this id or unique name (`provider-name-version`, `-AT-` or `@` for
/// tenants, `%2D` for dashes inside parts). `None` when missing.
pub async fn find(db: &AnyPool, id_or_name: &str) -> Result<Option<StoredApi>> {
    // language=SQL
    let by_id: Option<ApiRow> =
        sqlx::query_as(&format!("SELECT {API_COLUMNS} FROM apis WHERE id = $1"))
            .bind(id_or_name)
            .fetch_optional(db)
            .await?;
    let row = match by_id {
        Some(row) => Some(row),
        None => {
            let name = id_or_name
                .replace("%2D", "-")
                .replace("%2d", "-")
                .replace('@', "-AT-");
            // language=SQL
            sqlx::query_as(&format!(
                "SELECT {API_COLUMNS} FROM apis WHERE unique_name = $1"
            ))
            .bind(name)
            .fetch_optional(db)
            .await?
        }
    };
    row.map(StoredApi::try_from).transpose()
}

/// A tenant's APIs in these lifecycle states, by name and version.
pub async fn tenant_apis(db: &AnyPool, tenant: &str, states: &[&str]) -> Result<Vec<StoredApi>> {
    let placeholders: Vec<String> = (0..states.len()).map(|i| format!("${}", i + 2)).collect();
    // language=SQL
    let select = format!(
        "SELECT {API_COLUMNS} FROM apis WHERE tenant = $1 AND status IN ({}) ORDER BY name, version",
        placeholders.join(", ")
    );
    let mut query = sqlx::query_as::<_, ApiRow>(&select).bind(tenant);
    for state in states {
        query = query.bind(*state);
    }
    query
        .fetch_all(db)
        .await?
        .into_iter()
        .map(StoredApi::try_from)
        .collect()
}

/// One page of the tenant's APIs matching every criterion, by name and version, and how
/// many match in all. Criteria on columns are checked by the database, which then counts
/// and pages; only searches on record fields (description, tags) read whole records.
pub async fn search(
    db: &AnyPool,
    tenant: &str,
    criteria: &[Criterion],
    page: Page,
) -> Result<(i64, Vec<StoredApi>)> {
    let mut conditions = vec!["tenant = $1".to_string()];
    let mut values = vec![tenant.to_string()];
    let mut in_records = Vec::new();
    for criterion in criteria {
        match criterion.sql(values.len() + 1) {
            Some((condition, value)) => {
                conditions.push(condition);
                values.push(value);
            }
            None => in_records.push(criterion),
        }
    }
    let filter = conditions.join(" AND ");
    let select = |suffix: &str| {
        // language=SQL
        format!("SELECT {API_COLUMNS} FROM apis WHERE {filter} ORDER BY name, version{suffix}")
    };
    if !in_records.is_empty() {
        let rows: Vec<ApiRow> = bind_all(sqlx::query_as(&select("")), &values)
            .fetch_all(db)
            .await?;
        let mut matches = Vec::new();
        for row in rows {
            let api = StoredApi::try_from(row)?;
            if in_records.iter().all(|c| c.matches(&api)) {
                matches.push(api);
            }
        }
        return Ok((matches.len() as i64, page.slice(matches)));
    }
    // language=SQL
    let count = format!("SELECT COUNT(*) FROM apis WHERE {filter}");
    let (total,): (i64,) = bind_all(sqlx::query_as(&count), &values)
        .fetch_one(db)
        .await?;
    let paged = select(&format!(" LIMIT {} OFFSET {}", page.limit, page.offset));
    let rows: Vec<ApiRow> = bind_all(sqlx::query_as(&paged), &values)
        .fetch_all(db)
        .await?;
    Ok((
        total,
        rows.into_iter()
            .map(StoredApi::try_from)
            .collect::<Result<_>>()?,
    ))
}

/// Binds text values in order.
fn bind_all<'q, O>(
    mut query: sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>>,
    values: &'q [String],
) -> sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>> {
    for value in values {
        query = query.bind(value.as_str());
    }
    query
}

/// The `(name, version, context)` of the tenant's APIs named like `name` (ignoring case)
/// or on `context`, for WSO2's uniqueness rules.
pub(super) async fn similar(
    tx: &mut Transaction<'_, Any>,
    tenant: &str,
    name: &str,
    context: &str,
) -> sqlx::Result<Vec<(String, String, String)>> {
    // Two indexed lookups rather than one OR, which would read every API of the tenant.
    // language=SQL
    sqlx::query_as(
        "SELECT name, version, context FROM apis WHERE tenant = $1 AND LOWER(name) = LOWER($2)
         UNION ALL
         SELECT name, version, context FROM apis WHERE tenant = $1 AND context = $3",
    )
    .bind(tenant)
    .bind(name)
    .bind(context)
    .fetch_all(&mut **tx)
    .await
}

/// The tenant, name, context and stored record of the API with this id, if any.
pub(super) async fn owner_of(
    tx: &mut Transaction<'_, Any>,
    id: &str,
) -> sqlx::Result<Option<(String, String, String, String)>> {
    // language=SQL
    sqlx::query_as("SELECT tenant, name, context, record FROM apis WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await
}

/// A new API's columns.
pub(super) struct NewApi<'a> {
    pub id: &'a str,
    pub tenant: &'a str,
    pub provider: &'a str,
    pub name: &'a str,
    pub version: &'a str,
    pub context: &'a str,
    pub status: &'a str,
    pub unique_name: String,
    pub record: String,
}

/// Inserts an API; a unique violation when a duplicate raced past the checks.
pub(super) async fn insert(tx: &mut Transaction<'_, Any>, api: NewApi<'_>) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO apis (id, tenant, provider, name, version, context, status, unique_name, record, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)",
    )
    .bind(api.id)
    .bind(api.tenant)
    .bind(api.provider)
    .bind(api.name)
    .bind(api.version)
    .bind(api.context)
    .bind(api.status)
    .bind(api.unique_name)
    .bind(api.record)
    .bind(now())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Replaces an API's record.
pub(super) async fn save_record<'e>(
    db: impl sqlx::Executor<'e, Database = sqlx::Any>,
    id: &str,
    record: &ApiRecord,
) -> Result<()> {
    // language=SQL
    sqlx::query(
        "UPDATE apis SET record = $1, updated_at = $2, revision = revision + 1 WHERE id = $3",
    )
    .bind(serde_json::to_string(record).map_err(anyhow::Error::from)?)
    .bind(now())
    .bind(id)
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes an API's row.
pub(super) async fn delete(tx: &mut Transaction<'_, Any>, id: &str) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM apis WHERE id = $1")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The tenant's versions of `name` at a context other than `context`: id, context and
/// stored record.
pub(super) async fn versions_elsewhere(
    tx: &mut Transaction<'_, Any>,
    tenant: &str,
    name: &str,
    context: &str,
) -> sqlx::Result<Vec<(String, String, String)>> {
    // language=SQL
    sqlx::query_as(
        "SELECT id, context, record FROM apis WHERE tenant = $1 AND name = $2 AND context <> $3",
    )
    .bind(tenant)
    .bind(name)
    .bind(context)
    .fetch_all(&mut **tx)
    .await
}

/// The versions of an API of this tenant, name and provider: id, version, state and
/// stored record.
pub(super) async fn versions_of(
    tx: &mut Transaction<'_, Any>,
    tenant: &str,
    name: &str,
    provider: &str,
) -> sqlx::Result<Vec<(String, String, String, String)>> {
    // language=SQL
    sqlx::query_as(
        "SELECT id, version, status, record FROM apis WHERE tenant = $1 AND name = $2 AND provider = $3",
    )
    .bind(tenant)
    .bind(name)
    .bind(provider)
    .fetch_all(&mut **tx)
    .await
}

/// Moves an API from lifecycle state `from` to `to`, compare-and-set, so two concurrent
/// changes cannot both apply to the same state; whether it moved.
pub(super) async fn change_status<'e>(
    db: impl sqlx::Executor<'e, Database = Any>,
    id: &str,
    from: &str,
    to: &str,
) -> sqlx::Result<bool> {
    // language=SQL
    let changed = sqlx::query(
        "UPDATE apis SET status = $1, updated_at = $2, revision = revision + 1 WHERE id = $3 AND status = $4",
    )
    .bind(to)
    .bind(now())
    .bind(id)
    .bind(from)
    .execute(db)
    .await?;
    Ok(changed.rows_affected() > 0)
}

/// Every API's row.
pub async fn all_rows(db: &AnyPool) -> sqlx::Result<Vec<ApiRow>> {
    // language=SQL
    sqlx::query_as(&format!("SELECT {API_COLUMNS} FROM apis"))
        .fetch_all(db)
        .await
}

/// The rows of these APIs (those that exist).
pub async fn rows_of(db: &AnyPool, ids: &[&str]) -> sqlx::Result<Vec<ApiRow>> {
    // language=SQL
    let select = format!("SELECT {API_COLUMNS} FROM apis WHERE id");
    rows_in(db, &select, ids).await
}

/// Every API's `(id, revision, status)`.
pub async fn revisions(db: &AnyPool) -> sqlx::Result<Vec<(String, i64, String)>> {
    // language=SQL
    sqlx::query_as("SELECT id, revision, status FROM apis")
        .fetch_all(db)
        .await
}

/// `(id, record)` of the APIs whose stored record may hold a password.
pub async fn records_with_password(db: &AnyPool) -> sqlx::Result<Vec<(String, String)>> {
    // Only records that may hold a password are read and parsed.
    // language=SQL
    sqlx::query_as("SELECT id, record FROM apis WHERE record LIKE '%\"password\"%'")
        .fetch_all(db)
        .await
}

/// Replaces an API's stored record if it is still `stored`; the rows changed (0 or 1).
pub async fn replace_record(
    db: &AnyPool,
    id: &str,
    record: &str,
    stored: &str,
) -> sqlx::Result<u64> {
    // language=SQL
    let done = sqlx::query("UPDATE apis SET record = $1 WHERE id = $2 AND record = $3")
        .bind(record)
        .bind(id)
        .bind(stored)
        .execute(db)
        .await?;
    Ok(done.rows_affected())
}
