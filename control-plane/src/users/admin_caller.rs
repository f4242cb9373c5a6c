//! Who calls an administration operation: an administrator by HTTP Basic, as WSO2's admin
//! API takes them, or by a bearer token carrying the admin scope (the publisher console
//! and other OAuth clients), whose user must still be an active account.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::login::BasicUser;
use super::queries::find;
use super::records::User;
use crate::error::{Error, Result};
use crate::http::auth::bearer_token;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::caller::Caller;

/// The user calling an administration operation; each operation then checks what their
/// roles and tenant allow, as for a Basic caller.
pub struct AdminUser(pub User);

impl FromRequestParts<AppState> for AdminUser {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        if bearer_token(&parts.headers).is_none() {
            let BasicUser(user) = BasicUser::from_request_parts(parts, state).await?;
            return Ok(AdminUser(user));
        }
        let caller = Caller::from_request_parts(parts, state).await?;
        caller.require(state, Scope::Admin)?;
        find(&state.db, caller.username())
            .await?
            .filter(|user| !user.disabled)
            .map(AdminUser)
            .ok_or(Error::Unauthenticated)
    }
}
