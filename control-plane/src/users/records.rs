//! The `users` row and the user it reads as.

use super::rules::{SUPER_TENANT, tenant_of};
use crate::error::{Error, Result};

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

/// A row of `users`.
#[derive(sqlx::FromRow)]
pub(super) struct UserRow {
    pub(super) username: String,
    pub(super) roles: String,
    pub(super) tenant: String,
    pub(super) disabled: i64,
    pub(super) password_hash: String,
}

pub(super) const USER_COLUMNS: &str = "username, roles, tenant, disabled, password_hash";

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

impl User {
    /// Refuses callers without the admin role (403).
    pub fn require_admin(&self) -> Result<()> {
        if self.has_role("admin") {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "Only administrators may manage users and keys".into(),
            ))
        }
    }

    /// Refuses (403) callers who are not administrators of the super tenant.
    pub fn require_platform_admin(&self) -> Result<()> {
        self.require_admin()?;
        if self.is_platform_admin() {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "Only administrators of the super tenant may manage the platform".into(),
            ))
        }
    }
}
