//! `multipart/form-data` bodies (WSO2's uploads: document content, thumbnails), read
//! whole, a field at a time, each within the size its resource allows.

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header::CONTENT_TYPE;

use crate::error::{Error, Result};

/// A field of a form.
#[derive(Debug)]
pub struct FormField {
    /// The field's name.
    pub name: String,
    /// The file name the client gave, as given (see [`check_file_name`]).
    pub file_name: Option<String>,
    /// The part's own `Content-Type`, as given.
    pub content_type: Option<String>,
    /// Its bytes.
    pub bytes: Bytes,
}

/// The fields of a multipart body that are named in `wanted` (others are skipped, as
/// WSO2 ignores form fields it does not know). A field given twice, a field larger than
/// `max_field_bytes` (413) and a body that is not a multipart form are refused.
pub async fn read_form<S: Send + Sync>(
    request: Request,
    state: &S,
    wanted: &[&str],
    max_field_bytes: usize,
) -> Result<Vec<FormField>> {
    if !is_multipart(&request) {
        return Err(Error::Invalid(
            "The request body must be multipart/form-data".into(),
        ));
    }
    let mut form = Multipart::from_request(request, state)
        .await
        .map_err(|e| Error::Invalid(e.body_text()))?;
    let mut fields: Vec<FormField> = Vec::new();
    while let Some(mut field) = form.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_string();
        if !wanted.contains(&name.as_str()) {
            continue;
        }
        if fields.iter().any(|f| f.name == name) {
            return Err(Error::Invalid(format!(
                "Form field '{name}' is given twice"
            )));
        }
        let file_name = field.file_name().map(str::to_string);
        let content_type = field.content_type().map(str::to_string);
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(malformed)? {
            if bytes.len() + chunk.len() > max_field_bytes {
                return Err(Error::PayloadTooLarge);
            }
            bytes.extend_from_slice(&chunk);
        }
        fields.push(FormField {
            name,
            file_name,
            content_type,
            bytes: bytes.into(),
        });
    }
    Ok(fields)
}

fn malformed(err: axum::extract::multipart::MultipartError) -> Error {
    Error::Invalid(format!("Malformed multipart body: {}", err.body_text()))
}

fn is_multipart(request: &Request) -> bool {
    request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

/// Refuses (400) a file name that is not a plain name: empty, longer than 255 bytes,
/// with a path separator, a `..`, a quote or a control character. Such a name is never
/// stored, so it can never reach a `Content-Disposition` or a path.
pub fn check_file_name(name: &str) -> Result<()> {
    let plain = !name.trim().is_empty()
        && name.len() <= 255
        && !name.contains(['/', '\\', '"'])
        && !name.contains("..")
        && !name.chars().any(char::is_control);
    if plain {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "Invalid file name '{}': give a plain file name",
            name.escape_default()
        )))
    }
}

/// The media type a client declared for a part, when it is a plain `type/subtype`
/// (parameters dropped); `application/octet-stream` otherwise.
pub fn declared_media_type(content_type: Option<&str>) -> String {
    let essence = content_type
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    match essence.split_once('/') {
        Some((kind, sub)) if token(kind) && token(sub) => essence,
        _ => "application/octet-stream".to_string(),
    }
}

/// `Content-Disposition: attachment` naming `file_name`: an ASCII `filename` (other
/// characters as `_`) and the exact name as RFC 5987 `filename*`.
pub fn attachment(file_name: Option<&str>) -> String {
    let Some(name) = file_name else {
        return "attachment".to_string();
    };
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut encoded = String::new();
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_must_be_plain() {
        for good in ["sample.pdf", "résumé v2.txt", "a.b.c"] {
            assert!(check_file_name(good).is_ok(), "{good}");
        }
        for bad in [
            "../../etc/passwd",
            "..",
            "dir/x.pdf",
            "C:\\x.pdf",
            "a\"b",
            "a\r\nb",
            "",
            " ",
            &"x".repeat(256),
        ] {
            assert!(check_file_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn media_types_and_dispositions_are_safe_to_send() {
        assert_eq!(
            declared_media_type(Some("Application/PDF; x=1")),
            "application/pdf"
        );
        for odd in [
            None,
            Some(""),
            Some("pdf"),
            Some("text/html\r\nX: y"),
            Some("a/"),
        ] {
            assert_eq!(declared_media_type(odd), "application/octet-stream");
        }
        assert_eq!(
            attachment(Some("résumé.pdf")),
            "attachment; filename=\"r_sum_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf"
        );
        assert_eq!(attachment(None), "attachment");
    }
}
