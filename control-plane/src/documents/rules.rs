//! What a document may be (WSO2 2.6's checks in `apisApiIdDocumentsPost`/`Put`, plus
//! bounds of our own), and how large its content may be.

use super::records::{DOCUMENT_TYPES, Document, DocumentRow, SOURCE_TYPES, VISIBILITIES};
use crate::error::{Error, Result};

/// Largest uploaded file of a `FILE` document, bytes (below the management body limit,
/// so the form around it fits; stored in base64, a third larger).
pub const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;
/// Largest inline (or Markdown) content, bytes.
pub const MAX_INLINE_BYTES: usize = 1024 * 1024;

const MAX_NAME_CHARS: usize = 255;
const MAX_SUMMARY_CHARS: usize = 4096;
const MAX_URL_CHARS: usize = 2048;

/// A document's checked metadata: a row but for its ids.
pub struct CheckedDocument {
    pub name: String,
    pub doc_type: String,
    pub other_type_name: Option<String>,
    pub summary: Option<String>,
    pub source_type: String,
    pub source_url: Option<String>,
    pub visibility: String,
}

impl CheckedDocument {
    /// The row of document `id` of API `api_id`, without content.
    pub fn into_row(self, id: String, api_id: String) -> DocumentRow {
        DocumentRow {
            id,
            api_id,
            name: self.name,
            doc_type: self.doc_type,
            other_type_name: self.other_type_name,
            summary: self.summary,
            source_type: self.source_type,
            source_url: self.source_url,
            visibility: self.visibility,
            file_name: None,
            media_type: None,
        }
    }
}

/// Checks a `Document` body: the four required members, the enumerations, an
/// `otherTypeName` for `OTHER`, an http(s) `sourceUrl` for `URL` (kept only there).
pub fn check(body: Document) -> Result<CheckedDocument> {
    crate::error::require_present(&[
        ("name", body.name.is_none()),
        ("type", body.doc_type.is_none()),
        ("sourceType", body.source_type.is_none()),
        ("visibility", body.visibility.is_none()),
    ])?;
    let name = body.name.unwrap_or_default();
    check_line("name", &name, MAX_NAME_CHARS)?;
    if name.trim().is_empty() {
        return Err(Error::Invalid("Document name cannot be empty".into()));
    }
    let doc_type = one_of("type", body.doc_type.unwrap_or_default(), DOCUMENT_TYPES)?;
    let source_type = one_of(
        "sourceType",
        body.source_type.unwrap_or_default(),
        SOURCE_TYPES,
    )?;
    let visibility = one_of(
        "visibility",
        body.visibility.unwrap_or_default(),
        VISIBILITIES,
    )?;
    let other_type_name = body.other_type_name.filter(|n| !n.trim().is_empty());
    if let Some(other) = &other_type_name {
        check_line("otherTypeName", other, MAX_NAME_CHARS)?;
    }
    if doc_type == "OTHER" && other_type_name.is_none() {
        return Err(Error::Invalid(
            "otherTypeName cannot be empty if type is OTHER.".into(),
        ));
    }
    if let Some(summary) = &body.summary {
        check_text("summary", summary, MAX_SUMMARY_CHARS)?;
    }
    let source_url = if source_type == "URL" {
        Some(check_source_url(
            body.source_url.as_deref().unwrap_or_default(),
        )?)
    } else {
        None
    };
    Ok(CheckedDocument {
        name,
        doc_type,
        other_type_name,
        summary: body.summary,
        source_type,
        source_url,
        visibility,
    })
}

fn one_of(property: &str, value: String, allowed: &[&str]) -> Result<String> {
    if allowed.contains(&value.as_str()) {
        Ok(value)
    } else {
        Err(Error::Invalid(format!(
            "Invalid {property} '{}': one of {}",
            value.escape_default(),
            allowed.join(", ")
        )))
    }
}

/// A single line of text: no control characters, at most `max` characters.
fn check_line(property: &str, value: &str, max: usize) -> Result<()> {
    if value.chars().any(char::is_control) {
        return Err(Error::Invalid(format!(
            "{property} must not contain control characters"
        )));
    }
    check_text(property, value, max)
}

/// Free text: at most `max` characters and no NUL (which PostgreSQL cannot store).
pub fn check_text(property: &str, value: &str, max: usize) -> Result<()> {
    if value.contains('\0') {
        return Err(Error::Invalid(format!(
            "{property} must not contain NUL characters"
        )));
    }
    if value.chars().count() > max {
        return Err(Error::Invalid(format!(
            "{property} is longer than {max} characters"
        )));
    }
    Ok(())
}

/// An absolute http(s) URL a client may be sent to (it becomes a `Location` header).
fn check_source_url(url: &str) -> Result<String> {
    let invalid = || Error::Invalid("Invalid document sourceUrl Format".into());
    if url.len() > MAX_URL_CHARS {
        return Err(invalid());
    }
    let uri: axum::http::Uri = url.parse().map_err(|_| invalid())?;
    let web = matches!(uri.scheme_str(), Some("http" | "https"));
    let host = uri.host().is_some_and(|h| !h.is_empty());
    if web && host {
        Ok(url.to_string())
    } else {
        Err(invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(json: serde_json::Value) -> Document {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn documents_are_checked_as_wso2_checks_them() {
        let ok = check(body(serde_json::json!({"name": "Intro", "type": "HOWTO",
            "sourceType": "URL", "sourceUrl": "https://docs.example.com/a?b=c",
            "visibility": "API_LEVEL"})))
        .unwrap();
        assert_eq!(
            ok.source_url.as_deref(),
            Some("https://docs.example.com/a?b=c")
        );
        let problem = |json: serde_json::Value| format!("{:?}", check(body(json)).err().unwrap());
        assert!(problem(serde_json::json!({"name": "a"})).contains("sourceType"));
        for (json, expected) in [
            (
                serde_json::json!({"name": "a", "type": "OTHER", "sourceType": "INLINE", "visibility": "API_LEVEL"}),
                "otherTypeName",
            ),
            (
                serde_json::json!({"name": "a", "type": "HOWTO", "sourceType": "URL", "sourceUrl": "javascript:alert(1)", "visibility": "API_LEVEL"}),
                "sourceUrl",
            ),
            (
                serde_json::json!({"name": "a", "type": "HOWTO", "sourceType": "URL", "visibility": "API_LEVEL"}),
                "sourceUrl",
            ),
            (
                serde_json::json!({"name": "a", "type": "HOWTO", "sourceType": "PDF", "visibility": "API_LEVEL"}),
                "sourceType",
            ),
            (
                serde_json::json!({"name": "a\u{0}", "type": "HOWTO", "sourceType": "INLINE", "visibility": "API_LEVEL"}),
                "control",
            ),
            (
                serde_json::json!({"name": " ", "type": "HOWTO", "sourceType": "INLINE", "visibility": "API_LEVEL"}),
                "empty",
            ),
        ] {
            assert!(problem(json.clone()).contains(expected), "{json}");
        }
    }
}
