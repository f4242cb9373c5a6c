//! A session as read, and one just started.

/// The cookie naming a browser's session.
pub const COOKIE: &str = "apim_session";

/// How long a session lasts, seconds: a working day.
pub const SESSION_SECS: i64 = 8 * 3600;

/// A signed-in browser.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Session {
    /// Who signed in.
    pub username: String,
    /// When, Unix seconds (OpenID Connect's `auth_time`).
    pub auth_time: i64,
}

/// A session just started: its cookie's value, given to the browser once.
pub struct Started {
    /// The cookie's value.
    pub cookie: String,
}
