//! WSO2's publisher and store contracts of REST API v0.14 (`contracts/wso2/`, the Swagger 2.0
//! files WSO2 publishes), which the control plane serves operation for operation, in the
//! terms of OpenAPI 3.1: body and form parameters become request bodies, `produces` the
//! responses' media types, `#/definitions/X` the component `{contract}.X`.
//!
//! Two things change on the way, both to say what the control plane sends: a member a
//! schema does not require may be `null` (WSO2's own servers send unset members as `null`,
//! which Swagger 2.0 cannot say), and where we depart from WSO2 on purpose, or WSO2's
//! contract contradicts its own answers, the schema says what we send ([`amend`]).

use serde_json::{Map, Value, json};

/// WSO2's publisher contract, as WSO2 publishes it.
pub const PUBLISHER_CONTRACT: &str = include_str!("../../contracts/wso2/publisher-api.yaml");
/// WSO2's store contract, as WSO2 publishes it.
pub const STORE_CONTRACT: &str = include_str!("../../contracts/wso2/store-api.yaml");

/// The header parameters OpenAPI 3 describes elsewhere (media types, security schemes),
/// which it forbids as parameters.
const IMPLIED_HEADERS: [&str; 3] = ["accept", "content-type", "authorization"];

/// The methods a Swagger path item may hold.
const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];

/// One of WSO2's contracts: its operations (full paths) and its schemas (named
/// `{prefix}.{definition}`), in OpenAPI 3.1.
pub struct Converted {
    pub paths: Map<String, Value>,
    pub schemas: Map<String, Value>,
}

/// Both contracts, the publisher's and the store's.
pub fn contracts() -> [Converted; 2] {
    [
        convert("publisher", &parse(PUBLISHER_CONTRACT)),
        convert("store", &parse(STORE_CONTRACT)),
    ]
}

/// A contract's YAML as JSON.
pub fn parse(text: &str) -> Value {
    let yaml: serde_norway::Value = serde_norway::from_str(text).expect("WSO2's contract parses");
    yaml_to_json(yaml)
}

/// YAML to JSON; keys that are not strings (the responses' status codes) become strings.
pub fn yaml_to_json(yaml: serde_norway::Value) -> Value {
    use serde_norway::Value as Yaml;
    match yaml {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => Value::Bool(b),
        Yaml::Number(n) => serde_json::to_value(&n).unwrap_or(Value::Null),
        Yaml::String(s) => Value::String(s),
        Yaml::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        Yaml::Mapping(members) => Value::Object(
            members
                .into_iter()
                .map(|(k, v)| (key_string(k), yaml_to_json(v)))
                .collect(),
        ),
        Yaml::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

fn key_string(key: serde_norway::Value) -> String {
    match key {
        serde_norway::Value::String(s) => s,
        other => serde_norway::to_string(&other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

/// One contract in OpenAPI 3.1 terms.
fn convert(prefix: &str, swagger: &Value) -> Converted {
    let context = Context { prefix, swagger };
    let base = swagger["basePath"].as_str().unwrap_or_default();
    let paths = members(&swagger["paths"])
        .map(|(template, item)| {
            let item = without_unset_members(context.path_item(item));
            (format!("{base}{template}"), item)
        })
        .collect();
    let mut schemas: Map<String, Value> = members(&swagger["definitions"])
        .map(|(name, schema)| {
            let schema = objects_typed(context.schema(schema));
            (format!("{prefix}.{name}"), with_nullable_members(schema))
        })
        .collect();
    let mut converted = Converted {
        paths,
        schemas: Map::new(),
    };
    converted.schemas.append(&mut schemas);
    amend(prefix, &mut converted);
    converted
}

/// The contract and its name, for resolving references.
struct Context<'a> {
    prefix: &'a str,
    swagger: &'a Value,
}

impl Context<'_> {
    fn path_item(&self, item: &Value) -> Value {
        let shared = item["parameters"].as_array().cloned().unwrap_or_default();
        let operations = METHODS
            .iter()
            .filter(|m| item[**m].is_object())
            .map(|m| (m.to_string(), self.operation(&item[*m], &shared)))
            .collect();
        Value::Object(operations)
    }

    fn operation(&self, swagger_op: &Value, shared: &[Value]) -> Value {
        let mut op: Map<String, Value> = members(swagger_op)
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "parameters" | "responses" | "consumes" | "produces"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let consumes = self.media_types(swagger_op, "consumes");
        let produces = self.media_types(swagger_op, "produces");
        let parameters: Vec<Value> = shared
            .iter()
            .chain(swagger_op["parameters"].as_array().into_iter().flatten())
            .map(|p| self.resolve(p).clone())
            .collect();
        let plain: Vec<Value> = parameters
            .iter()
            .filter(|p| matches!(p["in"].as_str(), Some("path" | "query" | "header")))
            .filter(|p| !is_implied_header(p))
            .map(|p| self.parameter(p))
            .collect();
        if !plain.is_empty() {
            op.insert("parameters".into(), Value::Array(plain));
        }
        if let Some(body) = self.request_body(&parameters, &consumes) {
            op.insert("requestBody".into(), body);
        }
        let responses = members(&swagger_op["responses"])
            .map(|(status, r)| (status.clone(), self.response(r, &produces)))
            .collect();
        op.insert("responses".into(), Value::Object(responses));
        Value::Object(op)
    }

    /// The operation's own list of `key` (`consumes`, `produces`), else the contract's.
    fn media_types(&self, op: &Value, key: &str) -> Vec<String> {
        let list = if op[key].is_array() {
            &op[key]
        } else {
            &self.swagger[key]
        };
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str().map(str::to_string))
            .collect()
    }

    /// A parameter, following a `#/parameters/…` reference.
    fn resolve<'v>(&'v self, parameter: &'v Value) -> &'v Value {
        match parameter["$ref"].as_str() {
            Some(reference) => self
                .swagger
                .pointer(reference.trim_start_matches('#'))
                .unwrap_or(&Value::Null),
            None => parameter,
        }
    }

    /// A path, query or header parameter: its type, format, enum and default move into a
    /// schema.
    fn parameter(&self, swagger_param: &Value) -> Value {
        const SCHEMA_KEYS: [&str; 6] = ["type", "format", "enum", "default", "items", "minimum"];
        let mut parameter = Map::new();
        let mut schema = Map::new();
        for (key, value) in members(swagger_param) {
            if SCHEMA_KEYS.contains(&key.as_str()) {
                schema.insert(key.clone(), value.clone());
            } else {
                parameter.insert(key.clone(), value.clone());
            }
        }
        parameter.insert("schema".into(), Value::Object(schema));
        Value::Object(parameter)
    }

    /// The body parameter, or the form parameters as one multipart body.
    fn request_body(&self, parameters: &[Value], consumes: &[String]) -> Option<Value> {
        if let Some(body) = parameters.iter().find(|p| p["in"] == "body") {
            let schema = self.schema(&body["schema"]);
            let content = content_of(consumes, &schema);
            return Some(json!({
                "description": body["description"],
                "required": body["required"].as_bool().unwrap_or(false),
                "content": content,
            }));
        }
        let form: Vec<&Value> = parameters
            .iter()
            .filter(|p| p["in"] == "formData")
            .collect();
        if form.is_empty() {
            return None;
        }
        let properties: Map<String, Value> = form
            .iter()
            .map(|p| {
                let schema = match p["type"].as_str() {
                    Some("file") => file_schema(),
                    _ => json!({"type": p["type"]}),
                };
                let mut schema = schema;
                schema["description"] = p["description"].clone();
                (p["name"].as_str().unwrap_or_default().to_string(), schema)
            })
            .collect();
        let required: Vec<&Value> = form
            .iter()
            .filter(|p| p["required"] == true)
            .map(|p| &p["name"])
            .collect();
        let schema = json!({"type": "object", "properties": properties, "required": required});
        Some(json!({
            "required": !required.is_empty(),
            "content": content_of(consumes, &schema),
        }))
    }

    fn response(&self, swagger_response: &Value, produces: &[String]) -> Value {
        let mut response = json!({"description": swagger_response["description"]});
        let headers: Map<String, Value> = members(&swagger_response["headers"])
            .map(|(name, header)| {
                let mut schema = header.clone();
                let description = schema.as_object_mut().and_then(|s| s.remove("description"));
                (
                    name.clone(),
                    json!({"description": description, "schema": schema}),
                )
            })
            .collect();
        if !headers.is_empty() {
            response["headers"] = Value::Object(headers);
        }
        if !swagger_response["schema"].is_null() {
            let schema = self.schema(&swagger_response["schema"]);
            response["content"] = content_of(produces, &schema);
        }
        response
    }

    /// A schema with its references to definitions pointing at this contract's components,
    /// and `type: file` as binary content.
    fn schema(&self, schema: &Value) -> Value {
        match schema {
            Value::Object(members) if members.get("type") == Some(&json!("file")) => file_schema(),
            Value::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(key, value)| match (key.as_str(), value.as_str()) {
                        ("$ref", Some(reference)) => {
                            let name = reference.trim_start_matches("#/definitions/");
                            (key.clone(), json!(self.component(name)))
                        }
                        _ => (key.clone(), self.schema(value)),
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|s| self.schema(s)).collect()),
            other => other.clone(),
        }
    }

    fn component(&self, definition: &str) -> String {
        format!("#/components/schemas/{}.{definition}", self.prefix)
    }
}

fn is_implied_header(parameter: &Value) -> bool {
    parameter["in"] == "header"
        && parameter["name"]
            .as_str()
            .is_some_and(|name| IMPLIED_HEADERS.contains(&name.to_ascii_lowercase().as_str()))
}

fn file_schema() -> Value {
    json!({"type": "string", "contentMediaType": "application/octet-stream"})
}

/// The same schema under each media type.
fn content_of(media_types: &[String], schema: &Value) -> Value {
    let media_types = if media_types.is_empty() {
        vec!["application/json".to_string()]
    } else {
        media_types.to_vec()
    };
    Value::Object(
        media_types
            .into_iter()
            .map(|m| (m, json!({"schema": schema})))
            .collect(),
    )
}

/// The value without the members set to `null` (descriptions WSO2 left out), at any depth.
fn without_unset_members(value: Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_unset_members(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_unset_members).collect()),
        other => other,
    }
}

/// The schema with `type: object` wherever it has properties and no type: WSO2's
/// definitions leave it out, and without it a schema also allows `null`, strings and
/// numbers, which the control plane refuses where it reads one.
fn objects_typed(schema: Value) -> Value {
    let Value::Object(mut members) = schema else {
        return schema;
    };
    if members.contains_key("properties") && !members.contains_key("type") {
        members.insert("type".into(), json!("object"));
    }
    for (key, value) in members.iter_mut() {
        let inner: Vec<&mut Value> = match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => properties.values_mut().collect(),
            ("items" | "additionalProperties", inner @ Value::Object(_)) => vec![inner],
            ("allOf" | "anyOf" | "oneOf", Value::Array(parts)) => parts.iter_mut().collect(),
            _ => Vec::new(),
        };
        for schema in inner {
            *schema = objects_typed(schema.take());
        }
    }
    Value::Object(members)
}

/// Bounds the control plane enforces on query parameters and WSO2's contract leaves out:
/// `limit` at least 1 and `offset` at least 0 (`http::pagination`), both 64-bit; a
/// required text not empty (an empty one is read as missing).
fn bound_query_parameters(paths: &mut Map<String, Value>) {
    let operations = paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut());
    for operation in operations {
        let Some(Value::Array(parameters)) = operation.get_mut("parameters") else {
            continue;
        };
        for parameter in parameters.iter_mut().filter(|p| p["in"] == "query") {
            let required = parameter["required"] == true;
            let name = parameter["name"].as_str().unwrap_or_default().to_string();
            let schema = &mut parameter["schema"];
            let least = match name.as_str() {
                "limit" => Some(1),
                "offset" => Some(0),
                _ => None,
            };
            if let Some(least) = least {
                schema["minimum"] = json!(least);
                schema["maximum"] = json!(i64::MAX);
                schema["format"] = json!("int64");
            } else if required && schema["type"] == "string" {
                schema["minLength"] = json!(1);
            }
        }
    }
}

/// The schema with every member it does not require allowed to be `null`, at any depth.
fn with_nullable_members(mut schema: Value) -> Value {
    let required: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            let inner = with_nullable_members(property.take());
            *property = if required.contains(name) {
                inner
            } else {
                nullable(inner)
            };
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(inner) = schema.get_mut(key).filter(|s| s.is_object()) {
            *inner = with_nullable_members(inner.take());
        }
    }
    if let Some(Value::Array(parts)) = schema.get_mut("allOf") {
        for part in parts.iter_mut() {
            *part = with_nullable_members(part.take());
        }
    }
    schema
}

/// A schema that also allows `null`.
fn nullable(mut schema: Value) -> Value {
    if schema.get("$ref").is_some() {
        return json!({"anyOf": [schema, {"type": "null"}]});
    }
    match schema.get_mut("type") {
        Some(Value::String(single)) => {
            let single = std::mem::take(single);
            schema["type"] = json!([single, "null"]);
        }
        Some(Value::Array(types)) if !types.contains(&json!("null")) => types.push(json!("null")),
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.push(Value::Null);
    }
    schema
}

/// Where the control plane departs from WSO2's contract on purpose, or the contract
/// contradicts WSO2's own answers, what the control plane sends.
fn amend(prefix: &str, contract: &mut Converted) {
    // Documents in Markdown, beside WSO2 2.6's three sources.
    let sources = format!("/{prefix}.Document/properties/sourceType/enum");
    if let Some(Value::Array(sources)) = pointer_in(&mut contract.schemas, &sources) {
        sources.push(json!("MARKDOWN"));
    }
    // Every path is served with and without a trailing slash (the app trims it before
    // routing); the contract's one path that ends with a slash is documented as routed.
    let sdk = "/api/am/store/v0.14/apis/generate-sdk/";
    if let Some(item) = contract.paths.remove(sdk) {
        contract
            .paths
            .insert(sdk.trim_end_matches('/').to_string(), item);
    }
    if prefix == "publisher" {
        // `destinationStatsEnabled` is a boolean in our specification (§2.3) and a string in
        // WSO2's publisher model: an API keeps what it was given.
        let stats = "/publisher.APIDetailed/allOf/1/properties/destinationStatsEnabled";
        if let Some(property) = pointer_in(&mut contract.schemas, stats) {
            *property = json!({"type": ["string", "boolean", "null"]});
        }
        // WSO2 2.6 lists every environment when no API is named, and so do we.
        let environments = "/api/am/publisher/v0.14/environments";
        if let Some(api_id) = query_parameter(&mut contract.paths, environments, "get", "apiId") {
            api_id["required"] = json!(false);
        }
        // The rules the certificates and tiers rooms check (`certificates::publisher`,
        // `tiers::rules`), which the contract does not state.
        let alias = "/post/requestBody/content/multipart~1form-data/schema/properties/alias";
        if let Some(alias) = contract
            .paths
            .get_mut("/api/am/publisher/v0.14/certificates")
            .and_then(|item| item.pointer_mut(alias))
        {
            alias["pattern"] = json!("^[A-Za-z0-9._@-]{1,100}$");
        }
        if let Some(unit_time) =
            pointer_in(&mut contract.schemas, "/publisher.Tier/properties/unitTime")
        {
            *unit_time = json!({"type": "integer", "format": "int64", "minimum": 1000,
                                "maximum": 366_i64 * 86_400_000, "multipleOf": 1000});
        }
    }
    bound_query_parameters(&mut contract.paths);
    if prefix == "store" {
        // The store documents an array of tier lists; its example and its servers send one.
        let tiers = "/api/am/store/v0.14/tiers/{tierLevel}";
        let media = "/get/responses/200/content/application~1json/schema";
        let tier_list = json!({"$ref": "#/components/schemas/store.TierList"});
        replace_schema(&mut contract.paths, tiers, media, tier_list);
        // The batch answers its subscriptions, as its request and its example say; its
        // schema (a `$ref` with `items` beside it) means one in Swagger and none in 3.1.
        let multiple = "/api/am/store/v0.14/subscriptions/multiple";
        let media = "/post/responses/200/content/application~1json/schema";
        let subscriptions = json!({"type": "array",
                                   "items": {"$ref": "#/components/schemas/store.Subscription"}});
        replace_schema(&mut contract.paths, multiple, media, subscriptions);
    }
}

/// The query parameter `name` of the `method` operation at `path`.
fn query_parameter<'a>(
    paths: &'a mut Map<String, Value>,
    path: &str,
    method: &str,
    name: &str,
) -> Option<&'a mut Value> {
    paths.get_mut(path)?[method]["parameters"]
        .as_array_mut()?
        .iter_mut()
        .find(|p| p["in"] == "query" && p["name"] == name)
}

/// Sets the schema at `pointer` in the item of `path`.
fn replace_schema(paths: &mut Map<String, Value>, path: &str, pointer: &str, schema: Value) {
    if let Some(found) = paths
        .get_mut(path)
        .and_then(|item| item.pointer_mut(pointer))
    {
        *found = schema;
    }
}

/// The value at `pointer` among `schemas`, whose first segment names a schema.
fn pointer_in<'a>(schemas: &'a mut Map<String, Value>, pointer: &str) -> Option<&'a mut Value> {
    let rest = pointer.strip_prefix('/')?;
    let (name, inner) = rest.split_once('/').unwrap_or((rest, ""));
    let schema = schemas.get_mut(name)?;
    if inner.is_empty() {
        Some(schema)
    } else {
        schema.pointer_mut(&format!("/{inner}"))
    }
}

fn members(value: &Value) -> impl Iterator<Item = (&String, &Value)> {
    value.as_object().into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_contracts_keep_their_seventy_two_operations_at_the_paths_routed() {
        let contracts = contracts();
        let operations: usize = contracts
            .iter()
            .flat_map(|c| c.paths.values())
            .map(|item| item.as_object().map_or(0, Map::len))
            .sum();
        assert_eq!(operations, 72);
        let paths = || contracts.iter().flat_map(|c| c.paths.keys());
        assert!(
            paths().all(|path| !path.ends_with('/')),
            "a slash is trimmed before routing"
        );
        assert!(paths().any(|path| path == "/api/am/store/v0.14/apis/generate-sdk"));
    }

    #[test]
    fn references_point_at_the_contracts_components() {
        let [publisher, store] = contracts();
        let api = &publisher.paths["/api/am/publisher/v0.14/apis/{apiId}"]["get"];
        let schema = &api["responses"]["200"]["content"]["application/json"]["schema"];
        assert_eq!(schema["$ref"], "#/components/schemas/publisher.APIDetailed");
        assert!(store.schemas.contains_key("store.Application"));
    }

    #[test]
    fn form_parameters_become_a_multipart_body() {
        let [publisher, _] = contracts();
        let thumbnail = &publisher.paths["/api/am/publisher/v0.14/apis/{apiId}/thumbnail"];
        let body = &thumbnail["post"]["requestBody"]["content"]["multipart/form-data"]["schema"];
        assert_eq!(body["properties"]["file"]["type"], "string");
        assert_eq!(body["required"], json!(["file"]));
    }

    #[test]
    fn the_batch_subscription_answers_an_array_of_subscriptions() {
        let [_, store] = contracts();
        let multiple = &store.paths["/api/am/store/v0.14/subscriptions/multiple"]["post"];
        let schema = &multiple["responses"]["200"]["content"]["application/json"]["schema"];
        assert_eq!(schema["type"], "array");
        assert_eq!(
            schema["items"]["$ref"],
            "#/components/schemas/store.Subscription"
        );
    }

    #[test]
    fn the_bounds_the_control_plane_enforces_are_written_in() {
        let [publisher, store] = contracts();
        assert_eq!(store.schemas["store.Application"]["type"], "object");
        let apis = &store.paths["/api/am/store/v0.14/apis"]["get"]["parameters"];
        let limit = apis
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "limit");
        assert_eq!(limit.unwrap()["schema"]["minimum"], 1);
        let environments = &publisher.paths["/api/am/publisher/v0.14/environments"]["get"];
        let parameters = environments["parameters"].as_array().unwrap();
        let api_id = parameters.iter().find(|p| p["name"] == "apiId");
        assert_eq!(api_id.unwrap()["required"], false);
        let block = &publisher.paths["/api/am/publisher/v0.14/subscriptions/block-subscription"];
        let parameters = block["post"]["parameters"].as_array().unwrap();
        let id = parameters.iter().find(|p| p["name"] == "subscriptionId");
        assert_eq!(id.unwrap()["schema"]["minLength"], 1);
    }

    #[test]
    fn members_not_required_may_be_null() {
        let [_, store] = contracts();
        let application = &store.schemas["store.Application"];
        assert_eq!(application["properties"]["name"]["type"], "string");
        assert_eq!(
            application["properties"]["description"]["type"],
            json!(["string", "null"])
        );
    }
}
