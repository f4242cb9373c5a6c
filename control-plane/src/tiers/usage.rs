//! Whether a tenant's tier is in use, which keeps it from being deleted: a subscription
//! tier named by a subscription, an API's `tiers` or an operation's `x-throttling-tier`,
//! an application tier by an application, a resource tier by an operation's
//! `x-throttling-tier`.

use sqlx::AnyPool;

use super::levels::TierLevel;
use crate::apis::{self, StoredApi, lifecycle::STATES};
use crate::error::Result;
use crate::users::tenant_of;

/// What uses the tier, in words; `None` when nothing does.
pub async fn in_use(
    db: &AnyPool,
    tenant: &str,
    level: TierLevel,
    name: &str,
) -> Result<Option<String>> {
    match level {
        TierLevel::Application => {
            let owners = crate::applications::owners_on_tier(db, name).await?;
            Ok(owners
                .iter()
                .any(|owner| tenant_of(owner) == tenant)
                .then(|| "applications use it".to_string()))
        }
        TierLevel::Subscription => {
            let apis = apis::tenant_apis(db, tenant, STATES).await?;
            let subscribed = crate::subscriptions::apis_on_tier(db, name).await?;
            if apis.iter().any(|api| subscribed.contains(&api.id)) {
                return Ok(Some("subscriptions use it".into()));
            }
            if let Some(api) = apis.iter().find(|api| offers(api, name)) {
                return Ok(Some(format!("API {} offers it", api.id)));
            }
            // An operation may name a subscription tier too (as WSO2 2.6 lets it).
            Ok(apis
                .iter()
                .find(|api| throttles_with(api, name))
                .map(|api| format!("resources of API {} use it", api.id)))
        }
        TierLevel::Resource => {
            let apis = apis::tenant_apis(db, tenant, STATES).await?;
            Ok(apis
                .iter()
                .find(|api| throttles_with(api, name))
                .map(|api| format!("resources of API {} use it", api.id)))
        }
    }
}

/// Whether an API offers subscriptions on the tier.
fn offers(api: &StoredApi, tier: &str) -> bool {
    api.record.tiers.iter().flatten().any(|t| t == tier)
}

/// Whether an operation of the API's Swagger names the tier as its `x-throttling-tier`.
fn throttles_with(api: &StoredApi, tier: &str) -> bool {
    let definition: serde_json::Value = api
        .record
        .api_definition
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    definition["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(|item| item.as_object())
        .flat_map(|item| item.values())
        .any(|operation| operation["x-throttling-tier"].as_str() == Some(tier))
}
