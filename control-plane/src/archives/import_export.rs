//! WSO2 2.6's import/export service (its `api-import-export` web application, where
//! `apimcli` 2.x points by default: `/api-import-export-2.6.0-v0`): HTTP Basic
//! authentication and plain-text answers, as it has them. `GET export-api` gives an API's
//! project as a zip; `POST import-api` takes one (multipart `file`) as a new API, and
//! `PUT /{apiId}` over an existing one.

use apim_archive::{MAX_ARCHIVE_BYTES, Project};
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::export::project_of;
use super::import::{import_over, import_project};
use crate::error::Error;
use crate::http::auth::basic_credentials;
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, get, post, put};
use crate::state::AppState;
use crate::users::{BasicUser, User};

/// Where the service is, as apimcli 2.x's default `api_import_export_endpoint` has it.
pub const IMPORT_EXPORT: &str = "/api-import-export-2.6.0-v0";

pub fn router() -> Routes {
    Routes::new()
        .route(&format!("{IMPORT_EXPORT}/export-api"), get(export_api))
        .route(&format!("{IMPORT_EXPORT}/import-api"), post(import_api))
        .route(&format!("{IMPORT_EXPORT}/{{api_id}}"), put(update_api))
}

/// A plain-text answer, as WSO2's import/export services give them.
pub(super) fn text(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

/// A user of the service: authenticated by HTTP Basic, and allowed to create APIs (an
/// administrator or a creator; WSO2 asks for its admin role or the API-creation
/// permission). Refusals are the service's texts. A bearer token with the scope to
/// create APIs is taken too (ours: `apimctl` keeps tokens, never passwords).
struct ServiceUser(User);

impl FromRequestParts<AppState> for ServiceUser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        if crate::http::auth::bearer_token(&parts.headers).is_some() {
            return token_user(parts, state)
                .await
                .map(Self)
                .map_err(|err| match err {
                    Error::Unauthenticated => {
                        text(StatusCode::UNAUTHORIZED, "User Authentication Failed")
                    }
                    other => other.into_response(),
                });
        }
        if basic_credentials(&parts.headers).is_none() {
            let missing = "No username or password is provided for authentication";
            return Err(text(StatusCode::UNAUTHORIZED, missing));
        }
        let BasicUser(user) = BasicUser::from_request_parts(parts, state)
            .await
            .map_err(|err| match err {
                Error::Unauthenticated => {
                    text(StatusCode::UNAUTHORIZED, "User Authentication Failed")
                }
                // Throttled logins and failures of ours keep their own answers.
                other => other.into_response(),
            })?;
        if !(user.has_role("admin") || user.has_role("creator")) {
            return Err(text(StatusCode::FORBIDDEN, "User Authorization Failed"));
        }
        Ok(Self(user))
    }
}

/// The service's query, refused in its plain text.
struct ServiceQuery<T>(T);

impl<T: serde::de::DeserializeOwned> FromRequestParts<AppState> for ServiceQuery<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        QueryParams::<T>::from_request_parts(parts, state)
            .await
            .map(|QueryParams(query)| Self(query))
            .map_err(error_text)
    }
}

/// The user a bearer token acts for, when it may create APIs.
async fn token_user(parts: &mut Parts, state: &AppState) -> crate::error::Result<User> {
    let caller = crate::tokens::Caller::from_request_parts(parts, state).await?;
    caller.require(state, crate::scopes::Scope::ApiCreate)?;
    crate::users::find(&state.db, caller.username())
        .await?
        .ok_or(Error::Unauthenticated)
}

/// `export-api`'s query; other parameters apimcli sends (`format`, `ignoreSwagger`) are
/// taken and ignored, as the service ignores them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExportQuery {
    name: Option<String>,
    version: Option<String>,
    provider: Option<String>,
    /// `false`: the project says `CREATED` (as WSO2 2.6 GA always did); otherwise its
    /// status as it is.
    preserve_status: Option<String>,
}

/// `GET export-api?name&version&provider[&preserveStatus]`: 200 with the project's zip;
/// 400 without the three; 404 for an API the user's tenant does not have.
#[utoipa::path(
    get,
    path = "/api-import-export-2.6.0-v0/export-api",
    tag = "Import and export",
    params(
        ("name" = String, Query, description = "The API's name"),
        ("version" = String, Query, description = "Its version"),
        ("provider" = String, Query, description = "Its provider"),
        ("preserveStatus" = Option<bool>, Query, description = "`false`: exported as CREATED")
    ),
    responses(
        (status = 200, description = "The API's project: `<Name>-<Version>/` as WSO2 2.6 exports it", content_type = "application/zip", body = Vec<u8>),
        (status = 400, description = "`Invalid API Information`", content_type = "text/plain", body = String),
        (status = 401, description = "No credentials, or wrong ones", content_type = "text/plain", body = String),
        (status = 403, description = "The user may not create APIs", content_type = "text/plain", body = String),
        (status = 404, description = "`Unable to retrieve API`", content_type = "text/plain", body = String)
    ),
    security(("basic" = []), ("bearer" = []))
)]
async fn export_api(
    State(state): State<AppState>,
    ServiceUser(user): ServiceUser,
    ServiceQuery(query): ServiceQuery<ExportQuery>,
) -> Response {
    let (Some(name), Some(version), Some(provider)) = (query.name, query.version, query.provider)
    else {
        return text(StatusCode::BAD_REQUEST, "Invalid API Information");
    };
    let unique = format!("{}-{name}-{version}", crate::users::provider_key(&provider));
    let found = match crate::apis::find(&state.db, &unique).await {
        Ok(found) => found,
        Err(err) => return err.into_response(),
    };
    // Another tenant's API is as unknown as a missing one.
    let Some(mut api) = found.filter(|api| api.tenant == user.tenant) else {
        return text(StatusCode::NOT_FOUND, "Unable to retrieve API");
    };
    if query
        .preserve_status
        .is_some_and(|keep| keep.eq_ignore_ascii_case("false"))
    {
        api.status = "CREATED".into();
    }
    let project = match project_of(&state, &api).await {
        Ok(project) => project,
        Err(err) => return err.into_response(),
    };
    let size: usize = project.files.values().map(Vec::len).sum();
    if size > MAX_ARCHIVE_BYTES {
        return Error::PayloadTooLarge.into_response();
    }
    // Deflating megabytes is work for a blocking thread, not the server's.
    let zipped = tokio::task::spawn_blocking(move || project.to_zip()).await;
    let zip = match zipped {
        Ok(Ok(zip)) => zip,
        Ok(Err(err)) => return Error::Internal(err.into()).into_response(),
        Err(err) => return Error::Internal(err.into()).into_response(),
    };
    tracing::info!(api = %api.id, user = %user.username, "API exported");
    let plain: String = format!("{}-{}", api.name, api.version)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    let file = format!("attachment; filename=\"{plain}.zip\"");
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (header::CONTENT_DISPOSITION, file),
        ],
        zip,
    )
        .into_response()
}

/// `import-api`'s query.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImportQuery {
    /// `false`: the importer provides the API; otherwise the project's provider, who must
    /// be of the importer's tenant.
    preserve_provider: Option<String>,
}

/// `POST import-api[?preserveProvider]` with the project's zip as the multipart part
/// `file`: 201 `API imported successfully.` (and a line naming what the project holds
/// that was not taken), with the new API's `Location` in the publisher API (ours). The
/// refusals are plain text and 4xx, each saying why (WSO2 answers 500 for most); nothing
/// of a refused project is kept.
#[utoipa::path(
    post,
    path = "/api-import-export-2.6.0-v0/import-api",
    tag = "Import and export",
    params(
        ("preserveProvider" = Option<bool>, Query, description = "`false`: the importer becomes the provider (default `true`)")
    ),
    request_body(content_type = "multipart/form-data", description = "`file`: the project's zip, `<Name>-<Version>/` as WSO2 2.6 exports it, at most the management body limit"),
    responses(
        (status = 201, description = "`API imported successfully.`, then what was not taken, if anything", content_type = "text/plain", body = String),
        (status = 400, description = "The archive or the project is refused; why", content_type = "text/plain", body = String),
        (status = 401, description = "No credentials, or wrong ones", content_type = "text/plain", body = String),
        (status = 403, description = "The user may not create APIs, or the provider is of another tenant", content_type = "text/plain", body = String),
        (status = 409, description = "The API, or its context, exists already", content_type = "text/plain", body = String)
    ),
    security(("basic" = []), ("bearer" = []))
)]
async fn import_api(
    State(state): State<AppState>,
    ServiceUser(user): ServiceUser,
    ServiceQuery(query): ServiceQuery<ImportQuery>,
    request: axum::extract::Request,
) -> Response {
    let project = match uploaded_project(&state, request).await {
        Ok(project) => project,
        Err(refusal) => return refusal,
    };
    let imported = import_project(&state, &user, &project, query.preserves_provider()).await;
    answer(imported, "API imported successfully.")
}

/// `PUT /{apiId}[?preserveProvider]`, apimcli's `--update`: the project's zip (as for
/// `import-api`) over the API of that id, in the user's tenant; its name and version must
/// be the project's. 201 `API updated successfully.`; 404 for an API the tenant does not
/// have.
#[utoipa::path(
    put,
    path = "/api-import-export-2.6.0-v0/{apiId}",
    tag = "Import and export",
    params(
        ("apiId" = String, Path, description = "The API's id"),
        ("preserveProvider" = Option<bool>, Query, description = "`false`: the importer becomes the provider (default `true`)")
    ),
    request_body(content_type = "multipart/form-data", description = "`file`: the project's zip"),
    responses(
        (status = 201, description = "`API updated successfully.`, then what was not taken, if anything", content_type = "text/plain", body = String),
        (status = 400, description = "The archive or the project is refused, or is of another API; why", content_type = "text/plain", body = String),
        (status = 401, description = "No credentials, or wrong ones", content_type = "text/plain", body = String),
        (status = 403, description = "The user may not create APIs, or the provider is of another tenant", content_type = "text/plain", body = String),
        (status = 404, description = "No API of that id in the user's tenant", content_type = "text/plain", body = String)
    ),
    security(("basic" = []), ("bearer" = []))
)]
async fn update_api(
    State(state): State<AppState>,
    ServiceUser(user): ServiceUser,
    Path(api_id): Path<String>,
    ServiceQuery(query): ServiceQuery<ImportQuery>,
    request: axum::extract::Request,
) -> Response {
    let project = match uploaded_project(&state, request).await {
        Ok(project) => project,
        Err(refusal) => return refusal,
    };
    let preserve = query.preserves_provider();
    let imported = import_over(&state, &user, &project, preserve, &api_id).await;
    answer(imported, "API updated successfully.")
}

impl ImportQuery {
    fn preserves_provider(&self) -> bool {
        !self
            .preserve_provider
            .as_ref()
            .is_some_and(|keep| keep.eq_ignore_ascii_case("false"))
    }
}

/// The uploaded project; the refusal, in the service's text, otherwise.
async fn uploaded_project(
    state: &AppState,
    request: axum::extract::Request,
) -> Result<Project, Response> {
    match super::import::uploaded_project(state, request).await {
        Ok(Some(project)) => Ok(project),
        Ok(None) => Err(text(
            StatusCode::BAD_REQUEST,
            "The form field 'file' with the project's zip is required",
        )),
        Err(err) => Err(error_text(err)),
    }
}

/// 201 with `said` and what was not taken, and the API's `Location`; the refusal as text.
fn answer(imported: crate::error::Result<super::import::Imported>, said: &str) -> Response {
    let imported = match imported {
        Ok(imported) => imported,
        Err(err) => return error_text(err),
    };
    let mut body = format!("{said}\n");
    if !imported.not_taken.is_empty() {
        body.push_str(&format!(
            "Not imported (not supported here): {}\n",
            imported.not_taken.join(", ")
        ));
    }
    let location = format!("{}/apis/{}", crate::http::PUBLISHER, imported.id);
    (
        imported.touches,
        [(header::LOCATION, location)],
        text(StatusCode::CREATED, &body),
    )
        .into_response()
}

/// A refusal as the service's plain text; failures of ours keep their own answers.
fn error_text(err: Error) -> Response {
    match err {
        Error::Invalid(why) => text(StatusCode::BAD_REQUEST, &why),
        Error::InvalidFields(fields) => {
            let problems: Vec<String> = fields
                .iter()
                .map(|(field, problem)| format!("{field} {problem}"))
                .collect();
            text(StatusCode::BAD_REQUEST, &problems.join(", "))
        }
        Error::Forbidden(why) => text(StatusCode::FORBIDDEN, &why),
        Error::NotFoundWhy(why) => text(StatusCode::NOT_FOUND, &why),
        Error::AlreadyExists(why) | Error::Conflict(why) => text(StatusCode::CONFLICT, &why),
        Error::PayloadTooLarge => text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The archive is larger than the control plane takes",
        ),
        other => other.into_response(),
    }
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(export_api, import_api, update_api))]
pub struct Api;
