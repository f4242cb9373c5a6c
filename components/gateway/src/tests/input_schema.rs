//! The input schema's verdicts against `jsonschema`'s (JSON Schema 2020-12, patterns on
//! the same regex engine): every schema below with every instance below, the same answer.

use serde_json::{Value, json};

use crate::input_schema::InputSchema;

/// Schemas as the control plane's converter writes them from Swagger 2.0.
fn schemas() -> Vec<Value> {
    vec![
        json!({}),
        json!(true),
        json!(false),
        json!({"type": "integer"}),
        json!({"type": "number", "minimum": 1, "maximum": 10}),
        json!({"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 2.5}),
        json!({"type": "integer", "multipleOf": 3}),
        json!({"type": "number", "multipleOf": 0.5}),
        json!({"type": ["string", "null"]}),
        json!({"type": "string", "minLength": 2, "maxLength": 3}),
        json!({"type": "string", "pattern": "^[a-z]+$"}),
        json!({"type": "string", "pattern": "b"}),
        json!({"type": "string", "format": "email"}),
        json!({"enum": ["a", 1, null, [1], {"a": 1}]}),
        json!({"const": 1}),
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}),
        json!({"type": "array", "uniqueItems": true}),
        json!({"type": "boolean"}),
        json!({"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
            "additionalProperties": false}),
        json!({"type": "object", "additionalProperties": {"type": "integer"},
            "minProperties": 1, "maxProperties": 2}),
        json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}},
            "additionalProperties": false}),
        json!({"allOf": [{"type": "object", "required": ["a"]}, {"required": ["b"]}]}),
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        json!({"oneOf": [{"type": "number"}, {"type": "integer"}]}),
        json!({"not": {"type": "string"}}),
        json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object",
            "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}},
            "additionalProperties": false}}}),
        json!({"$ref": "#/$defs/Short", "maxLength": 1,
            "$defs": {"Short": {"type": "string", "minLength": 1}}}),
        json!({"type": "object", "properties": {"body": {"$ref": "#/$defs/Repo"},
            "limit": {"type": "integer", "minimum": 0}}, "required": ["body"],
            "additionalProperties": false,
            "$defs": {"Repo": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1}}}}}),
    ]
}

/// Instances of every JSON kind, near each schema's edges.
fn instances() -> Vec<Value> {
    vec![
        json!(null),
        json!(true),
        json!(0),
        json!(1),
        json!(1.0),
        json!(1.5),
        json!(2.5),
        json!(3),
        json!(-3),
        json!(9),
        json!(10),
        json!(11),
        json!(1e300),
        json!(""),
        json!("a"),
        json!("ab"),
        json!("abc"),
        json!("abcd"),
        json!("ünï"),
        json!("ABC"),
        json!("not an email"),
        json!([]),
        json!([1]),
        json!([1, 2]),
        json!([1, 2, 3]),
        json!([1, 1.0]),
        json!(["a", "b"]),
        json!([{"a": 1}, {"a": 1.0}]),
        json!({}),
        json!({"a": 1}),
        json!({"a": 1, "b": 2}),
        json!({"a": 1, "b": 2, "c": 3}),
        json!({"name": "x"}),
        json!({"name": 1}),
        json!({"name": "x", "extra": 1}),
        json!({"name": "x", "tags": ["a", 1]}),
        json!({"x-trace": "1", "y": 2}),
        json!({"x-trace": "1"}),
        json!({"x-trace": 1}),
        json!({"value": 1, "next": {"value": 2, "next": {"value": 3}}}),
        json!({"value": 1, "next": {"value": "two"}}),
        json!({"value": 1, "next": {"other": 1}}),
        json!({"body": {"name": "r"}}),
        json!({"body": {"name": ""}, "limit": 1}),
        json!({"body": {"name": "r"}, "limit": -1}),
        json!({"body": {}}),
        json!({"limit": 1}),
    ]
}

#[test]
fn every_verdict_is_jsonschemas() {
    for schema in schemas() {
        let mut with_dialect = schema.clone();
        if let Some(members) = with_dialect.as_object_mut() {
            members.insert(
                "$schema".into(),
                json!("https://json-schema.org/draft/2020-12/schema"),
            );
        }
        let reference = jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(&with_dialect)
            .unwrap();
        let ours = InputSchema::parse(&with_dialect.to_string()).unwrap();
        for instance in instances() {
            assert_eq!(
                ours.check(&instance).is_ok(),
                reference.is_valid(&instance),
                "schema {schema}, instance {instance}: {:?}",
                ours.check(&instance)
            );
        }
    }
}

#[test]
fn a_misfit_says_where() {
    let schema = InputSchema::parse(
        &json!({"type": "object", "properties": {"body": {"type": "object",
            "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}}})
        .to_string(),
    )
    .unwrap();
    let misfit = schema
        .check(&json!({"body": {"tags": ["a", 7]}}))
        .unwrap_err();
    assert_eq!(misfit.at, "/body/tags/1");
    assert!(misfit.why.contains("not of type"), "{}", misfit.why);
    let closed = InputSchema::parse(&json!({"additionalProperties": false}).to_string()).unwrap();
    let misfit = closed.check(&json!({"a/b": 1})).unwrap_err();
    assert_eq!(misfit.at, "");
    assert!(misfit.why.contains("\"a/b\""), "{}", misfit.why);
}

#[test]
fn schemas_that_cannot_be_used_are_refused_and_cycles_end() {
    for refused in [
        "not json",
        r#"{"pattern": "(unclosed"}"#,
        r#"{"patternProperties": {"[": {}}}"#,
        r##"{"$ref": "#/$defs/Gone"}"##,
        r#"{"$ref": "https://elsewhere.example/schema.json"}"#,
    ] {
        assert!(InputSchema::parse(refused).is_err(), "{refused}");
    }
    // References that go round without reading anything end with a misfit, not a
    // stack overflow.
    let looping = InputSchema::parse(
        &json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}})
            .to_string(),
    )
    .unwrap();
    assert!(looping.check(&json!(1)).is_err());
    // Escaped pointers resolve.
    let escaped = InputSchema::parse(
        &json!({"$ref": "#/$defs/a~1b%20c", "$defs": {"a/b c": {"type": "string"}}}).to_string(),
    )
    .unwrap();
    assert!(escaped.check(&json!("x")).is_ok());
    assert!(escaped.check(&json!(1)).is_err());
}

#[test]
fn many_equal_items_are_found_without_comparing_every_pair() {
    let schema = InputSchema::parse(&json!({"uniqueItems": true}).to_string()).unwrap();
    let distinct: Vec<Value> = (0..100_000).map(|n| json!(n)).collect();
    assert!(schema.check(&Value::Array(distinct.clone())).is_ok());
    let mut repeated = distinct;
    repeated.push(json!(5.0));
    assert!(schema.check(&Value::Array(repeated)).is_err());
}
