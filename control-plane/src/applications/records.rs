//! The `applications` row.

/// An application as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredApplication {
    pub id: String,
    pub owner: String,
    pub name: String,
    pub throttling_tier: String,
    pub description: String,
    pub callback_url: String,
    pub group_id: String,
    pub token_type: String,
    pub status: String,
    pub attributes: String,
}

/// The columns of [`StoredApplication`], in its order.
pub(super) const APP_COLUMNS: &str = "id, owner, name, throttling_tier, description, callback_url, group_id, token_type, status, attributes";

/// Status of an application that may subscribe and have keys (WSO2's `ApplicationStatus`).
pub const APPROVED: &str = "APPROVED";
/// Status of an application whose creation waits for an approval.
pub const CREATED: &str = "CREATED";
/// Status of an application whose creation was rejected.
pub const REJECTED: &str = "REJECTED";
