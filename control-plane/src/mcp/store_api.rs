//! An API's MCP server as the store shows it, `/api/am/store/v0.14/apis/{apiId}/mcp` (our
//! extension): to whoever may see the API, where it is served and its tools; 404 while
//! its provider does not serve it.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;

use super::records::McpSettings;
use super::rules;
use crate::apis::visible_api;
use crate::error::{Error, Result};
use crate::http::STORE;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::tokens::MaybeCaller;

pub fn router() -> Routes {
    Routes::new().route(&format!("{STORE}/apis/{{api_id}}/mcp"), get(get_mcp))
}

/// An API's MCP server, for its consumers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    /// The endpoint on each gateway URL.
    pub urls: Vec<String>,
    /// Its tools.
    pub tools: Vec<McpToolInfo>,
}

/// A tool as its consumers see it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    pub name: String,
    pub description: String,
    /// The operation it calls (`GET /devs/{username}`).
    pub operation: String,
    /// The scope a token needs to see and call it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// `GET /apis/{apiId}/mcp`.
#[utoipa::path(
    get,
    operation_id = "store_mcp_get",
    path = "/api/am/store/v0.14/apis/{apiId}/mcp",
    tag = "MCP",
    params(("apiId" = String, Path, description = "The API's id")),
    responses(
        (status = 200, description = "Where the API's MCP server is served, and its tools", body = McpServerInfo),
        (status = 404, description = "No API the caller may see, or not served as MCP")
    ),
    security((), ("bearer" = []))
)]
async fn get_mcp(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    Path(api_id): Path<String>,
) -> Result<Json<McpServerInfo>> {
    let api = visible_api(&state, caller.as_ref(), &api_id).await?;
    let settings = McpSettings::of_row(api.mcp.as_deref());
    let not_served = || Error::NotFoundWhy(format!("The API {api_id} is not served as MCP"));
    let server = rules::server(&api.record.definition(), &settings).ok_or_else(not_served)?;
    let urls = crate::environments::gateway_urls(&state.config)
        .iter()
        .map(|base| rules::endpoint_url(base, &api.context, &api.version))
        .collect();
    let tools = server
        .tools
        .into_iter()
        .map(|tool| McpToolInfo {
            operation: format!("{} {}", tool.method, tool.template),
            name: tool.name,
            description: tool.description,
            scope: tool.scope,
        })
        .collect();
    Ok(Json(McpServerInfo { urls, tools }))
}

/// This operation in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(get_mcp), components(schemas(McpServerInfo, McpToolInfo)))]
pub struct Api;
