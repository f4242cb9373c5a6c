//! `GET /api/am/publisher/v0.14/environments[?apiId=]` (`apim:api_view`).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::records::{self, Environment};
use crate::error::{Error, Result};
use crate::http::extract::QueryParams;
use crate::http::routes::{Routes, get};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

pub fn router() -> Routes {
    Routes::new().route("/api/am/publisher/v0.14/environments", get(list))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListQuery {
    api_id: Option<String>,
}

/// WSO2's `EnvironmentList`.
#[derive(Debug, Serialize)]
struct EnvironmentList {
    count: usize,
    list: Vec<Environment>,
}

/// The gateway environments; with `apiId`, those the API is deployed to (its
/// `gatewayEnvironments`, every one when it names none), 404 for an API the caller's
/// tenant does not hold.
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<EnvironmentList>> {
    caller.require(&state, Scope::ApiView)?;
    let fleet = crate::fleet::list(&state.db).await?;
    let mut list = records::known(&state.config, &fleet);
    if let Some(api_id) = q.api_id {
        let named = api_environments(&state, &caller, &api_id).await?;
        if !named.is_empty() {
            list.retain(|e| named.iter().any(|n| n == e.name()));
        }
    }
    Ok(Json(EnvironmentList {
        count: list.len(),
        list,
    }))
}

/// The environments an API of the caller's tenant names.
async fn api_environments(state: &AppState, caller: &Caller, api_id: &str) -> Result<Vec<String>> {
    let api = match crate::apis::find(&state.db, api_id).await? {
        Some(api) if api.tenant == caller.tenant() => api,
        _ => return Err(Error::NotFound("API", api_id.to_string())),
    };
    Ok(api
        .record
        .gateway_environments
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect())
}
