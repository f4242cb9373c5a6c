//! The publisher's read of an application, `GET /api/am/publisher/v0.14/applications/
//! {applicationId}` (WSO2 v0.14 publisher `Application (Individual)`): who subscribes to
//! the provider's APIs, without the application's keys.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;

use super::queries;
use crate::error::{Error, Result};
use crate::http::PUBLISHER;
use crate::http::routes::{Routes, get};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;
use crate::users::tenant_of;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{PUBLISHER}/applications/{{application_id}}"),
        get(get_application),
    )
}

/// The publisher's `Application`: no keys, no callback URL, no attributes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PublisherApplication {
    application_id: String,
    name: String,
    subscriber: String,
    throttling_tier: String,
    description: String,
    group_id: String,
}

/// `GET /applications/{applicationId}` (scope `api_create`, as the contract says): an
/// application of the caller's tenant; another tenant's answers 404 as a missing one.
async fn get_application(
    State(state): State<AppState>,
    caller: Caller,
    Path(application_id): Path<String>,
) -> Result<Json<PublisherApplication>> {
    caller.require(&state, Scope::ApiCreate)?;
    let app = queries::find(&state.db, &application_id)
        .await?
        .filter(|app| tenant_of(&app.owner) == caller.tenant())
        .ok_or_else(|| Error::NotFound("application", application_id.clone()))?;
    Ok(Json(PublisherApplication {
        application_id: app.id,
        name: app.name,
        subscriber: app.owner,
        throttling_tier: app.throttling_tier,
        description: app.description,
        group_id: app.group_id,
    }))
}
