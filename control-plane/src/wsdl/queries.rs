//! The `api_wsdls` table: an API's one WSDL (WSO2's publisher WSDL operations). Rows go
//! with their API by ON DELETE CASCADE.

use sqlx::{Any, AnyPool, Transaction};

use crate::db::now;
use crate::error::{OnApiConstraint, Result};

/// A row of `api_wsdls`: the file name and the definition.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WsdlRow {
    pub name: String,
    pub definition: String,
}

/// The API's WSDL, if it has one.
pub async fn find(db: &AnyPool, api_id: &str) -> Result<Option<WsdlRow>> {
    // language=SQL
    Ok(
        sqlx::query_as("SELECT name, definition FROM api_wsdls WHERE api_id = $1")
            .bind(api_id)
            .fetch_optional(db)
            .await?,
    )
}

/// Stores the API's WSDL, replacing any earlier one.
pub async fn put(
    db: impl sqlx::Executor<'_, Database = sqlx::Any>,
    api_id: &str,
    row: &WsdlRow,
) -> Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO api_wsdls (api_id, name, definition, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (api_id) DO UPDATE SET name = $2, definition = $3, updated_at = $4",
    )
    .bind(api_id)
    .bind(&row.name)
    .bind(&row.definition)
    .bind(now())
    .execute(db)
    .await
    .on_api_constraint(api_id, || format!("API {api_id} has a WSDL"))?;
    Ok(())
}

/// Copies API `from`'s WSDL to API `to` (a new version of it), if it has one.
pub async fn copy_wsdl_to_version(
    tx: &mut Transaction<'_, Any>,
    from: &str,
    to: &str,
) -> sqlx::Result<()> {
    let columns = "name, definition, updated_at";
    crate::db::copy_api_rows(tx, "api_wsdls", columns, from, to, false).await
}

/// Deletes API `api_id`'s WSDL, if it has one, in `tx`.
pub async fn delete_of(tx: &mut Transaction<'_, Any>, api_id: &str) -> sqlx::Result<()> {
    crate::db::delete_api_rows(tx, "api_wsdls", api_id).await
}
