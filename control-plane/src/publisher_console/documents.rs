//! An API's documents and thumbnail in the console: a document added (its record, then
//! its content: Markdown or inline text, a URL, or a file) or deleted, and the API's image
//! uploaded. Each through the publisher API with the user's token; a document whose
//! content the API refuses is deleted again, so that a refused form leaves nothing.

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::json;

use super::{after_form, api_page, delete_by_form, refused_form, upload_form};
use crate::http::PUBLISHER;
use crate::http::routes::{Routes, post};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::signin::Session;
use crate::web::visit::{Peer, call, encoded, peer_of};
use crate::web::{field, redirect};

/// Where a document's content comes from: WSO2's name, and what the page calls it.
pub(super) const SOURCES: [(&str, &str); 4] = [
    ("MARKDOWN", "Markdown, below"),
    ("INLINE", "Text or HTML, below"),
    ("URL", "A link"),
    ("FILE", "A file"),
];

pub fn router() -> Routes {
    Routes::new()
        .route("/publisher/apis/{api_id}/documents", post(add_document))
        .route(
            "/publisher/apis/{api_id}/documents/{document_id}/delete",
            post(delete_document),
        )
        .route("/publisher/apis/{api_id}/thumbnail", post(upload_thumbnail))
}

/// `POST /publisher/apis/{apiId}/documents`: a document added with its content.
#[utoipa::path(
    post,
    operation_id = "console_documents_add_document",
    path = "/publisher/apis/{api_id}/documents",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    request_body(content = String, content_type = "multipart/form-data", description = "csrf_token, name, type, summary, source (MARKDOWN, INLINE, URL or FILE), url, content, file"),
    responses(
        (status = 303, description = "Added (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The form or the publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn add_document(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
    request: Request,
) -> Response {
    let back = api_page(&api_id);
    let (session, form) = match upload_form(&state, &headers, request, &back).await {
        Ok(read) => read,
        Err(refused) => return *refused,
    };
    let peer = peer_of(peer);
    let text = |name: &str| field(&form.fields, name).unwrap_or_default().trim();
    let source = text("source");
    if !SOURCES.iter().any(|(name, _)| *name == source) {
        return refused_form(
            &state,
            &headers,
            "Choose where the document's content comes from.",
            &back,
        );
    }
    let mut document = json!({
        "name": text("name"),
        "type": text("type"),
        "summary": text("summary"),
        "sourceType": source,
        "visibility": "API_LEVEL",
    });
    if source == "URL" {
        document["sourceUrl"] = json!(text("url"));
    }
    let docs = format!("{PUBLISHER}/apis/{}/documents", encoded(&api_id));
    let session = Some(session);
    let created = call(
        &state,
        &session,
        peer,
        Call::new(Method::POST, docs.clone()).json(&document),
    )
    .await;
    let Some(document_id) = created.string_member("documentId") else {
        return refused_form(&state, &headers, &created.error_message(), &back);
    };
    let content_target = format!("{docs}/{}/content", encoded(&document_id));
    let inline = field(&form.fields, "content").unwrap_or_default();
    let content = match source {
        "MARKDOWN" | "INLINE" => Some(
            Call::new(Method::POST, content_target).multipart(&[("inlineContent", inline)], None),
        ),
        "FILE" => form.file.as_ref().map(|file| {
            Call::new(Method::POST, content_target).multipart(&[], Some(("file", file)))
        }),
        _ => None,
    };
    if source == "FILE" && content.is_none() {
        forget(&state, &session, peer, &docs, &document_id).await;
        return refused_form(&state, &headers, "Choose the document's file.", &back);
    }
    if let Some(content) = content {
        let stored = call(&state, &session, peer, content).await;
        if !stored.status.is_success() {
            forget(&state, &session, peer, &docs, &document_id).await;
            return refused_form(&state, &headers, &stored.error_message(), &back);
        }
    }
    redirect(StatusCode::SEE_OTHER, &format!("{back}?done=document"))
}

/// Deletes the document `document_id` again, when its content was refused.
async fn forget(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    docs: &str,
    document_id: &str,
) {
    let target = format!("{docs}/{}", encoded(document_id));
    call(state, session, peer, Call::new(Method::DELETE, target)).await;
}

/// `POST /publisher/apis/{apiId}/documents/{documentId}/delete`: the document deleted.
#[utoipa::path(
    post,
    operation_id = "console_documents_delete_document",
    path = "/publisher/apis/{api_id}/documents/{document_id}/delete",
    tag = "Pages",
    params(
        ("api_id" = String, Path, description = "The API's id"),
        ("document_id" = String, Path, description = "The document's id"),
    ),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token"),
    responses(
        (status = 303, description = "Deleted (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn delete_document(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path((api_id, document_id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let target = format!(
        "{PUBLISHER}/apis/{}/documents/{}",
        encoded(&api_id),
        encoded(&document_id)
    );
    let back = api_page(&api_id);
    let what = (target, "document-deleted");
    delete_by_form(&state, &headers, peer_of(peer), &body, &back, what).await
}

/// `POST /publisher/apis/{apiId}/thumbnail`: the API's image (PNG, JPEG or GIF).
#[utoipa::path(
    post,
    operation_id = "console_documents_upload_thumbnail",
    path = "/publisher/apis/{api_id}/thumbnail",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    request_body(content = String, content_type = "multipart/form-data", description = "csrf_token, file"),
    responses(
        (status = 303, description = "Uploaded (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The form or the publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn upload_thumbnail(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path(api_id): Path<String>,
    request: Request,
) -> Response {
    let back = api_page(&api_id);
    let (session, form) = match upload_form(&state, &headers, request, &back).await {
        Ok(read) => read,
        Err(refused) => return *refused,
    };
    let Some(file) = &form.file else {
        return refused_form(&state, &headers, "Choose an image.", &back);
    };
    let target = format!("{PUBLISHER}/apis/{}/thumbnail", encoded(&api_id));
    let request = Call::new(Method::POST, target).multipart(&[], Some(("file", file)));
    let answer = call(&state, &Some(session), peer_of(peer), request).await;
    after_form(&state, &headers, &answer, &back, "thumbnail")
}

/// These forms in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(add_document, delete_document, upload_thumbnail))]
pub struct Api;
