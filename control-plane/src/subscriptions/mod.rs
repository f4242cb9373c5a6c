//! Subscriptions: the `subscriptions` row (`records`), its queries (`store`), the store
//! resources (`handlers`) and the publisher's (`publisher_handlers`: list, block, unblock).

mod handlers;
mod publisher_handlers;
mod records;
mod store;

pub use handlers::router;
pub use publisher_handlers::router as publisher_router;
pub use records::Subscription;
pub use store::{Grant, apis_on_tier, count_for_api, grants, grants_of, subscribed_records};
