//! `/api/am/publisher/v0.14/certificates` (`apim:api_create`): upload (multipart
//! `certificate`, `alias`, `endpoint`), list, read, replace, delete and download, within
//! the caller's tenant; another tenant's alias answers as a missing one (404).

use apim_manifest::trust;
use axum::Json;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::parse::{MAX_CERTIFICATE_BYTES, ParsedCertificate, parse_certificate};
use super::queries;
use super::records::{CertMetadata, CertificateInfo, CertificateRow, Certificates, Pagination};
use super::rules::{check_alias, check_endpoint, check_room, row_of};
use crate::error::{Error, OnDuplicate, Result};
use crate::http::extract::QueryParams;
use crate::http::pagination::Page;
use crate::http::routes::{Routes, get};
use crate::manifest::Touched;
use crate::manifest::Touches;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

const BASE: &str = "/api/am/publisher/v0.14/certificates";
pub fn router() -> Routes {
    Routes::new()
        .route(BASE, get(list).post(upload))
        .route(
            &format!("{BASE}/{{alias}}"),
            get(info).put(replace).delete(remove),
        )
        .route(&format!("{BASE}/{{alias}}/content"), get(content))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
    alias: Option<String>,
    endpoint: Option<String>,
}

/// `GET /certificates[?alias&endpoint]`: the tenant's certificates, a page at a time.
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<Certificates>> {
    caller.require(&state, Scope::ApiCreate)?;
    let page = Page::new(q.limit, q.offset)?;
    let all = queries::list(
        &state.db,
        caller.tenant(),
        q.alias.as_deref(),
        q.endpoint.as_deref(),
    )
    .await?;
    let total = all.len() as i64;
    let certificates: Vec<CertMetadata> = page.slice(all).iter().map(CertMetadata::from).collect();
    let link = |offset: i64| format!("/certificates?limit={}&offset={offset}", page.limit);
    let next = if page.offset + page.limit < total {
        link(page.offset + page.limit)
    } else {
        String::new()
    };
    let previous = if page.offset > 0 {
        link((page.offset - page.limit).max(0))
    } else {
        String::new()
    };
    Ok(Json(Certificates {
        count: certificates.len(),
        next,
        previous,
        certificates,
        pagination: Pagination {
            offset: page.offset,
            limit: page.limit,
            total,
        },
    }))
}

/// What a multipart upload holds.
#[derive(Debug, Default)]
struct Upload {
    certificate: Option<Vec<u8>>,
    alias: Option<String>,
    endpoint: Option<String>,
}

/// Reads the form: `certificate`, `alias` and `endpoint`, each at most once, nothing else.
async fn read_upload(state: &AppState, request: Request) -> Result<Upload> {
    let invalid = |e: axum::extract::multipart::MultipartError| Error::Invalid(e.body_text());
    let mut form = Multipart::from_request(request, state)
        .await
        .map_err(|e| Error::Invalid(e.body_text()))?;
    let mut upload = Upload::default();
    while let Some(field) = form.next_field().await.map_err(invalid)? {
        let name = field.name().unwrap_or_default().to_string();
        let bytes = field.bytes().await.map_err(invalid)?;
        let text = || {
            String::from_utf8(bytes.to_vec())
                .map_err(|_| Error::Invalid(format!("The form field '{name}' must be text")))
        };
        let slot_taken = match name.as_str() {
            "certificate" => upload.certificate.replace(bytes.to_vec()).is_some(),
            "alias" => upload.alias.replace(text()?).is_some(),
            "endpoint" => upload.endpoint.replace(text()?).is_some(),
            _ => {
                return Err(Error::Invalid(format!(
                    "Unknown form field '{name}'; expected certificate, alias and endpoint"
                )));
            }
        };
        if slot_taken {
            return Err(Error::Invalid(format!(
                "The form field '{name}' is given twice"
            )));
        }
    }
    Ok(upload)
}

/// The certificate of an upload, read at `now`.
fn checked_certificate(upload: &Upload, now: i64) -> Result<ParsedCertificate> {
    let Some(bytes) = &upload.certificate else {
        return Err(missing("certificate"));
    };
    if bytes.len() > MAX_CERTIFICATE_BYTES {
        return Err(Error::Invalid(format!(
            "The certificate must be at most {MAX_CERTIFICATE_BYTES} bytes"
        )));
    }
    parse_certificate(bytes, now).map_err(Error::Invalid)
}

fn missing(field: &str) -> Error {
    Error::InvalidFields(vec![(field.to_string(), "may not be null".into())])
}

/// `POST /certificates`: 200 with `Location` and `CertMetadata`, as WSO2's contract has
/// it; 400 for anything but one
/// valid certificate with an alias and an endpoint, 409 when the alias is taken.
async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    request: Request,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let upload = read_upload(&state, request).await?;
    let alias = upload.alias.clone().ok_or_else(|| missing("alias"))?;
    let endpoint = upload.endpoint.clone().ok_or_else(|| missing("endpoint"))?;
    check_alias(&alias)?;
    check_endpoint(&endpoint)?;
    let now = crate::db::now();
    let parsed = checked_certificate(&upload, now)?;
    check_room(&state, &endpoint, &parsed, &[]).await?;
    let row = row_of(caller.tenant(), &alias, &endpoint, parsed, now);
    queries::insert(&state.db, &row)
        .await
        .on_duplicate(|| format!("The alias '{alias}' already exists"))?;
    tracing::info!(tenant = caller.tenant(), %alias, "certificate uploaded");
    Ok((
        StatusCode::OK,
        touched(&endpoint),
        [(header::LOCATION, format!("{BASE}/{alias}"))],
        Json(CertMetadata::from(&row)),
    )
        .into_response())
}

/// What a change to a certificate of `endpoint` makes gateways look at again.
pub(super) fn touched(endpoint: &str) -> Touches {
    match trust::endpoint_of(endpoint) {
        Some((host, port)) => Touches::one(Touched::Trust { host, port }),
        None => Touches::nothing(),
    }
}

/// The tenant's certificate of this alias; 404 otherwise.
async fn tenant_certificate(
    state: &AppState,
    caller: &Caller,
    alias: &str,
) -> Result<CertificateRow> {
    queries::find(&state.db, caller.tenant(), alias)
        .await?
        .ok_or_else(|| Error::NotFound("certificate", alias.to_string()))
}

/// `GET /certificates/{alias}`: `CertificateInfo`.
async fn info(
    State(state): State<AppState>,
    caller: Caller,
    Path(alias): Path<String>,
) -> Result<Json<CertificateInfo>> {
    caller.require(&state, Scope::ApiCreate)?;
    let row = tenant_certificate(&state, &caller, &alias).await?;
    Ok(Json(CertificateInfo::of(&row, crate::db::now())))
}

/// `GET /certificates/{alias}/content`: the certificate, PEM, as a download.
async fn content(
    State(state): State<AppState>,
    caller: Caller,
    Path(alias): Path<String>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let row = tenant_certificate(&state, &caller, &alias).await?;
    let disposition = format!("attachment; filename=\"{}.crt\"", row.alias);
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-pem-file".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        row.pem,
    )
        .into_response())
}

/// `PUT /certificates/{alias}` (multipart `certificate`): 200 with `CertMetadata`.
async fn replace(
    State(state): State<AppState>,
    caller: Caller,
    Path(alias): Path<String>,
    request: Request,
) -> Result<(Touches, Json<CertMetadata>)> {
    caller.require(&state, Scope::ApiCreate)?;
    let existing = tenant_certificate(&state, &caller, &alias).await?;
    let upload = read_upload(&state, request).await?;
    if upload.alias.as_ref().is_some_and(|a| *a != alias) {
        return Err(Error::Invalid(
            "The alias of a certificate cannot be changed".into(),
        ));
    }
    let now = crate::db::now();
    let parsed = checked_certificate(&upload, now)?;
    trust::check(&[&parsed.pem]).map_err(Error::Invalid)?;
    let row = row_of(&existing.tenant, &alias, &existing.endpoint, parsed, now);
    if !queries::replace(&state.db, &row).await? {
        return Err(Error::NotFound("certificate", alias));
    }
    tracing::info!(tenant = caller.tenant(), %alias, "certificate replaced");
    Ok((touched(&row.endpoint), Json(CertMetadata::from(&row))))
}

/// `DELETE /certificates/{alias}`: 200 with no body.
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(alias): Path<String>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::ApiCreate)?;
    let existing = tenant_certificate(&state, &caller, &alias).await?;
    if !queries::delete(&state.db, caller.tenant(), &alias).await? {
        return Err(Error::NotFound("certificate", alias));
    }
    tracing::info!(tenant = caller.tenant(), %alias, "certificate deleted");
    Ok((touched(&existing.endpoint), StatusCode::OK))
}
