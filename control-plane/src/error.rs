//! The one error of the control plane's domain: what went wrong (not found, conflict,
//! invalid, forbidden, unavailable, internal, and the transport's own refusals). Rooms
//! return it; `http::error` alone renders it as WSO2's error body.

/// Why a request failed; each variant has one status and body (`http::error`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 400 with a description.
    #[error("bad request: {0}")]
    Invalid(String),
    /// 400 "Validation Error" listing each `(property, problem)`.
    #[error("validation failed")]
    InvalidFields(Vec<(String, String)>),
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
    /// 501 with a description: an operation of WSO2's contract this platform does not do.
    #[error("not implemented: {0}")]
    NotImplemented(String),
    /// 413.
    #[error("payload too large")]
    PayloadTooLarge,
    /// 415.
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// 408: the body did not arrive in time.
    #[error("request timeout")]
    RequestTimeout,
    /// 429 with Retry-After: too many failed logins from the client's address.
    #[error("too many failed logins")]
    Throttled(u64),
    /// 503 with Retry-After: too many password checks waiting.
    #[error("busy")]
    Busy,
    /// 503 with Retry-After: the database cannot serve right now (restarting, failing
    /// over, no connection free in time; [`crate::db::is_unavailable`]); logged, answered
    /// with a generic body.
    #[error("database unavailable: {0}")]
    Unavailable(anyhow::Error),
    /// 500: logged in full, answered with a generic body.
    #[error(transparent)]
    Internal(anyhow::Error),
}

/// Whether an error, or any error it wraps, says the database is unavailable.
pub(crate) fn database_unavailable(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<sqlx::Error>())
        .any(crate::db::is_unavailable)
}

impl From<anyhow::Error> for Error {
    fn from(err: anyhow::Error) -> Self {
        if database_unavailable(&err) {
            Error::Unavailable(err)
        } else {
            Error::Internal(err)
        }
    }
}

impl From<sqlx::Error> for Error {
    fn from(err: sqlx::Error) -> Self {
        anyhow::Error::from(err).into()
    }
}

/// A result whose error is [`Error`] unless said otherwise.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// 400 "Validation Error" naming each `(property, absent)` that is absent as "may not be
/// null", as WSO2's bean validation answers for a body's required members.
pub fn require_present(properties: &[(&str, bool)]) -> Result<()> {
    let missing: Vec<(String, String)> = properties
        .iter()
        .filter(|(_, absent)| *absent)
        .map(|(property, _)| (property.to_string(), "may not be null".to_string()))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidFields(missing))
    }
}

/// Maps a unique-constraint violation (a duplicate that raced past the checks) to a 409.
pub trait OnDuplicate<T> {
    /// `Err(Error::AlreadyExists(message))` for a duplicate, other errors unchanged.
    fn on_duplicate(self, message: impl FnOnce() -> String) -> Result<T>;
}

impl<T> OnDuplicate<T> for Result<T, sqlx::Error> {
    fn on_duplicate(self, message: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|err| {
            if crate::db::is_unique_violation(&err) {
                Error::AlreadyExists(message())
            } else {
                err.into()
            }
        })
    }
}

/// Maps the constraint violations of a write of a row that belongs to an API: the API
/// deleted meanwhile (a foreign-key violation) to its 404, a duplicate to a 409.
pub trait OnApiConstraint<T> {
    /// `Err(Error::NotFound("API", api_id))` when the API went, `Err(AlreadyExists)` for a
    /// duplicate (with `duplicate()` as its description), other errors unchanged.
    fn on_api_constraint(self, api_id: &str, duplicate: impl FnOnce() -> String) -> Result<T>;
}

impl<T> OnApiConstraint<T> for Result<T, sqlx::Error> {
    fn on_api_constraint(self, api_id: &str, duplicate: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|err| {
            if crate::db::is_foreign_key_violation(&err) {
                Error::NotFound("API", api_id.to_string())
            } else if crate::db::is_unique_violation(&err) {
                Error::AlreadyExists(duplicate())
            } else {
                err.into()
            }
        })
    }
}
