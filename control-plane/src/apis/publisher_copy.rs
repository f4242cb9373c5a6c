//! `POST /api/am/publisher/v0.14/apis/copy-api?apiId&newVersion` (`apim:api_create`): a
//! new version of an API with everything but its subscriptions (its record, documents,
//! thumbnail, WSDL and mediation policies, in one transaction), CREATED, as WSO2's
//! `createNewAPIVersion` makes it.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::checks::{check_deployable, check_tiers_exist, tenant_api, touches_apis, unique_name};
use super::claim::{self, RouteClaim};
use super::queries::{self, NewApi};
use super::records::{ApiRecord, StoredApi};
use crate::error::{Error, OnDuplicate, Result};
use crate::http::PUBLISHER;
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, post};
use crate::scopes::Scope;
use crate::secrets::{DataKeys, Field};
use crate::state::AppState;
use crate::tokens::Caller;

pub fn router() -> Routes {
    Routes::new().route(&format!("{PUBLISHER}/apis/copy-api"), post(copy_api))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CopyQuery {
    api_id: Option<String>,
    new_version: Option<String>,
}

/// 201 with `Location` and the new version's record; 400 without both parameters or for
/// a version WSO2 refuses, 404 for an API the caller's tenant does not hold, 409 when
/// the version exists. The copy is not the default version (as in WSO2): a later update
/// with `isDefaultVersion` moves the default route to it.
async fn copy_api(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<CopyQuery>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let (Some(api_id), Some(new_version)) = (q.api_id, q.new_version) else {
        return Err(Error::Invalid(
            "Query parameters apiId and newVersion are required".into(),
        ));
    };
    let source = tenant_api(&state, &caller, &api_id).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let record = new_version_record(&state.data_keys, &source, &id, &new_version)?;
    // The copy takes the source's mediation policies with it.
    check_deployable(&state, &record, None, Some(&source.id)).await?;
    check_tiers_exist(&state, &source.tenant, &record).await?;

    let mut tx = state.db.begin().await?;
    claim::check_unique(
        &mut tx,
        &source.tenant,
        &source.name,
        &new_version,
        &source.context,
    )
    .await?;
    let routes = RouteClaim {
        api_id: &id,
        tenant: &source.tenant,
        name: &source.name,
        context: &source.context,
        version: &new_version,
    };
    routes.claim(&mut tx, false).await?;
    let new = NewApi {
        id: &id,
        tenant: &source.tenant,
        provider: &source.provider,
        name: &source.name,
        version: &new_version,
        context: &source.context,
        status: "CREATED",
        unique_name: unique_name(&source.provider, &source.name, &new_version),
        record: serde_json::to_string(&record).map_err(anyhow::Error::from)?,
    };
    queries::insert(&mut tx, new).await.on_duplicate(|| {
        format!(
            "A duplicate API already exists for {}-{new_version}",
            source.name
        )
    })?;
    copy_content(&mut tx, &source.id, &id).await?;
    tx.commit().await?;
    tracing::info!(api = %id, from = %source.id, version = %new_version, "API version created");
    Ok((
        StatusCode::CREATED,
        touches_apis([id.clone()]),
        [(header::LOCATION, format!("{PUBLISHER}/apis/{id}"))],
        Json(record.masked()),
    )
        .into_response())
}

/// What the publisher stores beside the record goes with the new version, as WSO2's
/// `createNewAPIVersion` copies it: documents with their content, the thumbnail, the
/// WSDL and the API's mediation policies (WSO2 leaves its fault sequences behind; they go
/// too). Tags are in the record.
async fn copy_content(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    from: &str,
    to: &str,
) -> sqlx::Result<()> {
    crate::documents::copy_documents_to_version(tx, from, to).await?;
    crate::thumbnails::copy_thumbnail_to_version(tx, from, to).await?;
    crate::wsdl::copy_wsdl_to_version(tx, from, to).await?;
    crate::mediation::copy_mediation_policies_to_version(tx, from, to).await
}

/// The source's record as the new version's: its id, version and state, its Swagger's
/// `info.version`, and the backend password sealed again for the new id (a sealed
/// password opens only for the API it was sealed for).
fn new_version_record(
    keys: &DataKeys,
    source: &StoredApi,
    id: &str,
    version: &str,
) -> Result<ApiRecord> {
    let mut record = source.full_record();
    record.id = Some(id.to_string());
    record.version = Some(version.to_string());
    record.status = Some("CREATED".to_string());
    record.is_default_version = Some(false);
    record.validate()?;
    if let Some(definition) = record.api_definition.as_deref() {
        record.api_definition = Some(with_info_version(definition, version));
    }
    if let Some(sealed) = record.stored_backend_password() {
        let clear = keys
            .open(Field::BackendPassword, &source.id, &sealed)
            .map_err(|err| err.context(format!("backend password of API {}", source.id)))?;
        record.set_backend_password(keys.seal(Field::BackendPassword, id, &clear));
    }
    Ok(record)
}

/// A Swagger definition with `info.version` set (unchanged when it is not an object).
fn with_info_version(definition: &str, version: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(definition) {
        Ok(mut doc) if doc["info"].is_object() => {
            doc["info"]["version"] = serde_json::Value::String(version.to_string());
            doc.to_string()
        }
        _ => definition.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_swagger_takes_the_new_version() {
        let copied = with_info_version(r#"{"swagger":"2.0","info":{"version":"v1"}}"#, "v2");
        assert!(copied.contains(r#""version":"v2""#), "{copied}");
        assert_eq!(with_info_version("[1]", "v2"), "[1]");
    }
}
