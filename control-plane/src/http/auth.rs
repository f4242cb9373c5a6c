//! Who is calling: HTTP Basic users and bearer-token callers, and their scopes.

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::AppState;
use super::error::{ApiError, ApiResult};
use crate::scopes::Scope;
use crate::token::{self, Claims};
use crate::users::{self, User};

/// `user:password` from an `Authorization: Basic` header.
pub fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// A user authenticated by HTTP Basic (registration and admin calls).
pub struct BasicUser(pub User);

impl FromRequestParts<AppState> for BasicUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let (username, password) =
            basic_credentials(&parts.headers).ok_or(ApiError::Unauthenticated)?;
        state
            .logins
            .authenticate(&state.db, &username, &password)
            .await?
            .map(BasicUser)
            .ok_or(ApiError::Unauthenticated)
    }
}

/// A caller with a valid, unrevoked bearer token.
pub struct Caller {
    /// The token's claims.
    pub claims: Claims,
}

impl Caller {
    /// The user name the token acts for.
    pub fn username(&self) -> &str {
        &self.claims.sub
    }

    /// The caller's tenant domain.
    pub fn tenant(&self) -> &str {
        users::tenant_of(&self.claims.sub)
    }

    /// Refuses the call, as WSO2 does with 401, unless the token carries the scope.
    pub fn require(&self, state: &AppState, scope: Scope) -> ApiResult<()> {
        if self.claims.has_scope(&state.scopes.name(scope)) {
            Ok(())
        } else {
            Err(ApiError::Unauthenticated)
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let token = bearer_token(&parts.headers).ok_or(ApiError::Unauthenticated)?;
        let claims = token::verify(&state.keys, &state.issuer, token, false)
            .map_err(|_| ApiError::Unauthenticated)?;
        if is_revoked(state, &claims.jti).await? {
            return Err(ApiError::Unauthenticated);
        }
        Ok(Caller { claims })
    }
}

/// The token of an `Authorization: Bearer` header.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

async fn is_revoked(state: &AppState, jti: &str) -> sqlx::Result<bool> {
    // language=SQL
    let row: Option<(String,)> = sqlx::query_as("SELECT jti FROM revoked_tokens WHERE jti = $1")
        .bind(jti)
        .fetch_optional(&state.db)
        .await?;
    Ok(row.is_some())
}
