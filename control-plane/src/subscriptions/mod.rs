//! Store subscriptions: the `subscriptions` row (`records`), its queries (`store`) and
//! the store resources (`handlers`).

mod handlers;
mod records;
mod store;

pub use handlers::router;
pub use records::Subscription;
pub use store::{Grant, count_for_api, grants, grants_of, subscribed_records};
