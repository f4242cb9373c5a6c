//! The document assembled: our own operations (from their handlers' `#[utoipa::path]`),
//! WSO2's contracts in OpenAPI 3.1 terms, the operations listener's routes under a server
//! of their own, and what every operation may answer besides its successes.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Map, Value, json};
use utoipa::OpenApi as _;

use super::wso2;
use crate::http::routes::{Routes, get};

/// Where the management listener serves the document.
pub const PATH: &str = "/api/am/openapi.json";

static DOCUMENT: LazyLock<Value> = LazyLock::new(assemble);
static SERIALIZED: LazyLock<String> = LazyLock::new(|| DOCUMENT.to_string());

/// The whole document.
pub fn document() -> &'static Value {
    &DOCUMENT
}

/// The document as served.
fn serialized() -> &'static str {
    &SERIALIZED
}

/// `GET /api/am/openapi.json`, on the management listener.
pub fn router() -> Routes {
    Routes::new().route(PATH, get(openapi_document))
}

/// The control plane's OpenAPI 3.1 document.
#[utoipa::path(
    get,
    path = "/api/am/openapi.json",
    tag = "OpenAPI",
    responses((status = 200, description = "This document", body = serde_json::Value))
)]
async fn openapi_document() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], serialized())
}

/// This room's operation in the document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(openapi_document))]
pub struct Api;

/// The schemas of ours that no handler names: WSO2's error body, every refusal's.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(crate::http::error::ErrorBody)))]
struct Components;

/// Our own operations: every one that is not WSO2's.
fn ours() -> utoipa::openapi::OpenApi {
    let mut api = Components::openapi();
    for part in [
        crate::clients::registration::Api::openapi(),
        crate::tokens::oauth::Api::openapi(),
        crate::tokens::oauth_introspect::Api::openapi(),
        crate::tokens::oauth_discovery::Api::openapi(),
        crate::tokens::oauth_userinfo::Api::openapi(),
        crate::tokens::oauth_logout::Api::openapi(),
        crate::authorizations::oauth::Api::openapi(),
        crate::web::Api::openapi(),
        crate::devportal::pages::Api::openapi(),
        crate::devportal::applications::Api::openapi(),
        crate::devportal::documents::Api::openapi(),
        crate::devportal::keys::Api::openapi(),
        crate::devportal::try_it::Api::openapi(),
        crate::devportal::analytics::Api::openapi(),
        crate::publisher_console::pages::Api::openapi(),
        crate::publisher_console::create::Api::openapi(),
        crate::publisher_console::edit::Api::openapi(),
        crate::publisher_console::resources::Api::openapi(),
        crate::publisher_console::documents::Api::openapi(),
        crate::publisher_console::implementation::Api::openapi(),
        crate::publisher_console::actions::Api::openapi(),
        crate::publisher_console::administration::Api::openapi(),
        crate::publisher_console::analytics::Api::openapi(),
        crate::users::admin::Api::openapi(),
        crate::signing::admin::Api::openapi(),
        crate::fleet::admin::Api::openapi(),
        crate::workflows::admin::Api::openapi(),
        crate::backend_jwt::admin::Api::openapi(),
        crate::backend_jwt::oauth::Api::openapi(),
        crate::fleet::gateway_api::Api::openapi(),
        crate::analytics::gateway_api::Api::openapi(),
        crate::mediation::gateway_api::Api::openapi(),
        crate::archives::import_export::Api::openapi(),
        crate::archives::admin::Api::openapi(),
        crate::applications::admin::Api::openapi(),
        crate::analytics::admin::Api::openapi(),
        crate::analytics::store_api::Api::openapi(),
        crate::wsdl::publisher::Api::openapi(),
        crate::mcp::publisher::Api::openapi(),
        crate::mcp::store_api::Api::openapi(),
        Api::openapi(),
    ] {
        api.merge(part);
    }
    api
}

fn assemble() -> Value {
    let mut document = serde_json::to_value(ours()).expect("the document serializes");
    document["info"] = info();
    document["servers"] = json!([{"url": "/", "description": "The management listener"}]);
    let mut paths = take_object(&mut document["paths"]);
    let mut schemas = take_object(&mut document["components"]["schemas"]);
    for mut contract in wso2::contracts() {
        contract
            .paths
            .values_mut()
            .for_each(require_bearer_where_scoped);
        merge_operations(&mut paths, contract.paths);
        merge_new(&mut schemas, contract.schemas);
    }
    document_wasm_policies(&mut paths);
    for item in paths.values_mut() {
        add_error_responses(item);
    }
    let mut operations = serde_json::to_value(crate::ops::Api::openapi()).expect("serializes");
    let mut operations_paths = take_object(&mut operations["paths"]);
    for item in operations_paths.values_mut() {
        item["servers"] = json!([{
            "url": "http://{ops_address}",
            "description": "The operations listener (APIM_OPS_ADDR), apart from the management API",
            "variables": {"ops_address": {"default": "127.0.0.1:9764"}},
        }]);
    }
    merge_new(&mut paths, operations_paths);
    merge_new(
        &mut schemas,
        take_object(&mut operations["components"]["schemas"]),
    );
    document["paths"] = Value::Object(paths);
    document["components"]["schemas"] = Value::Object(schemas);
    document["components"]["securitySchemes"] = security_schemes();
    document
}

/// Our extension of WSO2's mediation uploads: a tenant's WebAssembly policy as the body,
/// its name, type and body bound in the query.
fn document_wasm_policies(paths: &mut serde_json::Map<String, Value>) {
    let uploads = [
        (
            "/api/am/publisher/v0.14/apis/{apiId}/policies/mediation",
            "post",
        ),
        (
            "/api/am/publisher/v0.14/apis/{apiId}/policies/mediation/{mediationPolicyId}",
            "put",
        ),
    ];
    let query = |name: &str, description: &str, schema: Value| {
        json!({"in": "query", "name": name, "required": false, "schema": schema,
               "description": description})
    };
    for (path, method) in uploads {
        let Some(operation) = paths.get_mut(path).and_then(|item| item.get_mut(method)) else {
            continue;
        };
        operation["requestBody"]["content"]["application/wasm"] = json!({
            "schema": {"type": "string", "contentMediaType": "application/wasm"}
        });
        operation["requestBody"]["description"] = json!(
            "The mediation policy: WSO2's `Mediation` (a Synapse sequence), or, our \
             extension, a tenant's WebAssembly policy (a component of the world \
             `apim:policy/request-policy`, at most 4 MiB, importing no network), its name, \
             `type` (`in`) and `bodyBytes` in the query"
        );
        if let Some(parameters) = operation["parameters"].as_array_mut() {
            let only = "With `application/wasm` only: ";
            parameters.extend([
                query(
                    "name",
                    &format!("{only}the policy's name"),
                    json!({"type": "string"}),
                ),
                query(
                    "type",
                    &format!("{only}its flow, `in`"),
                    json!({"type": "string"}),
                ),
                query(
                    "bodyBytes",
                    &format!("{only}the most bytes of the client's body it is given (0: none)"),
                    json!({"type": "integer", "minimum": 0}),
                ),
            ]);
        }
    }
}

fn info() -> Value {
    json!({
        "title": "API management control plane",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "Client registration, the OAuth 2.0 token service, WSO2 API Manager \
            2.6's publisher and store (REST API v0.14), administration, and what gateways \
            read. Errors are WSO2's error body, the token endpoints' OAuth 2.0's.",
        "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
    })
}

fn security_schemes() -> Value {
    json!({
        "basic": {"type": "http", "scheme": "basic",
                  "description": "A user's name and password, or a client's id and secret"},
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                   "description": "An access token of the token endpoint; `x-scope` names the scope an operation needs"},
        "gateway_secret": {"type": "http", "scheme": "bearer",
                           "description": "The secret gateways share with the control plane (APIM_GATEWAY_SECRET)"},
    })
}

/// WSO2's operations that name a scope (`x-scope`) need an access token.
fn require_bearer_where_scoped(item: &mut Value) {
    for operation in item
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        if operation.get("x-scope").is_some() {
            operation["security"] = json!([{"bearer": []}]);
        }
    }
}

/// Every refusal the management listener answers, whatever the operation (400, 401, 403,
/// 404, 413, 429, 503…), as the operation's `default`: WSO2's error body, or OAuth 2.0's
/// on the token endpoints (set by their handlers).
fn add_error_responses(item: &mut Value) {
    for operation in item
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        let responses = &mut operation["responses"];
        if responses.get("default").is_none() {
            responses["default"] = json!({
                "description": "A refusal, in WSO2's error format",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            });
        }
    }
}

/// Adds WSO2's path items to ours; where both describe a path (ours adds a method to
/// WSO2's), their operations join, and a method both describe is a mistake of ours.
fn merge_operations(into: &mut Map<String, Value>, more: Map<String, Value>) {
    for (path, mut item) in more {
        match into.get_mut(&path) {
            Some(Value::Object(ours)) => merge_new(ours, take_object(&mut item)),
            _ => {
                into.insert(path, item);
            }
        }
    }
}

fn take_object(value: &mut Value) -> Map<String, Value> {
    match value.take() {
        Value::Object(members) => members,
        _ => Map::new(),
    }
}

/// Adds `more` to `into`; a name both hold is a mistake of ours (two rooms describing one
/// path, or one schema name for two shapes).
fn merge_new(into: &mut Map<String, Value>, more: Map<String, Value>) {
    for (name, value) in more {
        assert!(
            !into.contains_key(&name),
            "{name} is described twice in the OpenAPI document"
        );
        into.insert(name, value);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Every operation the management listener's rooms route, as `METHOD /path` with each
    /// parameter written `{}`, from the routes' own table.
    fn served() -> BTreeSet<String> {
        let routes = crate::app::rooms();
        let operations: BTreeSet<String> = routes
            .operations()
            .iter()
            .map(|(path, method)| format!("{method} {}", anonymous(path)))
            .collect();
        assert!(operations.len() > 60, "only {operations:?}");
        operations
    }

    /// The operations the document describes on the management listener.
    fn described() -> BTreeSet<String> {
        let mut operations = BTreeSet::new();
        for (path, item) in document()["paths"].as_object().unwrap() {
            if item.get("servers").is_some() {
                continue;
            }
            for method in item.as_object().unwrap().keys() {
                operations.insert(format!("{} {}", method.to_uppercase(), anonymous(path)));
            }
        }
        operations
    }

    /// A path with each `{parameter}` written `{}` (the router and WSO2 name them apart).
    fn anonymous(path: &str) -> String {
        path.split('/')
            .map(|s| if s.starts_with('{') { "{}" } else { s })
            .collect::<Vec<_>>()
            .join("/")
    }

    #[test]
    fn every_operation_has_an_id_of_its_own() {
        let mut seen = BTreeSet::new();
        for (path, item) in document()["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                if let Some(id) = operation.get("operationId").and_then(Value::as_str) {
                    assert!(seen.insert(id.to_string()), "{id} again at {method} {path}");
                }
            }
        }
    }

    #[test]
    fn every_route_served_is_described_and_every_operation_described_is_served() {
        let (served, described) = (served(), described());
        let undocumented: Vec<_> = served.difference(&described).collect();
        let unserved: Vec<_> = described.difference(&served).collect();
        assert!(
            undocumented.is_empty() && unserved.is_empty(),
            "served but not described: {undocumented:#?}\ndescribed but not served: {unserved:#?}"
        );
    }

    #[test]
    fn the_operations_listener_is_described_under_its_own_server() {
        for path in ["/healthz", "/readyz", "/metrics"] {
            assert!(document()["paths"][path]["servers"].is_array(), "{path}");
        }
    }

    #[test]
    fn the_document_is_openapi_3_1_and_every_reference_resolves() {
        assert_eq!(document()["openapi"], "3.1.0");
        let text = serialized();
        for (at, key) in text.match_indices("\"$ref\":\"") {
            let reference = text[at + key.len()..].split('"').next().unwrap();
            let pointer = reference.strip_prefix('#').expect("a local reference");
            assert!(
                document().pointer(pointer).is_some(),
                "{reference} resolves"
            );
        }
    }

    #[test]
    fn mediation_uploads_take_webassembly_policies() {
        let paths = &document()["paths"];
        let base = "/api/am/publisher/v0.14/apis/{apiId}/policies/mediation";
        for (path, method) in [
            (base.to_string(), "post"),
            (format!("{base}/{{mediationPolicyId}}"), "put"),
        ] {
            let operation = &paths[path.as_str()][method];
            let content = &operation["requestBody"]["content"];
            assert!(content["application/wasm"].is_object(), "{path} {method}");
            assert!(content["application/json"].is_object(), "{path} {method}");
            let parameters = operation["parameters"].as_array().unwrap();
            assert!(parameters.iter().any(|p| p["name"] == "bodyBytes"));
        }
    }
}
