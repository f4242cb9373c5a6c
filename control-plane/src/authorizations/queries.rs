//! The `authorization_codes` and `oauth_consents` tables.

use sqlx::AnyPool;

use super::records::{CODE_SECS, IssuedCode};
use crate::db::now;

/// How long a redeemed or expired code is kept, seconds: a second redemption within it
/// revokes what the first issued.
const KEPT_FOR_REUSE_SECS: i64 = 600;

/// Stores a code (by its digest) for `CODE_SECS`.
pub async fn insert_code(db: &AnyPool, code_hash: &str, code: &IssuedCode) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO authorization_codes
             (code_hash, client_id, username, redirect_uri, scope, code_challenge, resource,
              nonce, auth_time, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(code_hash)
    .bind(&code.client_id)
    .bind(&code.username)
    .bind(&code.redirect_uri)
    .bind(&code.scope)
    .bind(&code.code_challenge)
    .bind(code.resources.join(" "))
    .bind(&code.nonce)
    .bind(code.auth_time)
    .bind(now() + CODE_SECS)
    .execute(db)
    .await?;
    Ok(())
}

/// A code redeemed: what it was issued for.
#[derive(Debug, sqlx::FromRow)]
pub struct Redeemed {
    pub client_id: String,
    pub username: String,
    pub redirect_uri: String,
    pub scope: String,
    pub code_challenge: String,
    pub resource: String,
    pub nonce: String,
    pub auth_time: i64,
}

/// Redeems the code with this digest for the refresh family `family`: one conditional
/// UPDATE, so that of concurrent redemptions exactly one succeeds. `None` when the code
/// is unknown, expired or spent.
pub async fn redeem(db: &AnyPool, code_hash: &str, family: &str) -> sqlx::Result<Option<Redeemed>> {
    // language=SQL
    sqlx::query_as(
        "UPDATE authorization_codes SET family = $1
         WHERE code_hash = $2 AND family IS NULL AND expires_at > $3
         RETURNING client_id, username, redirect_uri, scope, code_challenge, resource, nonce,
                   auth_time",
    )
    .bind(family)
    .bind(code_hash)
    .bind(now())
    .fetch_optional(db)
    .await
}

/// The client and refresh family of a code already redeemed, if it was.
pub async fn reused_family(
    db: &AnyPool,
    code_hash: &str,
) -> sqlx::Result<Option<(String, String)>> {
    // language=SQL
    sqlx::query_as(
        "SELECT client_id, family FROM authorization_codes WHERE code_hash = $1 AND family IS NOT NULL",
    )
    .bind(code_hash)
    .fetch_optional(db)
    .await
}

/// Deletes codes past the time a reuse would still be caught.
pub async fn prune_codes(db: &AnyPool) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM authorization_codes WHERE expires_at < $1")
        .bind(now() - KEPT_FOR_REUSE_SECS)
        .execute(db)
        .await?;
    Ok(())
}

/// The scopes `username` consented to give `client_id`, space separated.
pub async fn consented(
    db: &AnyPool,
    username: &str,
    client_id: &str,
) -> sqlx::Result<Option<String>> {
    // language=SQL
    let row: Option<(String,)> =
        sqlx::query_as("SELECT scope FROM oauth_consents WHERE username = $1 AND client_id = $2")
            .bind(username)
            .bind(client_id)
            .fetch_optional(db)
            .await?;
    Ok(row.map(|(scope,)| scope))
}

/// Records that `username` consented to give `client_id` these scopes (with those given
/// before).
pub async fn consent(
    db: &AnyPool,
    username: &str,
    client_id: &str,
    scope: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO oauth_consents (username, client_id, scope, granted_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (username, client_id) DO UPDATE SET scope = excluded.scope,
             granted_at = excluded.granted_at",
    )
    .bind(username)
    .bind(client_id)
    .bind(scope)
    .bind(now())
    .execute(db)
    .await?;
    Ok(())
}
