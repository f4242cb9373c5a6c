//! The facade's records (spec 2.7) and how a JSON request body becomes one.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::xml::is_xml_char;

/// A developer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Developer {
    /// Unique user name.
    pub username: String,
    /// Display name.
    pub name: String,
    /// E-mail address.
    pub email: String,
}

/// A developer's repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repo {
    /// Repository name.
    pub name: String,
    /// The owning developer.
    pub username: String,
    /// Number of forks (`xs:int`).
    pub forks: i32,
}

/// What is wrong with a request body, naming the field when one is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The field at fault, if any.
    pub field: Option<&'static str>,
    /// What is wrong.
    pub message: String,
}

impl Invalid {
    fn body(message: impl Into<String>) -> Self {
        Invalid {
            field: None,
            message: message.into(),
        }
    }

    fn field(field: &'static str, message: impl Into<String>) -> Self {
        Invalid {
            field: Some(field),
            message: message.into(),
        }
    }
}

impl Developer {
    /// A developer from a JSON body: `username`, `name` and `email`, all strings.
    pub fn from_json(body: &[u8]) -> Result<Self, Invalid> {
        let fields = json_object(body)?;
        Ok(Developer {
            username: required_text(&fields, "username")?,
            name: text(&fields, "name")?,
            email: text(&fields, "email")?,
        })
    }
}

impl Repo {
    /// A repository from a JSON body: `name` and `username` strings, `forks` an integer.
    pub fn from_json(body: &[u8]) -> Result<Self, Invalid> {
        let fields = json_object(body)?;
        Ok(Repo {
            name: required_text(&fields, "name")?,
            username: required_text(&fields, "username")?,
            forks: forks(&fields)?,
        })
    }
}

fn json_object(body: &[u8]) -> Result<Map<String, Value>, Invalid> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(fields)) => Ok(fields),
        Ok(_) => Err(Invalid::body("the body must be a JSON object")),
        Err(err) => Err(Invalid::body(format!("the body is not valid JSON: {err}"))),
    }
}

/// A string field that XML can carry (it may be empty).
fn text(fields: &Map<String, Value>, field: &'static str) -> Result<String, Invalid> {
    match fields.get(field) {
        None | Some(Value::Null) => Err(Invalid::field(field, format!("'{field}' is required"))),
        Some(Value::String(value)) if value.chars().all(is_xml_char) => Ok(value.clone()),
        Some(Value::String(_)) => Err(Invalid::field(
            field,
            format!("'{field}' contains control characters"),
        )),
        Some(_) => Err(Invalid::field(field, format!("'{field}' must be a string"))),
    }
}

/// A string field that must not be blank: it names a record.
fn required_text(fields: &Map<String, Value>, field: &'static str) -> Result<String, Invalid> {
    let value = text(fields, field)?;
    if value.trim().is_empty() {
        return Err(Invalid::field(
            field,
            format!("'{field}' must not be empty"),
        ));
    }
    Ok(value)
}

/// `forks`: a non-negative integer that fits `xs:int`.
fn forks(fields: &Map<String, Value>) -> Result<i32, Invalid> {
    let message = "'forks' must be an integer between 0 and 2147483647";
    match fields.get("forks") {
        None | Some(Value::Null) => Err(Invalid::field("forks", "'forks' is required")),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .filter(|n| *n >= 0)
            .ok_or_else(|| Invalid::field("forks", message)),
        Some(_) => Err(Invalid::field("forks", message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_developer_needs_three_strings() {
        let ok = Developer::from_json(br#"{"username":"zoe","name":"Zo\u00eb <&>","email":"z@e"}"#);
        assert_eq!(ok.unwrap().name, "Zoë <&>");
        for (body, field) in [
            (&br#"{"name":"n","email":"e"}"#[..], Some("username")),
            (
                br#"{"username":"","name":"n","email":"e"}"#,
                Some("username"),
            ),
            (br#"{"username":"u","name":7,"email":"e"}"#, Some("name")),
            (br#"{"username":"u","name":"n"}"#, Some("email")),
            (
                br#"{"username":"u","name":"a\u0000","email":"e"}"#,
                Some("name"),
            ),
            (br#"["u"]"#, None),
            (b"{", None),
        ] {
            let err = Developer::from_json(body).unwrap_err();
            assert_eq!(err.field, field, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn forks_must_be_a_non_negative_int() {
        let repo = Repo::from_json(br#"{"name":"r","username":"u","forks":3}"#).unwrap();
        assert_eq!(repo.forks, 3);
        for forks in ["\"3\"", "1.5", "-1", "2147483648", "true", "null"] {
            let body = format!(r#"{{"name":"r","username":"u","forks":{forks}}}"#);
            let err = Repo::from_json(body.as_bytes()).unwrap_err();
            assert_eq!(err.field, Some("forks"), "{forks}");
        }
    }
}
