//! Administration, `/api/am/admin/v0.14`: accounts, by HTTP Basic of an administrator
//! (the same as `control-plane add-user`).
//!
//! A tenant's administrator (`admin` role, `name@domain`) manages that tenant's accounts
//! only; the super tenant's administrators manage every tenant's and run the platform
//! (signing keys). An account outside the caller's reach answers exactly as a missing
//! one does (404), so its existence is not disclosed.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::lockout;
use super::queries::{self as users, AccountChange};
use super::records::User;
use super::rules::{self, SUPER_TENANT};
use crate::error::{Error, Result};
use crate::http::ADMIN;
use crate::http::extract::JsonBody;
use crate::http::routes::{Routes, get, post};
use crate::manifest::Touches;
use crate::state::AppState;
use crate::users::AdminUser;

pub fn router() -> Routes {
    Routes::new()
        .route(&format!("{ADMIN}/users"), get(list_users).post(add_user))
        .route(
            &format!("{ADMIN}/users/{{username}}"),
            get(get_user).put(update_user).delete(delete_user),
        )
        .route(
            &format!("{ADMIN}/users/{{username}}/password"),
            post(reset_password),
        )
        .route(
            &format!("{ADMIN}/users/{{username}}/unlock"),
            post(unlock_user),
        )
}

/// The account `username` if the administrator manages it; 404 otherwise, missing or
/// in another tenant alike.
async fn managed_account(state: &AppState, admin: &User, username: &str) -> Result<User> {
    admin.require_admin()?;
    let found = if admin.manages(username) {
        users::find(&state.db, username).await?
    } else {
        None
    };
    found.ok_or_else(|| Error::NotFound("user", username.to_string()))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewUser {
    username: Option<String>,
    password: Option<String>,
    roles: Option<Vec<String>>,
}

/// A user as listed (never its password).
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct UserDto {
    username: String,
    roles: Vec<String>,
    tenant: String,
    disabled: bool,
}

impl From<User> for UserDto {
    fn from(user: User) -> Self {
        UserDto {
            username: user.username,
            roles: user.roles,
            tenant: user.tenant,
            disabled: user.disabled,
        }
    }
}

/// `POST /users`: 201 with the user; 409 if the name is taken. A tenant administrator
/// adds users to its own tenant only (403 for another).
#[utoipa::path(
    post,
    path = "/api/am/admin/v0.14/users",
    tag = "Administration",
    request_body = NewUser,
    responses((status = 201, description = "The new account", body = UserDto)),
    security(("basic" = []), ("bearer" = []))
)]
async fn add_user(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
    JsonBody(body): JsonBody<NewUser>,
) -> Result<(StatusCode, Touches, Json<UserDto>)> {
    admin.require_admin()?;
    let (Some(username), Some(password)) = (body.username, body.password) else {
        return Err(Error::InvalidFields(vec![
            ("username".into(), "may not be null".into()),
            ("password".into(), "may not be null".into()),
        ]));
    };
    rules::validate_username(&username).map_err(Error::Invalid)?;
    if !admin.manages(&username) {
        return Err(Error::Forbidden(format!(
            "Administrators of {} may add users to that tenant only",
            admin.tenant
        )));
    }
    check_password(&password)?;
    let roles = rules::parse_roles(&body.roles.unwrap_or_default()).map_err(Error::Invalid)?;
    if !users::insert_new(&state.db, &username, &password, &roles).await? {
        return Err(Error::AlreadyExists(format!(
            "A user named {username} already exists"
        )));
    }
    tracing::info!(%username, ?roles, by = %admin.username, "user added");
    let user = users::find(&state.db, &username)
        .await?
        .ok_or_else(|| anyhow::anyhow!("new user {username} vanished"))?;
    Ok((StatusCode::CREATED, Touches::nothing(), Json(user.into())))
}

fn check_password(password: &str) -> Result<()> {
    if password.is_empty() {
        return Err(Error::Invalid("password must not be empty".into()));
    }
    Ok(())
}

/// `GET /users`: the caller's tenant's accounts; every tenant's for the platform's
/// administrators.
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/users",
    tag = "Administration",
    responses((status = 200, description = "The accounts the administrator manages", body = Vec<UserDto>)),
    security(("basic" = []), ("bearer" = []))
)]
async fn list_users(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
) -> Result<Json<Vec<UserDto>>> {
    admin.require_admin()?;
    let tenant = (admin.tenant != SUPER_TENANT).then_some(admin.tenant.as_str());
    Ok(Json(
        users::list(&state.db, tenant)
            .await?
            .into_iter()
            .map(UserDto::from)
            .collect(),
    ))
}

/// `GET /users/{username}`.
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/users/{username}",
    tag = "Administration",
    params(("username" = String, Path, description = "The account's user name")),
    responses((status = 200, description = "The account", body = UserDto)),
    security(("basic" = []), ("bearer" = []))
)]
async fn get_user(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
) -> Result<Json<UserDto>> {
    Ok(Json(
        managed_account(&state, &admin, &username).await?.into(),
    ))
}

/// An account change's outcome as an answer: 404 when the account vanished meanwhile,
/// 409 when the change would leave the platform without an administrator.
fn applied(outcome: Result<bool, String>, username: &str) -> Result<()> {
    match outcome {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::NotFound("user", username.to_string())),
        Err(refusal) => Err(Error::Conflict(refusal)),
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct UserChange {
    roles: Option<Vec<String>>,
    disabled: Option<bool>,
}

/// `PUT /users/{username}`: new roles and/or `disabled`; 200 with the account. Disabling
/// ends the account's sessions (refresh tokens dropped; its access tokens stop working
/// on the management API at once). 409 when it would leave no enabled administrator in
/// the super tenant.
#[utoipa::path(
    put,
    path = "/api/am/admin/v0.14/users/{username}",
    tag = "Administration",
    params(("username" = String, Path, description = "The account's user name")),
    request_body = UserChange,
    responses((status = 200, description = "The account as changed", body = UserDto)),
    security(("basic" = []), ("bearer" = []))
)]
async fn update_user(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
    JsonBody(body): JsonBody<UserChange>,
) -> Result<(Touches, Json<UserDto>)> {
    managed_account(&state, &admin, &username).await?;
    let change = AccountChange {
        roles: body
            .roles
            .map(|roles| rules::parse_roles(&roles))
            .transpose()
            .map_err(Error::Invalid)?,
        disabled: body.disabled,
    };
    applied(
        users::change_account(&state.db, &username, &change).await?,
        &username,
    )?;
    tracing::info!(%username, roles = ?change.roles, disabled = ?change.disabled, by = %admin.username, "user changed");
    let user = managed_account(&state, &admin, &username).await?;
    Ok((Touches::nothing(), Json(user.into())))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewPassword {
    password: Option<String>,
}

/// `POST /users/{username}/password`: sets a new password (`{"password": ...}`); the
/// account's refresh tokens are dropped. 200 with no body.
#[utoipa::path(
    post,
    path = "/api/am/admin/v0.14/users/{username}/password",
    tag = "Administration",
    params(("username" = String, Path, description = "The account's user name")),
    request_body = NewPassword,
    responses((status = 200, description = "The password is set")),
    security(("basic" = []), ("bearer" = []))
)]
async fn reset_password(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
    JsonBody(body): JsonBody<NewPassword>,
) -> Result<(Touches, StatusCode)> {
    managed_account(&state, &admin, &username).await?;
    let password = body.password.unwrap_or_default();
    check_password(&password)?;
    if !users::reset_password(&state.db, &username, &password).await? {
        return Err(Error::NotFound("user", username));
    }
    tracing::info!(%username, by = %admin.username, "password reset");
    Ok((Touches::nothing(), StatusCode::OK))
}

/// `DELETE /users/{username}`: 200 with no body; 409 for the last enabled administrator
/// of the super tenant. Its applications and APIs stay (an administrator may still
/// manage them); its sessions end.
#[utoipa::path(
    delete,
    path = "/api/am/admin/v0.14/users/{username}",
    tag = "Administration",
    params(("username" = String, Path, description = "The account's user name")),
    responses((status = 200, description = "The account is gone")),
    security(("basic" = []), ("bearer" = []))
)]
async fn delete_user(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
) -> Result<(Touches, StatusCode)> {
    managed_account(&state, &admin, &username).await?;
    applied(users::delete(&state.db, &username).await?, &username)?;
    tracing::info!(%username, by = %admin.username, "user deleted");
    Ok((Touches::nothing(), StatusCode::OK))
}

/// `POST /users/{username}/unlock`: lifts the user's lock-out after failed logins and
/// forgets the failures; 200 with the user, 404 for an unknown one.
#[utoipa::path(
    post,
    path = "/api/am/admin/v0.14/users/{username}/unlock",
    tag = "Administration",
    params(("username" = String, Path, description = "The account's user name")),
    responses((status = 200, description = "The account, unlocked", body = UserDto)),
    security(("basic" = []), ("bearer" = []))
)]
async fn unlock_user(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
) -> Result<(Touches, Json<UserDto>)> {
    let user = managed_account(&state, &admin, &username).await?;
    let was_locked = lockout::unlock(&state.db, &username).await?;
    tracing::info!(%username, was_locked, by = %admin.username, "user unlocked");
    Ok((Touches::nothing(), Json(user.into())))
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    add_user,
    list_users,
    get_user,
    update_user,
    reset_password,
    delete_user,
    unlock_user
))]
pub struct Api;
