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

/// WSO2's `ApplicationInfo` as the admin API answers it.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminApplicationInfo {
    pub application_id: String,
    pub name: String,
    pub subscriber: String,
    pub throttling_tier: String,
    pub description: String,
    pub life_cycle_status: String,
    pub group_id: String,
}

impl From<StoredApplication> for AdminApplicationInfo {
    fn from(app: StoredApplication) -> Self {
        Self {
            application_id: app.id,
            name: app.name,
            subscriber: app.owner,
            throttling_tier: app.throttling_tier,
            description: app.description,
            life_cycle_status: app.status,
            group_id: app.group_id,
        }
    }
}
