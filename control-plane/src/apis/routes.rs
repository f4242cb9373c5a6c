//! Gateway routes and who owns them. A route prefix (`<context>/<version>`, and
//! `<context>` for a default version) leads to one API across the whole platform: the
//! `api_routes` table's primary key says so, whatever tenant asks, so no API can take
//! another's traffic by claiming the same prefix.

use apim_manifest::entries::route_prefixes;
use sqlx::{Any, AnyPool, Transaction};

/// A prefix another API holds.
#[derive(Debug)]
pub struct Taken {
    /// The prefix.
    pub prefix: String,
    /// The API holding it.
    pub holder: String,
}

/// Where an API with this context and version is routed.
pub fn prefixes(context: &str, version: &str, default_version: bool) -> Vec<String> {
    route_prefixes(context, version, default_version).collect()
}

/// The API holding a prefix, if any.
pub async fn holder(tx: &mut Transaction<'_, Any>, prefix: &str) -> sqlx::Result<Option<String>> {
    // language=SQL
    let row: Option<(String,)> = sqlx::query_as("SELECT api_id FROM api_routes WHERE prefix = $1")
        .bind(prefix)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(row.map(|(id,)| id))
}

/// Claims prefixes for an API; the first one another API holds when any is taken (the
/// caller then rolls back).
pub async fn claim(
    tx: &mut Transaction<'_, Any>,
    api_id: &str,
    prefixes: &[String],
) -> sqlx::Result<Result<(), Taken>> {
    for prefix in prefixes {
        if let Some(holder) = claim_one(tx, api_id, prefix).await? {
            return Ok(Err(Taken {
                prefix: prefix.clone(),
                holder,
            }));
        }
    }
    Ok(Ok(()))
}

/// Claims one prefix; the other API holding it, if one does. A concurrent claim of the
/// same prefix waits on the key until the first commits, then finds it held.
async fn claim_one(
    tx: &mut Transaction<'_, Any>,
    api_id: &str,
    prefix: &str,
) -> sqlx::Result<Option<String>> {
    // language=SQL
    sqlx::query(
        "INSERT INTO api_routes (prefix, api_id) VALUES ($1, $2) ON CONFLICT (prefix) DO NOTHING",
    )
    .bind(prefix)
    .bind(api_id)
    .execute(&mut **tx)
    .await?;
    Ok(holder(tx, prefix).await?.filter(|holder| holder != api_id))
}

/// Hands a prefix over to another API (a new default version taking the bare context).
pub async fn transfer(
    tx: &mut Transaction<'_, Any>,
    prefix: &str,
    to_api: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("UPDATE api_routes SET api_id = $1 WHERE prefix = $2")
        .bind(to_api)
        .bind(prefix)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Gives up one prefix of an API.
pub async fn release(
    tx: &mut Transaction<'_, Any>,
    api_id: &str,
    prefix: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM api_routes WHERE api_id = $1 AND prefix = $2")
        .bind(api_id)
        .bind(prefix)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Gives up every prefix of an API (it is deleted).
pub async fn release_all(tx: &mut Transaction<'_, Any>, api_id: &str) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM api_routes WHERE api_id = $1")
        .bind(api_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Fills the table for APIs stored before it existed: each claims its prefixes, lowest
/// id first (as gateways broke ties); a prefix already held stays with its holder and is
/// logged, for an operator to resolve.
pub async fn backfill(db: &AnyPool) -> anyhow::Result<()> {
    // language=SQL
    let (claimed,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM api_routes")
        .fetch_one(db)
        .await?;
    if claimed > 0 {
        return Ok(());
    }
    // language=SQL
    let apis: Vec<(String, String, String, String)> =
        sqlx::query_as("SELECT id, context, version, record FROM apis ORDER BY id")
            .fetch_all(db)
            .await?;
    if apis.is_empty() {
        return Ok(());
    }
    let mut tx = db.begin().await?;
    for (id, context, version, record) in &apis {
        let default_version = serde_json::from_str::<serde_json::Value>(record)
            .ok()
            .and_then(|r| r["isDefaultVersion"].as_bool())
            .unwrap_or(false);
        for prefix in prefixes(context, version, default_version) {
            if let Some(holder) = claim_one(&mut tx, id, &prefix).await? {
                tracing::warn!(api = %id, %prefix, %holder,
                    "route already held by another API, which keeps it");
            }
        }
    }
    tx.commit().await?;
    tracing::info!(apis = apis.len(), "routes recorded for existing APIs");
    Ok(())
}
