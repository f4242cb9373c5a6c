//! What an MCP server's answers are made of, on both sides of the component boundary: a
//! message's reply (its era and id), JSON-RPC's results and errors, and a tool call's
//! result made of its operation's answer, which a host that forwards a tool call by
//! itself writes without calling the component again.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::Response;

/// JSON-RPC's and MCP's error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    /// A routing header missing or not saying what the body says.
    pub const HEADER_MISMATCH: i64 = -32020;
    pub const UNSUPPORTED_VERSION: i64 = -32022;
    /// The gateway refused the call (its data carries WSO2's fault code).
    pub const REFUSED: i64 = -32000;
}

/// Which revision a message speaks, by its `MCP-Protocol-Version` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Era {
    /// 2026-07-28 and after: every message stands alone.
    Stateless,
    /// The revisions with `initialize`.
    Handshake,
}

/// How to answer a message: its era and id.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reply {
    pub era: Era,
    pub id: Value,
}

impl Reply {
    /// A result.
    pub fn result(&self, mut result: Value) -> Response {
        if self.era == Era::Stateless
            && let Some(result) = result.as_object_mut()
        {
            result.entry("resultType").or_insert(json!("complete"));
            result
                .entry("_meta")
                .or_insert(json!({"io.modelcontextprotocol/serverInfo": server_info()}));
        }
        Response::json(
            200,
            &json!({"jsonrpc": "2.0", "id": self.id, "result": result}),
        )
    }

    /// An error; the status is 200 in the handshake era, whose clients take any other as
    /// the transport failing.
    pub fn error(&self, code: i64, message: &str, data: Option<Value>) -> Response {
        let status = match (self.era, code) {
            (Era::Handshake, _) => 200,
            (_, code::METHOD_NOT_FOUND) => 404,
            (
                _,
                code::PARSE_ERROR
                | code::INVALID_REQUEST
                | code::INVALID_PARAMS
                | code::HEADER_MISMATCH
                | code::UNSUPPORTED_VERSION,
            ) => 400,
            _ => 200,
        };
        let mut error = json!({"code": code, "message": message});
        if let Some(data) = data {
            error["data"] = data;
        }
        Response::json(
            status,
            &json!({"jsonrpc": "2.0", "id": self.id, "error": error}),
        )
    }

    /// The gateway's refusal of a call (a throttled tier, a blocked subscription) as a
    /// JSON-RPC error carrying WSO2's fault code and the status a REST call would get.
    pub fn refused(&self, status: u16, wso2_code: u32, message: &str) -> Response {
        self.error(
            code::REFUSED,
            message,
            Some(json!({"code": wso2_code, "status": status})),
        )
    }
}

pub fn server_info() -> Value {
    serde_json::to_value(SERVER_INFO).unwrap_or_default()
}

/// The server's info, as every answer's `_meta` and `initialize` give it.
const SERVER_INFO: ServerInfo = ServerInfo {
    name: "apim-gateway",
    version: env!("CARGO_PKG_VERSION"),
};

/// The backend's answer as the tool's result: its JSON as `structuredContent` when the
/// tool has an output schema (`structured`; the answer must then be an object), its text
/// as content; an answer of 400 or more as a tool error.
pub fn tool_result(reply: &Reply, structured: bool, status: u16, body: &[u8]) -> Response {
    // Most answers are UTF-8: checked at once, never copied.
    let text = match std::str::from_utf8(body) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(body),
    };
    if status >= 400 {
        let mut result = json!({
            "content": [{"type": "text", "text": format!("The API answered {status}: {text}")}],
            "isError": true,
        });
        if let Ok(body) = serde_json::from_slice::<Value>(body) {
            result["_meta"] = json!({"status": status, "body": body});
        }
        return reply.result(result);
    }
    let structured_content = match structured {
        false => None,
        true => match serde_json::from_slice::<&RawValue>(body) {
            Ok(raw) if raw.get().starts_with('{') => Some(raw),
            _ => {
                return tool_error(
                    reply,
                    "The API's answer is not the JSON object its definition describes",
                );
            }
        },
    };
    // Written straight from the answer's bytes: no tree of the body is built.
    let stateless = reply.era == Era::Stateless;
    let message = Success {
        jsonrpc: "2.0",
        id: &reply.id,
        result: ToolSuccess {
            content: [TextContent {
                kind: "text",
                text: &text,
            }],
            is_error: false,
            structured_content,
            result_type: stateless.then_some("complete"),
            meta: stateless.then_some(ServerMeta {
                server_info: SERVER_INFO,
            }),
        },
    };
    match serde_json::to_vec(&message) {
        Ok(body) => Response::new(200, "application/json", body),
        Err(_) => tool_error(reply, "The API's answer could not be written"),
    }
}

/// A tool call's successful answer, as [`tool_result`] writes it.
#[derive(Serialize)]
struct Success<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: ToolSuccess<'a>,
}

/// The result of a [`Success`], as [`Reply::result`] would make it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolSuccess<'a> {
    content: [TextContent<'a>; 1],
    is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ServerMeta>,
}

#[derive(Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct ServerMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: ServerInfo,
}

#[derive(Serialize)]
struct ServerInfo {
    name: &'static str,
    version: &'static str,
}

/// A tool error with `why` as its text.
pub fn tool_error(reply: &Reply, why: &str) -> Response {
    reply.result(json!({"content": [{"type": "text", "text": why}], "isError": true}))
}
