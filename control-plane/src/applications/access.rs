//! Who may use an application: the store caller ([`StoreUser`], who always has a
//! DefaultApplication) and the application's owner ([`owned_application`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::queries;
use super::records::{APPROVED, StoredApplication};
use crate::error::{Error, Result};
use crate::manifest::Touched;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

/// Name of the application every store user has.
const DEFAULT_APPLICATION: &str = "DefaultApplication";

/// A store caller: a token with the subscribe scope. The first such call creates the
/// user's DefaultApplication, as WSO2's PostAuthenticationInterceptor does.
pub struct StoreUser(pub Caller);

impl FromRequestParts<AppState> for StoreUser {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let caller = Caller::from_request_parts(parts, state).await?;
        caller.require(state, Scope::Subscribe)?;
        ensure_default_application(state, caller.username()).await?;
        Ok(StoreUser(caller))
    }
}

async fn ensure_default_application(state: &AppState, username: &str) -> Result<()> {
    if state
        .store_users
        .lock()
        .expect("store users lock")
        .contains(username)
    {
        return Ok(());
    }
    let id = uuid::Uuid::new_v4().to_string();
    let created = queries::insert_default(&state.db, &id, username, DEFAULT_APPLICATION).await?;
    if created {
        // Made by any store call, GETs included, which the change middleware ignores.
        state
            .shared::<crate::fleet::ManifestHub>()
            .touch([Touched::Application(id)]);
    }
    state
        .store_users
        .lock()
        .expect("store users lock")
        .insert(username.to_string());
    Ok(())
}

/// The caller's application: 404 when missing or in another tenant, 403 when another
/// user's of the same tenant.
pub async fn owned_application(
    state: &AppState,
    caller: &Caller,
    application_id: &str,
) -> Result<StoredApplication> {
    let app = queries::find(&state.db, application_id).await?;
    match app {
        None => Err(Error::NotFound("application", application_id.to_string())),
        // Another tenant's application answers as a missing one: its id discloses nothing.
        Some(app) if crate::users::tenant_of(&app.owner) != caller.tenant() => {
            Err(Error::NotFound("application", application_id.to_string()))
        }
        Some(app) if app.owner != caller.username() => Err(Error::Forbidden(format!(
            "You don't have permission to access the application with Id '{application_id}'"
        ))),
        Some(app) => Ok(app),
    }
}

/// Refuses (400) to subscribe or generate keys with an application whose creation is not
/// approved (waiting, or rejected), as WSO2 does.
pub fn require_approved(app: &StoredApplication) -> Result<()> {
    if app.status == APPROVED {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "Application {} is not approved (its status is {})",
            app.name, app.status
        )))
    }
}
