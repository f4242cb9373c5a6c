//! WSO2 2.6's import/export service (its `api-import-export` web application, where
//! `apimcli` 2.x points by default: `/api-import-export-2.6.0-v0`): HTTP Basic
//! authentication and plain-text answers, as it has them. `GET export-api` gives an API's
//! project as a zip.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::export::project_of;
use super::project::MAX_ARCHIVE_BYTES;
use crate::error::Error;
use crate::http::auth::basic_credentials;
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::users::{BasicUser, User};

/// Where the service is, as apimcli 2.x's default `api_import_export_endpoint` has it.
pub const IMPORT_EXPORT: &str = "/api-import-export-2.6.0-v0";

pub fn router() -> Routes {
    Routes::new().route(&format!("{IMPORT_EXPORT}/export-api"), get(export_api))
}

/// A plain-text answer, as the service gives them.
fn text(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

/// A user of the service: authenticated by HTTP Basic, and allowed to create APIs (an
/// administrator or a creator; WSO2 asks for its admin role or the API-creation
/// permission). Refusals are the service's texts.
struct ServiceUser(User);

impl FromRequestParts<AppState> for ServiceUser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
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
    security(("basic" = []))
)]
async fn export_api(
    State(state): State<AppState>,
    ServiceUser(user): ServiceUser,
    QueryParams(query): QueryParams<ExportQuery>,
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

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(export_api))]
pub struct Api;
