//! Administration, `/api/am/admin/v0.14`: users and signing keys. HTTP Basic of a user
//! with the admin role (the same as `control-plane add-user` / `rotate-signing-key`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::auth::BasicUser;
use super::error::{ApiError, ApiResult};
use super::extract::JsonBody;
use super::{AppState, Touches};
use crate::manifest::Touched;
use crate::users::{self, User};

const ADMIN: &str = "/api/am/admin/v0.14";

pub fn router() -> Router<AppState> {
    Router::new()
        .route(&format!("{ADMIN}/users"), get(list_users).post(add_user))
        .route(
            &format!("{ADMIN}/signing-keys/rotate"),
            post(rotate_signing_key),
        )
}

fn require_admin(user: &User) -> ApiResult<()> {
    if user.has_role("admin") {
        Ok(())
    } else {
        Err(ApiError::Forbidden(
            "Only administrators may manage users and keys".into(),
        ))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewUser {
    username: Option<String>,
    password: Option<String>,
    roles: Option<Vec<String>>,
}

/// A user as listed (never its password).
#[derive(Debug, Serialize)]
struct UserDto {
    username: String,
    roles: Vec<String>,
    tenant: String,
}

impl From<User> for UserDto {
    fn from(user: User) -> Self {
        UserDto {
            username: user.username,
            roles: user.roles,
            tenant: user.tenant,
        }
    }
}

/// `POST /users`: 201 with the user; 409 if the name is taken.
async fn add_user(
    State(state): State<AppState>,
    BasicUser(admin): BasicUser,
    JsonBody(body): JsonBody<NewUser>,
) -> ApiResult<(StatusCode, Touches, Json<UserDto>)> {
    require_admin(&admin)?;
    let (Some(username), Some(password)) = (body.username, body.password) else {
        return Err(ApiError::Validation(vec![
            ("username".into(), "may not be null".into()),
            ("password".into(), "may not be null".into()),
        ]));
    };
    users::validate_username(&username).map_err(ApiError::BadRequest)?;
    if password.is_empty() {
        return Err(ApiError::BadRequest("password must not be empty".into()));
    }
    let roles =
        users::parse_roles(&body.roles.unwrap_or_default()).map_err(ApiError::BadRequest)?;
    if !users::insert_new(&state.db, &username, &password, &roles).await? {
        return Err(ApiError::AlreadyExists(format!(
            "A user named {username} already exists"
        )));
    }
    tracing::info!(%username, ?roles, "user added");
    let user = users::find(&state.db, &username)
        .await?
        .ok_or_else(|| anyhow::anyhow!("new user {username} vanished"))?;
    Ok((StatusCode::CREATED, Touches::nothing(), Json(user.into())))
}

/// `GET /users`.
async fn list_users(
    State(state): State<AppState>,
    BasicUser(admin): BasicUser,
) -> ApiResult<Json<Vec<UserDto>>> {
    require_admin(&admin)?;
    Ok(Json(
        users::list(&state.db)
            .await?
            .into_iter()
            .map(UserDto::from)
            .collect(),
    ))
}

#[derive(Debug, Serialize)]
struct RotatedKey {
    kid: String,
}

/// `POST /signing-keys/rotate`: a new key signs from now on; old keys still verify.
async fn rotate_signing_key(
    State(state): State<AppState>,
    BasicUser(admin): BasicUser,
) -> ApiResult<(StatusCode, Touches, Json<RotatedKey>)> {
    require_admin(&admin)?;
    let kid = state.keys.rotate()?;
    tracing::info!(%kid, "signing key rotated");
    Ok((
        StatusCode::CREATED,
        Touches::one(Touched::SigningKeys),
        Json(RotatedKey { kid }),
    ))
}
