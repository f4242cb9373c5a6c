//! Users, their roles and tenants; passwords hashed with argon2.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
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

use crate::lockout::{Lockout, LockoutPolicy, LoginState};
use crate::scopes::ROLES;

/// Argon2 runs at most this many at once (one per core): each takes about 19 MiB and a
/// core for tens of milliseconds, and a burst of logins must not take gigabytes.
static ARGON2_THREADS: LazyLock<usize> =
    LazyLock::new(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
static ARGON2_PERMITS: LazyLock<Arc<Semaphore>> =
    LazyLock::new(|| Arc::new(Semaphore::new(*ARGON2_THREADS)));
/// Password checks admitted: running, or waiting for one of [`ARGON2_PERMITS`].
static ARGON2_ADMITTED: AtomicUsize = AtomicUsize::new(0);
/// How many password checks may wait for a permit (APIM_ARGON2_QUEUE); past it a login
/// is answered 503 at once rather than queued behind seconds of work.
static ARGON2_QUEUE: AtomicUsize = AtomicUsize::new(32);

/// What a password is checked against when the user does not exist or may not log in
/// now, so that the answer takes as long as a wrong password does.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>()).expect("16 bytes of salt");
    let password: [u8; 32] = rand::random();
    Argon2::default()
        .hash_password(&password, &salt)
        .expect("argon2 with default parameters")
        .to_string()
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
    /// Disabled by an administrator: cannot log in.
    pub disabled: bool,
}

impl User {
    /// Whether the user holds this role.
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }

    /// Whether the user administers the whole platform: an admin of the super tenant.
    pub fn is_platform_admin(&self) -> bool {
        self.has_role("admin") && self.tenant == SUPER_TENANT
    }

    /// Whether the user may manage the account `username`: an admin of its tenant, or
    /// the platform's.
    pub fn manages(&self, username: &str) -> bool {
        self.has_role("admin") && (self.is_platform_admin() || tenant_of(username) == self.tenant)
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

/// Checks a user name: non-empty, no spaces or ':' (it travels in HTTP Basic), no `-AT-`.
pub fn validate_username(username: &str) -> Result<(), String> {
    if username.is_empty() || username.len() > 100 {
        return Err("User name must have 1 to 100 characters".into());
    }
    if username.contains(|c: char| c.is_whitespace() || c == ':' || c.is_control()) {
        return Err("User name must not contain spaces, ':' or control characters".into());
    }
    // `-AT-` stands for '@' in unique API names (`alice-AT-acme.com-Pay-v1`): a name
    // holding it would claim another tenant's names.
    if username.to_ascii_uppercase().contains("-AT-") {
        return Err("User name must not contain '-AT-'".into());
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
        // Not `sessions_from`: the administrator is stored again at every start, and a
        // restart must not end the sessions open under it.
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
        "INSERT INTO users (username, password_hash, roles, tenant, created_at, sessions_from)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (username) {on_conflict}"
    ))
    .bind(username)
    .bind(hash)
    .bind(roles.join(" "))
    .bind(tenant_of(username))
    .bind(crate::db::now())
    .bind(crate::db::now_ms())
    .execute(db)
    .await
    .context("could not store user")?;
    Ok(result.rows_affected() == 1)
}

/// The user with this name, if any.
pub async fn find(db: &AnyPool, username: &str) -> sqlx::Result<Option<User>> {
    Ok(find_with_hash(db, username).await?.map(|(user, _)| user))
}

/// Every user, by name; only those of one tenant when given.
pub async fn list(db: &AnyPool, tenant: Option<&str>) -> sqlx::Result<Vec<User>> {
    // language=SQL
    let rows: Vec<UserRow> = match tenant {
        Some(tenant) => {
            sqlx::query_as(&format!(
                "SELECT {USER_COLUMNS} FROM users WHERE tenant = $1 ORDER BY username"
            ))
            .bind(tenant)
            .fetch_all(db)
            .await?
        }
        None => {
            sqlx::query_as(&format!(
                "SELECT {USER_COLUMNS} FROM users ORDER BY username"
            ))
            .fetch_all(db)
            .await?
        }
    };
    Ok(rows.into_iter().map(User::from).collect())
}

/// Whether any user holds the admin role.
pub async fn admin_exists(db: &AnyPool) -> sqlx::Result<bool> {
    Ok(list(db, None).await?.iter().any(|u| u.has_role("admin")))
}

/// What an administrator changes of an account.
#[derive(Debug, Default)]
pub struct AccountChange {
    /// New roles.
    pub roles: Option<Vec<String>>,
    /// Disabled (cannot log in; its refresh tokens are dropped) or enabled again.
    pub disabled: Option<bool>,
}

/// Applies a change to an account; `false` when there is no such user. Refused (`Err`
/// with a message) when it would leave the platform without an enabled super-tenant
/// administrator.
pub async fn change_account(
    db: &AnyPool,
    username: &str,
    change: &AccountChange,
) -> anyhow::Result<Result<bool, String>> {
    let mut tx = db.begin().await?;
    // language=SQL
    let row: Option<UserRow> = sqlx::query_as(&format!(
        "SELECT {USER_COLUMNS} FROM users WHERE username = $1"
    ))
    .bind(username)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        return Ok(Ok(false));
    };
    let mut user = User::from(row);
    let before = user.roles.clone();
    if let Some(roles) = &change.roles {
        user.roles = roles.clone();
    }
    if let Some(disabled) = change.disabled {
        user.disabled = disabled;
    }
    // New roles end the tokens issued under the old ones (their scopes came from them).
    let sessions_end = user.roles != before;
    // language=SQL
    sqlx::query(
        "UPDATE users SET roles = $1, disabled = $2,
             sessions_from = CASE WHEN $3 = 1 THEN $4 ELSE sessions_from END
         WHERE username = $5",
    )
    .bind(user.roles.join(" "))
    .bind(i64::from(user.disabled))
    .bind(i64::from(sessions_end))
    .bind(crate::db::now_ms())
    .bind(username)
    .execute(&mut *tx)
    .await?;
    if let Err(refusal) = keeps_a_platform_admin(&mut tx).await? {
        return Ok(Err(refusal));
    }
    if user.disabled || sessions_end {
        drop_refresh_tokens(&mut tx, username).await?;
    }
    tx.commit().await?;
    Ok(Ok(true))
}

/// Sets a new password; `false` when there is no such user. Sessions opened with the old
/// password end: its refresh tokens are dropped and its access tokens stop acting.
pub async fn reset_password(db: &AnyPool, username: &str, password: &str) -> anyhow::Result<bool> {
    let hash = hash_password(password).await?;
    let mut tx = db.begin().await?;
    // language=SQL
    let changed =
        sqlx::query("UPDATE users SET password_hash = $1, sessions_from = $2 WHERE username = $3")
            .bind(hash)
            .bind(crate::db::now_ms())
            .bind(username)
            .execute(&mut *tx)
            .await?;
    drop_refresh_tokens(&mut tx, username).await?;
    forget_failed_logins(&mut tx, username).await?;
    tx.commit().await?;
    Ok(changed.rows_affected() == 1)
}

/// Deletes an account and its refresh tokens; `false` when there is no such user.
/// Refused like [`change_account`] for the last platform administrator.
pub async fn delete(db: &AnyPool, username: &str) -> anyhow::Result<Result<bool, String>> {
    let mut tx = db.begin().await?;
    // language=SQL
    let deleted = sqlx::query("DELETE FROM users WHERE username = $1")
        .bind(username)
        .execute(&mut *tx)
        .await?;
    if deleted.rows_affected() == 0 {
        return Ok(Ok(false));
    }
    if let Err(refusal) = keeps_a_platform_admin(&mut tx).await? {
        return Ok(Err(refusal));
    }
    drop_refresh_tokens(&mut tx, username).await?;
    forget_failed_logins(&mut tx, username).await?;
    tx.commit().await?;
    Ok(Ok(true))
}

/// Whether a token issued at `issued_ms` (Unix milliseconds) acts for the account: it
/// exists, is not disabled, and has had neither its roles nor its password changed since
/// (checked on every management call, so such tokens stop working at once; see
/// `sessions_from`).
pub async fn is_active(db: &AnyPool, username: &str, issued_ms: i64) -> sqlx::Result<bool> {
    // language=SQL
    let (active,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM users WHERE username = $1 AND disabled = 0 AND sessions_from <= $2",
    )
    .bind(username)
    .bind(issued_ms)
    .fetch_one(db)
    .await?;
    Ok(active > 0)
}

/// Refuses a change (the caller then rolls back) that leaves no enabled administrator in
/// the super tenant: no one could then manage tenants or rotate keys.
async fn keeps_a_platform_admin(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
) -> sqlx::Result<Result<(), String>> {
    // language=SQL
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT roles FROM users WHERE tenant = $1 AND disabled = 0")
            .bind(SUPER_TENANT)
            .fetch_all(&mut **tx)
            .await?;
    let admins = rows
        .iter()
        .filter(|(roles,)| roles.split_whitespace().any(|r| r == "admin"))
        .count();
    Ok(if admins > 0 {
        Ok(())
    } else {
        Err("The platform must keep at least one enabled administrator".into())
    })
}

/// A new password or a deleted account starts with no failed logins and no lock.
async fn forget_failed_logins(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    username: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM login_failures WHERE username = $1")
        .bind(username)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

async fn drop_refresh_tokens(
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

/// Why a login could not be checked (a wrong password is not an error: `Ok(None)`).
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The client address failed too often lately (429).
    #[error("too many failed logins from this address")]
    Throttled {
        /// Seconds until it may try again.
        retry_after: u64,
    },
    /// Too many password checks are waiting already (503).
    #[error("too many password checks waiting")]
    Busy,
    /// Anything else (500).
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<sqlx::Error> for LoginError {
    fn from(err: sqlx::Error) -> Self {
        LoginError::Internal(err.into())
    }
}

/// Password logins: the lock-out and throttle of failed ones, and recently verified
/// passwords, so that a client that logs in again and again (a password grant per call,
/// HTTP Basic on every registration) pays argon2 once every few minutes rather than every
/// time. It holds, per user, an HMAC (under a key of this process) of the password and of
/// the stored hash it matched: a changed password never matches, and failed attempts are
/// never remembered, so guessing still costs argon2.
pub struct VerifiedLogins {
    key: [u8; 32],
    remembered: Mutex<HashMap<String, (Instant, [u8; 32])>>,
    lockout: Lockout,
}

impl Default for VerifiedLogins {
    fn default() -> Self {
        Self::new(LockoutPolicy::default())
    }
}

impl VerifiedLogins {
    /// Logins under this lock-out policy.
    pub fn new(policy: LockoutPolicy) -> Self {
        VerifiedLogins {
            key: rand::random(),
            remembered: Mutex::default(),
            lockout: Lockout::new(policy),
        }
    }

    /// The user, if the password is right and the user name is not locked out. A wrong
    /// password, an unknown user and a locked one are answered alike and cost the same
    /// argon2 check, so that neither the answer nor its time tells them apart.
    pub async fn authenticate(
        &self,
        db: &AnyPool,
        username: &str,
        password: &str,
        from: IpAddr,
    ) -> Result<Option<User>, LoginError> {
        if let Some(retry_after) = self.lockout.address_wait(from) {
            return Err(LoginError::Throttled { retry_after });
        }
        // A disabled account costs and answers what an unknown one does.
        let found = find_with_hash(db, username)
            .await?
            .filter(|(user, _)| !user.disabled);
        let state = crate::lockout::state(db, username).await?;
        let candidate = found.filter(|_| matches!(state, LoginState::Open { .. }));
        if let Some((user, hash)) = &candidate {
            let fingerprint = self.fingerprint(username, password, hash);
            if self.remembers(username, &fingerprint) {
                self.lockout.succeeded(db, username, &state).await?;
                return Ok(Some(user.clone()));
            }
        }
        let hash = candidate.as_ref().map(|(_, hash)| hash.clone());
        let valid = verify_password(password, hash).await?;
        match candidate {
            Some((user, hash)) if valid => {
                self.remember(username, self.fingerprint(username, password, &hash));
                self.lockout.succeeded(db, username, &state).await?;
                Ok(Some(user))
            }
            _ => {
                self.lockout.failed(db, username, from, &state).await?;
                Ok(None)
            }
        }
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

/// Sets how many password checks may wait for a CPU (APIM_ARGON2_QUEUE).
pub fn limit_argon2_queue(waiting: usize) {
    ARGON2_QUEUE.store(waiting, Ordering::Relaxed);
}

/// Computes the dummy hash now rather than at the first unknown user's login (which
/// would then take twice as long as a wrong password).
pub async fn prepare_dummy_hash() -> anyhow::Result<()> {
    tokio::task::spawn_blocking(|| LazyLock::force(&DUMMY_HASH).len()).await?;
    Ok(())
}

/// A place among the admitted password checks, given back when dropped.
struct Admitted(());

impl Admitted {
    /// A place, unless [`ARGON2_QUEUE`] checks wait already.
    fn try_new() -> Option<Self> {
        let limit = *ARGON2_THREADS + ARGON2_QUEUE.load(Ordering::Relaxed);
        if ARGON2_ADMITTED.fetch_add(1, Ordering::AcqRel) >= limit {
            ARGON2_ADMITTED.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Admitted(()))
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        ARGON2_ADMITTED.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Checks a password against a stored argon2 hash (the dummy one for `None`, always
/// false), within the concurrency bound; `Busy` when too many checks wait already.
async fn verify_password(password: &str, hash: Option<String>) -> Result<bool, LoginError> {
    let admitted = Admitted::try_new().ok_or(LoginError::Busy)?;
    let password = password.to_string();
    let valid = argon2(move || {
        let _admitted = admitted;
        let hash = hash.as_deref().unwrap_or(DUMMY_HASH.as_str());
        PasswordHash::new(hash)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await?;
    Ok(valid)
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
    let row: Option<UserRow> = sqlx::query_as(&format!(
        "SELECT {USER_COLUMNS} FROM users WHERE username = $1"
    ))
    .bind(username)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| {
        let hash = row.password_hash.clone();
        (User::from(row), hash)
    }))
}

/// A row of `users`.
#[derive(sqlx::FromRow)]
struct UserRow {
    username: String,
    roles: String,
    tenant: String,
    disabled: i64,
    password_hash: String,
}

const USER_COLUMNS: &str = "username, roles, tenant, disabled, password_hash";

impl From<UserRow> for User {
    fn from(row: UserRow) -> Self {
        User {
            username: row.username,
            roles: row.roles.split_whitespace().map(str::to_string).collect(),
            tenant: row.tenant,
            disabled: row.disabled != 0,
        }
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
        assert!(validate_username("alice@acme.com").is_ok());
        assert!(validate_username("at-home").is_ok());
        for squatter in ["alice-AT-acme.com", "alice-at-acme.com"] {
            assert!(validate_username(squatter).is_err(), "{squatter}");
        }
    }
}
