//! What the developer portal's pages show, made from what the store API answered: the
//! catalogue's cards, an API's overview, and its Swagger 2.0 definition as operations.
//! Everything here is text for the templates, which escape it.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::web::calls::Answer;

/// Operations an API page lists at most (a definition may name many more).
const MAX_OPERATIONS: usize = 500;
/// Methods of a Swagger path item, in the order a page lists them.
const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];
/// Characters of a card's description at most.
const CARD_DESCRIPTION_CHARS: usize = 200;

/// A page of the store's API list.
#[derive(Debug, Deserialize)]
pub struct ApiList {
    pub list: Vec<ApiCard>,
    pub pagination: Option<Pagination>,
    pub count: usize,
}

/// How many a list holds in all.
#[derive(Debug, Deserialize)]
pub struct Pagination {
    pub total: i64,
}

/// An API in the catalogue.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiCard {
    pub id: String,
    pub name: String,
    #[serde(default, deserialize_with = "text_or_empty")]
    pub description: String,
    pub version: String,
    pub provider: String,
    #[serde(default, rename = "thumbnailUri")]
    thumbnail_uri: Option<String>,
    /// Whether it has a thumbnail to show (the card links the portal's, never the URI).
    #[serde(skip)]
    pub has_thumbnail: bool,
}

impl ApiCard {
    /// The card as shown: its description cut to a card's length.
    pub fn shown(mut self) -> Self {
        self.has_thumbnail = self.thumbnail_uri.as_deref().is_some_and(|u| !u.is_empty());
        self.description = shortened(&self.description, CARD_DESCRIPTION_CHARS);
        self
    }
}

/// An API as the store answers it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreApi {
    pub name: String,
    #[serde(default, deserialize_with = "text_or_empty")]
    pub description: String,
    pub context: String,
    pub version: String,
    pub provider: String,
    pub status: String,
    #[serde(default)]
    pub api_definition: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub tiers: Vec<String>,
    #[serde(default)]
    pub business_information: Option<Value>,
    #[serde(default)]
    pub is_default_version: bool,
}

/// An API's MCP server as the store shows it.
#[derive(Debug, Deserialize)]
pub struct McpServer {
    pub urls: Vec<String>,
    pub tools: Vec<McpTool>,
}

/// A tool of an API's MCP server.
#[derive(Debug, Deserialize)]
pub struct McpTool {
    pub name: String,
    pub description: String,
}

/// A document in an API's list.
#[derive(Debug, Deserialize)]
pub struct DocumentList {
    pub list: Vec<DocumentCard>,
}

/// A document as listed.
#[derive(Debug, Deserialize)]
pub struct DocumentCard {
    #[serde(default, rename = "documentId", deserialize_with = "text_or_empty")]
    pub id: String,
    #[serde(default, deserialize_with = "text_or_empty")]
    pub name: String,
    #[serde(default, rename = "type", deserialize_with = "text_or_empty")]
    pub kind: String,
    #[serde(default, deserialize_with = "text_or_empty")]
    pub summary: String,
    #[serde(default, rename = "sourceType", deserialize_with = "text_or_empty")]
    pub source_type: String,
    #[serde(default, rename = "sourceUrl", deserialize_with = "text_or_empty")]
    pub source_url: String,
}

/// One operation of a definition.
#[derive(Debug)]
pub struct OperationView {
    pub method: String,
    pub path: String,
    pub summary: String,
    pub description: String,
    pub parameters: Vec<ParameterView>,
    /// Status code and description.
    pub responses: Vec<(String, String)>,
}

/// One parameter of an operation.
#[derive(Debug)]
pub struct ParameterView {
    pub name: String,
    pub location: String,
    pub kind: String,
    pub required: bool,
    pub description: String,
}

/// The operations of a Swagger 2.0 definition (its text as the store holds it), in its
/// paths' order, at most [`MAX_OPERATIONS`]; none when it is not one.
pub fn operations(definition: Option<&str>) -> Vec<OperationView> {
    let Some(swagger) = definition.and_then(|d| serde_json::from_str::<Value>(d).ok()) else {
        return Vec::new();
    };
    let Some(paths) = swagger["paths"].as_object() else {
        return Vec::new();
    };
    let mut operations = Vec::new();
    for (path, item) in paths {
        let shared = item["parameters"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for method in METHODS {
            let Some(operation) = item[method].as_object() else {
                continue;
            };
            if operations.len() == MAX_OPERATIONS {
                return operations;
            }
            operations.push(operation_view(method, path, operation, shared));
        }
    }
    operations
}

/// One operation as a page shows it: its own parameters and the path's.
fn operation_view(
    method: &str,
    path: &str,
    operation: &Map<String, Value>,
    shared: &[Value],
) -> OperationView {
    let own = operation
        .get("parameters")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let responses = operation
        .get("responses")
        .and_then(Value::as_object)
        .map(|responses| {
            responses
                .iter()
                .map(|(code, response)| (code.clone(), text(&response["description"])))
                .collect()
        })
        .unwrap_or_default();
    OperationView {
        method: method.to_uppercase(),
        path: path.to_string(),
        summary: text(&operation.get("summary").cloned().unwrap_or_default()),
        description: text(&operation.get("description").cloned().unwrap_or_default()),
        parameters: own.iter().chain(shared).map(parameter_view).collect(),
        responses,
    }
}

/// A parameter as a page shows it; a `$ref` or a body by the schema it names.
fn parameter_view(parameter: &Value) -> ParameterView {
    let kind = match (&parameter["type"], &parameter["schema"]) {
        (Value::String(kind), _) => kind.clone(),
        (_, schema) if schema.is_object() => schema_name(schema),
        _ => String::new(),
    };
    ParameterView {
        name: text(&parameter["name"]),
        location: text(&parameter["in"]),
        kind,
        required: parameter["required"].as_bool().unwrap_or(false),
        description: text(&parameter["description"]),
    }
}

/// What a schema is called: the definition it refers to, its type, or `object`.
fn schema_name(schema: &Value) -> String {
    if let Some(reference) = schema["$ref"].as_str() {
        return reference
            .rsplit('/')
            .next()
            .unwrap_or(reference)
            .to_string();
    }
    match schema["type"].as_str() {
        Some("array") => format!("array of {}", schema_name(&schema["items"])),
        Some(kind) => kind.to_string(),
        None => "object".to_string(),
    }
}

/// An API's business information as name and value pairs, the empty ones left out.
pub fn business(information: Option<&Value>) -> Vec<(String, String)> {
    let labels = [
        ("businessOwner", "Business owner"),
        ("businessOwnerEmail", "Business owner's email"),
        ("technicalOwner", "Technical owner"),
        ("technicalOwnerEmail", "Technical owner's email"),
    ];
    let Some(information) = information else {
        return Vec::new();
    };
    labels
        .iter()
        .map(|(key, label)| (label.to_string(), text(&information[*key])))
        .filter(|(_, value)| !value.is_empty())
        .collect()
}

/// An application as its pages show it.
#[derive(Debug)]
pub struct ApplicationView {
    pub id: String,
    pub name: String,
    pub tier: String,
    pub status: String,
    pub description: String,
    /// `OAUTH` (opaque access tokens) or `JWT`.
    pub token_type: String,
}

impl ApplicationView {
    /// From the store's `Application` or `ApplicationInfo`.
    pub fn of(application: &Value) -> Self {
        ApplicationView {
            id: text(&application["applicationId"]),
            name: text(&application["name"]),
            tier: text(&application["throttlingTier"]),
            status: text(&application["status"]),
            description: text(&application["description"]),
            token_type: text(&application["tokenType"]),
        }
    }
}

/// The applications of a store list answer.
pub fn applications(answer: &Answer) -> Vec<ApplicationView> {
    listed(answer).iter().map(ApplicationView::of).collect()
}

/// One key type of an application: its consumer key once generated.
#[derive(Debug)]
pub struct KeyView {
    pub key_type: &'static str,
    pub label: &'static str,
    pub consumer_key: Option<String>,
    pub state: String,
    /// The grant types the key allows.
    pub grant_types: Vec<String>,
    /// Where the authorization code and implicit grants send the browser back.
    pub callback_url: String,
}

/// The production and sandbox keys of a store `Application`.
pub fn keys(application: &Value) -> Vec<KeyView> {
    let keys = application["keys"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    [("PRODUCTION", "Production"), ("SANDBOX", "Sandbox")]
        .into_iter()
        .map(|(key_type, label)| {
            let key = keys.iter().find(|k| k["keyType"] == key_type);
            KeyView {
                key_type,
                label,
                consumer_key: key
                    .and_then(|k| k["consumerKey"].as_str())
                    .map(str::to_string),
                state: key.map(|k| text(&k["keyState"])).unwrap_or_default(),
                grant_types: key
                    .and_then(|k| k["supportedGrantTypes"].as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                callback_url: key.map(|k| text(&k["callbackUrl"])).unwrap_or_default(),
            }
        })
        .collect()
}

/// A subscription as an application's page shows it.
#[derive(Debug)]
pub struct SubscriptionView {
    pub id: String,
    pub api: String,
    pub tier: String,
    pub status: String,
    /// What the status means for the application's calls.
    pub meaning: &'static str,
}

/// The subscriptions of a store list answer.
pub fn subscriptions(answer: &Answer) -> Vec<SubscriptionView> {
    listed(answer)
        .iter()
        .map(|subscription| {
            let status = text(&subscription["status"]);
            SubscriptionView {
                id: text(&subscription["subscriptionId"]),
                api: text(&subscription["apiIdentifier"]),
                tier: text(&subscription["tier"]),
                meaning: status_meaning(&status),
                status,
            }
        })
        .collect()
}

/// What a subscription's status means for the calls made under it.
pub fn status_meaning(status: &str) -> &'static str {
    match status {
        "UNBLOCKED" => "calls go through",
        "BLOCKED" => "the API's publisher blocked it: every call is refused",
        "PROD_ONLY_BLOCKED" => {
            "the API's publisher blocked production calls: sandbox calls go through"
        }
        "ON_HOLD" => "it waits for an administrator's approval: calls are refused until then",
        "REJECTED" => "an administrator rejected it: calls are refused",
        "TIER_UPDATE_PENDING" => "a change of plan waits for an approval",
        _ => "",
    }
}

/// The `list` of a store list answer (empty when the call failed).
fn listed(answer: &Answer) -> Vec<Value> {
    answer
        .json::<Value>()
        .and_then(|body| body["list"].as_array().cloned())
        .unwrap_or_default()
}

/// A JSON value as text: a string as it is, anything else empty.
fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

/// `null` or a missing value as empty text.
fn text_or_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

/// `text` cut at `chars` characters, with an ellipsis when cut.
fn shortened(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
        None => text.to_string(),
    }
}

/// The grant types the form offers (the store API knows a few more).
pub const GRANT_TYPES: [(&str, &str); 5] = [
    ("client_credentials", "Client credentials"),
    ("password", "Password"),
    ("refresh_token", "Refresh token"),
    ("authorization_code", "Authorization code"),
    ("implicit", "Implicit"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definitions_operations_with_their_parameters_and_responses() {
        let definition = serde_json::json!({"swagger": "2.0", "paths": {
            "/devs/{username}": {
                "parameters": [{"name": "username", "in": "path", "type": "string", "required": true}],
                "get": {"summary": "A developer", "responses": {"200": {"description": "OK"}}},
                "put": {"parameters": [{"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Dev"}}],
                        "responses": {"200": {"description": "Updated"}}},
                "x-other": {}
            }
        }});
        let ops = operations(Some(&definition.to_string()));
        assert_eq!(ops.len(), 2);
        assert_eq!(
            (ops[0].method.as_str(), ops[0].summary.as_str()),
            ("GET", "A developer")
        );
        assert_eq!(ops[0].parameters[0].name, "username");
        assert!(ops[0].parameters[0].required);
        assert_eq!(ops[1].parameters[0].kind, "Dev");
        assert_eq!(
            ops[1].parameters[1].location, "path",
            "the path's parameters too"
        );
        assert_eq!(
            ops[1].responses,
            [("200".to_string(), "Updated".to_string())]
        );
    }

    #[test]
    fn what_is_not_a_definition_has_no_operations() {
        for junk in [
            None,
            Some(""),
            Some("[]"),
            Some("{\"paths\": 3}"),
            Some("{\"paths\": {\"/a\": 1}}"),
        ] {
            assert!(operations(junk).is_empty(), "{junk:?}");
        }
    }

    #[test]
    fn cards_cut_long_descriptions_at_a_character() {
        assert_eq!(shortened("short", 10), "short");
        assert_eq!(shortened("ééééé", 3), "ééé…");
    }
}
