//! `/api/am/admin/v0.14/applications`: the tenant's applications, for its administrators
//! (WSO2 2.6's admin API lists them to move or change their owners).

use axum::Json;
use axum::extract::State;
use serde::Deserialize;

use super::queries;
use super::records::AdminApplicationInfo;
use crate::error::Result;
use crate::http::ADMIN;
use crate::http::extract::QueryParams;
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::users::AdminUser;

pub fn router() -> Routes {
    Routes::new().route(&format!("{ADMIN}/applications"), get(list_applications))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    /// Only this owner's.
    user: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

/// `GET /applications[?user][&limit][&offset]`: the caller's tenant's applications, by
/// owner and name.
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/applications",
    tag = "Administration",
    params(
        ("user" = Option<String>, Query, description = "Only this owner's"),
        ("limit" = Option<i64>, Query, description = "Most applications answered (25)"),
        ("offset" = Option<i64>, Query, description = "Where the page starts")
    ),
    responses((status = 200, description = "WSO2's `ApplicationList`", body = ListEnvelope<AdminApplicationInfo>)),
    security(("basic" = []), ("bearer" = []))
)]
async fn list_applications(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<AdminApplicationInfo>>> {
    user.require_admin()?;
    let page = Page::new(query.limit, query.offset)?;
    let all: Vec<_> = queries::of_tenant(&state.db, &user.tenant)
        .await?
        .into_iter()
        .filter(|app| query.user.as_ref().is_none_or(|owner| *owner == app.owner))
        .collect();
    let total = all.len() as i64;
    let list: Vec<AdminApplicationInfo> = page.slice(all).into_iter().map(Into::into).collect();
    Ok(Json(ListEnvelope::new(
        list,
        total,
        page,
        |limit, offset| format!("/applications?limit={limit}&offset={offset}"),
    )))
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(list_applications))]
pub struct Api;
