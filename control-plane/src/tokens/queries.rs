//! The token service's tables: refresh token families (`refresh_families`) and revoked
//! access tokens (`revoked_tokens`).

use sha2::{Digest, Sha256};
use sqlx::AnyPool;

use super::jwt::Claims;
use crate::db::{now, rows_in};

/// What redeeming a refresh token returns.
#[derive(sqlx::FromRow)]
pub(super) struct Redeemed {
    pub username: String,
    pub scope: String,
    /// The resources the family's tokens are bound to, space separated.
    pub audience: String,
    /// The access token the refresh replaced.
    pub spent_jti: String,
    pub spent_exp: i64,
}

/// A refresh: the presented token's family, client and hash, and what replaces it.
pub(super) struct Redemption<'a> {
    pub presented_hash: String,
    pub family: &'a str,
    pub client_id: &'a str,
    pub now: i64,
    pub token_hash: String,
    pub access_jti: &'a str,
    pub access_exp: i64,
    pub expires_at: i64,
}

/// Redeems a refresh token: one conditional UPDATE replaces the family's refresh token
/// and access token, so of concurrent refreshes with one token exactly one succeeds.
/// `None` when the token is unknown, spent, expired or another client's.
pub(super) async fn redeem(
    db: &AnyPool,
    redemption: Redemption<'_>,
) -> sqlx::Result<Option<Redeemed>> {
    // language=SQL
    sqlx::query_as(
        "UPDATE refresh_families
         SET token_hash = $1, access_jti = $2, access_exp = $3, expires_at = $4,
             spent_jti = access_jti, spent_exp = access_exp
         WHERE token_hash = $5 AND family_id = $6 AND client_id = $7 AND expires_at > $8
         RETURNING username, scope, audience, spent_jti, spent_exp",
    )
    .bind(redemption.token_hash)
    .bind(redemption.access_jti)
    .bind(redemption.access_exp)
    .bind(redemption.expires_at)
    .bind(redemption.presented_hash)
    .bind(redemption.family)
    .bind(redemption.client_id)
    .bind(redemption.now)
    .fetch_optional(db)
    .await
}

/// Narrows a family's scope.
pub(super) async fn set_family_scope(db: &AnyPool, family: &str, scope: &str) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("UPDATE refresh_families SET scope = $1 WHERE family_id = $2")
        .bind(scope)
        .bind(family)
        .execute(db)
        .await?;
    Ok(())
}

/// Starts a family: its refresh token (hashed) and the access token `claims` describe.
pub(super) async fn insert_family(
    db: &AnyPool,
    family: &str,
    token_hash: &str,
    claims: &Claims,
    expires_at: i64,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO refresh_families
             (family_id, token_hash, client_id, username, scope, expires_at, access_jti, access_exp,
              audience)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(family)
    .bind(token_hash)
    .bind(&claims.client_id)
    .bind(&claims.sub)
    .bind(&claims.scope)
    .bind(expires_at)
    .bind(&claims.jti)
    .bind(claims.exp)
    .bind(claims.audience())
    .execute(db)
    .await?;
    Ok(())
}

/// The access tokens of a deleted family: the one in use and the one last replaced.
#[derive(sqlx::FromRow)]
pub(super) struct Revoked {
    pub access_jti: String,
    pub access_exp: i64,
    pub spent_jti: String,
    pub spent_exp: i64,
}

/// Deletes `client_id`'s family named `family`, or the one whose access token in use is
/// `access_jti`; what its access tokens were.
pub(super) async fn delete_families(
    db: &AnyPool,
    client_id: &str,
    family: &str,
    access_jti: &str,
) -> sqlx::Result<Vec<Revoked>> {
    // language=SQL
    sqlx::query_as(
        "DELETE FROM refresh_families
         WHERE client_id = $1 AND (family_id = $2 OR access_jti = $3)
         RETURNING access_jti, access_exp, spent_jti, spent_exp",
    )
    .bind(client_id)
    .bind(family)
    .bind(access_jti)
    .fetch_all(db)
    .await
}

/// Expired revocations protect nothing; drops them.
pub(super) async fn prune_revocations(db: &AnyPool) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM revoked_tokens WHERE expires_at < $1")
        .bind(now())
        .execute(db)
        .await?;
    Ok(())
}

/// Records a revoked access token until it would have expired anyway.
pub(super) async fn insert_revocation<'e>(
    db: impl sqlx::Executor<'e, Database = sqlx::Any>,
    jti: &str,
    exp: i64,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO revoked_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING",
    )
    .bind(jti)
    .bind(exp)
    .execute(db)
    .await
    .map(|_| ())
}

/// Whether the access token with this id has been revoked.
pub async fn is_revoked(db: &AnyPool, jti: &str) -> sqlx::Result<bool> {
    // language=SQL
    let row: Option<(String,)> = sqlx::query_as("SELECT jti FROM revoked_tokens WHERE jti = $1")
        .bind(jti)
        .fetch_optional(db)
        .await?;
    Ok(row.is_some())
}

/// `(jti, expiry)` of these revoked tokens, while they have not expired, for the manifest.
pub async fn live_revocations(db: &AnyPool, jtis: &[&str]) -> sqlx::Result<Vec<(String, i64)>> {
    // language=SQL
    let select = format!(
        "SELECT jti, expires_at FROM revoked_tokens WHERE expires_at > {} AND jti",
        now()
    );
    rows_in(db, &select, jtis).await
}

/// Drops every refresh token family of a user (a new password, a deleted account).
pub async fn drop_families_of(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    username: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM refresh_families WHERE username = $1")
        .bind(username)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The hex SHA-256 of a token: what is stored of refresh and opaque access tokens.
pub(super) fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
