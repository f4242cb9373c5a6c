//! Users: accounts, their roles and tenants (`records`, `rules`, `store`), passwords
//! hashed with argon2 (`password`), logins and their lock-out (`login`, `lockout`), and
//! the administration resources (`handlers`).

mod handlers;
pub mod lockout;
mod login;
mod password;
mod records;
mod rules;
mod store;

pub use handlers::router;
pub use login::VerifiedLogins;
pub use password::{LoginError, limit_argon2_queue, prepare_dummy_hash};
pub use records::User;
pub use rules::{SUPER_TENANT, parse_roles, provider_key, tenant_of, validate_username};
pub use store::{
    AccountChange, admin_exists, change_account, delete, find, insert_new, is_active, list,
    reset_password, upsert, upsert_unless_held,
};

/// This room's operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    handlers::add_user,
    handlers::list_users,
    handlers::get_user,
    handlers::update_user,
    handlers::reset_password,
    handlers::delete_user,
    handlers::unlock_user,
    handlers::rotate_signing_key,
    handlers::list_gateways
))]
pub struct Api;
