//! The `api_thumbnails` table: an API's one thumbnail (WSO2's publisher and store
//! thumbnail operations). Rows go with their API by ON DELETE CASCADE.

use sqlx::{Any, AnyPool, Transaction};

use crate::db::now;
use crate::error::{OnApiConstraint, Result};

/// A row of `api_thumbnails`: the image in base64 and its media type.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ThumbnailRow {
    pub media_type: String,
    pub image: String,
}

/// The API's thumbnail, if it has one.
pub async fn find(db: &AnyPool, api_id: &str) -> Result<Option<ThumbnailRow>> {
    // language=SQL
    Ok(
        sqlx::query_as("SELECT media_type, image FROM api_thumbnails WHERE api_id = $1")
            .bind(api_id)
            .fetch_optional(db)
            .await?,
    )
}

/// Stores the API's thumbnail, replacing any earlier one.
pub async fn put(
    db: impl sqlx::Executor<'_, Database = sqlx::Any>,
    api_id: &str,
    row: &ThumbnailRow,
) -> Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO api_thumbnails (api_id, media_type, image, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (api_id) DO UPDATE SET media_type = $2, image = $3, updated_at = $4",
    )
    .bind(api_id)
    .bind(&row.media_type)
    .bind(&row.image)
    .bind(now())
    .execute(db)
    .await
    .on_api_constraint(api_id, || format!("API {api_id} has a thumbnail"))?;
    Ok(())
}

/// Copies API `from`'s thumbnail to API `to` (a new version of it), if it has one.
pub async fn copy_thumbnail_to_version(
    tx: &mut Transaction<'_, Any>,
    from: &str,
    to: &str,
) -> sqlx::Result<()> {
    let columns = "media_type, image, updated_at";
    crate::db::copy_api_rows(tx, "api_thumbnails", columns, from, to, false).await
}

/// Deletes API `api_id`'s thumbnail, if it has one, in `tx`.
pub async fn delete_of(tx: &mut Transaction<'_, Any>, api_id: &str) -> sqlx::Result<()> {
    crate::db::delete_api_rows(tx, "api_thumbnails", api_id).await
}
