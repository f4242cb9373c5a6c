//! Applications: the `applications` row (`records`), its queries (`queries`), who may use
//! one (`access`), the store resources (`store_api`, and `store_api_scopes` for the scopes of the
//! APIs it subscribes to) and the publisher's read of one (`publisher`).

mod access;
pub(crate) mod admin;
pub(crate) mod publisher;
pub(crate) mod queries;
mod records;
mod rules;
pub(crate) mod store_api;
pub(crate) mod store_api_scopes;

pub use access::{StoreUser, owned_application, require_approved};
pub use queries::{
    NewApplication, find, insert as insert_application, owned_by, owners_on_tier, set_status,
};
pub use records::{APPROVED, AdminApplicationInfo, CREATED, REJECTED, StoredApplication};
pub use rules::{check_name, check_token_type};
