//! An API's MCP server, publisher `/api/am/publisher/v0.14/apis/{apiId}/mcp` (our
//! extension; WSO2 v0.14 has none): `GET` answers whether the gateways serve it, at which
//! URL, and every operation with its tool's name, description and schemas (or why it
//! cannot be a tool); `PUT` sets them, and the change reaches gateways as any change of
//! the API does.

use axum::Json;
use axum::extract::{Path, State};
use serde_json::Value;

use super::records::McpSettings;
use super::rules;
use crate::apis::{StoredApi, tenant_api};
use crate::error::{Error, Result};
use crate::http::PUBLISHER;
use crate::http::extract::JsonBody;
use crate::http::routes::{Routes, get};
use crate::manifest::{Touched, Touches};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{PUBLISHER}/apis/{{api_id}}/mcp"),
        get(get_mcp).put(put_mcp),
    )
}

/// `GET /apis/{apiId}/mcp`.
#[utoipa::path(
    get,
    operation_id = "publisher_mcp_get",
    path = "/api/am/publisher/v0.14/apis/{apiId}/mcp",
    tag = "MCP",
    params(("apiId" = String, Path, description = "The API's id")),
    responses(
        (status = 200, description = "The API's MCP server: whether it is served, its URL, every operation as a tool", body = McpSettings),
        (status = 404, description = "No such API in the caller's tenant")
    ),
    security(("bearer" = []))
)]
async fn get_mcp(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
) -> Result<Json<McpSettings>> {
    caller.require(&state, Scope::ApiView)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let settings = McpSettings::of_row(api.mcp.as_deref());
    Ok(Json(answer(
        &state,
        &api,
        &api.record.definition(),
        &settings,
    )))
}

/// `PUT /apis/{apiId}/mcp`: replaces the settings; answers them as `GET` does.
#[utoipa::path(
    put,
    operation_id = "publisher_mcp_put",
    path = "/api/am/publisher/v0.14/apis/{apiId}/mcp",
    tag = "MCP",
    params(("apiId" = String, Path, description = "The API's id")),
    request_body = McpSettings,
    responses(
        (status = 200, description = "The settings are stored", body = McpSettings),
        (status = 400, description = "An operation the API lacks, a name or description MCP does not take, two tools of one name"),
        (status = 404, description = "No such API in the caller's tenant")
    ),
    security(("bearer" = []))
)]
async fn put_mcp(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    JsonBody(body): JsonBody<McpSettings>,
) -> Result<(Touches, Json<McpSettings>)> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    if body.enabled && api.record.api_type.as_deref() == Some("WS") {
        return Err(Error::Invalid(
            "A WebSocket API cannot be served as MCP".into(),
        ));
    }
    let definition = api.record.definition();
    let settings = rules::check(&definition, body).map_err(Error::Invalid)?;
    let stored = serde_json::to_string(&settings).map_err(anyhow::Error::from)?;
    crate::apis::check_deployable(&state, &api.full_record(), Some(&stored), Some(&api.id)).await?;
    super::queries::put(&state.db, &api.id, &stored).await?;
    tracing::info!(api = %api.id, enabled = settings.enabled, "MCP settings stored");
    Ok((
        Touches::one(Touched::Api(api.id.clone())),
        Json(answer(&state, &api, &definition, &settings)),
    ))
}

/// The settings as answered for `api`, whose Swagger is `definition`, with the endpoint's
/// URL on the first gateway.
fn answer(
    state: &AppState,
    api: &StoredApi,
    definition: &Value,
    settings: &McpSettings,
) -> McpSettings {
    let url = crate::environments::gateway_urls(&state.config)
        .first()
        .map(|base| rules::endpoint_url(base, &api.context, &api.version));
    rules::answer(definition, settings, url)
}

/// These operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(get_mcp, put_mcp), components(schemas(McpSettings)))]
pub struct Api;
