//! The backend JWT in the administration API (ours: WSO2 2.6 switches it in
//! `api-manager.xml` for a whole deployment): `GET` and `PUT /backend-jwt`, a tenant
//! administrator's switch for the tenant's APIs; `POST /backend-jwt/rotate-key`, a new
//! signing key for every gateway (the super tenant's administrators).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::queries;
use crate::error::Result;
use crate::http::ADMIN;
use crate::http::extract::JsonBody;
use crate::http::routes::{Routes, get, post};
use crate::manifest::{Touched, Touches};
use crate::state::AppState;
use crate::users::AdminUser;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{ADMIN}/backend-jwt"),
            get(get_switch).put(put_switch),
        )
        .route(&format!("{ADMIN}/backend-jwt/rotate-key"), post(rotate_key))
}

/// Whether the tenant's APIs' backends get an `X-JWT-Assertion` (from gateways whose own
/// switch, `APIM_BACKEND_JWT`, is on too).
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BackendJwtSwitch {
    enabled: bool,
}

/// `GET /backend-jwt`: the caller's tenant's switch.
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/backend-jwt",
    tag = "Administration",
    responses((status = 200, description = "Whether the tenant's backends get the backend JWT", body = BackendJwtSwitch)),
    security(("basic" = []), ("bearer" = []))
)]
async fn get_switch(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
) -> Result<Json<BackendJwtSwitch>> {
    user.require_admin()?;
    let enabled = queries::is_enabled(&state.db, &user.tenant).await?;
    Ok(Json(BackendJwtSwitch { enabled }))
}

/// `PUT /backend-jwt`: switches it for the caller's tenant; gateways take the change as
/// they take any other.
#[utoipa::path(
    put,
    path = "/api/am/admin/v0.14/backend-jwt",
    tag = "Administration",
    request_body = BackendJwtSwitch,
    responses((status = 200, description = "The switch as changed", body = BackendJwtSwitch)),
    security(("basic" = []), ("bearer" = []))
)]
async fn put_switch(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    JsonBody(switch): JsonBody<BackendJwtSwitch>,
) -> Result<(Touches, Json<BackendJwtSwitch>)> {
    user.require_admin()?;
    let changed = queries::set_enabled(&state.db, &user.tenant, switch.enabled).await?;
    let touches = if changed {
        tracing::info!(tenant = %user.tenant, by = %user.username, enabled = switch.enabled, "backend JWT switched");
        Touches::one(Touched::BackendJwt)
    } else {
        Touches::nothing()
    };
    Ok((touches, Json(switch)))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
struct RotatedKey {
    kid: String,
}

/// `POST /backend-jwt/rotate-key`: gateways sign with a new key once they take the
/// change; the old one stays published, so assertions already made still verify.
#[utoipa::path(
    post,
    path = "/api/am/admin/v0.14/backend-jwt/rotate-key",
    tag = "Administration",
    responses((status = 201, description = "The new key's id", body = RotatedKey)),
    security(("basic" = []), ("bearer" = []))
)]
async fn rotate_key(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
) -> Result<(StatusCode, Touches, Json<RotatedKey>)> {
    admin.require_platform_admin()?;
    let kid = state.backend_jwt_keys.rotate()?;
    tracing::info!(%kid, "backend JWT key rotated");
    Ok((
        StatusCode::CREATED,
        Touches::one(Touched::BackendJwt),
        Json(RotatedKey { kid }),
    ))
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(get_switch, put_switch, rotate_key))]
pub struct Api;
