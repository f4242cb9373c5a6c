//! An API's documents in the developer portal: each on a page of its own, Markdown and
//! inline ones rendered through the sanitiser (`web::markup`), URL ones linked, files
//! downloaded as attachments that a browser never opens in the portal's origin.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::DEVPORTAL;
use super::views::{DocumentCard, StoreApi};
use super::visits::{NAV, Peer, call, encoded, peer_of};
use crate::http::STORE;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::portal::Chrome;
use crate::web::{MessagePage, Page, markup, signin, with_cookie};

pub fn router() -> Routes {
    Routes::new()
        .route(
            "/devportal/apis/{api_id}/documents/{document_id}",
            get(document_page),
        )
        .route(
            "/devportal/apis/{api_id}/documents/{document_id}/file",
            get(document_file),
        )
}

/// What a document's page shows as its body.
enum DocumentBody {
    /// Sanitised HTML.
    Html(String),
    /// A link to where it is.
    Link(String),
    /// Where to download it.
    File(String),
    /// Nothing was uploaded yet.
    Missing,
}

#[derive(Template)]
#[template(path = "devportal/document.html")]
struct DocumentPage {
    title: String,
    chrome: Chrome,
    api_id: String,
    api_name: String,
    kind: String,
    summary: String,
    body: DocumentBody,
}

/// `GET /devportal/apis/{apiId}/documents/{documentId}`: a document's page.
#[utoipa::path(
    get,
    path = "/devportal/apis/{api_id}/documents/{document_id}",
    tag = "Pages",
    params(
        ("api_id" = String, Path, description = "The API's id"),
        ("document_id" = String, Path, description = "The document's id"),
    ),
    responses(
        (status = 200, description = "The document's page", content_type = "text/html", body = String),
        (status = 404, description = "No document the visitor may see", content_type = "text/html", body = String),
    )
)]
async fn document_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path((api_id, document_id)): Path<(String, String)>,
) -> Response {
    let peer = peer_of(peer);
    let session = signin::session(&state, &DEVPORTAL, &headers);
    let (api, doc) = (encoded(&api_id), encoded(&document_id));
    let base = format!("{STORE}/apis/{api}");
    let shown = call(&state, &session, peer, Call::get(base.clone())).await;
    let described = call(
        &state,
        &session,
        peer,
        Call::get(format!("{base}/documents/{doc}")),
    )
    .await;
    let (Some(shown), Some(document)) =
        (shown.json::<StoreApi>(), described.json::<DocumentCard>())
    else {
        let page = MessagePage::saying(
            "Not found",
            "There is no such document that you may see.",
            true,
        );
        return Page::render(StatusCode::NOT_FOUND, &page).into_response();
    };
    let body = match document.source_type.as_str() {
        "URL" if is_web_link(&document.source_url) => {
            DocumentBody::Link(document.source_url.clone())
        }
        "FILE" => DocumentBody::File(format!("/devportal/apis/{api}/documents/{doc}/file")),
        "INLINE" | "MARKDOWN" => {
            let content = call(
                &state,
                &session,
                peer,
                Call::get(format!("{base}/documents/{doc}/content")),
            )
            .await;
            if content.status.is_success() {
                let text = String::from_utf8_lossy(&content.body);
                DocumentBody::Html(if document.source_type == "MARKDOWN" {
                    markup::markdown(&text)
                } else {
                    markup::sanitised(&text)
                })
            } else {
                DocumentBody::Missing
            }
        }
        _ => DocumentBody::Missing,
    };
    let here = format!("/devportal/apis/{api}/documents/{doc}");
    let (chrome, cookie) = Chrome::of(&state, &DEVPORTAL, NAV, &headers, session.as_ref(), here);
    let page = DocumentPage {
        title: document.name.clone(),
        chrome,
        api_id,
        api_name: shown.name,
        kind: document.kind,
        summary: document.summary,
        body,
    };
    with_cookie(Page::render(StatusCode::OK, &page).into_response(), cookie)
}

/// `GET /devportal/apis/{apiId}/documents/{documentId}/file`: a FILE document, as an
/// attachment.
#[utoipa::path(
    get,
    path = "/devportal/apis/{api_id}/documents/{document_id}/file",
    tag = "Pages",
    params(
        ("api_id" = String, Path, description = "The API's id"),
        ("document_id" = String, Path, description = "The document's id"),
    ),
    responses(
        (status = 200, description = "The file", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 404, description = "No file the visitor may see"),
    )
)]
async fn document_file(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path((api_id, document_id)): Path<(String, String)>,
) -> Response {
    let session = signin::session(&state, &DEVPORTAL, &headers);
    let target = format!(
        "{STORE}/apis/{}/documents/{}/content",
        encoded(&api_id),
        encoded(&document_id)
    );
    let answer = call(&state, &session, peer_of(peer), Call::get(target)).await;
    if answer.status != StatusCode::OK {
        return StatusCode::NOT_FOUND.into_response();
    }
    let disposition = answer
        .headers
        .get(header::CONTENT_DISPOSITION)
        .filter(|d| d.as_bytes().starts_with(b"attachment"))
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("attachment"));
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("sandbox; default-src 'none'"),
            ),
        ],
        answer.body,
    )
        .into_response()
}

/// Whether `url` is a web page's address a document may link to.
fn is_web_link(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// These pages in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(document_page, document_file))]
pub struct Api;
