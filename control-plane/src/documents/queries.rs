//! The `api_documents` table: every query on it (WSO2's publisher and store document
//! operations). Rows go with their API by ON DELETE CASCADE.

use sqlx::{Any, AnyPool, Transaction};

use super::records::{DOCUMENT_COLUMNS, DocumentRow};
use crate::db::now;
use crate::error::Result;
use crate::http::pagination::Page;

/// Which of an API's documents a listing shows.
#[derive(Debug, Clone, Copy)]
pub enum Shown<'a> {
    /// Every document (the publisher).
    All,
    /// Those of one visibility (the store).
    Visible(&'a str),
}

impl Shown<'_> {
    /// The condition on the row beyond its API, with its placeholder as `$2`.
    fn condition(&self) -> &'static str {
        match self {
            Shown::All => "",
            Shown::Visible(_) => " AND visibility = $2",
        }
    }
}

/// One page of an API's documents by name, and how many there are in all.
pub async fn page(
    db: &AnyPool,
    api_id: &str,
    shown: Shown<'_>,
    page: Page,
) -> Result<(i64, Vec<DocumentRow>)> {
    let condition = shown.condition();
    // language=SQL
    let count = format!("SELECT COUNT(*) FROM api_documents WHERE api_id = $1{condition}");
    // language=SQL
    let select = format!(
        "SELECT {DOCUMENT_COLUMNS} FROM api_documents WHERE api_id = $1{condition} \
         ORDER BY name LIMIT {} OFFSET {}",
        page.limit, page.offset
    );
    let mut count = sqlx::query_as::<_, (i64,)>(&count).bind(api_id);
    let mut select = sqlx::query_as::<_, DocumentRow>(&select).bind(api_id);
    if let Shown::Visible(visibility) = shown {
        count = count.bind(visibility);
        select = select.bind(visibility);
    }
    let (total,) = count.fetch_one(db).await?;
    Ok((total, select.fetch_all(db).await?))
}

/// A document's row with its content, read together.
#[derive(sqlx::FromRow)]
struct WithContent {
    #[sqlx(flatten)]
    row: DocumentRow,
    content: Option<String>,
}

/// Every document of an API with its content (inline text, or a file's bytes in base64),
/// by name, in one query.
pub async fn all_with_content(
    db: &AnyPool,
    api_id: &str,
) -> Result<Vec<(DocumentRow, Option<String>)>> {
    // language=SQL
    let select = format!(
        "SELECT {DOCUMENT_COLUMNS}, content FROM api_documents WHERE api_id = $1 ORDER BY name"
    );
    let rows: Vec<WithContent> = sqlx::query_as(&select).bind(api_id).fetch_all(db).await?;
    Ok(rows.into_iter().map(|d| (d.row, d.content)).collect())
}

/// Document `id` of API `api_id`, if any.
pub async fn find(db: &AnyPool, api_id: &str, id: &str) -> Result<Option<DocumentRow>> {
    // language=SQL
    let select =
        format!("SELECT {DOCUMENT_COLUMNS} FROM api_documents WHERE api_id = $1 AND id = $2");
    Ok(sqlx::query_as(&select)
        .bind(api_id)
        .bind(id)
        .fetch_optional(db)
        .await?)
}

/// Whether the API has a document of this name.
pub async fn name_taken(db: &AnyPool, api_id: &str, name: &str) -> Result<bool> {
    // language=SQL
    let found: Option<(String,)> =
        sqlx::query_as("SELECT id FROM api_documents WHERE api_id = $1 AND name = $2")
            .bind(api_id)
            .bind(name)
            .fetch_optional(db)
            .await?;
    Ok(found.is_some())
}

/// Inserts a document without content; a unique violation when its name raced in.
pub async fn insert(
    db: impl sqlx::Executor<'_, Database = sqlx::Any>,
    row: &DocumentRow,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO api_documents (id, api_id, name, doc_type, other_type_name, summary, \
         source_type, source_url, visibility, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)",
    )
    .bind(&row.id)
    .bind(&row.api_id)
    .bind(&row.name)
    .bind(&row.doc_type)
    .bind(&row.other_type_name)
    .bind(&row.summary)
    .bind(&row.source_type)
    .bind(&row.source_url)
    .bind(&row.visibility)
    .bind(now())
    .execute(db)
    .await?;
    Ok(())
}

/// Replaces a document's metadata (its name stays); its content goes when its source
/// type changes, so that content of one kind is never served as another.
pub async fn update(db: &AnyPool, row: &DocumentRow, drop_content: bool) -> Result<()> {
    // language=SQL
    let clear = if drop_content {
        ", content = NULL, file_name = NULL, media_type = NULL"
    } else {
        ""
    };
    let update = format!(
        "UPDATE api_documents SET doc_type = $1, other_type_name = $2, summary = $3, \
         source_type = $4, source_url = $5, visibility = $6, updated_at = $7{clear} \
         WHERE api_id = $8 AND id = $9"
    );
    sqlx::query(&update)
        .bind(&row.doc_type)
        .bind(&row.other_type_name)
        .bind(&row.summary)
        .bind(&row.source_type)
        .bind(&row.source_url)
        .bind(&row.visibility)
        .bind(now())
        .bind(&row.api_id)
        .bind(&row.id)
        .execute(db)
        .await?;
    Ok(())
}

/// A document's content as stored: inline text, or a file in base64 with its name and
/// media type.
pub struct Content<'a> {
    pub stored: &'a str,
    pub file_name: Option<&'a str>,
    pub media_type: Option<&'a str>,
}

/// Stores a document's content, if its source type is still `source_type` (a concurrent
/// update may have changed it); whether it was stored.
pub async fn set_content(
    db: impl sqlx::Executor<'_, Database = sqlx::Any>,
    api_id: &str,
    id: &str,
    source_type: &str,
    content: Content<'_>,
) -> Result<bool> {
    // language=SQL
    let stored = sqlx::query(
        "UPDATE api_documents SET content = $1, file_name = $2, media_type = $3, updated_at = $4 \
         WHERE api_id = $5 AND id = $6 AND source_type = $7",
    )
    .bind(content.stored)
    .bind(content.file_name)
    .bind(content.media_type)
    .bind(now())
    .bind(api_id)
    .bind(id)
    .bind(source_type)
    .execute(db)
    .await?;
    Ok(stored.rows_affected() > 0)
}

/// A document's stored content, if it has any.
pub async fn content(db: &AnyPool, api_id: &str, id: &str) -> Result<Option<String>> {
    // language=SQL
    let row: Option<(Option<String>,)> =
        sqlx::query_as("SELECT content FROM api_documents WHERE api_id = $1 AND id = $2")
            .bind(api_id)
            .bind(id)
            .fetch_optional(db)
            .await?;
    Ok(row.and_then(|(content,)| content))
}

/// Deletes a document; whether there was one.
pub async fn delete(db: &AnyPool, api_id: &str, id: &str) -> Result<bool> {
    // language=SQL
    let deleted = sqlx::query("DELETE FROM api_documents WHERE api_id = $1 AND id = $2")
        .bind(api_id)
        .bind(id)
        .execute(db)
        .await?;
    Ok(deleted.rows_affected() > 0)
}

/// Deletes every document of API `api_id`, in `tx`.
pub async fn delete_all_of(tx: &mut Transaction<'_, Any>, api_id: &str) -> sqlx::Result<()> {
    crate::db::delete_api_rows(tx, "api_documents", api_id).await
}

/// Copies API `from`'s documents and their content to API `to` (a new version of it),
/// each under a new id.
pub async fn copy_documents_to_version(
    tx: &mut Transaction<'_, Any>,
    from: &str,
    to: &str,
) -> sqlx::Result<()> {
    let columns = "name, doc_type, other_type_name, summary, source_type, source_url, \
                   visibility, content, file_name, media_type, created_at, updated_at";
    crate::db::copy_api_rows(tx, "api_documents", columns, from, to, true).await
}

/// The `tenant`'s APIs with a document whose name, summary or text (inline or Markdown;
/// not a file's bytes) is `LIKE` the lower-case `pattern` (`\` escaping); with
/// `store_only`, only documents the store shows (`API_LEVEL`).
pub async fn apis_with_documents_like(
    db: &AnyPool,
    tenant: &str,
    pattern: &str,
    store_only: bool,
) -> sqlx::Result<std::collections::HashSet<String>> {
    let shown = if store_only {
        " AND visibility = 'API_LEVEL'"
    } else {
        ""
    };
    // language=SQL
    let sql = format!(
        "SELECT DISTINCT api_id FROM api_documents
         WHERE (LOWER(name) LIKE $1 ESCAPE '\\'
                OR LOWER(COALESCE(summary, '')) LIKE $1 ESCAPE '\\'
                OR (source_type IN ('INLINE', 'MARKDOWN')
                    AND LOWER(COALESCE(content, '')) LIKE $1 ESCAPE '\\'))
           AND api_id IN (SELECT id FROM apis WHERE tenant = $2){shown}"
    );
    let ids: Vec<(String,)> = sqlx::query_as(&sql)
        .bind(pattern)
        .bind(tenant)
        .fetch_all(db)
        .await?;
    Ok(ids.into_iter().map(|(id,)| id).collect())
}
