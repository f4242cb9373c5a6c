//! The fleet in the administration API: `GET /api/am/admin/v0.14/gateways`, by HTTP Basic
//! of a super-tenant administrator.

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use crate::error::Result;
use crate::http::ADMIN;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::users::AdminUser;

pub fn router() -> Routes {
    Routes::new().route(&format!("{ADMIN}/gateways"), get(list_gateways))
}

/// A gateway as an operator sees it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct GatewayDto {
    id: String,
    environment: String,
    /// The manifest version it holds.
    version: i64,
    /// When it last asked for changes, Unix seconds.
    last_seen: i64,
    /// Versions it is behind the newest.
    lag: i64,
    /// Seconds since it last asked.
    silent_for: i64,
}

/// The gateways and the newest manifest version they are measured against.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct GatewayList {
    count: usize,
    /// The newest manifest version.
    latest: i64,
    list: Vec<GatewayDto>,
}

/// `GET /gateways`: every gateway that has synced, with the version it holds, when it
/// was last seen and how far behind it is. The platform's administrators only.
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/gateways",
    tag = "Administration",
    responses((status = 200, description = "Every gateway that has synced", body = GatewayList)),
    security(("basic" = []), ("bearer" = []))
)]
async fn list_gateways(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
) -> Result<Json<GatewayList>> {
    admin.require_platform_admin()?;
    let latest =
        i64::try_from(crate::manifest::latest_version(&state.db).await?).unwrap_or(i64::MAX);
    let now = crate::db::now();
    let list: Vec<GatewayDto> = crate::fleet::list(&state.db)
        .await?
        .into_iter()
        .map(|g| GatewayDto {
            lag: g.lag(latest),
            silent_for: g.silent_for(now),
            id: g.id,
            environment: g.environment,
            version: g.version,
            last_seen: g.last_seen,
        })
        .collect();
    Ok(Json(GatewayList {
        count: list.len(),
        latest,
        list,
    }))
}

/// This operation in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(list_gateways))]
pub struct Api;
