//! An API's MCP server as its provider sets it (the `apis.mcp` column), and as the
//! publisher's extension answers it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the provider set: whether the API is served as MCP, and per operation whether it
/// is a tool and under which name and description (an operation not named takes the
/// defaults: a tool, named from its `operationId`, described by its summary).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpSettings {
    /// Whether the gateway serves the API's MCP endpoint.
    pub enabled: bool,
    /// Operations set apart from the defaults.
    #[serde(default)]
    pub tools: Vec<ToolSetting>,
    /// The endpoint's URL, as answered (ignored when sent back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub url: Option<String>,
}

/// One operation's tool, as the provider set it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolSetting {
    /// `METHOD /template`, as the API's Swagger has it (e.g. `GET /devs/{username}`).
    pub operation: String,
    /// Whether it is a tool (absent: yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Its name (absent: from the operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its description (absent: the operation's summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its input schema, as answered (ignored when sent back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only, value_type = Option<Object>)]
    pub input_schema: Option<Value>,
    /// Its output schema, as answered (ignored when sent back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only, value_type = Option<Object>)]
    pub output_schema: Option<Value>,
    /// Why the operation cannot be a tool, as answered (ignored when sent back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub unsupported: Option<String>,
}

impl McpSettings {
    /// The settings stored in an API's row; none (not served) when never set or unreadable.
    pub fn of_row(stored: Option<&str>) -> Self {
        stored
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    }
}
