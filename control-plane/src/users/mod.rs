//! Users: accounts, their roles and tenants (`records`, `rules`, `queries`), passwords
//! hashed with argon2 (`password`), logins and their lock-out (`login`, `lockout`), and
//! the administration resources (`admin`).

pub(crate) mod admin;
mod admin_caller;
pub mod lockout;
mod login;
mod password;
pub(crate) mod queries;
mod records;
pub(crate) mod rules;

pub use admin_caller::AdminUser;
pub use login::{BasicUser, VerifiedLogins};
pub use password::{LoginError, limit_argon2_queue, prepare_dummy_hash, set_password_cost};
pub use queries::{
    AccountChange, admin_exists, change_account, delete, find, insert_new, is_active, list,
    reset_password, upsert, upsert_unless_held,
};
pub use records::User;
pub use rules::{SUPER_TENANT, parse_roles, provider_key, tenant_of, validate_username};
