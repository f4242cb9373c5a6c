//! The `apis.mcp` column.

use sqlx::AnyPool;

use crate::db::now;

/// Stores an API's MCP settings (JSON); a new revision of the API for the compiler.
pub async fn put(db: &AnyPool, api_id: &str, settings: &str) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("UPDATE apis SET mcp = $1, updated_at = $2, revision = revision + 1 WHERE id = $3")
        .bind(settings)
        .bind(now())
        .bind(api_id)
        .execute(db)
        .await?;
    Ok(())
}
