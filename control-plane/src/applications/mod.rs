//! Applications: the `applications` row (`records`), its queries (`store`), who may use
//! one (`access`), the store resources (`handlers`, and `scopes` for the scopes of the
//! APIs it subscribes to) and the publisher's read of one (`publisher`).

mod access;
mod handlers;
mod publisher;
mod records;
mod scopes;
mod store;

pub use access::{STORE, StoreUser, owned_application, require_approved};
pub use handlers::router;
pub use publisher::router as publisher_router;
pub use records::{APPROVED, CREATED, REJECTED, StoredApplication};
pub use scopes::router as scopes_router;
pub use store::{find, owners_on_tier, set_status, tiers_of};
