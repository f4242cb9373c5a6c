//! The `api_mediation_policies` table: every query on it (WSO2's API-specific mediation
//! policy operations). Rows go with their API by ON DELETE CASCADE.

use sqlx::{Any, AnyConnection, AnyPool, Transaction};

use super::records::{MEDIATION_COLUMNS, MediationRow};
use crate::db::now;
use crate::error::{OnApiConstraint, Result};
use crate::http::pagination::Page;

fn duplicate(row: &MediationRow) -> String {
    format!(
        "Mediation policy '{}' of type '{}' already exists",
        row.name, row.flow
    )
}

/// One page of an API's policies by flow and name, and how many there are in all.
pub async fn page(db: &AnyPool, api_id: &str, page: Page) -> Result<(i64, Vec<MediationRow>)> {
    // language=SQL
    let (total,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM api_mediation_policies WHERE api_id = $1")
            .bind(api_id)
            .fetch_one(db)
            .await?;
    // language=SQL
    let select = format!(
        "SELECT {MEDIATION_COLUMNS} FROM api_mediation_policies WHERE api_id = $1 \
         ORDER BY flow, name LIMIT {} OFFSET {}",
        page.limit, page.offset
    );
    let rows = sqlx::query_as(&select).bind(api_id).fetch_all(db).await?;
    Ok((total, rows))
}

/// Policy `id` of API `api_id`, if any.
pub async fn find(db: &AnyPool, api_id: &str, id: &str) -> Result<Option<MediationRow>> {
    // language=SQL
    let select = format!(
        "SELECT {MEDIATION_COLUMNS} FROM api_mediation_policies WHERE api_id = $1 AND id = $2"
    );
    Ok(sqlx::query_as(&select)
        .bind(api_id)
        .bind(id)
        .fetch_optional(db)
        .await?)
}

/// Inserts a policy; 409 when the API has one of that name and flow. The writes take a
/// connection, so that a write and its API's new revision commit together.
pub async fn insert(db: &mut AnyConnection, row: &MediationRow) -> Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO api_mediation_policies (id, api_id, name, flow, config, wasm_digest, \
         wasm_size, body_bytes, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
    )
    .bind(&row.id)
    .bind(&row.api_id)
    .bind(&row.name)
    .bind(&row.flow)
    .bind(&row.config)
    .bind(&row.wasm_digest)
    .bind(row.wasm_size)
    .bind(row.body_bytes)
    .bind(now())
    .execute(&mut *db)
    .await
    .on_api_constraint(&row.api_id, || duplicate(row))?;
    Ok(())
}

/// Replaces a policy's name, flow and content; whether there was one. 409 when that
/// name and flow are another policy's.
pub async fn update(db: &mut AnyConnection, row: &MediationRow) -> Result<bool> {
    // language=SQL
    let updated = sqlx::query(
        "UPDATE api_mediation_policies SET name = $1, flow = $2, config = $3, wasm_digest = $4, \
         wasm_size = $5, body_bytes = $6, updated_at = $7 WHERE api_id = $8 AND id = $9",
    )
    .bind(&row.name)
    .bind(&row.flow)
    .bind(&row.config)
    .bind(&row.wasm_digest)
    .bind(row.wasm_size)
    .bind(row.body_bytes)
    .bind(now())
    .bind(&row.api_id)
    .bind(&row.id)
    .execute(&mut *db)
    .await
    .on_api_constraint(&row.api_id, || duplicate(row))?;
    Ok(updated.rows_affected() > 0)
}

/// Deletes a policy; whether there was one.
pub async fn delete(db: &mut AnyConnection, api_id: &str, id: &str) -> Result<bool> {
    // language=SQL
    let deleted = sqlx::query("DELETE FROM api_mediation_policies WHERE api_id = $1 AND id = $2")
        .bind(api_id)
        .bind(id)
        .execute(&mut *db)
        .await?;
    Ok(deleted.rows_affected() > 0)
}

/// Deletes every policy of API `api_id`, in `tx`.
pub async fn delete_all_of(tx: &mut Transaction<'_, Any>, api_id: &str) -> sqlx::Result<()> {
    crate::db::delete_api_rows(tx, "api_mediation_policies", api_id).await
}

/// Copies API `from`'s mediation policies to API `to` (a new version of it), each under a new id.
pub async fn copy_mediation_policies_to_version(
    tx: &mut Transaction<'_, Any>,
    from: &str,
    to: &str,
) -> sqlx::Result<()> {
    let columns = "name, flow, config, wasm_digest, wasm_size, body_bytes, created_at, updated_at";
    crate::db::copy_api_rows(tx, "api_mediation_policies", columns, from, to, true).await
}

/// Every policy of these APIs (for the manifest compiler).
pub async fn of_apis(db: &AnyPool, api_ids: &[&str]) -> sqlx::Result<Vec<MediationRow>> {
    // language=SQL
    let select = format!("SELECT {MEDIATION_COLUMNS} FROM api_mediation_policies WHERE api_id");
    crate::db::rows_in(db, &select, api_ids).await
}

/// A new revision of API `api_id`, whose sequences name a policy that changed: the
/// compiler reads it again.
pub async fn touch_api(db: &mut AnyConnection, api_id: &str) -> Result<()> {
    // language=SQL
    sqlx::query("UPDATE apis SET updated_at = $1, revision = revision + 1 WHERE id = $2")
        .bind(now())
        .bind(api_id)
        .execute(&mut *db)
        .await?;
    Ok(())
}

/// Keeps a WebAssembly policy's bytes under their digest (once: the same bytes uploaded
/// again, by any API, are the same policy), as kept now (see [`forget_unused_wasm`]).
pub async fn keep_wasm(db: &mut AnyConnection, digest: &str, bytes: &[u8]) -> Result<()> {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    // language=SQL
    sqlx::query(
        "INSERT INTO wasm_policies (digest, size, bytes, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (digest) DO UPDATE SET created_at = $4",
    )
    .bind(digest)
    .bind(bytes.len() as i64)
    .bind(encoded)
    .bind(now())
    .execute(&mut *db)
    .await?;
    Ok(())
}

/// Policies kept for this long after their last upload are kept even when no policy
/// names them: an upload of the same bytes under way is not robbed of them.
const UNUSED_WASM_GRACE_SECS: i64 = 10 * 60;

/// Deletes the WebAssembly policies no mediation policy names any more (replaced,
/// deleted, or gone with their API), but those uploaded within the grace period.
pub async fn forget_unused_wasm(db: &mut AnyConnection) -> Result<u64> {
    // language=SQL
    let deleted = sqlx::query(
        "DELETE FROM wasm_policies WHERE created_at < $1 AND digest NOT IN \
         (SELECT wasm_digest FROM api_mediation_policies WHERE wasm_digest IS NOT NULL)",
    )
    .bind(now() - UNUSED_WASM_GRACE_SECS)
    .execute(&mut *db)
    .await?;
    Ok(deleted.rows_affected())
}

/// The bytes of the WebAssembly policy `digest`, if one is kept.
pub async fn wasm_bytes(db: &AnyPool, digest: &str) -> Result<Option<Vec<u8>>> {
    use base64::Engine as _;
    // language=SQL
    let row: Option<(String,)> =
        sqlx::query_as("SELECT bytes FROM wasm_policies WHERE digest = $1")
            .bind(digest)
            .fetch_optional(db)
            .await?;
    row.map(|(encoded,)| {
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| {
                crate::error::Error::Internal(anyhow::anyhow!("policy {digest} is not base64"))
            })
    })
    .transpose()
}
