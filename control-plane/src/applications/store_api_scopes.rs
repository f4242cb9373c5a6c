//! The scopes of an application, `GET /api/am/store/v0.14/applications/{applicationId}/
//! scopes` and its deprecated twin `/applications/scopes/{applicationId}`: the scopes the
//! APIs it subscribes to declare, as WSO2 lists them (`ScopeList`).

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::access::{StoreUser, owned_application};
use crate::error::Result;
use crate::http::STORE;
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, get};
use crate::scopes::ApiScope;
use crate::state::AppState;
use crate::subscriptions::subscribed_api_scopes;
use crate::users;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{STORE}/applications/{{application_id}}/scopes"),
            get(application_scopes),
        )
        .route(
            &format!("{STORE}/applications/scopes/{{application_id}}"),
            get(application_scopes),
        )
}

/// WSO2's `ScopeList`.
#[derive(Debug, Serialize)]
struct ScopeList {
    list: Vec<ApplicationScope>,
}

/// WSO2's `ApplicationScope`: its roles comma separated.
#[derive(Debug, Serialize)]
struct ApplicationScope {
    key: String,
    name: String,
    roles: String,
    description: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScopesQuery {
    filter_by_user_roles: Option<bool>,
}

/// The scopes of the caller's application, each once (the first API declaring a key
/// names it); with `filterByUserRoles=true` only those the caller's roles may have.
async fn application_scopes(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path(application_id): Path<String>,
    QueryParams(q): QueryParams<ScopesQuery>,
) -> Result<Json<ScopeList>> {
    let app = owned_application(&state, &caller, &application_id).await?;
    let mut declared = subscribed_api_scopes(&state.db, &app.id, None).await?;
    if q.filter_by_user_roles.unwrap_or(false) {
        let roles = users::find(&state.db, caller.username())
            .await?
            .map(|user| user.roles)
            .unwrap_or_default();
        declared.retain(|scope| scope.allows(&roles));
    }
    let mut list: Vec<ApplicationScope> = Vec::new();
    for ApiScope {
        key,
        name,
        description,
        roles,
    } in declared
    {
        if !list.iter().any(|known| known.key == key) {
            list.push(ApplicationScope {
                key,
                name,
                roles: roles.join(","),
                description,
            });
        }
    }
    Ok(Json(ScopeList { list }))
}
