//! The store's documents, `/api/am/store/v0.14/apis/{apiId}/documents` (WSO2 v0.14),
//! read-only and anonymous as the store's APIs are: the `API_LEVEL` documents of an API
//! the caller sees (an API or document they may not see is 404, as a missing one).

use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;

use super::content;
use super::publisher::{ListQuery, document_list};
use super::queries::{self, Shown};
use super::records::{Document, DocumentRow, STORE_VISIBILITY};
use crate::apis::visible_api;
use crate::error::{Error, Result};
use crate::http::STORE;
use crate::http::extract::QueryParams;
use crate::http::pagination::ListEnvelope;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::tokens::MaybeCaller;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{STORE}/apis/{{api_id}}/documents"),
            get(list_documents),
        )
        .route(
            &format!("{STORE}/apis/{{api_id}}/documents/{{document_id}}"),
            get(get_document),
        )
        .route(
            &format!("{STORE}/apis/{{api_id}}/documents/{{document_id}}/content"),
            get(get_content),
        )
}

/// `GET /apis/{apiId}/documents`.
async fn list_documents(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    Path(api_id): Path<String>,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<Document>>> {
    let api = visible_api(&state, caller.as_ref(), &api_id).await?;
    let shown = Shown::Visible(STORE_VISIBILITY);
    Ok(Json(document_list(&state, &api.id, shown, q).await?))
}

/// The store's document of an API the caller sees, or 404.
async fn visible_document(
    state: &AppState,
    caller: Option<&crate::tokens::Caller>,
    api_id: &str,
    document_id: &str,
) -> Result<DocumentRow> {
    let api = visible_api(state, caller, api_id).await?;
    queries::find(&state.db, &api.id, document_id)
        .await?
        .filter(|doc| doc.visibility == STORE_VISIBILITY)
        .ok_or_else(|| Error::NotFound("Document", document_id.to_string()))
}

/// `GET /apis/{apiId}/documents/{documentId}`.
async fn get_document(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    Path((api_id, document_id)): Path<(String, String)>,
) -> Result<Json<Document>> {
    let doc = visible_document(&state, caller.as_ref(), &api_id, &document_id).await?;
    Ok(Json(doc.into()))
}

/// `GET /apis/{apiId}/documents/{documentId}/content`.
async fn get_content(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    Path((api_id, document_id)): Path<(String, String)>,
) -> Result<Response> {
    let doc = visible_document(&state, caller.as_ref(), &api_id, &document_id).await?;
    content::download(&state, &doc).await
}
