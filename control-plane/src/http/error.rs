//! Errors of the management REST APIs, in WSO2's error body
//! `{code, message, description, moreInfo, error: [{code, message}]}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Why a management request failed; each variant has one status and body.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 with a description.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// 400 "Validation Error" listing each `(property, problem)`.
    #[error("validation failed")]
    Validation(Vec<(String, String)>),
    /// 401: no credentials, bad credentials, or a token without the scope (WSO2 says 401 for all).
    #[error("unauthenticated")]
    Unauthenticated,
    /// 403 with a description.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// 404 "Requested <resource> with Id '<id>' not found".
    #[error("{0} {1} not found")]
    NotFound(&'static str, String),
    /// 404 with a description of its own.
    #[error("not found: {0}")]
    NotFoundWhy(String),
    /// 405.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 409 "Resource Already Exists".
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// 409 "Conflict".
    #[error("conflict: {0}")]
    Conflict(String),
    /// 413.
    #[error("payload too large")]
    PayloadTooLarge,
    /// 415.
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// 500: logged in full, answered with a generic body.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        ApiError::Internal(err.into())
    }
}

/// WSO2's `Error` definition.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    code: u16,
    message: &'static str,
    description: String,
    more_info: String,
    error: Vec<ErrorItem>,
}

/// WSO2's `ErrorListItem`.
#[derive(Debug, Serialize)]
pub struct ErrorItem {
    code: String,
    message: String,
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) | Self::Validation(_) => StatusCode::BAD_REQUEST,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(..) | Self::NotFoundWhy(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::AlreadyExists(_) | Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn body(&self) -> ErrorBody {
        let status = self.status_code();
        let (message, description, items): (&'static str, String, Vec<ErrorItem>) = match self {
            Self::BadRequest(d) => ("Bad Request", d.clone(), vec![]),
            Self::Validation(problems) => (
                "Bad Request",
                "Validation Error".to_string(),
                problems
                    .iter()
                    .map(|(property, problem)| ErrorItem {
                        code: format!("400_{property}"),
                        message: format!("{property}: {problem}"),
                    })
                    .collect(),
            ),
            Self::Unauthenticated => ("", "Unauthenticated request".to_string(), vec![]),
            Self::Forbidden(d) => ("Forbidden", d.clone(), vec![]),
            Self::NotFound(resource, id) => (
                "Not Found",
                format!("Requested {resource} with Id '{id}' not found"),
                vec![],
            ),
            Self::NotFoundWhy(d) => ("Not Found", d.clone(), vec![]),
            Self::MethodNotAllowed => (
                "Method Not Allowed",
                "The method is not allowed for the requested resource".to_string(),
                vec![],
            ),
            Self::AlreadyExists(d) => ("Resource Already Exists", d.clone(), vec![]),
            Self::Conflict(d) => ("Conflict", d.clone(), vec![]),
            Self::PayloadTooLarge => (
                "Payload Too Large",
                "The request body is larger than this server accepts".to_string(),
                vec![],
            ),
            Self::UnsupportedMediaType => (
                "Unsupported Media Type",
                "The request body must be application/json".to_string(),
                vec![],
            ),
            Self::Internal(_) => (
                "Internal server error",
                "The server could not complete the request".to_string(),
                vec![],
            ),
        };
        ErrorBody {
            code: status.as_u16(),
            message,
            description,
            more_info: String::new(),
            error: items,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Self::Internal(err) = &self {
            tracing::error!(error = ?err, "request failed");
        }
        (self.status_code(), Json(self.body())).into_response()
    }
}

/// Result of a management handler.
pub type ApiResult<T> = Result<T, ApiError>;

/// Maps a unique-constraint violation (a duplicate that raced past the checks) to a 409.
pub trait OnDuplicate<T> {
    /// `Err(ApiError::AlreadyExists(message))` for a duplicate, other errors unchanged.
    fn on_duplicate(self, message: impl FnOnce() -> String) -> ApiResult<T>;
}

impl<T> OnDuplicate<T> for Result<T, sqlx::Error> {
    fn on_duplicate(self, message: impl FnOnce() -> String) -> ApiResult<T> {
        self.map_err(|err| {
            if crate::db::is_unique_violation(&err) {
                ApiError::AlreadyExists(message())
            } else {
                err.into()
            }
        })
    }
}

/// An OAuth 2.0 error (RFC 6749 §5.2): `{error, error_description}`.
#[derive(Debug)]
pub struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
}

impl OAuthError {
    /// 401 invalid_client.
    pub fn invalid_client(description: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_client", description)
    }
    /// 400 invalid_grant.
    pub fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_grant", description)
    }
    /// 400 invalid_request.
    pub fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", description)
    }
    /// 400 unsupported_grant_type.
    pub fn unsupported_grant_type(grant: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            format!("Unsupported grant_type value '{grant}'"),
        )
    }
    /// 400 unauthorized_client.
    pub fn unauthorized_client(grant: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            format!("The client is not allowed to use grant type '{grant}'"),
        )
    }
    /// 500 server_error, logged.
    pub fn server_error(err: impl std::fmt::Debug) -> Self {
        tracing::error!(error = ?err, "token request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "The server could not complete the request",
        )
    }

    fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            status,
            error,
            description: description.into(),
        }
    }
}

impl From<sqlx::Error> for OAuthError {
    fn from(err: sqlx::Error) -> Self {
        Self::server_error(err)
    }
}

impl From<anyhow::Error> for OAuthError {
    fn from(err: anyhow::Error) -> Self {
        Self::server_error(err)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": self.error, "error_description": self.description});
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Basic realm=\"token\""),
            );
        }
        // RFC 6749 §5.1: token responses must not be cached.
        response.headers_mut().insert(
            axum::http::header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("no-store"),
        );
        response
    }
}
