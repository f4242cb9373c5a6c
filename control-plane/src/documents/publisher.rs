//! The publisher's documents, `/api/am/publisher/v0.14/apis/{apiId}/documents` (WSO2
//! v0.14): `apim:api_view` reads, `apim:api_create` writes, in the caller's tenant.
//! Documents change nothing gateways see, so no change here asks for a compile.

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::content;
use super::queries::{self, Shown};
use super::records::{Document, DocumentRow};
use super::rules;
use crate::apis::tenant_api;
use crate::error::{Error, OnApiConstraint, Result};
use crate::http::PUBLISHER;
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get};
use crate::manifest::Touches;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{PUBLISHER}/apis/{{api_id}}/documents"),
            get(list_documents).post(create_document),
        )
        .route(
            &format!("{PUBLISHER}/apis/{{api_id}}/documents/{{document_id}}"),
            get(get_document)
                .put(update_document)
                .delete(delete_document),
        )
        .route(
            &format!("{PUBLISHER}/apis/{{api_id}}/documents/{{document_id}}/content"),
            get(get_content).post(upload_content),
        )
}

/// `limit` and `offset` of a document listing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    pub limit: Option<i64>,
    pub offset: Option<i64>,
}

/// One page of an API's documents, shown as `shown` says, in WSO2's `DocumentList`.
pub(super) async fn document_list(
    state: &AppState,
    api_id: &str,
    shown: Shown<'_>,
    q: ListQuery,
) -> Result<ListEnvelope<Document>> {
    let page = Page::new(q.limit, q.offset)?;
    let (total, rows) = queries::page(&state.db, api_id, shown, page).await?;
    let list = rows.into_iter().map(Document::from).collect();
    let link = |limit, offset| format!("/apis/{api_id}/documents?limit={limit}&offset={offset}");
    Ok(ListEnvelope::new(list, total, page, link).with_pagination(total, page))
}

/// `GET /apis/{apiId}/documents`.
async fn list_documents(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<Document>>> {
    caller.require(&state, Scope::ApiView)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    Ok(Json(document_list(&state, &api.id, Shown::All, q).await?))
}

/// `POST /apis/{apiId}/documents`: 201 with `Location` and the document (metadata only;
/// its content is uploaded apart). 409 when the API has a document of that name.
async fn create_document(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    JsonBody(body): JsonBody<Document>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let checked = rules::check(body)?;
    let already = || format!("Requested document '{}' already exists", checked.name);
    if queries::name_taken(&state.db, &api.id, &checked.name).await? {
        return Err(Error::AlreadyExists(already()));
    }
    let message = already();
    let row = checked.into_row(uuid::Uuid::new_v4().to_string(), api.id.clone());
    queries::insert(&state.db, &row)
        .await
        .on_api_constraint(&api.id, || message)?;
    tracing::info!(api = %api.id, document = %row.id, "document created");
    let location = format!("{PUBLISHER}/apis/{}/documents/{}", api.id, row.id);
    Ok((
        StatusCode::CREATED,
        Touches::nothing(),
        [(header::LOCATION, location)],
        Json(Document::from(row)),
    )
        .into_response())
}

/// The document of the caller's tenant's API, or 404 for either.
async fn tenant_document(
    state: &AppState,
    caller: &Caller,
    api_id: &str,
    document_id: &str,
) -> Result<DocumentRow> {
    let api = tenant_api(state, caller, api_id).await?;
    queries::find(&state.db, &api.id, document_id)
        .await?
        .ok_or_else(|| Error::NotFound("Document", document_id.to_string()))
}

/// `GET /apis/{apiId}/documents/{documentId}`.
async fn get_document(
    State(state): State<AppState>,
    caller: Caller,
    Path((api_id, document_id)): Path<(String, String)>,
) -> Result<Json<Document>> {
    caller.require(&state, Scope::ApiView)?;
    let doc = tenant_document(&state, &caller, &api_id, &document_id).await?;
    Ok(Json(doc.into()))
}

/// `PUT /apis/{apiId}/documents/{documentId}`: replaces the metadata; the name stays, as
/// in WSO2 2.6.
async fn update_document(
    State(state): State<AppState>,
    caller: Caller,
    Path((api_id, document_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<Document>,
) -> Result<(Touches, Json<Document>)> {
    caller.require(&state, Scope::ApiCreate)?;
    let old = tenant_document(&state, &caller, &api_id, &document_id).await?;
    let mut row = rules::check(body)?.into_row(old.id.clone(), old.api_id.clone());
    row.name = old.name.clone();
    let source_changed = row.source_type != old.source_type;
    if !source_changed {
        row.file_name = old.file_name;
        row.media_type = old.media_type;
    }
    queries::update(&state.db, &row, source_changed).await?;
    Ok((Touches::nothing(), Json(row.into())))
}

/// `DELETE /apis/{apiId}/documents/{documentId}`: 200 with no body.
async fn delete_document(
    State(state): State<AppState>,
    caller: Caller,
    Path((api_id, document_id)): Path<(String, String)>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    if !queries::delete(&state.db, &api.id, &document_id).await? {
        return Err(Error::NotFound("Document", document_id));
    }
    tracing::info!(api = %api.id, document = %document_id, "document deleted");
    Ok((Touches::nothing(), StatusCode::OK))
}

/// `GET /apis/{apiId}/documents/{documentId}/content`.
async fn get_content(
    State(state): State<AppState>,
    caller: Caller,
    Path((api_id, document_id)): Path<(String, String)>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiView)?;
    let doc = tenant_document(&state, &caller, &api_id, &document_id).await?;
    content::download(&state, &doc).await
}

/// `POST /apis/{apiId}/documents/{documentId}/content`: 200 with `Location` and the
/// document.
async fn upload_content(
    State(state): State<AppState>,
    caller: Caller,
    Path((api_id, document_id)): Path<(String, String)>,
    request: Request,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let doc = tenant_document(&state, &caller, &api_id, &document_id).await?;
    content::upload(&state, &doc, request).await?;
    let location = format!(
        "{PUBLISHER}/apis/{}/documents/{}/content",
        doc.api_id, doc.id
    );
    Ok((
        Touches::nothing(),
        [(header::LOCATION, location)],
        Json(Document::from(doc)),
    )
        .into_response())
}
