//! Opaque access tokens, as WSO2 2.6 issues them to applications whose `tokenType` is
//! `OAUTH` (its default) or `DEFAULT`: a UUID in its 36-character text form. Only the
//! token's SHA-256 is stored (`opaque_tokens`), with what a gateway needs to decide:
//! expiry, scopes, application, subscriber, key type, and the `jti` that revocations and
//! refresh families name, as they name a JWT's.

use std::sync::atomic::{AtomicI64, Ordering};

use sqlx::AnyPool;

use super::jwt::Claims;
use crate::db::now;

/// Expired tokens are deleted at most this often (seconds), by the issuance that finds
/// the last deletion older.
const PRUNE_EVERY_SECS: i64 = 60;

/// A stored opaque token: its claims, as a JWT would carry them.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct OpaqueToken {
    pub jti: String,
    pub client_id: String,
    pub username: String,
    pub scope: String,
    pub application_id: String,
    pub key_type: String,
    pub issued_ms: i64,
    pub expires_at: i64,
    /// The resources it is bound to, space separated.
    pub audience: String,
}

impl OpaqueToken {
    /// The claims of this token, under `issuer`.
    pub fn claims(self, issuer: &str) -> Claims {
        Claims {
            iss: issuer.to_string(),
            sub: self.username,
            iat: self.issued_ms / 1000,
            iat_ms: Some(self.issued_ms),
            exp: self.expires_at,
            jti: self.jti,
            scope: self.scope,
            client_id: self.client_id,
            application_id: Some(self.application_id),
            key_type: Some(self.key_type),
            aud: self
                .audience
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        }
    }
}

/// The claims of an access token that is active now: an opaque token stored, unexpired,
/// unrevoked and of a consumer key that is still there; or a JWT this service signed,
/// unexpired and unrevoked.
pub(super) async fn active_claims(
    state: &crate::state::AppState,
    token: &str,
) -> sqlx::Result<Option<Claims>> {
    if looks_opaque(token) {
        let stored = find_active(&state.db, &super::queries::hash(token)).await?;
        return Ok(stored.map(|token| token.claims(&state.issuer)));
    }
    match super::jwt::verify(&state.keys, &state.issuers, token, false) {
        Ok(claims) if !super::queries::is_revoked(&state.db, &claims.jti).await? => {
            Ok(Some(claims))
        }
        _ => Ok(None),
    }
}

/// A new opaque token: a random (version 4) UUID in its 36-character text form.
pub(super) fn new_token() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// Whether `token` has the form of an opaque token (so that only those cost a lookup).
pub(super) fn looks_opaque(token: &str) -> bool {
    token.len() == 36 && uuid::Uuid::try_parse(token).is_ok()
}

/// Stores the token whose SHA-256 is `token_hash`, with the claims it was issued with.
pub(super) async fn insert(db: &AnyPool, token_hash: &str, claims: &Claims) -> sqlx::Result<()> {
    prune_now_and_then(db).await?;
    // language=SQL
    sqlx::query(
        "INSERT INTO opaque_tokens
             (token_hash, jti, client_id, username, scope, application_id, key_type, issued_ms,
              expires_at, audience)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(token_hash)
    .bind(&claims.jti)
    .bind(&claims.client_id)
    .bind(&claims.sub)
    .bind(&claims.scope)
    .bind(claims.application_id.as_deref().unwrap_or_default())
    .bind(claims.key_type.as_deref().unwrap_or_default())
    .bind(claims.issued_ms())
    .bind(claims.exp)
    .bind(claims.audience())
    .execute(db)
    .await?;
    Ok(())
}

/// The token whose SHA-256 is `token_hash`, expired or not (revocation takes both).
pub(super) async fn find(db: &AnyPool, token_hash: &str) -> sqlx::Result<Option<OpaqueToken>> {
    // language=SQL
    sqlx::query_as(
        "SELECT jti, client_id, username, scope, application_id, key_type, issued_ms, expires_at,
                audience
         FROM opaque_tokens WHERE token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(db)
    .await
}

/// The token whose SHA-256 is `token_hash` while it is active (RFC 7662 §2.2): not
/// expired, not revoked, and its consumer key (so its application) still there.
pub(super) async fn find_active(
    db: &AnyPool,
    token_hash: &str,
) -> sqlx::Result<Option<OpaqueToken>> {
    // language=SQL
    sqlx::query_as(
        "SELECT t.jti, t.client_id, t.username, t.scope, t.application_id, t.key_type,
                t.issued_ms, t.expires_at, t.audience
         FROM opaque_tokens t JOIN oauth_clients c ON c.client_id = t.client_id
         WHERE t.token_hash = $1 AND t.expires_at > $2
           AND NOT EXISTS (SELECT 1 FROM revoked_tokens r WHERE r.jti = t.jti)",
    )
    .bind(token_hash)
    .bind(now())
    .fetch_optional(db)
    .await
}

/// Deletes the expired tokens, at most once every [`PRUNE_EVERY_SECS`]: they are
/// inactive already, and revocations of them have been pruned too.
async fn prune_now_and_then(db: &AnyPool) -> sqlx::Result<()> {
    static LAST_PRUNED: AtomicI64 = AtomicI64::new(0);
    let now = now();
    let last = LAST_PRUNED.load(Ordering::Relaxed);
    if now - last < PRUNE_EVERY_SECS
        || LAST_PRUNED
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return Ok(());
    }
    // language=SQL
    sqlx::query("DELETE FROM opaque_tokens WHERE expires_at < $1")
        .bind(now)
        .execute(db)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_uuids_in_text_form() {
        let token = new_token();
        assert_eq!(token.len(), 36);
        assert!(looks_opaque(&token));
        assert!(!looks_opaque(&token.replace('-', "")));
        assert!(!looks_opaque("eyJhbGciOiJFZERTQSJ9.e30.c2ln"));
        assert!(!looks_opaque(&format!("{{{}}}", &token[..34])));
    }
}
