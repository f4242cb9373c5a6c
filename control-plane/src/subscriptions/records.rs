//! The `subscriptions` row.

/// A subscription as stored: an application's to an API under a tier.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Subscription {
    pub id: String,
    pub application_id: String,
    pub api_id: String,
    pub tier: String,
    pub status: String,
    /// 1 when its subscriber deleted it while it was blocked: kept so that the block
    /// holds (WSO2's `SUBS_CREATE_STATE` `UN_SUBSCRIBE`), no longer the subscriber's.
    pub unsubscribed: i64,
}

impl Subscription {
    /// Whether the publisher has blocked it, for either key type.
    pub fn is_blocked(&self) -> bool {
        matches!(self.status.as_str(), BLOCKED | PROD_ONLY_BLOCKED)
    }

    /// Whether it is still its subscriber's: not deleted while blocked.
    pub fn is_subscribed(&self) -> bool {
        self.unsubscribed == 0
    }
}

/// The columns of [`Subscription`] from `subscriptions s`, named as its fields.
pub(super) const SUBSCRIPTION_COLUMNS: &str = "s.id AS id, s.application_id AS application_id, \
     s.api_id AS api_id, s.tier AS tier, s.status AS status, s.unsubscribed AS unsubscribed";

/// Status of a subscription gateways admit (WSO2's `SubscriptionStatus`).
pub const UNBLOCKED: &str = "UNBLOCKED";
/// Blocked for both key types.
pub const BLOCKED: &str = "BLOCKED";
/// Blocked for production keys; sandbox keys are still admitted.
pub const PROD_ONLY_BLOCKED: &str = "PROD_ONLY_BLOCKED";
/// Waiting for its creation to be approved; gateways refuse it (WSO2's 900909).
pub const ON_HOLD: &str = "ON_HOLD";
/// Its creation was rejected; gateways refuse it (900909).
pub const REJECTED: &str = "REJECTED";
