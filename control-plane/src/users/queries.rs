//! The `users` table: accounts, their roles and passwords (spec: WSO2's user store, as
//! the admin resources and `control-plane add-user` change it).

use anyhow::Context;
use sqlx::AnyPool;

use super::password::{hash_password, verify_password};
use super::records::{USER_COLUMNS, User, UserRow};
use super::rules::{SUPER_TENANT, tenant_of};
use crate::tokens::queries::drop_families_of;

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

/// Stores the user unless it already holds this password and these roles, as the
/// administrator does at every start: a new hash would end every control plane's
/// remembered logins of it, which then all pay for argon2 at once.
pub async fn upsert_unless_held(
    db: &AnyPool,
    username: &str,
    password: &str,
    roles: &[String],
) -> anyhow::Result<()> {
    if let Some((user, hash)) = find_with_hash(db, username).await?
        && user.roles == roles
        && verify_password(password, Some(hash)).await.unwrap_or(false)
    {
        return Ok(());
    }
    upsert(db, username, password, roles).await
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
        drop_families_of(&mut tx, username).await?;
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
    drop_families_of(&mut tx, username).await?;
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
    drop_families_of(&mut tx, username).await?;
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

pub(super) async fn find_with_hash(
    db: &AnyPool,
    username: &str,
) -> sqlx::Result<Option<(User, String)>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn stored_hash(db: &AnyPool) -> String {
        find_with_hash(db, "admin").await.unwrap().unwrap().1
    }

    #[tokio::test]
    async fn the_administrator_is_stored_again_only_when_something_changed() {
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        let admin = vec!["admin".to_string()];
        upsert_unless_held(&db, "admin", "first-secret", &admin)
            .await
            .unwrap();
        let first = stored_hash(&db).await;
        upsert_unless_held(&db, "admin", "first-secret", &admin)
            .await
            .unwrap();
        assert_eq!(
            stored_hash(&db).await,
            first,
            "the same password is kept as it was"
        );
        upsert_unless_held(&db, "admin", "second-secret", &admin)
            .await
            .unwrap();
        let second = stored_hash(&db).await;
        assert_ne!(second, first, "a new password is stored");
        let both = vec!["admin".to_string(), "subscriber".to_string()];
        upsert_unless_held(&db, "admin", "second-secret", &both)
            .await
            .unwrap();
        assert_ne!(stored_hash(&db).await, second, "new roles are stored");
        assert_eq!(find(&db, "admin").await.unwrap().unwrap().roles, both);
    }
}
