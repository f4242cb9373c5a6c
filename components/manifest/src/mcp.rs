//! An API served as an MCP server: its tools, each one of the API's operations, with what
//! the control plane made of the operation's Swagger once (the tool's JSON Schemas, where
//! each argument goes), so that the gateway never reads Swagger.

use serde::{Deserialize, Serialize};

/// The tools of an API whose provider serves it as MCP, in the order they are listed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    /// Its tools.
    pub tools: Vec<McpTool>,
}

/// One tool: an operation of the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpTool {
    /// Its name, unique within the API.
    pub name: String,
    /// What it does, for the agent.
    pub description: String,
    /// The operation's upper-case method.
    pub method: String,
    /// The operation's path template, as the Swagger writes it.
    pub template: String,
    /// The scope the operation requires (`x-scope`), if any: a token without it is not
    /// offered the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Its arguments and where each goes in the request.
    pub arguments: Vec<ToolArgument>,
    /// The input schema (JSON Schema 2020-12), as JSON text.
    pub input_schema: String,
    /// The output schema of the success response, as JSON text, when it is an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
}

/// An argument of a tool: a parameter of its operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolArgument {
    /// Its name in the tool's arguments (the parameter's name).
    pub name: String,
    /// Where it goes.
    pub location: ArgumentLocation,
    /// Whether a call must give it.
    pub required: bool,
}

/// Where an argument goes in the operation's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArgumentLocation {
    /// A `{name}` segment of the path.
    Path,
    /// A query parameter.
    Query,
    /// A request header.
    Header,
    /// The JSON body, whole.
    Body,
    /// A field of a URL-encoded form body (`application/x-www-form-urlencoded`).
    Form,
}
