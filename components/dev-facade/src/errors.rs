//! The facade's errors, in the same JSON body as the management APIs (WSO2's `Error`:
//! `{code, message, description, moreInfo, error: [{code, message}]}`).

use apim_http::Response;
use serde_json::json;

use crate::records::Invalid;

/// Why a request failed; each variant has one status.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// 400: the body is not a valid record.
    Invalid(Invalid),
    /// 400 with a description.
    BadRequest(String),
    /// 404 with a description.
    NotFound(String),
    /// 405, with the methods the resource allows.
    MethodNotAllowed(&'static str),
    /// 409 with a description.
    Conflict(String),
    /// 413.
    PayloadTooLarge,
    /// 415.
    UnsupportedMediaType,
    /// 502: the SOAP backend is unreachable, refused us, or answered a fault or nonsense.
    BadGateway(String),
    /// 504: the SOAP backend did not answer in time.
    GatewayTimeout(String),
}

impl ApiError {
    fn status_and_message(&self) -> (u16, &'static str) {
        match self {
            Self::Invalid(_) | Self::BadRequest(_) => (400, "Bad Request"),
            Self::NotFound(_) => (404, "Not Found"),
            Self::MethodNotAllowed(_) => (405, "Method Not Allowed"),
            Self::Conflict(_) => (409, "Conflict"),
            Self::PayloadTooLarge => (413, "Payload Too Large"),
            Self::UnsupportedMediaType => (415, "Unsupported Media Type"),
            Self::BadGateway(_) => (502, "Bad Gateway"),
            Self::GatewayTimeout(_) => (504, "Gateway Timeout"),
        }
    }

    fn description(&self) -> String {
        match self {
            Self::Invalid(invalid) => invalid.message.clone(),
            Self::BadRequest(d)
            | Self::NotFound(d)
            | Self::Conflict(d)
            | Self::BadGateway(d)
            | Self::GatewayTimeout(d) => d.clone(),
            Self::MethodNotAllowed(allowed) => {
                format!("The method is not allowed for the requested resource; allowed: {allowed}")
            }
            Self::PayloadTooLarge => "The request body is larger than the facade accepts".into(),
            Self::UnsupportedMediaType => "The request body must be application/json".into(),
        }
    }

    /// The error as an HTTP response.
    pub fn response(&self) -> Response {
        let (status, message) = self.status_and_message();
        let items = match self {
            Self::Invalid(Invalid {
                field: Some(field),
                message,
            }) => vec![json!({"code": format!("400_{field}"), "message": message})],
            _ => vec![],
        };
        let body = json!({
            "code": status,
            "message": message,
            "description": self.description(),
            "moreInfo": "",
            "error": items,
        });
        let response = Response::json(status, &body);
        match self {
            Self::MethodNotAllowed(allowed) => response.with_header("allow", *allowed),
            _ => response,
        }
    }
}

impl From<Invalid> for ApiError {
    fn from(invalid: Invalid) -> Self {
        ApiError::Invalid(invalid)
    }
}
