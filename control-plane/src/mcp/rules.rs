//! What an API's operations come to as MCP tools: the defaults (every operation a tool,
//! named from its `operationId` or its method and path, described by its summary), the
//! provider's settings over them, each tool's arguments and schemas, and what a setting
//! must be.

use std::collections::HashSet;

use apim_manifest::mcp::{ArgumentLocation, McpServer, McpTool, ToolArgument};
use serde_json::{Map, Value, json};

use super::records::{McpSettings, ToolSetting};
use super::schema::{self, Converter};
use crate::apis::rules::swagger_operations;

/// Longest tool name (MCP's own bound).
const MAX_NAME_CHARS: usize = 128;
/// Longest tool description.
const MAX_DESCRIPTION_CHARS: usize = 4096;
/// Most operations a setting may name.
const MAX_SETTINGS: usize = 1024;
/// The path under an API's `/<context>/<version>` its MCP endpoint is served at.
pub const ENDPOINT_PATH: &str = "/mcp";

/// The MCP endpoint of the API at `context` and `version` on the gateway at `base`.
pub fn endpoint_url(base: &str, context: &str, version: &str) -> String {
    format!(
        "{}{context}/{version}{ENDPOINT_PATH}",
        base.trim_end_matches('/')
    )
}

/// One operation of the API, as a tool or as why it cannot be one.
struct Planned {
    operation: String,
    enabled: bool,
    tool: Result<McpTool, String>,
}

/// The MCP server gateways serve for an API whose Swagger is `doc`, when its settings
/// switch it on: its enabled tools.
pub fn server(doc: &Value, settings: &McpSettings) -> Option<McpServer> {
    if !settings.enabled {
        return None;
    }
    // Settings were checked against the definition they were stored with; a definition
    // changed since may give two tools one name, of which the first is kept.
    let mut names = HashSet::new();
    let tools = plan(doc, settings)
        .into_iter()
        .filter(|planned| planned.enabled)
        .filter_map(|planned| planned.tool.ok())
        .filter(|tool| names.insert(tool.name.clone()))
        .collect();
    Some(McpServer { tools })
}

/// The settings as the publisher's extension answers them: every operation with its
/// tool's name, description, schemas, or why it cannot be a tool.
pub fn answer(doc: &Value, settings: &McpSettings, url: Option<String>) -> McpSettings {
    let tools = plan(doc, settings)
        .into_iter()
        .map(|planned| match planned.tool {
            Ok(tool) => ToolSetting {
                operation: planned.operation,
                enabled: Some(planned.enabled),
                name: Some(tool.name),
                description: Some(tool.description),
                input_schema: serde_json::from_str(&tool.input_schema).ok(),
                output_schema: tool
                    .output_schema
                    .and_then(|schema| serde_json::from_str(&schema).ok()),
                unsupported: None,
            },
            Err(why) => ToolSetting {
                operation: planned.operation,
                enabled: Some(false),
                unsupported: Some(why),
                ..ToolSetting::default()
            },
        })
        .collect();
    McpSettings {
        enabled: settings.enabled,
        tools,
        url,
    }
}

/// `settings` as stored, or why they are refused: each names an operation of `doc` once,
/// a tool's name is MCP's (letters, digits, `_`, `-`, `.`, at most 128) and unique among
/// the API's tools, a description is text, an operation that cannot be a tool is not
/// switched on, and no operation of the API takes the MCP endpoint's path.
pub fn check(doc: &Value, mut settings: McpSettings) -> Result<McpSettings, String> {
    settings.url = None;
    if settings.tools.len() > MAX_SETTINGS {
        return Err(format!("At most {MAX_SETTINGS} tools may be set"));
    }
    let operations: HashSet<String> = swagger_operations(doc)
        .map(|(template, method, _)| operation_key(method, template))
        .collect();
    let mut named = HashSet::new();
    for setting in &mut settings.tools {
        setting.input_schema = None;
        setting.output_schema = None;
        setting.unsupported = None;
        setting.operation = canonical_operation(&setting.operation);
        if !operations.contains(&setting.operation) {
            return Err(format!(
                "The API has no operation '{}' (write it as METHOD /path, as its definition has it)",
                setting.operation
            ));
        }
        if !named.insert(setting.operation.clone()) {
            return Err(format!(
                "The operation '{}' is set twice",
                setting.operation
            ));
        }
        if let Some(name) = &setting.name {
            check_name(name)?;
        }
        if let Some(description) = &setting.description
            && (description.chars().count() > MAX_DESCRIPTION_CHARS || description.contains('\0'))
        {
            return Err(format!(
                "A tool's description is text of at most {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
    }
    if settings.enabled
        && operations.iter().any(|operation| {
            operation
                .split_once(' ')
                .is_some_and(|(_, t)| t == ENDPOINT_PATH)
        })
    {
        return Err(format!(
            "The API has its own resource {ENDPOINT_PATH}, the path its MCP endpoint would take"
        ));
    }
    let planned = plan(doc, &settings);
    let mut names = HashSet::new();
    for planned in &planned {
        match &planned.tool {
            Ok(tool) if planned.enabled && !names.insert(tool.name.as_str()) => {
                return Err(format!("Two tools would be named '{}'", tool.name));
            }
            Err(why) if explicitly_enabled(&settings, &planned.operation) => {
                return Err(format!(
                    "The operation '{}' cannot be a tool: {why}",
                    planned.operation
                ));
            }
            _ => {}
        }
    }
    Ok(settings)
}

fn explicitly_enabled(settings: &McpSettings, operation: &str) -> bool {
    settings
        .tools
        .iter()
        .any(|setting| setting.operation == operation && setting.enabled == Some(true))
}

/// A tool name as MCP has them.
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "A tool's name is 1 to {MAX_NAME_CHARS} letters, digits, '_', '-' or '.', not '{name}'"
        ))
    }
}

/// `METHOD /template`.
fn operation_key(method: &str, template: &str) -> String {
    format!("{} {template}", method.to_ascii_uppercase())
}

/// A setting's operation with its method upper-case and spaces trimmed.
fn canonical_operation(operation: &str) -> String {
    match operation.trim().split_once(' ') {
        Some((method, template)) => operation_key(method, template.trim()),
        None => operation.trim().to_string(),
    }
}

/// Every operation of `doc`, in its definition's order, as a tool under `settings`.
fn plan(doc: &Value, settings: &McpSettings) -> Vec<Planned> {
    let mut taken: HashSet<String> = settings
        .tools
        .iter()
        .filter(|setting| setting.enabled != Some(false))
        .filter_map(|setting| setting.name.clone())
        .collect();
    let mut planned = Vec::new();
    for (template, method, operation) in swagger_operations(doc) {
        let key = operation_key(method, template);
        let setting = settings.tools.iter().find(|s| s.operation == key);
        let enabled = setting.and_then(|s| s.enabled).unwrap_or(true);
        let name = match setting.and_then(|s| s.name.clone()) {
            Some(name) => name,
            None => unique(default_name(method, template, operation), &mut taken),
        };
        let description = setting
            .and_then(|s| s.description.clone())
            .unwrap_or_else(|| default_description(&key, operation));
        let tool = tool(doc, method, template, operation, name, description);
        planned.push(Planned {
            operation: key,
            enabled,
            tool,
        });
    }
    planned
}

/// `name`, or with the first free `_2`, `_3`... after it; taken from then on.
fn unique(name: String, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        let suffix = format!("_{n}");
        let mut base = name.clone();
        base.truncate(MAX_NAME_CHARS - suffix.len());
        candidate = format!("{base}{suffix}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// The operation's `operationId` in MCP's characters, else its method and path's words
/// (`get_devs_username`).
fn default_name(method: &str, template: &str, operation: &Value) -> String {
    let source = match operation["operationId"].as_str().map(str::trim) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("{method}_{template}"),
    };
    let mut name = String::new();
    for c in source.chars() {
        let kept = if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
            c
        } else {
            '_'
        };
        if !(kept == '_' && (name.is_empty() || name.ends_with('_'))) {
            name.push(kept);
        }
    }
    let mut name = name.trim_end_matches('_').to_string();
    name.truncate(MAX_NAME_CHARS - 4);
    if name.is_empty() {
        name = method.to_string();
    }
    name
}

/// The operation's summary, else its description, else `METHOD /template`.
fn default_description(key: &str, operation: &Value) -> String {
    let text = ["summary", "description"]
        .iter()
        .filter_map(|field| operation[*field].as_str())
        .map(str::trim)
        .find(|text| !text.is_empty())
        .unwrap_or(key);
    text.chars().take(MAX_DESCRIPTION_CHARS).collect()
}

/// Whether a `formData` parameter can be an argument: a plain field of a URL-encoded form,
/// which the gateway writes; files and multipart-only operations are not taken.
fn form_field(doc: &Value, operation: &Value, parameter: &Value) -> Result<(), String> {
    if parameter["type"] == "file" {
        return Err("file parameters of forms are not taken as arguments".into());
    }
    // Swagger 2.0: the operation's `consumes` overrides the document's.
    let consumes = match &operation["consumes"] {
        Value::Array(types) => types,
        _ => match &doc["consumes"] {
            Value::Array(types) => types,
            _ => return Ok(()),
        },
    };
    let urlencoded = consumes.iter().any(|media| {
        media.as_str().is_some_and(|media| {
            let essence = media.split(';').next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
    });
    if consumes.is_empty() || urlencoded {
        Ok(())
    } else {
        Err("form parameters are taken only for URL-encoded forms".into())
    }
}

/// The tool an operation makes, or why it makes none.
fn tool(
    doc: &Value,
    method: &str,
    template: &str,
    operation: &Value,
    name: String,
    description: String,
) -> Result<McpTool, String> {
    let mut converter = Converter::new(doc);
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut arguments = Vec::new();
    for parameter in parameters(doc, template, method) {
        let parameter_name = parameter["name"].as_str().unwrap_or_default().to_string();
        let (location, schema) = match parameter["in"].as_str() {
            Some("path") => (ArgumentLocation::Path, converter.parameter(parameter)),
            Some("query") => (ArgumentLocation::Query, converter.parameter(parameter)),
            Some("header") => (ArgumentLocation::Header, converter.parameter(parameter)),
            Some("body") => (
                ArgumentLocation::Body,
                converter.schema(&parameter["schema"]),
            ),
            Some("formData") => {
                form_field(doc, operation, parameter)?;
                (ArgumentLocation::Form, converter.parameter(parameter))
            }
            _ => {
                return Err(format!(
                    "the parameter '{parameter_name}' has no known place"
                ));
            }
        };
        if parameter_name.is_empty() || properties.contains_key(&parameter_name) {
            return Err(format!(
                "the parameter name '{parameter_name}' is empty or used twice"
            ));
        }
        let is_required = location == ArgumentLocation::Path || parameter["required"] == true;
        if is_required {
            required.push(Value::String(parameter_name.clone()));
        }
        properties.insert(parameter_name.clone(), schema);
        arguments.push(ToolArgument {
            name: parameter_name,
            location,
            required: is_required,
        });
    }
    let output = success_schema(operation).map(|schema| converter.schema(schema));
    let output = output.filter(|schema| converter.is_object(schema));
    let mut input = Map::new();
    input.insert("$schema".into(), json!(schema::DIALECT));
    input.insert("type".into(), json!("object"));
    input.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        input.insert("required".into(), Value::Array(required));
    }
    input.insert("additionalProperties".into(), json!(false));
    let (input, output) = split_definitions(converter, input, output);
    Ok(McpTool {
        name,
        description,
        method: method.to_ascii_uppercase(),
        template: template.to_string(),
        scope: operation["x-scope"]
            .as_str()
            .map(str::trim)
            .filter(|scope| !scope.is_empty())
            .map(str::to_string),
        arguments,
        input_schema: input.to_string(),
        output_schema: output.map(|schema| schema.to_string()),
    })
}

/// The input schema and the output schema, each with the definitions it refers to.
fn split_definitions(
    converter: Converter<'_>,
    input: Map<String, Value>,
    output: Option<Value>,
) -> (Value, Option<Value>) {
    // One set of definitions serves both: a few shared definitions repeated are cheaper
    // than working out which schema uses which.
    let defs = converter.with_definitions(Map::new());
    let attach = |mut root: Map<String, Value>| {
        if let Some(defs) = defs.get("$defs") {
            root.insert("$defs".into(), defs.clone());
        }
        Value::Object(root)
    };
    let output = output.map(|schema| {
        let mut root = match schema {
            Value::Object(root) => root,
            _ => Map::new(),
        };
        root.insert("$schema".into(), json!(schema::DIALECT));
        root.entry("type").or_insert(json!("object"));
        attach(root)
    });
    (attach(input), output)
}

/// The operation's parameters with its path item's, an operation's own taking the place of
/// the path item's of the same name and place; `#/parameters/` references resolved.
fn parameters<'d>(doc: &'d Value, template: &str, method: &str) -> Vec<&'d Value> {
    let item = &doc["paths"][template];
    let resolve = |parameter: &'d Value| -> &'d Value {
        match parameter["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/parameters/"))
        {
            Some(name) => &doc["parameters"][name],
            None => parameter,
        }
    };
    let own: Vec<&Value> = item[method]["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(resolve)
        .collect();
    let shared = item["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(resolve)
        .filter(|shared| {
            !own.iter()
                .any(|o| o["name"] == shared["name"] && o["in"] == shared["in"])
        });
    let mut all: Vec<&Value> = shared.collect();
    all.extend(own);
    all
}

/// The schema of the operation's first success response (`200`, `201`, ... then
/// `default`), if it has one.
fn success_schema(operation: &Value) -> Option<&Value> {
    let responses = operation["responses"].as_object()?;
    let mut codes: Vec<&String> = responses
        .keys()
        .filter(|code| code.starts_with('2') && code.len() == 3)
        .collect();
    codes.sort();
    codes
        .into_iter()
        .chain(responses.keys().filter(|code| *code == "default"))
        .find_map(|code| responses[code].get("schema"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev_api() -> Value {
        json!({"swagger": "2.0",
            "paths": {
                "/devs/{username}": {
                    "parameters": [{"name": "username", "in": "path", "type": "string"}],
                    "get": {"operationId": "getDeveloper", "summary": "A developer",
                        "x-scope": "devs_read",
                        "responses": {"200": {"schema": {"$ref": "#/definitions/Developer"}}}},
                    "delete": {"responses": {"204": {}}}},
                "/devs/{username}/repos": {
                    "post": {"operationId": "add repo!",
                        "parameters": [
                            {"name": "username", "in": "path", "type": "string"},
                            {"name": "body", "in": "body", "required": true,
                             "schema": {"$ref": "#/definitions/Repo"}},
                            {"name": "dryRun", "in": "query", "type": "boolean"}],
                        "responses": {"201": {"schema": {"type": "array", "items": {}}}}}},
                "/upload": {"post": {"parameters": [{"name": "f", "in": "formData", "type": "file"}]}}},
            "definitions": {
                "Developer": {"type": "object", "properties": {"name": {"type": "string"}}},
                "Repo": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}}}}})
    }

    fn enabled() -> McpSettings {
        McpSettings {
            enabled: true,
            ..McpSettings::default()
        }
    }

    #[test]
    fn every_operation_is_a_tool_by_default_named_and_described_from_swagger() {
        let server = server(&dev_api(), &enabled()).unwrap();
        let tools: Vec<(&str, &str, &str, &str)> = server
            .tools
            .iter()
            .map(|t| {
                (
                    t.name.as_str(),
                    t.method.as_str(),
                    t.template.as_str(),
                    t.description.as_str(),
                )
            })
            .collect();
        assert_eq!(
            tools,
            [
                ("getDeveloper", "GET", "/devs/{username}", "A developer"),
                (
                    "delete_devs_username",
                    "DELETE",
                    "/devs/{username}",
                    "DELETE /devs/{username}"
                ),
                (
                    "add_repo",
                    "POST",
                    "/devs/{username}/repos",
                    "POST /devs/{username}/repos"
                ),
            ]
        );
        let get = &server.tools[0];
        assert_eq!(get.scope.as_deref(), Some("devs_read"));
        let output: Value = serde_json::from_str(get.output_schema.as_deref().unwrap()).unwrap();
        assert_eq!(output["$ref"], "#/$defs/Developer");
        assert_eq!(output["type"], "object");
        assert_eq!(
            output["$defs"]["Developer"]["properties"]["name"]["type"],
            "string"
        );
        let add = &server.tools[2];
        let input: Value = serde_json::from_str(&add.input_schema).unwrap();
        assert_eq!(input["$schema"], schema::DIALECT);
        assert_eq!(input["required"], json!(["username", "body"]));
        assert_eq!(input["properties"]["body"], json!({"$ref": "#/$defs/Repo"}));
        assert_eq!(input["properties"]["dryRun"], json!({"type": "boolean"}));
        assert_eq!(input["additionalProperties"], false);
        assert!(
            add.output_schema.is_none(),
            "an array is no structured content"
        );
        let locations: Vec<ArgumentLocation> = add.arguments.iter().map(|a| a.location).collect();
        assert_eq!(
            locations,
            [
                ArgumentLocation::Path,
                ArgumentLocation::Body,
                ArgumentLocation::Query
            ]
        );
    }

    #[test]
    fn settings_rename_describe_and_leave_out_operations() {
        let settings = McpSettings {
            enabled: true,
            tools: vec![
                ToolSetting {
                    operation: "get /devs/{username}".into(),
                    name: Some("developer".into()),
                    description: Some("Who a developer is".into()),
                    ..ToolSetting::default()
                },
                ToolSetting {
                    operation: "DELETE /devs/{username}".into(),
                    enabled: Some(false),
                    ..ToolSetting::default()
                },
            ],
            url: None,
        };
        let settings = check(&dev_api(), settings).unwrap();
        let server = server(&dev_api(), &settings).unwrap();
        let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["developer", "add_repo"]);
        assert_eq!(server.tools[0].description, "Who a developer is");
        let answered = answer(&dev_api(), &settings, None);
        let upload = answered
            .tools
            .iter()
            .find(|t| t.operation == "POST /upload")
            .unwrap();
        assert_eq!(upload.enabled, Some(false));
        assert!(upload.unsupported.as_deref().unwrap().contains("form"));
    }

    #[test]
    fn url_encoded_form_fields_are_arguments_and_files_and_multipart_are_not() {
        let doc = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"},
            "consumes": ["application/json"],
            "paths": {
                "/login": {"post": {"operationId": "login",
                    "consumes": ["application/x-www-form-urlencoded; charset=utf-8"],
                    "parameters": [
                        {"name": "user", "in": "formData", "type": "string", "required": true},
                        {"name": "remember", "in": "formData", "type": "boolean"}]}},
                "/avatar": {"post": {"consumes": ["multipart/form-data"],
                    "parameters": [{"name": "alt", "in": "formData", "type": "string"}]}},
                "/photo": {"post": {"consumes": ["application/x-www-form-urlencoded"],
                    "parameters": [{"name": "f", "in": "formData", "type": "file"}]}}}});
        let server = server(&doc, &enabled()).unwrap();
        let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["login"]);
        let login = &server.tools[0];
        let places: Vec<(&str, ArgumentLocation, bool)> = (login.arguments.iter())
            .map(|a| (a.name.as_str(), a.location, a.required))
            .collect();
        assert_eq!(
            places,
            [
                ("user", ArgumentLocation::Form, true),
                ("remember", ArgumentLocation::Form, false)
            ]
        );
        let input: Value = serde_json::from_str(&login.input_schema).unwrap();
        assert_eq!(input["properties"]["remember"]["type"], "boolean");
        assert_eq!(input["required"], json!(["user"]));

        let answered = answer(&doc, &enabled(), None);
        let why = |operation: &str| {
            let tool = answered.tools.iter().find(|t| t.operation == operation);
            tool.and_then(|t| t.unsupported.clone()).unwrap_or_default()
        };
        assert!(
            why("POST /avatar").contains("URL-encoded"),
            "{}",
            why("POST /avatar")
        );
        assert!(
            why("POST /photo").contains("file"),
            "{}",
            why("POST /photo")
        );
    }

    #[test]
    fn bad_settings_are_refused_naming_what() {
        let with = |tool: ToolSetting| McpSettings {
            enabled: true,
            tools: vec![tool],
            url: None,
        };
        let refused = |settings| check(&dev_api(), settings).unwrap_err();
        assert!(
            refused(with(ToolSetting {
                operation: "GET /nowhere".into(),
                ..ToolSetting::default()
            }))
            .contains("no operation 'GET /nowhere'")
        );
        assert!(
            refused(with(ToolSetting {
                operation: "GET /devs/{username}".into(),
                name: Some("two words".into()),
                ..ToolSetting::default()
            }))
            .contains("not 'two words'")
        );
        let named = |operation: &str| ToolSetting {
            operation: operation.into(),
            name: Some("same".into()),
            ..ToolSetting::default()
        };
        let twice = McpSettings {
            enabled: true,
            tools: vec![
                named("GET /devs/{username}"),
                named("DELETE /devs/{username}"),
            ],
            url: None,
        };
        assert!(refused(twice).contains("Two tools would be named 'same'"));
        // A default name the provider took elsewhere moves aside.
        let taken = check(
            &dev_api(),
            with(ToolSetting {
                operation: "DELETE /devs/{username}".into(),
                name: Some("getDeveloper".into()),
                ..ToolSetting::default()
            }),
        )
        .unwrap();
        let names: Vec<String> = server(&dev_api(), &taken)
            .unwrap()
            .tools
            .into_iter()
            .map(|tool| tool.name)
            .collect();
        assert_eq!(names, ["getDeveloper_2", "getDeveloper", "add_repo"]);
        assert!(
            refused(with(ToolSetting {
                operation: "POST /upload".into(),
                enabled: Some(true),
                ..ToolSetting::default()
            }))
            .contains("cannot be a tool")
        );
        let mut own_endpoint = dev_api();
        own_endpoint["paths"]["/mcp"] = json!({"post": {}});
        assert!(
            check(&own_endpoint, enabled())
                .unwrap_err()
                .contains("/mcp")
        );
        // The same API with the endpoint's path is fine while MCP is off.
        assert!(check(&own_endpoint, McpSettings::default()).is_ok());
    }

    #[test]
    fn default_names_are_unique_and_in_mcp_characters() {
        let mut taken = HashSet::from(["getDeveloper".to_string()]);
        assert_eq!(unique("getDeveloper".into(), &mut taken), "getDeveloper_2");
        assert_eq!(unique("getDeveloper".into(), &mut taken), "getDeveloper_3");
        let op = json!({"operationId": "  ünïcode / id  "});
        assert_eq!(default_name("get", "/x", &op), "n_code_id");
        assert_eq!(default_name("get", "/", &json!({})), "get");
    }
}
