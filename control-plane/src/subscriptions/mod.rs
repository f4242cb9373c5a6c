//! Subscriptions: the `subscriptions` row (`records`), its queries (`queries`), the store
//! resources (`store_api`) and the publisher's (`publisher`: list, block, unblock).

pub(crate) mod publisher;
mod queries;
mod records;
pub(crate) mod store_api;

pub use queries::{
    Grant, all_grants, apis_on_tier, count_for_api, delete_unsubscribed_of_api, find,
    forward_to_version, grants, grants_of, insert as insert_subscription, of_application,
    set_status, subscribed_api_scopes, subscribed_records,
};
pub use records::{BLOCKED, ON_HOLD, PROD_ONLY_BLOCKED, REJECTED, Subscription, UNBLOCKED};
