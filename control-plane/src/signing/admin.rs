//! Signing keys in the administration API: `POST /api/am/admin/v0.14/signing-keys/rotate`,
//! by HTTP Basic of a super-tenant administrator (the same as
//! `control-plane rotate-signing-key`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

use crate::error::Result;
use crate::http::ADMIN;
use crate::http::routes::{Routes, post};
use crate::manifest::{Touched, Touches};
use crate::state::AppState;
use crate::users::AdminUser;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{ADMIN}/signing-keys/rotate"),
        post(rotate_signing_key),
    )
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
struct RotatedKey {
    kid: String,
}

/// `POST /signing-keys/rotate`: a new key signs from now on; old keys still verify. A
/// platform operation: the super tenant's administrators only.
#[utoipa::path(
    post,
    path = "/api/am/admin/v0.14/signing-keys/rotate",
    tag = "Administration",
    responses((status = 201, description = "The new key's id", body = RotatedKey)),
    security(("basic" = []), ("bearer" = []))
)]
async fn rotate_signing_key(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
) -> Result<(StatusCode, Touches, Json<RotatedKey>)> {
    admin.require_platform_admin()?;
    let kid = state.keys.rotate()?;
    tracing::info!(%kid, "signing key rotated");
    Ok((
        StatusCode::CREATED,
        Touches::one(Touched::SigningKeys),
        Json(RotatedKey { kid }),
    ))
}

/// This operation in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(rotate_signing_key))]
pub struct Api;
