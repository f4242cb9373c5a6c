//! Users, their roles and tenants; passwords hashed with argon2.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use sqlx::AnyPool;
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

use crate::scopes::ROLES;

/// Argon2 runs at most this many at once (one per core): each takes about 19 MiB and a
/// core for tens of milliseconds, and a burst of logins must not take gigabytes.
static ARGON2_PERMITS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    Arc::new(Semaphore::new(
        std::thread::available_parallelism().map_or(2, |n| n.get()),
    ))
});

/// How long a verified password is remembered.
const VERIFIED_FOR: Duration = Duration::from_secs(300);
/// Most users remembered at once; past it the memory starts over.
const MAX_REMEMBERED: usize = 10_000;

/// The tenant of users without a `@domain`, as WSO2 names it.
pub const SUPER_TENANT: &str = "carbon.super";

/// An authenticated user.
#[derive(Debug, Clone)]
pub struct User {
    /// Login name, `name` or `name@domain`.
    pub username: String,
    /// Roles: admin, creator, publisher, subscriber.
    pub roles: Vec<String>,
    /// Tenant domain.
    pub tenant: String,
}

impl User {
    /// Whether the user holds this role.
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }
}

/// The tenant a user name belongs to: the part after the last `@`.
pub fn tenant_of(username: &str) -> &str {
    match username.rsplit_once('@') {
        Some((_, domain)) if !domain.is_empty() => domain,
        _ => SUPER_TENANT,
    }
}

/// How a provider appears in unique names: `name@domain` becomes `name-AT-domain`.
pub fn provider_key(username: &str) -> String {
    username.replace('@', "-AT-")
}

/// Checks a role list, returning it normalised.
pub fn parse_roles(roles: &[String]) -> Result<Vec<String>, String> {
    let mut parsed: Vec<String> = Vec::new();
    for role in roles.iter().map(|r| r.trim()).filter(|r| !r.is_empty()) {
        let role = role.strip_prefix("Internal/").unwrap_or(role);
        if !ROLES.contains(&role) {
            return Err(format!(
                "Unknown role '{role}'. Roles are {}",
                ROLES.join(", ")
            ));
        }
        if !parsed.iter().any(|p| p == role) {
            parsed.push(role.to_string());
        }
    }
    Ok(parsed)
}

/// Checks a user name: non-empty, no spaces or ':' (it travels in HTTP Basic).
pub fn validate_username(username: &str) -> Result<(), String> {
    if username.is_empty() || username.len() > 100 {
        return Err("User name must have 1 to 100 characters".into());
    }
    if username.contains(|c: char| c.is_whitespace() || c == ':' || c.is_control()) {
        return Err("User name must not contain spaces, ':' or control characters".into());
    }
    Ok(())
}

/// Creates a user or replaces the password and roles of an existing one.
pub async fn upsert(
    db: &AnyPool,
    username: &str,
    password: &str,
    roles: &[String],
) -> anyhow::Result<()> {
    store(
        db,
        username,
        password,
        roles,
        "DO UPDATE SET password_hash = excluded.password_hash, roles = excluded.roles",
    )
    .await
    .map(|_| ())
}

/// Creates a user; `false` when the name is taken.
pub async fn insert_new(
    db: &AnyPool,
    username: &str,
    password: &str,
    roles: &[String],
) -> anyhow::Result<bool> {
    store(db, username, password, roles, "DO NOTHING").await
}

/// Inserts a user, doing `on_conflict` when the name exists; whether a row changed.
async fn store(
    db: &AnyPool,
    username: &str,
    password: &str,
    roles: &[String],
    on_conflict: &str,
) -> anyhow::Result<bool> {
    let hash = hash_password(password).await?;
    // language=SQL
    let result = sqlx::query(&format!(
        "INSERT INTO users (username, password_hash, roles, tenant, created_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (username) {on_conflict}"
    ))
    .bind(username)
    .bind(hash)
    .bind(roles.join(" "))
    .bind(tenant_of(username))
    .bind(crate::db::now())
    .execute(db)
    .await
    .context("could not store user")?;
    Ok(result.rows_affected() == 1)
}

/// The user with this name, if any.
pub async fn find(db: &AnyPool, username: &str) -> sqlx::Result<Option<User>> {
    Ok(find_with_hash(db, username).await?.map(|(user, _)| user))
}

/// Every user, by name.
pub async fn list(db: &AnyPool) -> sqlx::Result<Vec<User>> {
    // language=SQL
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("SELECT username, roles, tenant FROM users ORDER BY username")
            .fetch_all(db)
            .await?;
    Ok(rows.into_iter().map(user_from_row).collect())
}

/// Whether any user holds the admin role.
pub async fn admin_exists(db: &AnyPool) -> sqlx::Result<bool> {
    Ok(list(db).await?.iter().any(|u| u.has_role("admin")))
}

/// Recently verified passwords, so that a client that logs in again and again (a
/// password grant per call, HTTP Basic on every registration) pays argon2 once every few
/// minutes rather than every time. It holds, per user, an HMAC (under a key of this
/// process) of the password and of the stored hash it matched: a changed password never
/// matches, and failed attempts are never remembered, so guessing still costs argon2.
pub struct VerifiedLogins {
    key: [u8; 32],
    remembered: Mutex<HashMap<String, (Instant, [u8; 32])>>,
}

impl Default for VerifiedLogins {
    fn default() -> Self {
        VerifiedLogins {
            key: rand::random(),
            remembered: Mutex::default(),
        }
    }
}

impl VerifiedLogins {
    /// The user, if the password is right.
    pub async fn authenticate(
        &self,
        db: &AnyPool,
        username: &str,
        password: &str,
    ) -> anyhow::Result<Option<User>> {
        let Some((user, hash)) = find_with_hash(db, username).await? else {
            return Ok(None);
        };
        let fingerprint = self.fingerprint(username, password, &hash);
        if self.remembers(username, &fingerprint) {
            return Ok(Some(user));
        }
        let valid = verify_password(password, hash).await?;
        if valid {
            self.remember(username, fingerprint);
        }
        Ok(valid.then_some(user))
    }

    fn fingerprint(&self, username: &str, password: &str, hash: &str) -> [u8; 32] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        for part in [username, password, hash] {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part.as_bytes());
        }
        mac.finalize().into_bytes().into()
    }

    fn remembers(&self, username: &str, fingerprint: &[u8; 32]) -> bool {
        let remembered = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        remembered.get(username).is_some_and(|(at, known)| {
            at.elapsed() < VERIFIED_FOR && bool::from(known.ct_eq(fingerprint))
        })
    }

    fn remember(&self, username: &str, fingerprint: [u8; 32]) {
        let mut remembered = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        if remembered.len() >= MAX_REMEMBERED {
            remembered.clear();
        }
        remembered.insert(username.to_string(), (Instant::now(), fingerprint));
    }
}

/// Checks a password against a stored argon2 hash, within the concurrency bound.
async fn verify_password(password: &str, hash: String) -> anyhow::Result<bool> {
    let password = password.to_string();
    argon2(move || {
        PasswordHash::new(&hash)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await
}

/// Runs argon2 work off the async threads, at most [`ARGON2_PERMITS`] at a time. The
/// permit goes with the work, which finishes even if the caller gives up waiting.
async fn argon2<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> anyhow::Result<T> {
    let permit = ARGON2_PERMITS.clone().acquire_owned().await?;
    Ok(tokio::task::spawn_blocking(move || {
        let done = work();
        drop(permit);
        done
    })
    .await?)
}

async fn find_with_hash(db: &AnyPool, username: &str) -> sqlx::Result<Option<(User, String)>> {
    // language=SQL
    let row: Option<(String, String, String, String)> = sqlx::query_as(
        "SELECT username, roles, tenant, password_hash FROM users WHERE username = $1",
    )
    .bind(username)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(username, roles, tenant, hash)| (user_from_row((username, roles, tenant)), hash)))
}

fn user_from_row((username, roles, tenant): (String, String, String)) -> User {
    User {
        username,
        roles: roles.split_whitespace().map(str::to_string).collect(),
        tenant,
    }
}

/// Argon2id with a random salt, off the async threads (it is deliberately slow).
async fn hash_password(password: &str) -> anyhow::Result<String> {
    let password = password.to_string();
    argon2(move || {
        let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())
            .map_err(|e| anyhow::anyhow!("salt: {e}"))?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| anyhow::anyhow!("could not hash password: {e}"))
    })
    .await?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_and_provider_keys() {
        assert_eq!(tenant_of("admin"), SUPER_TENANT);
        assert_eq!(tenant_of("alice@acme.com"), "acme.com");
        assert_eq!(provider_key("alice@acme.com"), "alice-AT-acme.com");
        assert_eq!(
            parse_roles(&["Internal/creator".into(), "creator".into()]).unwrap(),
            vec!["creator"]
        );
        assert!(parse_roles(&["root".into()]).is_err());
    }
}
