//! A Swagger definition read as WSO2 2.6 reads it. Its publisher parses `apiDefinition`
//! with json-simple 1.1 (`APIDefinitionFromOpenAPISpec.getURITemplates`), whose parser
//! skips a missing comma between an object's members or an array's values, and a
//! missing colon after a member's name (its issues #16, #43, #83, #114); WSO2's own REST
//! tests send such definitions. Nothing else is forgiven: a bare word, an unclosed
//! bracket or a string cut short is still not JSON. The forgiven text is kept as the
//! JSON it means, so that every reader after this one reads JSON.

use serde_json::{Map, Value};

/// Deepest nesting read: definitions are a few levels deep, and a bound keeps a hostile
/// one from exhausting the stack.
const MAX_DEPTH: usize = 128;

/// `text` as JSON, forgiving what json-simple forgives; `None` when it is not JSON even so.
pub fn read_forgiving(text: &str) -> Option<Value> {
    let mut reader = Reader {
        text: text.as_bytes(),
        at: 0,
    };
    let value = reader.value(0)?;
    reader.skip_space();
    (reader.at == reader.text.len()).then_some(value)
}

/// `definition` as given when it is JSON; else the JSON json-simple reads in it; else as
/// given, for validation to refuse.
pub fn forgiven(definition: String) -> String {
    if serde_json::from_str::<serde::de::IgnoredAny>(&definition).is_ok() {
        return definition;
    }
    match read_forgiving(&definition) {
        Some(value) => value.to_string(),
        None => definition,
    }
}

struct Reader<'t> {
    text: &'t [u8],
    at: usize,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    /// The next byte after white space, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.get(self.at).copied()
    }

    /// Skips commas (and white space) where json-simple skips them.
    fn skip_commas(&mut self) {
        while self.peek() == Some(b',') {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string().map(Value::String),
            _ => self.scalar(),
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        let mut members = Map::new();
        loop {
            self.skip_commas();
            match self.peek()? {
                b'}' => {
                    self.at += 1;
                    return Some(Value::Object(members));
                }
                b'"' => {
                    let name = self.string()?;
                    if self.peek() == Some(b':') {
                        self.at += 1;
                    }
                    let value = self.value(depth + 1)?;
                    members.insert(name, value);
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        let mut values = Vec::new();
        loop {
            self.skip_commas();
            if self.peek()? == b']' {
                self.at += 1;
                return Some(Value::Array(values));
            }
            values.push(self.value(depth + 1)?);
        }
    }

    /// A string, its escapes read by `serde_json`.
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        let mut escaped = false;
        for (offset, &byte) in self.text[start + 1..].iter().enumerate() {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    let end = start + 1 + offset + 1;
                    self.at = end;
                    let literal = std::str::from_utf8(&self.text[start..end]).ok()?;
                    return serde_json::from_str(literal).ok();
                }
                _ => {}
            }
        }
        None
    }

    /// A number, `true`, `false` or `null`, read by `serde_json`.
    fn scalar(&mut self) -> Option<Value> {
        let start = self.at;
        let end = self.text[start..]
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']' | b':' | b'"') || b.is_ascii_whitespace())
            .map_or(self.text.len(), |len| start + len);
        self.at = end;
        let literal = std::str::from_utf8(&self.text[start..end]).ok()?;
        let value: Value = serde_json::from_str(literal).ok()?;
        (!value.is_object() && !value.is_array() && !value.is_string()).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What json-simple forgives is read as the JSON it means.
    #[test]
    fn missing_commas_and_colons_are_forgiven() {
        let wso2 =
            r#"{"paths":{"/*":{"get":{"x-scope":"admin_scope" "parameters":[{"a":1} {"b":2}]}}}}"#;
        assert_eq!(
            read_forgiving(wso2).unwrap(),
            json!({"paths": {"/*": {"get": {"x-scope": "admin_scope", "parameters": [{"a": 1}, {"b": 2}]}}}})
        );
        assert_eq!(read_forgiving(r#"{"a" "x",,}"#).unwrap(), json!({"a": "x"}));
        assert_eq!(read_forgiving("[1 2,,3,]").unwrap(), json!([1, 2, 3]));
        assert_eq!(
            read_forgiving(r#"{"s": "a\"b\\", "n": -1.5e3, "t": true, "z": null}"#).unwrap(),
            json!({"s": "a\"b\\", "n": -1.5e3, "t": true, "z": null})
        );
    }

    /// JSON stays as sent, byte for byte; forgiven text becomes JSON; the rest is left.
    #[test]
    fn only_what_is_not_json_is_rewritten() {
        let sent = r#"{ "b":1,  "a":[ 2 ] }"#.to_string();
        assert_eq!(forgiven(sent.clone()), sent);
        assert_eq!(forgiven(r#"{"b":1 "a":2}"#.into()), r#"{"a":2,"b":1}"#);
        assert_eq!(forgiven("not json".into()), "not json");
    }

    /// What is not JSON even so stays refused: no panic, no partial value.
    #[test]
    fn what_is_not_json_even_so_is_refused() {
        for text in [
            "",
            "{",
            "[1 2",
            r#"{"a":"x"#,
            r#"{a:1}"#,
            "{\"a\": bare}",
            "[1] 2",
            "{\"a\" 1 2}",
            "[nul]",
            "[\"x\" : 1]",
            "[1}",
        ] {
            assert_eq!(read_forgiving(text), None, "{text}");
        }
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert_eq!(read_forgiving(&deep), None);
        let fine = "[".repeat(10) + &"]".repeat(10);
        assert!(read_forgiving(&fine).is_some());
    }
}
