//! Subscriptions: the `subscriptions` row (`records`), its queries (`store`), the store
//! resources (`handlers`) and the publisher's (`publisher_handlers`: list, block, unblock).

mod handlers;
mod publisher_handlers;
mod records;
mod store;

pub use handlers::router;
pub use publisher_handlers::router as publisher_router;
pub use records::{ON_HOLD, REJECTED, Subscription, UNBLOCKED};
pub use store::{
    Grant, all_grants, apis_on_tier, count_for_api, delete_unsubscribed_of_api, find, grants,
    grants_of, set_status, subscribed_records,
};
