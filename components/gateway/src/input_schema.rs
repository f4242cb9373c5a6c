//! A tool's input schema, checked against a call's arguments: the keywords of JSON Schema
//! 2020-12 that a Swagger 2.0 schema becomes (the control plane's converter keeps those
//! and no others), with `format` an annotation as 2020-12 has it. A general validator
//! (such as `jsonschema`) builds and checks its meta-schema first in every new instance,
//! about 2.5 ms in the component: more than a whole REST call costs where each request
//! gets a fresh instance (Spin). This one reads the schema as it is; its verdicts are
//! checked against `jsonschema`'s in the tests.

use std::collections::{HashMap, HashSet};

use regex::Regex;
use serde_json::{Map, Number, Value};

/// Deepest a check may go through schemas (references that consume no part of the
/// instance included) before it gives up.
const MAX_CHECK_DEPTH: usize = 128;
/// Largest compiled pattern, bytes.
const MAX_PATTERN_BYTES: usize = 1 << 20;
/// Distance within which a quotient counts as whole, for `multipleOf` of fractions.
const MULTIPLE_EPSILON: f64 = 1e-9;

/// An input schema, ready to check arguments.
#[derive(Debug)]
pub struct InputSchema {
    root: Value,
    /// Every `pattern` and `patternProperties` name of the schema, compiled.
    patterns: HashMap<String, Regex>,
}

/// Why an instance does not fit: where in it, and what.
#[derive(Debug, PartialEq, Eq)]
pub struct Misfit {
    /// A JSON pointer into the instance (`""` for the whole).
    pub at: String,
    pub why: String,
}

impl InputSchema {
    /// The schema of `text`, or why it cannot be used (not JSON, a pattern that does not
    /// compile, a reference to nothing in the document).
    pub fn parse(text: &str) -> Result<Self, String> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| format!("the schema is not JSON: {e}"))?;
        let mut schema = InputSchema {
            root,
            patterns: HashMap::new(),
        };
        schema.prepare()?;
        Ok(schema)
    }

    /// Whether `instance` fits, or the first place where it does not.
    pub fn check(&self, instance: &Value) -> Result<(), Misfit> {
        let mut at = Vec::new();
        self.fits(&self.root, instance, &mut at, 0)
            .map_err(|why| Misfit {
                at: pointer(&at),
                why,
            })
    }

    /// Compiles every pattern and resolves every reference, once.
    fn prepare(&mut self) -> Result<(), String> {
        let mut patterns = Vec::new();
        let mut references = Vec::new();
        collect(&self.root, &mut patterns, &mut references, 0);
        for pattern in patterns {
            if self.patterns.contains_key(&pattern) {
                continue;
            }
            let regex = regex::RegexBuilder::new(&pattern)
                .size_limit(MAX_PATTERN_BYTES)
                .build()
                .map_err(|e| format!("the pattern {pattern:?} does not compile: {e}"))?;
            self.patterns.insert(pattern, regex);
        }
        for reference in references {
            if self.resolve(&reference).is_none() {
                return Err(format!("the reference {reference:?} names nothing"));
            }
        }
        Ok(())
    }

    /// The schema `reference` names: a JSON pointer into this document (`#`, `#/$defs/X`).
    fn resolve(&self, reference: &str) -> Option<&Value> {
        let pointer = reference.strip_prefix('#')?;
        let decoded = percent_decoded(pointer)?;
        self.root.pointer(&decoded)
    }

    fn fits(
        &self,
        schema: &Value,
        instance: &Value,
        at: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_CHECK_DEPTH {
            return Err("the schema nests too deeply to check".into());
        }
        let schema = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return Err("no value is allowed here".into()),
            Value::Object(schema) => schema,
            _ => return Ok(()),
        };
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let target = self
                .resolve(reference)
                .ok_or_else(|| format!("the reference {reference:?} names nothing"))?;
            self.fits(target, instance, at, depth + 1)?;
        }
        check_type(schema, instance)?;
        check_values(schema, instance)?;
        match instance {
            Value::Number(number) => check_number(schema, number)?,
            Value::String(text) => self.check_string(schema, text)?,
            Value::Array(items) => self.check_array(schema, items, at, depth)?,
            Value::Object(members) => self.check_object(schema, members, at, depth)?,
            _ => {}
        }
        self.check_combinations(schema, instance, at, depth)
    }

    fn check_string(&self, schema: &Map<String, Value>, text: &str) -> Result<(), String> {
        let length = text.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && length < min
        {
            return Err(format!("{text:?} is shorter than {min} characters"));
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && length > max
        {
            return Err(format!("{text:?} is longer than {max} characters"));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
            && !self.matches(pattern, text)
        {
            return Err(format!("{text:?} does not match {pattern:?}"));
        }
        Ok(())
    }

    fn check_array(
        &self,
        schema: &Map<String, Value>,
        items: &[Value],
        at: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        let count = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && count < min
        {
            return Err(format!("has fewer than {min} items"));
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && count > max
        {
            return Err(format!("has more than {max} items"));
        }
        if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
            let mut seen = HashSet::new();
            if !items.iter().all(|item| seen.insert(canonical(item))) {
                return Err("has non-unique items".into());
            }
        }
        let prefix = schema
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (index, item) in items.iter().enumerate() {
            let item_schema = match prefix.get(index) {
                Some(schema) => schema,
                None => match schema.get("items") {
                    Some(schema) => schema,
                    None => continue,
                },
            };
            at.push(index.to_string());
            self.fits(item_schema, item, at, depth + 1)?;
            at.pop();
        }
        Ok(())
    }

    fn check_object(
        &self,
        schema: &Map<String, Value>,
        members: &Map<String, Value>,
        at: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        let count = members.len() as u64;
        if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
            && count < min
        {
            return Err(format!("has fewer than {min} properties"));
        }
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
            && count > max
        {
            return Err(format!("has more than {max} properties"));
        }
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !members.contains_key(name) {
                return Err(format!("{name:?} is a required property"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let patterned = schema.get("patternProperties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        for (name, value) in members {
            at.push(name.clone());
            let mut described = false;
            if let Some(property) = properties.and_then(|p| p.get(name)) {
                described = true;
                self.fits(property, value, at, depth + 1)?;
            }
            for (pattern, property) in patterned.into_iter().flatten() {
                if self.matches(pattern, name) {
                    described = true;
                    self.fits(property, value, at, depth + 1)?;
                }
            }
            if !described && let Some(additional) = additional {
                if additional == &Value::Bool(false) {
                    at.pop();
                    return Err(format!("{name:?} is not an allowed property"));
                }
                self.fits(additional, value, at, depth + 1)?;
            }
            at.pop();
        }
        Ok(())
    }

    fn check_combinations(
        &self,
        schema: &Map<String, Value>,
        instance: &Value,
        at: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        let list = |keyword: &str| {
            schema
                .get(keyword)
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
        };
        for part in list("allOf") {
            self.fits(part, instance, at, depth + 1)?;
        }
        let fitting = |parts: &[Value]| {
            parts
                .iter()
                .filter(|part| {
                    self.fits(part, instance, &mut Vec::new(), depth + 1)
                        .is_ok()
                })
                .count()
        };
        if schema.contains_key("anyOf") && fitting(list("anyOf")) == 0 {
            return Err("fits none of the schemas of anyOf".into());
        }
        if schema.contains_key("oneOf") && fitting(list("oneOf")) != 1 {
            return Err("fits not exactly one of the schemas of oneOf".into());
        }
        if let Some(not) = schema.get("not")
            && self.fits(not, instance, &mut Vec::new(), depth + 1).is_ok()
        {
            return Err("fits the schema of not".into());
        }
        Ok(())
    }

    fn matches(&self, pattern: &str, text: &str) -> bool {
        // Every pattern was compiled by `prepare`; one that was not matches nothing.
        self.patterns
            .get(pattern)
            .is_some_and(|regex| regex.is_match(text))
    }
}

/// Every pattern and every reference of `schema`, wherever they sit.
fn collect(schema: &Value, patterns: &mut Vec<String>, references: &mut Vec<String>, depth: usize) {
    if depth > MAX_CHECK_DEPTH {
        return;
    }
    match schema {
        Value::Object(members) => {
            if let Some(pattern) = members.get("pattern").and_then(Value::as_str) {
                patterns.push(pattern.to_string());
            }
            if let Some(reference) = members.get("$ref").and_then(Value::as_str) {
                references.push(reference.to_string());
            }
            if let Some(patterned) = members.get("patternProperties").and_then(Value::as_object) {
                patterns.extend(patterned.keys().cloned());
            }
            for value in members.values() {
                collect(value, patterns, references, depth + 1);
            }
        }
        Value::Array(items) => {
            for item in items {
                collect(item, patterns, references, depth + 1);
            }
        }
        _ => {}
    }
}

fn check_type(schema: &Map<String, Value>, instance: &Value) -> Result<(), String> {
    let Some(expected) = schema.get("type") else {
        return Ok(());
    };
    let names: Vec<&str> = match expected {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    if names.iter().any(|name| is_of_type(instance, name)) {
        return Ok(());
    }
    Err(format!("{instance} is not of type {expected}"))
}

fn is_of_type(instance: &Value, name: &str) -> bool {
    match (name, instance) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        ("integer", Value::Number(number)) => is_integer(number),
        _ => false,
    }
}

fn is_integer(number: &Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// `enum` and `const`.
fn check_values(schema: &Map<String, Value>, instance: &Value) -> Result<(), String> {
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.iter().any(|value| equal(value, instance))
    {
        return Err(format!(
            "{instance} is not one of {}",
            Value::Array(allowed.clone())
        ));
    }
    if let Some(constant) = schema.get("const")
        && !equal(constant, instance)
    {
        return Err(format!("{constant} was expected"));
    }
    Ok(())
}

fn check_number(schema: &Map<String, Value>, number: &Number) -> Result<(), String> {
    let Some(value) = number.as_f64() else {
        return Ok(());
    };
    let bound = |keyword: &str| schema.get(keyword).and_then(Value::as_f64);
    if let Some(min) = bound("minimum")
        && value < min
    {
        return Err(format!("{number} is less than the minimum of {min}"));
    }
    if let Some(max) = bound("maximum")
        && value > max
    {
        return Err(format!("{number} is greater than the maximum of {max}"));
    }
    if let Some(min) = bound("exclusiveMinimum")
        && value <= min
    {
        return Err(format!("{number} is not greater than {min}"));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && value >= max
    {
        return Err(format!("{number} is not less than {max}"));
    }
    if let Some(multiple) = schema.get("multipleOf").and_then(Value::as_number)
        && !is_multiple(number, multiple)
    {
        return Err(format!("{number} is not a multiple of {multiple}"));
    }
    Ok(())
}

fn is_multiple(number: &Number, multiple: &Number) -> bool {
    if let (Some(n), Some(m)) = (number.as_i64(), multiple.as_i64())
        && m != 0
    {
        return n % m == 0;
    }
    let (Some(n), Some(m)) = (number.as_f64(), multiple.as_f64()) else {
        return true;
    };
    if m <= 0.0 {
        return true;
    }
    let quotient = n / m;
    quotient.is_finite()
        && (quotient - quotient.round()).abs() <= MULTIPLE_EPSILON * quotient.abs().max(1.0)
}

/// JSON equality, numbers by value (`1` equals `1.0`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// A text equal for values [`equal`] calls equal: numbers by value, members in order.
fn canonical(value: &Value) -> String {
    match value {
        Value::Number(number) => match number.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            Some(f) => format!("{f:e}"),
            None => number.to_string(),
        },
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", inner.join(","))
        }
        Value::Object(members) => {
            let mut inner: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical(v)))
                .collect();
            inner.sort();
            format!("{{{}}}", inner.join(","))
        }
        other => other.to_string(),
    }
}

/// The JSON pointer of `at`'s steps.
fn pointer(at: &[String]) -> String {
    at.iter()
        .map(|step| format!("/{}", step.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// A reference's fragment with its percent-escapes decoded (`%24defs` is `$defs`).
fn percent_decoded(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(|decoded| decoded.into_owned())
}
