//! Request extractors whose rejections speak WSO2's error format.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::Error;

/// A JSON body. Malformed JSON, unknown properties, wrong types, an empty body, a body
/// over the limit and a non-JSON content type each get their own 4xx.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers().get(CONTENT_TYPE)) {
            return Err(Error::UnsupportedMediaType);
        }
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Reads the whole body, mapping the size limit to 413.
pub async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, Error> {
    Bytes::from_request(req, state)
        .await
        .map_err(|err| match err {
            BytesRejection::FailedToBufferBody(_)
                if err.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE =>
            {
                Error::PayloadTooLarge
            }
            other => Error::Invalid(format!("Could not read the request body: {other}")),
        })
}

/// Parses a JSON document into `T` with WSO2's messages for each failure.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::Invalid("Request payload cannot be empty.".into()));
    }
    serde_json::from_slice(bytes).map_err(|err| json_error(&err))
}

fn json_error(err: &serde_json::Error) -> Error {
    use serde_json::error::Category;
    let message = err.to_string();
    if let Some(field) = quoted_after(&message, "unknown field `") {
        return Error::Invalid(format!("Unrecognized property '{field}'"));
    }
    if let Some(field) = quoted_after(&message, "missing field `") {
        return Error::InvalidFields(vec![(field, "may not be null".into())]);
    }
    match err.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            Error::Invalid("Malformed request body.".into())
        }
        Category::Data => Error::Invalid(format!("Malformed request body: {message}")),
    }
}

fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = &message[message.find(prefix)? + prefix.len()..];
    Some(rest[..rest.find('`')?].to_string())
}

fn is_json(content_type: Option<&axum::http::HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json" || mime.ends_with("+json")
        })
        .unwrap_or(false)
}

/// Query parameters; a value of the wrong type or an unknown parameter gets 400.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        parse_query(query).map(QueryParams)
    }
}

fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, Error> {
    axum::extract::Query::<T>::try_from_uri(
        &format!("/?{query}")
            .parse()
            .map_err(|_| bad_query("unreadable query string"))?,
    )
    .map(|q| q.0)
    .map_err(|err| bad_query(&err.body_text()))
}

fn bad_query(detail: &str) -> Error {
    let detail = detail
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(detail);
    Error::Invalid(format!("Invalid query parameters: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(
        dead_code,
        reason = "the tests read whether a body parses, not its fields"
    )]
    struct Body {
        name: String,
        count: Option<i64>,
    }

    fn description(err: Error) -> String {
        format!("{err:?}")
    }

    #[test]
    fn json_failures_read_like_wso2() {
        assert!(
            description(parse_json::<Body>(b"{").unwrap_err()).contains("Malformed request body.")
        );
        assert!(description(parse_json::<Body>(b"").unwrap_err()).contains("cannot be empty"));
        assert!(
            description(parse_json::<Body>(br#"{"name":"a","x":1}"#).unwrap_err())
                .contains("Unrecognized property 'x'")
        );
        assert!(matches!(
            parse_json::<Body>(br#"{"count":1}"#).unwrap_err(),
            Error::InvalidFields(v) if v[0].0 == "name"
        ));
        assert!(
            description(parse_json::<Body>(br#"{"name":5}"#).unwrap_err()).contains("Malformed")
        );
    }
}
