//! Store applications: the `applications` row (`records`), its queries (`store`), who may
//! use one (`access`) and the store resources (`handlers`).

mod access;
mod handlers;
mod records;
mod store;

pub use access::{STORE, StoreUser, owned_application};
pub use handlers::router;
pub use records::StoredApplication;
pub use store::{find, tiers_of};
