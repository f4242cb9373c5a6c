//! The `web_sessions` table.

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sqlx::AnyPool;

use super::records::{COOKIE, SESSION_SECS, Session, Started};
use crate::db::now;
use crate::secrets::stored_digest;
use crate::web::cookies;

/// Starts a session for `username`, ending the one the browser had (a session is never
/// taken over from before the sign-in).
pub async fn start(db: &AnyPool, headers: &HeaderMap, username: &str) -> sqlx::Result<Started> {
    delete(db, headers).await?;
    let cookie = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
    let started_ms = crate::db::now_ms();
    let at = started_ms / 1000;
    // language=SQL
    sqlx::query(
        "INSERT INTO web_sessions (id_hash, username, auth_time, started_ms, expires_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(stored_digest(&cookie))
    .bind(username)
    .bind(at)
    .bind(started_ms)
    .bind(at + SESSION_SECS)
    .execute(db)
    .await?;
    // Sessions that ended go with the next sign-in.
    // language=SQL
    sqlx::query("DELETE FROM web_sessions WHERE expires_at <= $1")
        .bind(at)
        .execute(db)
        .await?;
    Ok(Started { cookie })
}

/// The live session the request's cookie names, if any: its user still enabled, and no
/// change to the account since it began (those end every token and session before them).
pub async fn find(db: &AnyPool, headers: &HeaderMap) -> sqlx::Result<Option<Session>> {
    let Some(cookie) = cookies::read(headers, COOKIE).filter(|c| !c.is_empty() && c.len() <= 64)
    else {
        return Ok(None);
    };
    // language=SQL
    sqlx::query_as(
        "SELECT s.username, s.auth_time FROM web_sessions s
         JOIN users u ON u.username = s.username
         WHERE s.id_hash = $1 AND s.expires_at > $2 AND u.disabled = 0
           AND u.sessions_from <= s.started_ms",
    )
    .bind(stored_digest(cookie))
    .bind(now())
    .fetch_optional(db)
    .await
}

/// Ends the session the request's cookie names.
pub async fn delete(db: &AnyPool, headers: &HeaderMap) -> sqlx::Result<()> {
    if let Some(cookie) = cookies::read(headers, COOKIE) {
        // language=SQL
        sqlx::query("DELETE FROM web_sessions WHERE id_hash = $1")
            .bind(stored_digest(cookie))
            .execute(db)
            .await?;
    }
    Ok(())
}
