//! The one place the domain [`Error`] becomes WSO2's error body
//! `{code, message, description, moreInfo, error: [{code, message}]}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{Error, database_unavailable};

/// Seconds a client is told to wait when password checks are saturated.
pub(crate) const BUSY_RETRY_AFTER_SECS: u64 = 1;
/// Seconds a client is told to wait when the database is unavailable.
const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 1;
/// What a client is told when the database is unavailable.
const UNAVAILABLE_DESCRIPTION: &str = "The database is unavailable; retry shortly";

/// WSO2's `Error` definition.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    code: u16,
    message: &'static str,
    description: String,
    more_info: String,
    error: Vec<ErrorItem>,
}

/// WSO2's `ErrorListItem`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = ErrorListItem)]
pub struct ErrorItem {
    code: String,
    message: String,
}

impl Error {
    /// The HTTP status of this error.
    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::Invalid(_) | Self::InvalidFields(_) => StatusCode::BAD_REQUEST,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(..) | Self::NotFoundWhy(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::AlreadyExists(_) | Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::Throttled(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Busy | Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn body(&self) -> ErrorBody {
        let status = self.status_code();
        let (message, description, items): (&'static str, String, Vec<ErrorItem>) = match self {
            Self::Invalid(d) => ("Bad Request", d.clone(), vec![]),
            Self::InvalidFields(problems) => (
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
            Self::NotImplemented(d) => ("Not Implemented", d.clone(), vec![]),
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
            Self::RequestTimeout => (
                "Request Timeout",
                "The request body did not arrive in time".to_string(),
                vec![],
            ),
            Self::Throttled(secs) => (
                "Too Many Requests",
                format!("Too many failed logins from this address; retry after {secs} s"),
                vec![],
            ),
            Self::Busy => (
                "Service Unavailable",
                "Too many logins are being checked; retry shortly".to_string(),
                vec![],
            ),
            Self::Unavailable(_) => (
                "Service Unavailable",
                UNAVAILABLE_DESCRIPTION.to_string(),
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

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        match &self {
            Self::Internal(err) => tracing::error!(error = ?err, "request failed"),
            Self::Unavailable(err) => {
                tracing::warn!(error = %format!("{err:#}"), "database unavailable; answered 503");
            }
            _ => {}
        }
        let retry_after = match &self {
            Self::Throttled(secs) => Some(*secs),
            Self::Busy => Some(BUSY_RETRY_AFTER_SECS),
            Self::Unavailable(_) => Some(UNAVAILABLE_RETRY_AFTER_SECS),
            _ => None,
        };
        let mut response = (self.status_code(), Json(self.body())).into_response();
        set_retry_after(&mut response, retry_after);
        response
    }
}

fn set_retry_after(response: &mut Response, secs: Option<u64>) {
    if let Some(secs) = secs {
        response
            .headers_mut()
            .insert(axum::http::header::RETRY_AFTER, secs.into());
    }
}

/// `response` with `Connection: close`: sent before the request's body was read whole,
/// so the connection cannot carry another request.
pub(crate) fn closing(mut response: axum::response::Response) -> axum::response::Response {
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// An OAuth 2.0 error (RFC 6749 §5.2): `{error, error_description}`.
#[derive(Debug)]
pub struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
    retry_after: Option<u64>,
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
    /// 400 invalid_target (RFC 8707 §2): a resource the grant does not cover.
    pub fn invalid_target(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_target", description)
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
            retry_after: None,
        }
    }

    /// 429 or 503 `temporarily_unavailable`, with Retry-After.
    pub(crate) fn unavailable(status: StatusCode, retry_after: u64, description: &str) -> Self {
        OAuthError {
            retry_after: Some(retry_after),
            ..Self::new(status, "temporarily_unavailable", description)
        }
    }
}

impl From<sqlx::Error> for OAuthError {
    fn from(err: sqlx::Error) -> Self {
        anyhow::Error::from(err).into()
    }
}

impl From<anyhow::Error> for OAuthError {
    fn from(err: anyhow::Error) -> Self {
        if database_unavailable(&err) {
            tracing::warn!(error = %format!("{err:#}"), "database unavailable; answered 503");
            Self::unavailable(
                StatusCode::SERVICE_UNAVAILABLE,
                UNAVAILABLE_RETRY_AFTER_SECS,
                UNAVAILABLE_DESCRIPTION,
            )
        } else {
            Self::server_error(err)
        }
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
        set_retry_after(&mut response, self.retry_after);
        // RFC 6749 §5.1: token responses must not be cached.
        response.headers_mut().insert(
            axum::http::header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("no-store"),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::users::LoginError;

    async fn answer(response: Response) -> (StatusCode, Option<String>, serde_json::Value) {
        let status = response.status();
        let retry_after = response
            .headers()
            .get(axum::http::header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_string());
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, retry_after, serde_json::from_slice(&body).unwrap())
    }

    /// A database that went away (a restart's `admin_shutdown`, a reset connection, no
    /// connection within the acquire timeout) is 503 with `Retry-After: 1` in WSO2's body,
    /// however deep the sqlx error sits; other failures stay 500.
    #[tokio::test]
    async fn an_unavailable_database_is_503_with_retry_after() {
        let reset = || sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        let wrapped = anyhow::Error::from(reset()).context("could not read the API");
        for err in [
            Error::from(reset()),
            Error::from(sqlx::Error::PoolTimedOut),
            Error::from(wrapped),
            Error::from(LoginError::Internal(reset().into())),
        ] {
            let (status, retry_after, body) = answer(err.into_response()).await;
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(retry_after.as_deref(), Some("1"));
            assert_eq!(body["code"], 503);
            assert_eq!(body["message"], "Service Unavailable");
            assert_eq!(body["description"], UNAVAILABLE_DESCRIPTION);
            assert!(body["error"].is_array() && body["moreInfo"].is_string());
        }
        for err in [
            Error::from(sqlx::Error::RowNotFound),
            Error::from(anyhow::anyhow!("a bug")),
        ] {
            let (status, retry_after, body) = answer(err.into_response()).await;
            assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(retry_after, None);
            assert_eq!(body["code"], 500);
        }
        // The token endpoint says the same in OAuth's words.
        let (status, retry_after, body) = answer(OAuthError::from(reset()).into_response()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry_after.as_deref(), Some("1"));
        assert_eq!(body["error"], "temporarily_unavailable");
        let (status, _, body) =
            answer(OAuthError::from(sqlx::Error::RowNotFound).into_response()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["error"], "server_error");
    }
}
