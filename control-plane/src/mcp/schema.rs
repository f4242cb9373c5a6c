//! Swagger 2.0 schemas as JSON Schema 2020-12, the dialect MCP's tool schemas are in: a
//! definition a schema refers to (`#/definitions/X`) goes into the tool's `$defs` once,
//! by reference, so a cycle of references stays a cycle of references rather than an
//! endless expansion; Swagger's draft-4 forms (boolean `exclusiveMinimum`, `x-nullable`,
//! `example`) are written as 2020-12 has them, and what has no meaning there (`x-`
//! extensions, `discriminator`, `xml`, `file`) or is no Swagger 2.0 keyword is left out,
//! so that a tool's schema holds only the keywords the gateway checks.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value, json};

/// Deepest schema converted; anything deeper is taken as any value.
const MAX_DEPTH: usize = 32;
/// Most definitions one tool's schemas carry.
const MAX_DEFINITIONS: usize = 256;
/// Where Swagger 2.0 keeps named schemas, and where 2020-12 keeps them.
const SWAGGER_DEFINITIONS: &str = "#/definitions/";
const DEFS: &str = "#/$defs/";

/// The keywords of a Swagger 2.0 schema kept as they are: each means the same in 2020-12,
/// and the gateway checks arguments by exactly these (its `input_schema.rs`) besides the
/// ones converted here (`$ref`, `properties`, `patternProperties`, `items`,
/// `additionalProperties`, `not`, `allOf`, `anyOf`, `oneOf`, the exclusive bounds).
const KEPT: [&str; 19] = [
    "type",
    "format",
    "title",
    "description",
    "default",
    "multipleOf",
    "maximum",
    "minimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "required",
    "enum",
    "readOnly",
];

/// The JSON Schema dialect of every tool schema.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Converts schemas of one Swagger document, noting the definitions they refer to.
pub struct Converter<'d> {
    definitions: Option<&'d Map<String, Value>>,
    referred: BTreeSet<String>,
}

impl<'d> Converter<'d> {
    /// A converter for schemas of `doc`.
    pub fn new(doc: &'d Value) -> Self {
        Converter {
            definitions: doc["definitions"].as_object(),
            referred: BTreeSet::new(),
        }
    }

    /// `schema` (Swagger 2.0) as JSON Schema 2020-12.
    pub fn schema(&mut self, schema: &Value) -> Value {
        self.convert(schema, 0)
    }

    /// A parameter that is not a body (its schema keywords sit on the parameter itself).
    pub fn parameter(&mut self, parameter: &Value) -> Value {
        let mut own = Map::new();
        if let Some(parameter) = parameter.as_object() {
            for (key, value) in parameter {
                if !matches!(
                    key.as_str(),
                    "name" | "in" | "required" | "collectionFormat"
                ) {
                    own.insert(key.clone(), value.clone());
                }
            }
        }
        self.convert(&Value::Object(own), 0)
    }

    /// Whether `schema` (converted) describes an object, directly or by its reference.
    pub fn is_object(&self, schema: &Value) -> bool {
        if schema["type"] == "object" || schema.get("properties").is_some() {
            return true;
        }
        let Some(name) = schema["$ref"].as_str().and_then(|r| r.strip_prefix(DEFS)) else {
            return false;
        };
        self.definitions
            .and_then(|definitions| definitions.get(name))
            .is_some_and(|definition| {
                definition["type"] == "object" || definition.get("properties").is_some()
            })
    }

    /// `root` with the definitions its schemas referred to (and those referred to by
    /// them), under `$defs`.
    pub fn with_definitions(mut self, mut root: Map<String, Value>) -> Value {
        let mut defs = BTreeMap::new();
        let mut waiting: VecDeque<String> =
            std::mem::take(&mut self.referred).into_iter().collect();
        while let Some(name) = waiting.pop_front() {
            if defs.contains_key(&name) || defs.len() >= MAX_DEFINITIONS {
                continue;
            }
            let definition = self
                .definitions
                .and_then(|definitions| definitions.get(&name))
                .cloned()
                .unwrap_or(Value::Bool(true));
            let converted = self.convert(&definition, 0);
            waiting.extend(std::mem::take(&mut self.referred));
            defs.insert(name, converted);
        }
        if !defs.is_empty() {
            root.insert("$defs".into(), Value::Object(defs.into_iter().collect()));
        }
        Value::Object(root)
    }

    fn convert(&mut self, schema: &Value, depth: usize) -> Value {
        let Some(schema) = schema.as_object() else {
            return json!({});
        };
        if depth >= MAX_DEPTH {
            return json!({});
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            return match reference.strip_prefix(SWAGGER_DEFINITIONS) {
                Some(name) if self.is_defined(name) => {
                    self.referred.insert(name.to_string());
                    json!({ "$ref": format!("{DEFS}{name}") })
                }
                // A reference outside the document, or to nothing: any value.
                _ => json!({}),
            };
        }
        let mut out = Map::new();
        for (key, value) in schema {
            match key.as_str() {
                "properties" | "patternProperties" => {
                    let converted = value
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(name, property)| (name.clone(), self.convert(property, depth + 1)))
                        .collect();
                    out.insert(key.clone(), Value::Object(converted));
                }
                "items" | "additionalProperties" | "not" if value.is_object() => {
                    out.insert(key.clone(), self.convert(value, depth + 1));
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let converted = value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|part| self.convert(part, depth + 1))
                        .collect();
                    out.insert(key.clone(), Value::Array(converted));
                }
                "type" if value == "file" => {}
                "example" => {
                    out.insert("examples".into(), json!([value]));
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let bound = if key == "exclusiveMinimum" {
                        "minimum"
                    } else {
                        "maximum"
                    };
                    if value == true
                        && let Some(limit) = schema.get(bound)
                    {
                        out.insert(key.clone(), limit.clone());
                    }
                }
                "additionalProperties" if value.is_boolean() => {
                    out.insert(key.clone(), value.clone());
                }
                _ if KEPT.contains(&key.as_str()) => {
                    out.insert(key.clone(), value.clone());
                }
                // Swagger's own (discriminator, xml, externalDocs, x- extensions), and
                // keywords Swagger 2.0 does not have: no meaning for a tool's arguments.
                _ => {}
            }
        }
        // A bound made exclusive above no longer stands as an inclusive one.
        for (exclusive, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if out.contains_key(exclusive) {
                out.remove(bound);
            }
        }
        if schema.get("x-nullable") == Some(&Value::Bool(true))
            && let Some(Value::String(kind)) = out.get("type").cloned()
        {
            out.insert("type".into(), json!([kind, "null"]));
        }
        Value::Object(out)
    }

    fn is_defined(&self, name: &str) -> bool {
        self.definitions
            .is_some_and(|definitions| definitions.contains_key(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_referred_to_once_and_cycles_stay_references() {
        let doc = json!({"definitions": {
            "Node": {"type": "object", "properties": {
                "next": {"$ref": "#/definitions/Node"},
                "tag": {"$ref": "#/definitions/Tag"}}},
            "Tag": {"type": "string", "x-internal": true, "example": "a"},
            "Unused": {"type": "integer"}}});
        let mut converter = Converter::new(&doc);
        let schema = converter.schema(&json!({"$ref": "#/definitions/Node"}));
        assert_eq!(schema, json!({"$ref": "#/$defs/Node"}));
        assert!(converter.is_object(&schema));
        let mut root = Map::new();
        root.insert("node".into(), schema);
        let whole = converter.with_definitions(root);
        assert_eq!(
            whole["$defs"],
            json!({
                "Node": {"type": "object", "properties": {
                    "next": {"$ref": "#/$defs/Node"},
                    "tag": {"$ref": "#/$defs/Tag"}}},
                "Tag": {"type": "string", "examples": ["a"]}})
        );
    }

    #[test]
    fn draft_4_forms_become_2020_12_ones() {
        let doc = json!({});
        let mut converter = Converter::new(&doc);
        let schema = converter.schema(&json!({
            "type": "integer", "minimum": 1, "exclusiveMinimum": true,
            "maximum": 9, "exclusiveMaximum": false, "x-nullable": true,
            "discriminator": "kind"}));
        assert_eq!(
            schema,
            json!({"type": ["integer", "null"], "exclusiveMinimum": 1, "maximum": 9})
        );
        let parameter = converter.parameter(&json!({
            "name": "limit", "in": "query", "required": true, "type": "integer",
            "collectionFormat": "csv", "description": "at most"}));
        assert_eq!(
            parameter,
            json!({"type": "integer", "description": "at most"})
        );
    }

    #[test]
    fn keywords_swagger_2_does_not_have_are_left_out() {
        let doc = json!({});
        let mut converter = Converter::new(&doc);
        let schema = converter.schema(&json!({
            "type": "object", "additionalProperties": false, "required": ["a"],
            "unevaluatedProperties": false, "$dynamicRef": "#x", "dependentSchemas": {},
            "items": [{"type": "string"}], "if": {"type": "object"}, "then": false}));
        assert_eq!(
            schema,
            json!({"type": "object", "additionalProperties": false, "required": ["a"]})
        );
    }

    #[test]
    fn unknown_and_outside_references_and_deep_schemas_are_any_value() {
        let doc = json!({"definitions": {}});
        let mut converter = Converter::new(&doc);
        assert_eq!(
            converter.schema(&json!({"$ref": "#/definitions/Gone"})),
            json!({})
        );
        assert_eq!(
            converter.schema(&json!({"$ref": "http://elsewhere/x.json"})),
            json!({})
        );
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"type": "array", "items": deep});
        }
        let converted = converter.schema(&deep);
        let mut depth = 0;
        let mut at = &converted;
        while let Some(items) = at.get("items") {
            depth += 1;
            at = items;
        }
        assert_eq!(depth, MAX_DEPTH);
        assert_eq!(*at, json!({}));
    }
}
