//! WSO2's own contracts (`control-plane/contracts/wso2/`, the publisher and store Swagger 2.0 files of
//! REST API v0.14, as WSO2 publishes them): every answer the tests' [`crate::Client`]
//! receives from an operation they define is checked against the response the contract
//! documents for its status, so that a body drifting from what WSO2's clients parse fails
//! the test that received it.
//!
//! Swagger 2.0 has no `nullable`, while WSO2's own servers send `null` for unset optional
//! members: members whose value is `null` are left out before a body is validated (a
//! required member still has to be there, with a value).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Map, Value, json};

/// One contract: its base path, its operations and the schemas of their responses.
struct Contract {
    base: String,
    document: Value,
    /// Each path template of the contract, split into segments (`None` for a parameter).
    templates: Vec<(String, Vec<Option<String>>)>,
}

static CONTRACTS: LazyLock<Vec<Contract>> = LazyLock::new(|| {
    [
        control_plane::openapi::wso2::PUBLISHER_CONTRACT,
        control_plane::openapi::wso2::STORE_CONTRACT,
    ]
    .into_iter()
    .map(Contract::parse)
    .collect()
});

/// Validators built so far, by contract base and JSON pointer of the response schema.
type Validators = HashMap<(String, String), Arc<jsonschema::Validator>>;
static VALIDATORS: LazyLock<Mutex<Validators>> = LazyLock::new(Default::default);

/// Checks an answer against the contract that defines `method` on `path` (the request's
/// path, without its query); nothing to check when no contract defines the operation.
/// The reason of a mismatch otherwise.
pub fn check(method: &str, path: &str, status: u16, body: &Value) -> Result<(), String> {
    let path = collapse_slashes(path);
    let Some((contract, template)) = CONTRACTS.iter().find_map(|c| c.operation(&path)) else {
        return Ok(());
    };
    let method = method.to_ascii_lowercase();
    let operation = &contract.document["paths"][template][&method];
    if operation.is_null() {
        // A method the contract does not define on a path it does: 405, checked elsewhere.
        return Ok(());
    }
    let responses = &operation["responses"];
    let status_key = status.to_string();
    let (key, response) = match &responses[&status_key] {
        Value::Null if (300..400).contains(&status) => return Ok(()),
        Value::Null if status < 300 => {
            return Err(format!(
                "{method} {template} answered {status}, which the contract does not document"
            ));
        }
        // Errors the contract leaves out (401, 413, 429, 503…) still have WSO2's body.
        Value::Null => (
            "error".to_string(),
            &contract.document["definitions"]["Error"],
        ),
        documented => (status_key, &documented["schema"]),
    };
    let corrected = erratum(&contract.base, template, &method, status);
    let schema = corrected
        .as_ref()
        .unwrap_or_else(|| resolve(&contract.document, response));
    if schema.is_null() || schema["type"] == "file" {
        return Ok(());
    }
    let pointer = format!("{template} {method} {key}");
    let validator = contract.validator(&pointer, schema)?;
    let body = without_nulls(body);
    let answer = format!("{method} {template} answered {status}");
    conforms(&validator, &body, &answer, "the contract")
}

/// Whether `body` passes `validator`; else what `answer` (the operation and status) sent
/// that `what` (the contract, our document) does not allow.
pub(crate) fn conforms(
    validator: &jsonschema::Validator,
    body: &Value,
    answer: &str,
    what: &str,
) -> Result<(), String> {
    let problems: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{answer} with a body {what} does not allow: {}\nbody: {body}",
            problems.join("; ")
        ))
    }
}

/// Every operation of both contracts: its method (upper case) and its full path, each
/// path parameter replaced by `filler`.
pub fn operations(filler: &str) -> Vec<(String, String)> {
    const METHODS: [&str; 5] = ["get", "post", "put", "delete", "patch"];
    let mut all = Vec::new();
    for contract in CONTRACTS.iter() {
        for (template, segments) in &contract.templates {
            let path: String = segments
                .iter()
                .map(|s| format!("/{}", s.as_deref().unwrap_or(filler)))
                .collect();
            let item = &contract.document["paths"][template];
            for method in METHODS.iter().filter(|m| !item[**m].is_null()) {
                all.push((
                    method.to_ascii_uppercase(),
                    format!("{}{path}", contract.base),
                ));
            }
        }
    }
    all
}

impl Contract {
    fn parse(text: &str) -> Contract {
        let mut document = control_plane::openapi::wso2::parse(text);
        amend_definitions(&mut document);
        let base = document["basePath"].as_str().expect("basePath").to_string();
        let templates = document["paths"]
            .as_object()
            .expect("paths")
            .keys()
            .map(|template| (template.clone(), segments(template)))
            .collect();
        Contract {
            base,
            document,
            templates,
        }
    }

    /// The template of this contract that `path` matches, preferring literal segments
    /// over parameters (`/apis/copy-api` over `/apis/{apiId}`).
    fn operation(&self, path: &str) -> Option<(&Contract, &str)> {
        let rest = path.strip_prefix(&self.base)?;
        best_template(&self.templates, rest).map(|template| (self, template))
    }

    /// A validator of `schema`, resolving references against this contract's definitions.
    fn validator(&self, key: &str, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let cache_key = (self.base.clone(), key.to_string());
        if let Some(found) = VALIDATORS.lock().unwrap().get(&cache_key) {
            return Ok(found.clone());
        }
        let mut whole = match schema {
            Value::Object(members) => members.clone(),
            _ => Map::new(),
        };
        whole.insert("definitions".into(), self.document["definitions"].clone());
        let validator = jsonschema::draft4::options()
            .should_validate_formats(false)
            .build(&Value::Object(whole))
            .map_err(|e| format!("the contract's schema for {key} does not compile: {e}"))?;
        let validator = Arc::new(validator);
        VALIDATORS
            .lock()
            .unwrap()
            .insert(cache_key, validator.clone());
        Ok(validator)
    }
}

/// Where WSO2's contract contradicts WSO2's own answers (its examples, and what its
/// servers send), the schema of what they send.
fn erratum(base: &str, template: &str, method: &str, status: u16) -> Option<Value> {
    match (base, template, method, status) {
        // The store documents an array of tier lists; its example and its servers send one.
        ("/api/am/store/v0.14", "/tiers/{tierLevel}", "get", 200) => {
            Some(json!({"$ref": "#/definitions/TierList"}))
        }
        _ => None,
    }
}

/// Where we depart from WSO2's contract on purpose, its definitions allow what we send:
/// `destinationStatsEnabled` is a boolean in our specification (§2.3) and a string in
/// WSO2's publisher model (an API keeps what it was given).
fn amend_definitions(document: &mut Value) {
    let detailed = "/definitions/APIDetailed/allOf/1/properties/destinationStatsEnabled";
    if let Some(property) = document.pointer_mut(detailed) {
        *property = json!({"type": ["string", "boolean"]});
    }
    // Documents in Markdown, which we take beside WSO2 2.6's three sources.
    if let Some(Value::Array(sources)) =
        document.pointer_mut("/definitions/Document/properties/sourceType/enum")
    {
        sources.push(json!("MARKDOWN"));
    }
}

/// The template of `templates` that `path` matches, preferring literal segments over
/// parameters (`/apis/copy-api` over `/apis/{apiId}`); a trailing slash is left out.
pub(crate) fn best_template<'t>(
    templates: &'t [(String, Vec<Option<String>>)],
    path: &str,
) -> Option<&'t str> {
    let path = path.strip_suffix('/').unwrap_or(path);
    let parts: Vec<&str> = path.split('/').skip(1).collect();
    templates
        .iter()
        .filter(|(_, segments)| matches(segments, &parts))
        .max_by_key(|(_, segments)| segments.iter().filter(|s| s.is_some()).count())
        .map(|(template, _)| template.as_str())
}

/// A template's segments: `Some(literal)` or `None` for `{parameter}`.
pub(crate) fn segments(template: &str) -> Vec<Option<String>> {
    let template = template.strip_suffix('/').unwrap_or(template);
    template
        .split('/')
        .skip(1)
        .map(|s| (!s.starts_with('{')).then(|| s.to_string()))
        .collect()
}

fn matches(template: &[Option<String>], parts: &[&str]) -> bool {
    template.len() == parts.len()
        && template
            .iter()
            .zip(parts)
            .all(|(segment, part)| match segment {
                Some(literal) => literal == part,
                None => !part.is_empty(),
            })
}

/// A response's schema with a top-level `$ref` followed (nested ones the validator follows).
fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => document
            .pointer(reference.trim_start_matches('#'))
            .unwrap_or(&Value::Null),
        None => schema,
    }
}

pub(crate) fn collapse_slashes(path: &str) -> String {
    let mut collapsed = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && collapsed.ends_with('/')) {
            collapsed.push(c);
        }
    }
    collapsed
}

/// The body with every `null` member of an object left out, at any depth.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: &str = "/api/am/store/v0.14";

    #[test]
    fn both_contracts_parse_and_every_response_schema_compiles() {
        for contract in CONTRACTS.iter() {
            for (template, _) in &contract.templates {
                for (method, operation) in contract.document["paths"][template].as_object().unwrap()
                {
                    let Some(responses) = operation["responses"].as_object() else {
                        continue;
                    };
                    for (status, response) in responses {
                        let schema = resolve(&contract.document, &response["schema"]);
                        if schema.is_null() || schema["type"] == "file" {
                            continue;
                        }
                        let key = format!("{template} {method} {status}");
                        contract.validator(&key, schema).unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn both_contracts_hold_seventy_two_operations() {
        let operations = operations("x");
        assert_eq!(operations.len(), 72, "{operations:?}");
        assert!(operations.contains(&("POST".into(), format!("{STORE}/subscriptions/multiple"))));
    }

    #[test]
    fn literal_segments_win_over_parameters() {
        let store = &CONTRACTS[1];
        let (_, template) = store
            .operation(&format!("{STORE}/applications/generate-keys"))
            .unwrap();
        assert_eq!(template, "/applications/generate-keys");
        let (_, template) = store
            .operation(&format!("{STORE}/applications/abc"))
            .unwrap();
        assert_eq!(template, "/applications/{applicationId}");
    }

    #[test]
    fn a_conforming_body_passes_and_a_drifting_one_fails() {
        let tier = json!({"name": "Gold", "tierPlan": "FREE", "stopOnQuotaReach": true,
                          "requestCount": 5000, "unitTime": 60000, "description": null});
        check("GET", &format!("{STORE}/tiers/api/Gold"), 200, &tier).unwrap();
        let drifted = json!({"name": "Gold", "requestCount": "many"});
        let err = check("GET", &format!("{STORE}/tiers/api/Gold"), 200, &drifted).unwrap_err();
        assert!(err.contains("requestCount"), "{err}");
    }

    #[test]
    fn undocumented_success_and_error_bodies_are_caught() {
        let err = check(
            "GET",
            &format!("{STORE}//tiers/api/Gold"),
            204,
            &Value::Null,
        )
        .unwrap_err();
        assert!(err.contains("does not document"), "{err}");
        let not_wso2 = json!({"error": "nope"});
        assert!(check("GET", &format!("{STORE}/tiers/api/Gold"), 401, &not_wso2).is_err());
        assert!(check("GET", "/oauth2/token", 200, &not_wso2).is_ok());
    }
}
