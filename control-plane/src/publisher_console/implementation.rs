//! An API's implementation details in the console: its WSDL uploaded, and the
//! certificates its endpoints present added or deleted (a tenant's certificates are bound
//! to endpoint URLs, as in WSO2 2.6, so the page offers the API's own endpoints). Each
//! through the publisher API with the user's token, which decides it.

use apim_manifest::trust;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use super::{after_form, api_page, delete_by_form, refused_form, upload_form};
use crate::http::PUBLISHER;
use crate::http::routes::{Routes, post};
use crate::state::AppState;
use crate::web::calls::Call;
use crate::web::field;
use crate::web::signin::Session;
use crate::web::visit::{Peer, call, encoded, peer_of};

pub fn router() -> Routes {
    Routes::new()
        .route("/publisher/apis/{api_id}/wsdl", post(upload_wsdl))
        .route(
            "/publisher/apis/{api_id}/certificates",
            post(add_certificate),
        )
        .route(
            "/publisher/apis/{api_id}/certificates/{alias}/delete",
            post(delete_certificate),
        )
}

/// Certificates of the tenant the API page looks through.
const MAX_LISTED_CERTIFICATES: usize = 500;
/// The WSDL's file name when the browser sends none.
const DEFAULT_WSDL_NAME: &str = "service.wsdl";

/// `POST /publisher/apis/{apiId}/wsdl`: the API's WSDL (a WSDL 1.1 file).
#[utoipa::path(
    post,
    operation_id = "console_implementation_upload_wsdl",
    path = "/publisher/apis/{api_id}/wsdl",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    request_body(content = String, content_type = "multipart/form-data", description = "csrf_token, file"),
    responses(
        (status = 303, description = "Saved (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The form or the publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn upload_wsdl(
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
        return refused_form(&state, &headers, "Choose a WSDL file.", &back);
    };
    let Ok(definition) = std::str::from_utf8(&file.bytes) else {
        return refused_form(&state, &headers, "The WSDL must be UTF-8 text.", &back);
    };
    let name = Some(file.file_name.trim())
        .filter(|name| !name.is_empty())
        .unwrap_or(DEFAULT_WSDL_NAME);
    let target = format!("{PUBLISHER}/apis/{}/wsdl", encoded(&api_id));
    let body = json!({"name": name, "wsdlDefinition": definition});
    let request = Call::new(Method::PUT, target).json(&body);
    let answer = call(&state, &Some(session), peer_of(peer), request).await;
    after_form(&state, &headers, &answer, &back, "wsdl")
}

/// `POST /publisher/apis/{apiId}/certificates`: a certificate for one of the API's
/// endpoints.
#[utoipa::path(
    post,
    operation_id = "console_implementation_add_certificate",
    path = "/publisher/apis/{api_id}/certificates",
    tag = "Pages",
    params(("api_id" = String, Path, description = "The API's id")),
    request_body(content = String, content_type = "multipart/form-data", description = "csrf_token, alias, endpoint, file (PEM or DER)"),
    responses(
        (status = 303, description = "Added (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The form or the publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn add_certificate(
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
        return refused_form(&state, &headers, "Choose the certificate's file.", &back);
    };
    let text = |name: &str| field(&form.fields, name).unwrap_or_default().trim();
    let fields = [("alias", text("alias")), ("endpoint", text("endpoint"))];
    let request = Call::new(Method::POST, format!("{PUBLISHER}/certificates"))
        .multipart(&fields, Some(("certificate", file)));
    let answer = call(&state, &Some(session), peer_of(peer), request).await;
    after_form(&state, &headers, &answer, &back, "certificate")
}

/// `POST /publisher/apis/{apiId}/certificates/{alias}/delete`: a certificate deleted.
#[utoipa::path(
    post,
    operation_id = "console_implementation_delete_certificate",
    path = "/publisher/apis/{api_id}/certificates/{alias}/delete",
    tag = "Pages",
    params(
        ("api_id" = String, Path, description = "The API's id"),
        ("alias" = String, Path, description = "The certificate's alias"),
    ),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "csrf_token"),
    responses(
        (status = 303, description = "Deleted (or not signed in): to the API's page (or the sign-in)"),
        (status = 400, description = "The publisher API refused it: a page saying why", content_type = "text/html", body = String),
        (status = 403, description = "The form's CSRF token is missing or wrong", content_type = "text/html", body = String),
    )
)]
async fn delete_certificate(
    State(state): State<AppState>,
    headers: HeaderMap,
    peer: Peer,
    Path((api_id, alias)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let target = format!("{PUBLISHER}/certificates/{}", encoded(&alias));
    let back = api_page(&api_id);
    let what = (target, "certificate-deleted");
    delete_by_form(&state, &headers, peer_of(peer), &body, &back, what).await
}

/// A certificate as the API page lists it.
#[derive(Deserialize)]
pub(super) struct Certificate {
    pub alias: String,
    pub endpoint: String,
}

/// A page of `GET /certificates`.
#[derive(Deserialize)]
struct Certificates {
    #[serde(default)]
    certificates: Vec<Certificate>,
}

/// The tenant's certificates that gateways use for any of `endpoints` (bound to the same
/// host and port), as the user may list them (none when their token may not).
pub(super) async fn certificates_of(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    endpoints: &[String],
) -> Vec<Certificate> {
    let targets: Vec<_> = endpoints
        .iter()
        .filter_map(|url| trust::endpoint_of(url))
        .collect();
    let target = format!("{PUBLISHER}/certificates?limit={MAX_LISTED_CERTIFICATES}");
    let page = call(state, session, peer, Call::get(target))
        .await
        .json::<Certificates>();
    page.map(|p| p.certificates)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| trust::endpoint_of(&c.endpoint).is_some_and(|e| targets.contains(&e)))
        .collect()
}

/// The file name of the API's WSDL, when it has one the user may see.
pub(super) async fn wsdl_of(
    state: &AppState,
    session: &Option<Session>,
    peer: Option<std::net::SocketAddr>,
    api_id: &str,
) -> Option<String> {
    let target = format!("{PUBLISHER}/apis/{}/wsdl", encoded(api_id));
    call(state, session, peer, Call::get(target))
        .await
        .string_member("name")
}

/// These forms in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(upload_wsdl, add_certificate, delete_certificate))]
pub struct Api;
