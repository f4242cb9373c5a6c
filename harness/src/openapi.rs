//! The control plane's own OpenAPI document (`control_plane::openapi`, the one it serves at
//! `/api/am/openapi.json`), checked on every answer the tests' [`crate::Client`] receives,
//! beside WSO2's contracts ([`crate::contract`]): a status the operation does not document
//! (errors fall to its `default`), a media type it does not list, or a JSON body its
//! schema does not allow, fails the test that received it. Nothing is left out of a body
//! first: the document says which members may be `null`.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Map, Value};

use crate::contract::{best_template, collapse_slashes, conforms, segments};

/// The document's path templates, split into segments.
static TEMPLATES: LazyLock<Vec<(String, Vec<Option<String>>)>> = LazyLock::new(|| {
    document()["paths"]
        .as_object()
        .expect("the document has paths")
        .keys()
        .map(|template| (template.clone(), segments(template)))
        .collect()
});

/// Validators built so far, by operation, status key and media type.
static VALIDATORS: LazyLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> =
    LazyLock::new(Default::default);

/// Where the control plane serves the document.
pub const PATH: &str = control_plane::openapi::PATH;

/// The document, as the control plane serves it.
pub fn document() -> &'static Value {
    control_plane::openapi::document()
}

/// Checks an answer to `method` on `path` (without its query) against the operation the
/// document describes there; nothing to check on a path it does not describe (a gateway's,
/// an API's). The reason of a mismatch otherwise.
pub fn check(
    method: &str,
    path: &str,
    status: u16,
    content_type: Option<&str>,
    body: &Value,
) -> Result<(), String> {
    let path = collapse_slashes(path);
    let Some(template) = best_template(&TEMPLATES, &path) else {
        return Ok(());
    };
    let method = method.to_ascii_lowercase();
    let operation = &document()["paths"][template][&method];
    if operation.is_null() {
        // A method the document does not describe on a path it does: 405, checked elsewhere.
        return Ok(());
    }
    let status_key = status.to_string();
    let (key, response) = match &operation["responses"][&status_key] {
        Value::Null if status < 400 => {
            return Err(format!(
                "{method} {template} answered {status}, which our OpenAPI document does not describe"
            ));
        }
        Value::Null => ("default", &operation["responses"]["default"]),
        documented => (status_key.as_str(), documented),
    };
    let Some(content) = response["content"].as_object() else {
        return Ok(());
    };
    let media = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let Some(described) = content.get(&media) else {
        return Err(format!(
            "{method} {template} answered {status} as '{media}', which our OpenAPI document does not list ({:?})",
            content.keys().collect::<Vec<_>>()
        ));
    };
    if !is_json(&media) {
        return Ok(());
    }
    let validator = validator(
        &format!("{template} {method} {key} {media}"),
        &described["schema"],
    )?;
    let answer = format!("{method} {template} answered {status}");
    conforms(&validator, body, &answer, "our OpenAPI document")
}

fn is_json(media: &str) -> bool {
    media == "application/json" || media.ends_with("+json")
}

/// A validator of `schema`, its references resolved against the document's components.
fn validator(key: &str, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    if let Some(found) = VALIDATORS.lock().unwrap().get(key) {
        return Ok(found.clone());
    }
    let mut whole = match schema {
        Value::Object(members) => members.clone(),
        _ => Map::new(),
    };
    whole.insert("components".into(), document()["components"].clone());
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(false)
        .build(&Value::Object(whole))
        .map_err(|e| format!("our document's schema for {key} does not compile: {e}"))?;
    let validator = Arc::new(validator);
    VALIDATORS
        .lock()
        .unwrap()
        .insert(key.to_string(), validator.clone());
    Ok(validator)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_response_schema_of_the_document_compiles() {
        for (template, item) in document()["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let Some(responses) = operation["responses"].as_object() else {
                    continue;
                };
                for (status, response) in responses {
                    for (media, described) in response["content"].as_object().into_iter().flatten()
                    {
                        let key = format!("{template} {method} {status} {media}");
                        validator(&key, &described["schema"]).unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn a_conforming_answer_passes_and_a_drifting_one_fails() {
        let user = json!({"username": "alice", "roles": ["admin"], "tenant": "carbon.super", "disabled": false});
        let path = "/api/am/admin/v0.14/users/alice";
        check("GET", path, 200, Some("application/json"), &user).unwrap();
        let drifted = json!({"username": "alice", "roles": "admin"});
        let err = check("GET", path, 200, Some("application/json"), &drifted).unwrap_err();
        assert!(err.contains("roles"), "{err}");
        let err = check("GET", path, 200, Some("text/html"), &user).unwrap_err();
        assert!(err.contains("text/html"), "{err}");
    }

    #[test]
    fn refusals_must_be_wso2s_error_body_and_successes_documented() {
        let path = "/api/am/store/v0.14/applications/x";
        let not_wso2 = json!({"error": "nope"});
        assert!(check("GET", path, 404, Some("application/json"), &not_wso2).is_err());
        let err = check("GET", path, 204, None, &Value::Null).unwrap_err();
        assert!(err.contains("does not describe"), "{err}");
        assert!(check("GET", "/some-api/v1/x", 200, None, &not_wso2).is_ok());
    }

    #[test]
    fn the_token_endpoint_refuses_in_oauths_terms() {
        let oauth = json!({"error": "invalid_grant", "error_description": "no"});
        check(
            "POST",
            "/oauth2/token",
            400,
            Some("application/json"),
            &oauth,
        )
        .unwrap();
        let wso2 = json!({"code": 400, "message": "Bad Request", "description": "no", "moreInfo": "", "error": []});
        assert!(
            check(
                "POST",
                "/oauth2/token",
                400,
                Some("application/json"),
                &wso2
            )
            .is_err()
        );
    }
}
