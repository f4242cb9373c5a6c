//! An API's MCP server (`<context>/<version>/mcp`, when its provider serves it): the
//! Model Context Protocol's stateless revision 2026-07-28 (`server/discover`,
//! `tools/list`, `tools/call`, the `Mcp-Method` and `Mcp-Name` headers checked against the
//! body), and the handshake of the revisions before it (`initialize`, never a session id,
//! so that any instance answers any call). A tool call becomes the operation's request,
//! which the gateway then decides as any call ([`crate::gateway`]); what this module does
//! is the protocol: reading a message within bounds, answering it, and turning a call's
//! arguments into a request and the backend's answer into a tool result.

use std::collections::HashMap;
use std::rc::Rc;

use apim_manifest::ApiRoute;
use apim_manifest::mcp::{ArgumentLocation, McpServer, McpTool};
use base64::Engine as _;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use apim_http::mcp::{Era, Reply, tool_result};
use apim_http::mcp::{code, server_info, tool_error};

use crate::host::{Headers, Request, Response, header};
use crate::input_schema::InputSchema;

/// The endpoint's path under the API's `/<context>/<version>`.
pub const ENDPOINT: &str = "/mcp";
/// The stateless revision.
pub const MODERN: &str = "2026-07-28";
/// The handshake revisions answered, newest first.
const HANDSHAKE: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Most bytes of one message.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;
/// Deepest nesting of a call's arguments.
const MAX_ARGUMENT_DEPTH: usize = 32;
/// Longest value of a path, query or header argument, bytes.
const MAX_PLAIN_ARGUMENT_BYTES: usize = 8 * 1024;
/// How long a client may keep a tool list: the list follows the caller's token, so it is
/// cached for that caller only (`cacheScope: private`).
const LIST_TTL_MS: u64 = 60_000;

/// Most tools on one page of `tools/list`.
const LIST_PAGE: usize = 50;

/// Compiled input schemas an instance keeps at most (past it, it starts afresh).
const MAX_KEPT_VALIDATORS: usize = 64;

/// Characters kept as they are in a path segment or a query value: RFC 3986's unreserved.
const ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Whether `resource` (the path within `api`) is the API's MCP endpoint.
pub fn is_endpoint(api: &ApiRoute, resource: &str) -> bool {
    api.mcp.is_some() && resource == ENDPOINT
}

/// The 405 a method other than POST gets.
pub fn method_not_allowed() -> Response {
    Response {
        status: 405,
        headers: vec![("allow".into(), b"POST".to_vec())],
        body: Vec::new(),
    }
}

/// Tools' input schemas read, kept by an instance that serves more than one message
/// (edge-gateway's reused ones), by the schema's text.
#[derive(Default)]
pub struct Validators(HashMap<String, Rc<InputSchema>>);

impl Validators {
    /// The input schema of `schema` (JSON text), read on first use.
    fn of(&mut self, schema: &str) -> Result<Rc<InputSchema>, String> {
        if let Some(validator) = self.0.get(schema) {
            return Ok(validator.clone());
        }
        let validator = InputSchema::parse(schema)
            .map_err(|err| format!("The tool's input schema cannot be used: {err}"))?;
        if self.0.len() >= MAX_KEPT_VALIDATORS {
            self.0.clear();
        }
        let validator = Rc::new(validator);
        self.0.insert(schema.to_string(), validator.clone());
        Ok(validator)
    }
}

/// The tool of `api`'s MCP server at `index` (a [`Call`]'s).
pub fn tool_at(api: &ApiRoute, index: usize) -> Option<&McpTool> {
    api.mcp.as_ref()?.tools.get(index)
}

/// A JSON-RPC request or notification.
#[derive(Debug, Deserialize)]
pub struct Message {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

/// What the gateway does with a message.
pub enum Step {
    /// Answer this.
    Answer(Response),
    /// Call this tool with these arguments, then answer with [`tool_result`].
    Call(Call),
}

/// A tool call asked for.
pub struct Call {
    /// The message's era and id, for the answer.
    pub reply: Reply,
    /// The tool's index in the API's server.
    pub tool: usize,
    /// The arguments given: an object.
    pub arguments: Value,
}

/// The era of a request, by its headers.
pub fn era(headers: &Headers) -> Era {
    match header(headers, "mcp-protocol-version").map(str::trim) {
        Some(version) if !HANDSHAKE.contains(&version) => Era::Stateless,
        _ => Era::Handshake,
    }
}

/// Reads a message and decides what it asks; `scopes` says whether the caller's token
/// carries a scope.
pub fn step(
    server: &McpServer,
    request: &Request,
    has_scope: &dyn Fn(&str) -> bool,
    validators: &mut Validators,
) -> Step {
    let era = era(&request.headers);
    let unknown_id = Reply {
        era,
        id: Value::Null,
    };
    if request.body.len() > MAX_MESSAGE_BYTES {
        return Step::Answer(unknown_id.error(
            code::INVALID_REQUEST,
            "The message is too large",
            None,
        ));
    }
    let value: Value = match serde_json::from_slice(&request.body) {
        Ok(value) => value,
        Err(_) => return Step::Answer(unknown_id.error(code::PARSE_ERROR, "Parse error", None)),
    };
    if value.is_array() {
        return Step::Answer(unknown_id.error(
            code::INVALID_REQUEST,
            "Body must be a single JSON-RPC request or notification object",
            None,
        ));
    }
    let Ok(message) = serde_json::from_value::<Message>(value) else {
        return Step::Answer(unknown_id.error(code::INVALID_REQUEST, "Invalid request", None));
    };
    let Some(id) = message.id.clone().filter(is_valid_id) else {
        // A notification (or a request whose id JSON-RPC does not allow): nothing to say.
        return Step::Answer(accepted());
    };
    let reply = Reply { era, id };
    if message.jsonrpc.as_deref() != Some("2.0") {
        return Step::Answer(reply.error(code::INVALID_REQUEST, "Invalid request", None));
    }
    if era == Era::Stateless
        && let Err(answer) = check_stateless(&reply, &message, &request.headers)
    {
        return Step::Answer(answer);
    }
    let params = message.params.as_ref().unwrap_or(&Value::Null);
    match (era, message.method.as_str()) {
        (Era::Stateless, "server/discover") => Step::Answer(reply.result(json!({
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
        }))),
        (Era::Handshake, "initialize") => Step::Answer(reply.result(initialized(params))),
        (Era::Handshake, "ping") => Step::Answer(reply.result(json!({}))),
        (_, "tools/list") => Step::Answer(list(server, &reply, params, has_scope)),
        (_, "tools/call") => call(server, reply, params, has_scope, validators),
        _ => Step::Answer(reply.error(
            code::METHOD_NOT_FOUND,
            "Method not found",
            Some(json!(message.method)),
        )),
    }
}

/// JSON-RPC's ids: a string or a number.
fn is_valid_id(id: &Value) -> bool {
    id.is_string() || id.is_number()
}

/// A stateless message's envelope: `_meta` with the revision and the client's
/// capabilities, and headers that say what the body says.
fn check_stateless(reply: &Reply, message: &Message, headers: &Headers) -> Result<(), Response> {
    let meta = &message.params.as_ref().unwrap_or(&Value::Null)["_meta"];
    let version = meta["io.modelcontextprotocol/protocolVersion"].as_str();
    let capabilities = meta.get("io.modelcontextprotocol/clientCapabilities");
    let (Some(version), Some(_)) = (version, capabilities) else {
        return Err(reply.error(
            code::INVALID_PARAMS,
            "params._meta must carry the protocol version and the client's capabilities",
            None,
        ));
    };
    let single = |name: &str| {
        let mut values = headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let first = values.next().and_then(|(_, v)| std::str::from_utf8(v).ok());
        match values.next() {
            Some(_) => None,
            None => first.map(str::trim),
        }
    };
    let mismatch = |what: &str| reply.error(code::HEADER_MISMATCH, what, None);
    if single("mcp-protocol-version") != Some(version) {
        return Err(mismatch(
            "mcp-protocol-version header does not match params._meta",
        ));
    }
    if single("mcp-method") != Some(message.method.as_str()) {
        return Err(mismatch(
            "mcp-method header does not match the request body's method",
        ));
    }
    if message.method == "tools/call" {
        let name = message.params.as_ref().unwrap_or(&Value::Null)["name"].as_str();
        let sent = single("mcp-name").map(decoded_name);
        if sent.is_none() || sent.as_deref() != name {
            return Err(mismatch(
                "mcp-name header does not match the request body's 'name' parameter",
            ));
        }
    }
    if version != MODERN {
        return Err(reply.error(
            code::UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            Some(json!({"supported": [MODERN], "requested": version})),
        ));
    }
    Ok(())
}

/// An `Mcp-Name` value, decoded when sent as `=?base64?...?=` (names outside printable
/// ASCII).
fn decoded_name(value: &str) -> String {
    value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
        .and_then(|encoded| {
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
        })
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_else(|| value.to_string())
}

/// `initialize`'s result: the client's revision when it is one of the handshake's, else
/// the newest of them.
fn initialized(params: &Value) -> Value {
    let asked = params["protocolVersion"].as_str().unwrap_or_default();
    let version = HANDSHAKE
        .iter()
        .find(|known| **known == asked)
        .unwrap_or(&HANDSHAKE[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": server_info(),
    })
}

/// The tools the caller's token may call, at most [`LIST_PAGE`] a page: the next page's
/// cursor is where the server's list goes on (opaque to the client, and the same for every
/// instance: nothing is kept between messages).
fn list(
    server: &McpServer,
    reply: &Reply,
    params: &Value,
    has_scope: &dyn Fn(&str) -> bool,
) -> Response {
    let start = match params.get("cursor").filter(|cursor| !cursor.is_null()) {
        None => 0,
        Some(cursor) => match cursor.as_str().and_then(cursor_position) {
            Some(start) if start < server.tools.len() => start,
            _ => return reply.error(code::INVALID_PARAMS, "Invalid cursor", None),
        },
    };
    let mut visible = (server.tools.iter().enumerate().skip(start))
        .filter(|(_, tool)| tool.scope.as_deref().is_none_or(has_scope));
    let tools: Vec<Value> = visible
        .by_ref()
        .take(LIST_PAGE)
        .map(|(_, tool)| described(tool))
        .collect();
    let mut result = json!({"tools": tools});
    if let Some((next, _)) = visible.next() {
        result["nextCursor"] = json!(cursor_at(next));
    }
    if reply.era == Era::Stateless {
        result["ttlMs"] = json!(LIST_TTL_MS);
        result["cacheScope"] = json!("private");
    }
    reply.result(result)
}

/// The cursor of a page that starts at `position` in the server's list.
fn cursor_at(position: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("tools:{position}"))
}

/// Where the page a cursor names starts; `None` for a cursor this server gives none of.
fn cursor_position(cursor: &str) -> Option<usize> {
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    let position = std::str::from_utf8(&decoded).ok()?.strip_prefix("tools:")?;
    position
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| position.parse().ok())
        .flatten()
}

/// A tool as `tools/list` shows it.
fn described(tool: &McpTool) -> Value {
    let schema = |text: &str| serde_json::from_str::<Value>(text).unwrap_or_else(|_| json!({}));
    let mut described = json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": schema(&tool.input_schema),
        "annotations": {
            "readOnlyHint": matches!(tool.method.as_str(), "GET" | "HEAD" | "OPTIONS"),
            "idempotentHint": matches!(tool.method.as_str(), "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE"),
            "destructiveHint": tool.method == "DELETE",
            "openWorldHint": true,
        },
    });
    if let Some(output) = &tool.output_schema {
        described["outputSchema"] = schema(output);
    }
    described
}

/// A `tools/call`: the tool, if the caller may call it, with its arguments checked.
fn call(
    server: &McpServer,
    reply: Reply,
    params: &Value,
    has_scope: &dyn Fn(&str) -> bool,
    validators: &mut Validators,
) -> Step {
    let name = params["name"].as_str().unwrap_or_default();
    let found = server
        .tools
        .iter()
        .position(|tool| tool.name == name && tool.scope.as_deref().is_none_or(has_scope));
    let Some(index) = found else {
        return Step::Answer(reply.error(
            code::INVALID_PARAMS,
            &format!("Unknown tool: {name}"),
            None,
        ));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(arguments @ Value::Object(_)) => arguments.clone(),
        Some(_) => {
            return Step::Answer(reply.error(
                code::INVALID_PARAMS,
                "arguments must be an object",
                None,
            ));
        }
    };
    if let Err(why) = check_arguments(&server.tools[index], &arguments, validators) {
        return Step::Answer(tool_error(&reply, &why));
    }
    Step::Call(Call {
        reply,
        tool: index,
        arguments,
    })
}

/// Arguments as the tool's input schema has them (its patterns matched by a regex engine
/// without backtracking), and as a request can carry them: plain ones
/// (path, query, header) plain and short, a path argument one segment, none nested deeper
/// than [`MAX_ARGUMENT_DEPTH`].
fn check_arguments(
    tool: &McpTool,
    arguments: &Value,
    validators: &mut Validators,
) -> Result<(), String> {
    for argument in &tool.arguments {
        let Some(value) = arguments.get(&argument.name).filter(|v| !v.is_null()) else {
            continue;
        };
        if depth(value) > MAX_ARGUMENT_DEPTH {
            return Err(format!(
                "The argument '{}' is nested too deeply",
                argument.name
            ));
        }
        let text = plain_text(value);
        if argument.location == ArgumentLocation::Path
            && (matches!(text.as_str(), "" | "." | "..") || text.contains(['/', '\\']))
        {
            return Err(format!(
                "The argument '{}' names no path segment",
                argument.name
            ));
        }
        if argument.location != ArgumentLocation::Body {
            let plain = match value {
                Value::Array(items) => items.iter().all(is_scalar),
                other => is_scalar(other),
            };
            if !plain || text.len() > MAX_PLAIN_ARGUMENT_BYTES {
                return Err(format!(
                    "The argument '{}' must be a short string, number or boolean",
                    argument.name
                ));
            }
        }
    }
    let validator = validators.of(&tool.input_schema)?;
    validator.check(arguments).map_err(|misfit| {
        if misfit.at.is_empty() {
            format!(
                "The arguments do not fit the tool's input schema: {}",
                misfit.why
            )
        } else {
            format!(
                "The argument at {} does not fit the tool's input schema: {}",
                misfit.at, misfit.why
            )
        }
    })
}

fn is_scalar(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A plain argument's text: a string as it is, anything else as JSON writes it; an array
/// comma-separated (Swagger's `csv`, its default).
fn plain_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(plain_text).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// The operation's request for a call: its path with the path arguments, the query and
/// header arguments, the body (JSON, or a form of the form arguments); the caller's
/// credentials and trace carried on. `base` is
/// the API's `/<context>/<version>`.
pub fn operation_request(
    tool: &McpTool,
    arguments: &Value,
    base: &str,
    client: &Request,
) -> Request {
    let mut path = String::from(base);
    for segment in tool.template.split('/').filter(|s| !s.is_empty()) {
        path.push('/');
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => {
                let value = arguments.get(name).map(plain_text).unwrap_or_default();
                path.extend(utf8_percent_encode(&value, ENCODED));
            }
            None => path.push_str(segment),
        }
    }
    let mut query = Vec::new();
    let mut form = Vec::new();
    let mut headers: Headers = Vec::new();
    let mut body = Vec::new();
    for argument in &tool.arguments {
        let Some(value) = arguments.get(&argument.name).filter(|v| !v.is_null()) else {
            continue;
        };
        match argument.location {
            ArgumentLocation::Path => {}
            ArgumentLocation::Query => query.push(encoded_pair(&argument.name, value)),
            // The gateway's own to set, whatever a definition names: never an argument's.
            ArgumentLocation::Header if apim_http::is_hop_by_hop(&argument.name, &[]) => {}
            ArgumentLocation::Header => {
                let text: String = plain_text(value)
                    .chars()
                    .filter(|c| !c.is_control())
                    .collect();
                headers.push((argument.name.to_ascii_lowercase(), text.into_bytes()));
            }
            ArgumentLocation::Body => body = value.to_string().into_bytes(),
            ArgumentLocation::Form => form.push(encoded_pair(&argument.name, value)),
        }
    }
    let mut content_type: &[u8] = b"application/json";
    if !form.is_empty() {
        body = form.join("&").into_bytes();
        content_type = b"application/x-www-form-urlencoded";
    }
    if !query.is_empty() {
        path.push('?');
        path.push_str(&query.join("&"));
    }
    for carried in [
        "authorization",
        "traceparent",
        "tracestate",
        "x-forwarded-for",
    ] {
        headers.retain(|(name, _)| name != carried);
        if let Some((_, value)) = client
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(carried))
        {
            headers.push((carried.into(), value.clone()));
        }
    }
    headers.push(("accept".into(), b"application/json".to_vec()));
    if !body.is_empty() {
        headers.push(("content-type".into(), content_type.to_vec()));
        headers.push(("content-length".into(), body.len().to_string().into_bytes()));
    }
    Request {
        method: tool.method.clone(),
        path_with_query: path,
        headers,
        body,
        scheme: client.scheme,
    }
}

/// `name=value`, both percent-encoded, as a query or a URL-encoded form has an argument.
fn encoded_pair(name: &str, value: &Value) -> String {
    format!(
        "{}={}",
        utf8_percent_encode(name, ENCODED),
        utf8_percent_encode(&plain_text(value), ENCODED)
    )
}

/// What makes a tool call's answer of its operation's, once a host that forwards by
/// itself has the backend's answer: the host carries it opaque with the verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answering {
    /// The message's era and id.
    pub reply: Reply,
    /// The tool has an output schema: its result is structured.
    pub structured: bool,
    /// The operation's method and target, which the API's out flow sees.
    pub method: String,
    pub path_with_query: String,
}

impl Answering {
    /// The tool's result of the backend's `answer`.
    pub fn result(&self, answer: &Response) -> Response {
        tool_result(&self.reply, self.structured, answer.status, &answer.body)
    }
}

/// A notification taken.
fn accepted() -> Response {
    Response {
        status: 202,
        headers: Vec::new(),
        body: Vec::new(),
    }
}
