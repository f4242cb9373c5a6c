//! A document's content: uploaded as WSO2 takes it (a multipart form with `file` for a
//! `FILE` document or `inlineContent` for an inline one) and answered as WSO2 answers it
//! (the file as an attachment, the inline text, or `303 See Other` to a `URL` document).

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::queries::{self, Content};
use super::records::DocumentRow;
use super::rules::{MAX_FILE_BYTES, MAX_INLINE_BYTES, check_text};
use crate::error::{Error, Result};
use crate::http::multipart::{
    FormField, attachment, check_file_name, declared_media_type, read_form,
};
use crate::state::AppState;

/// Stores the content a form carries for `doc`.
pub async fn upload(state: &AppState, doc: &DocumentRow, request: Request) -> Result<()> {
    let limit = MAX_FILE_BYTES.max(MAX_INLINE_BYTES);
    let fields = read_form(request, state, &["file", "inlineContent"], limit).await?;
    let field = |name: &str| fields.iter().find(|f| f.name == name);
    match (field("file"), field("inlineContent")) {
        (Some(_), Some(_)) => Err(Error::Invalid(
            "Only one of 'file' and 'inlineContent' should be specified".into(),
        )),
        (None, None) => Err(Error::Invalid(
            "Either 'file' or 'inlineContent' should be specified".into(),
        )),
        (Some(file), None) => store_file(state, doc, file).await,
        (None, Some(text)) => store_inline(state, doc, text).await,
    }
}

async fn store_file(state: &AppState, doc: &DocumentRow, file: &FormField) -> Result<()> {
    if doc.source_type != "FILE" {
        return Err(Error::Invalid(format!(
            "Source type of document {} is not FILE",
            doc.id
        )));
    }
    if file.bytes.len() > MAX_FILE_BYTES {
        return Err(Error::PayloadTooLarge);
    }
    if let Some(name) = &file.file_name {
        check_file_name(name)?;
    }
    let media_type = declared_media_type(file.content_type.as_deref());
    let content = Content {
        stored: &STANDARD.encode(&file.bytes),
        file_name: file.file_name.as_deref(),
        media_type: Some(&media_type),
    };
    stored_or_conflict(state, doc, content).await
}

async fn store_inline(state: &AppState, doc: &DocumentRow, field: &FormField) -> Result<()> {
    if !doc.is_inline() {
        return Err(Error::Invalid(format!(
            "Source type of document {} is not INLINE",
            doc.id
        )));
    }
    if field.bytes.len() > MAX_INLINE_BYTES {
        return Err(Error::PayloadTooLarge);
    }
    let text = std::str::from_utf8(&field.bytes)
        .map_err(|_| Error::Invalid("inlineContent must be UTF-8 text".into()))?;
    check_text("inlineContent", text, MAX_INLINE_BYTES)?;
    let content = Content {
        stored: text,
        file_name: None,
        media_type: None,
    };
    stored_or_conflict(state, doc, content).await
}

/// Stores the content unless the document went meanwhile (404) or its source type
/// changed (409).
async fn stored_or_conflict(
    state: &AppState,
    doc: &DocumentRow,
    content: Content<'_>,
) -> Result<()> {
    if queries::set_content(&state.db, &doc.api_id, &doc.id, &doc.source_type, content).await? {
        return Ok(());
    }
    match queries::find(&state.db, &doc.api_id, &doc.id).await? {
        None => Err(Error::NotFound("Document", doc.id.clone())),
        Some(_) => Err(Error::Conflict(format!(
            "The source type of document {} changed while its content was uploaded",
            doc.id
        ))),
    }
}

/// The content of `doc` as WSO2 answers it; 404 when none was uploaded yet.
pub async fn download(state: &AppState, doc: &DocumentRow) -> Result<Response> {
    if doc.source_type == "URL" {
        let location = doc.source_url.as_deref().unwrap_or_default();
        let location = HeaderValue::from_str(location)
            .map_err(|e| anyhow::anyhow!("stored sourceUrl of document {}: {e}", doc.id))?;
        return Ok((StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response());
    }
    let Some(stored) = queries::content(&state.db, &doc.api_id, &doc.id).await? else {
        return Err(Error::NotFoundWhy(format!(
            "Document {} has no content yet",
            doc.id
        )));
    };
    if doc.is_inline() {
        let media_type = match doc.source_type.as_str() {
            "MARKDOWN" => "text/markdown; charset=utf-8",
            _ => "text/plain; charset=utf-8",
        };
        return Ok(untrusted((
            [(header::CONTENT_TYPE, HeaderValue::from_static(media_type))],
            stored,
        )));
    }
    let bytes = STANDARD
        .decode(stored)
        .map_err(|e| anyhow::anyhow!("stored file of document {}: {e}", doc.id))?;
    let media_type = doc
        .media_type
        .as_deref()
        .unwrap_or("application/octet-stream");
    let headers = [
        (header::CONTENT_TYPE, header_value(media_type)?),
        (
            header::CONTENT_DISPOSITION,
            header_value(&attachment(doc.file_name.as_deref()))?,
        ),
    ];
    Ok(untrusted((headers, bytes)))
}

fn header_value(value: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(value).map_err(|e| Error::Internal(anyhow::anyhow!("{value:?}: {e}")))
}

/// A response carrying what a publisher uploaded, which a browser must neither sniff
/// into something else nor run (an HTML or SVG file opened from the management origin).
pub fn untrusted(response: impl IntoResponse) -> Response {
    let mut response = response.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    response
}
