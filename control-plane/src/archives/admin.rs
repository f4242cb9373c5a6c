//! `/api/am/admin/v0.14`'s application export and import, as WSO2 2.6's admin API has
//! them (`ExportApiServiceImpl`, `ImportApiServiceImpl`): administrators of the tenant,
//! by HTTP Basic or a token with the admin scope.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::applications::{ImportOptions, import_application, project_of};
use super::import::uploaded_project;
use super::import_export::text;
use crate::error::{Error, Result};
use crate::http::ADMIN;
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, get, post};
use crate::state::AppState;
use crate::users::AdminUser;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{ADMIN}/export/applications"),
            get(export_applications),
        )
        .route(
            &format!("{ADMIN}/import/applications"),
            post(import_applications),
        )
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExportQuery {
    app_name: Option<String>,
    app_owner: Option<String>,
}

/// `GET /export/applications?appName&appOwner`: the application's zip,
/// `exported-application.zip` holding `<Name>/<Name>.json`; 400 without both; 404 (text)
/// for no such application; 403 (text) for another tenant's owner.
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/export/applications",
    tag = "Administration",
    params(
        ("appName" = String, Query, description = "The application's name"),
        ("appOwner" = String, Query, description = "Its owner")
    ),
    responses(
        (status = 200, description = "The application, zipped as WSO2 2.6 exports it", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 400, description = "A parameter is missing"),
        (status = 401, description = "Not an administrator's credentials"),
        (status = 403, description = "`Cross Tenant Exports are not allowed` (text), or the user is no administrator (WSO2's error)", content((String = "text/plain"), (crate::http::error::ErrorBody = "application/json"))),
        (status = 404, description = "`No application found with name <name> owned by <owner>`", content_type = "text/plain", body = String)
    ),
    security(("basic" = []), ("bearer" = []))
)]
async fn export_applications(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    QueryParams(query): QueryParams<ExportQuery>,
) -> Result<Response> {
    user.require_admin()?;
    let (Some(name), Some(owner)) = (
        query.app_name.filter(|n| !n.trim().is_empty()),
        query.app_owner.filter(|o| !o.trim().is_empty()),
    ) else {
        return Err(Error::Invalid(
            "Application name or owner should not be empty or null.".into(),
        ));
    };
    if crate::users::tenant_of(&owner) != user.tenant {
        let refused = "Cross Tenant Exports are not allowed".to_string();
        return Ok(text(StatusCode::FORBIDDEN, &refused));
    }
    let found = crate::applications::owned_by(&state.db, &owner)
        .await?
        .into_iter()
        .find(|app| app.name == name);
    let Some(app) = found else {
        let missing = format!("No application found with name {name} owned by {owner}");
        return Ok(text(StatusCode::NOT_FOUND, &missing));
    };
    let zip = project_of(&state, &app)
        .await?
        .to_zip()
        .map_err(|err| Error::Internal(err.into()))?;
    tracing::info!(application = %app.id, user = %user.username, "application exported");
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"exported-application.zip\"",
            ),
        ],
        zip,
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImportQuery {
    preserve_owner: Option<bool>,
    skip_subscriptions: Option<bool>,
    app_owner: Option<String>,
}

/// An API whose subscription was skipped, as WSO2's `APIInfo` names it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct SkippedApi {
    name: String,
    version: String,
    provider: String,
}

/// WSO2's `APIInfoList` of the skipped subscriptions' APIs.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct SkippedApis {
    count: usize,
    list: Vec<SkippedApi>,
}

/// `POST /import/applications[?preserveOwner][&skipSubscriptions][&appOwner]` with the
/// zip as the multipart part `file`: 201 with the application (`Location`
/// `/applications/<id>`), or 207 with the APIs whose subscriptions were skipped (not
/// here, not published, or without the tier); 403 (text) for an owner of another tenant;
/// 409 for a name the owner has. Keys are never imported.
#[utoipa::path(
    post,
    path = "/api/am/admin/v0.14/import/applications",
    tag = "Administration",
    params(
        ("preserveOwner" = Option<bool>, Query, description = "The owner the archive names, rather than the importer"),
        ("skipSubscriptions" = Option<bool>, Query, description = "No subscriptions"),
        ("appOwner" = Option<String>, Query, description = "This owner, whatever else says")
    ),
    request_body(content_type = "multipart/form-data", description = "`file`: the application's zip"),
    responses(
        (status = 201, description = "The application, with all its subscriptions", body = crate::applications::AdminApplicationInfo),
        (status = 207, description = "The application; these APIs' subscriptions were skipped", body = SkippedApis),
        (status = 400, description = "The archive or the application is refused"),
        (status = 401, description = "Not an administrator's credentials"),
        (status = 403, description = "`Cross Tenant Imports are not allowed` (text), or the user is no administrator (WSO2's error)", content((String = "text/plain"), (crate::http::error::ErrorBody = "application/json"))),
        (status = 409, description = "The owner has an application of that name")
    ),
    security(("basic" = []), ("bearer" = []))
)]
async fn import_applications(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    QueryParams(query): QueryParams<ImportQuery>,
    request: Request,
) -> Result<Response> {
    user.require_admin()?;
    let Some(project) = uploaded_project(&state, request).await? else {
        return Err(Error::InvalidFields(vec![(
            "file".into(),
            "may not be null".into(),
        )]));
    };
    let options = ImportOptions {
        preserve_owner: query.preserve_owner.unwrap_or(false),
        skip_subscriptions: query.skip_subscriptions.unwrap_or(false),
        app_owner: query.app_owner,
    };
    let imported = match import_application(&state, &user, &project, &options).await {
        Err(Error::Forbidden(why)) => return Ok(text(StatusCode::FORBIDDEN, &why)),
        other => other?,
    };
    let app = imported.application;
    let location = format!("/applications/{}", app.id);
    if !imported.skipped.is_empty() {
        let list: Vec<SkippedApi> = imported
            .skipped
            .into_iter()
            .map(|id| SkippedApi {
                name: id.api_name,
                version: id.version,
                provider: id.provider_name.replace("-AT-", "@"),
            })
            .collect();
        let body = SkippedApis {
            count: list.len(),
            list,
        };
        let partial = StatusCode::MULTI_STATUS;
        let answer = (partial, [(header::LOCATION, location)], axum::Json(body));
        return Ok((imported.touches, answer).into_response());
    }
    let info = crate::applications::AdminApplicationInfo::from(app);
    let answer = (
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        axum::Json(info),
    );
    Ok((imported.touches, answer).into_response())
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(export_applications, import_applications))]
pub struct Api;
