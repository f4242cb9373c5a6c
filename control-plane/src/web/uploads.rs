//! Forms with a file (`multipart/form-data`) as the web applications read them: text
//! fields within a small size, one file field within its own, a bounded number of
//! fields; and sent on to the management API as the same kind of form.

use axum::extract::{FromRequest, Multipart, Request};

use crate::state::AppState;

/// The largest text field of a form.
const MAX_TEXT_BYTES: usize = 64 << 10;
/// Fields a form may hold at most.
const MAX_FIELDS: usize = 64;

/// A file a form carried.
pub struct Upload {
    pub file_name: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// A form read: its text fields in order, and its file (the field `file_field`), when one
/// was chosen.
pub struct Posted {
    pub fields: Vec<(String, String)>,
    pub file: Option<Upload>,
}

/// Reads `request` as a multipart form whose file field is `file_field`, of at most
/// `max_file_bytes`; why not, in words for the page, when it is no such form.
pub async fn read(
    state: &AppState,
    request: Request,
    file_field: &str,
    max_file_bytes: usize,
) -> Result<Posted, String> {
    let mut multipart = Multipart::from_request(request, state)
        .await
        .map_err(|e| e.body_text())?;
    let mut posted = Posted {
        fields: Vec::new(),
        file: None,
    };
    let mut count = 0;
    while let Some(mut field) = multipart.next_field().await.map_err(|e| e.body_text())? {
        count += 1;
        if count > MAX_FIELDS {
            return Err("The form has too many fields.".into());
        }
        let name = field.name().unwrap_or_default().to_string();
        let is_file = name == file_field;
        let limit = if is_file {
            max_file_bytes
        } else {
            MAX_TEXT_BYTES
        };
        let file_name = field.file_name().unwrap_or_default().to_string();
        let content_type = field
            .content_type()
            .unwrap_or("application/octet-stream")
            .to_string();
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(|e| e.body_text())? {
            if bytes.len() + chunk.len() > limit {
                return Err(format!("The field '{name}' is too large."));
            }
            bytes.extend_from_slice(&chunk);
        }
        if is_file {
            if !bytes.is_empty() {
                posted.file = Some(Upload {
                    file_name,
                    content_type,
                    bytes,
                });
            }
        } else {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            posted.fields.push((name, text));
        }
    }
    Ok(posted)
}

/// A multipart body of `text` fields and `file` (its field name and upload): the body and
/// its content type.
pub fn multipart_body(text: &[(&str, &str)], file: Option<(&str, &Upload)>) -> (String, Vec<u8>) {
    let boundary = format!("apim-{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::new();
    for (name, value) in text {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n",
                quoted(name)
            )
            .as_bytes(),
        );
        body.extend_from_slice(value.as_bytes());
        body.extend_from_slice(b"\r\n");
    }
    if let Some((name, upload)) = file {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {}\r\n\r\n",
                quoted(name),
                quoted(&upload.file_name),
                single_line(&upload.content_type)
            )
            .as_bytes(),
        );
        body.extend_from_slice(&upload.bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// `text` safe inside a quoted header parameter: quotes, backslashes and line breaks
/// dropped (the API refuses such file names anyway).
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '"' | '\\' | '\r' | '\n'))
        .collect()
}

/// `text` on one line.
fn single_line(text: &str) -> String {
    text.chars().filter(|c| !matches!(c, '\r' | '\n')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_cannot_break_out_of_its_header() {
        let upload = Upload {
            file_name: "a\"\r\nX-Evil: 1\".png".into(),
            content_type: "image/png\r\nX-Evil: 1".into(),
            bytes: vec![1, 2],
        };
        let (content_type, body) = multipart_body(&[("x", "y")], Some(("file", &upload)));
        assert!(content_type.starts_with("multipart/form-data; boundary=apim-"));
        let text = String::from_utf8_lossy(&body);
        assert!(!text.contains("\r\nX-Evil"), "{text}");
        assert!(text.contains("filename=\"aX-Evil: 1.png\""), "{text}");
    }
}
