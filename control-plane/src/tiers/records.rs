//! A tier as stored (`tiers` and `tier_permissions` rows), as in effect for a tenant
//! ([`TierSpec`]), and as the REST APIs show it (WSO2's `Tier`, [`TierDto`]).

use serde::Serialize;
use serde_json::{Map, Value};

use super::levels::{Tier, TierLevel, UNLIMITED};

/// A `tiers` row: a tier a tenant created, or a default it changed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TierRow {
    pub tenant: String,
    pub level: String,
    pub name: String,
    pub description: String,
    pub request_count: i64,
    pub unit_time: i64,
    pub tier_plan: String,
    pub stop_on_quota_reach: i64,
    pub attributes: String,
}

/// The columns of [`TierRow`], in its order.
pub const TIER_COLUMNS: &str = "tenant, level, name, description, request_count, unit_time, tier_plan, stop_on_quota_reach, attributes";

/// A `tier_permissions` row: who may use a tier.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PermissionRow {
    pub name: String,
    pub permission_type: String,
    pub roles: String,
}

/// A tier as in effect for a tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct TierSpec {
    pub name: String,
    pub description: String,
    /// Requests per `unit_time`; [`UNLIMITED`] is unlimited.
    pub request_count: i64,
    /// Milliseconds.
    pub unit_time: i64,
    pub tier_plan: String,
    pub stop_on_quota_reach: bool,
    pub attributes: Map<String, Value>,
    /// One of WSO2's defaults (changed or not): it can be changed, never deleted.
    pub default: bool,
}

impl TierSpec {
    /// A default tier as WSO2 creates it.
    pub fn of_default(tier: &Tier) -> Self {
        TierSpec {
            name: tier.name.to_string(),
            description: tier.description.to_string(),
            request_count: tier.request_count,
            unit_time: 60_000,
            tier_plan: "FREE".to_string(),
            stop_on_quota_reach: true,
            attributes: Map::new(),
            default: true,
        }
    }

    /// A stored tier; `default` when it has a default's name.
    pub fn of_row(row: TierRow, default: bool) -> Self {
        TierSpec {
            name: row.name,
            description: row.description,
            request_count: row.request_count,
            unit_time: row.unit_time,
            tier_plan: row.tier_plan,
            stop_on_quota_reach: row.stop_on_quota_reach != 0,
            attributes: serde_json::from_str(&row.attributes).unwrap_or_default(),
            default,
        }
    }

    /// What gateways enforce: requests per window; `None` (unlimited) for the unlimited
    /// count and for a tier that does not stop on quota (WSO2 only notes those).
    pub fn rate(&self) -> apim_manifest::TierRate {
        let enforced = self.stop_on_quota_reach && self.request_count < UNLIMITED;
        apim_manifest::TierRate {
            requests: enforced.then_some(self.request_count.max(0) as u64),
            window_ms: self.unit_time.max(1) as u64,
        }
    }
}

/// A tier as the REST APIs show it (`Tier` in the v0.14 swagger).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TierDto {
    name: String,
    description: String,
    tier_level: &'static str,
    attributes: Map<String, Value>,
    request_count: i64,
    unit_time: i64,
    time_unit: &'static str,
    tier_plan: String,
    stop_on_quota_reach: bool,
}

impl TierDto {
    /// The REST form of a tier.
    pub fn new(level: TierLevel, tier: &TierSpec) -> Self {
        TierDto {
            name: tier.name.clone(),
            description: tier.description.clone(),
            tier_level: level.path_name(),
            attributes: tier.attributes.clone(),
            request_count: tier.request_count,
            unit_time: tier.unit_time,
            time_unit: time_unit(tier.unit_time),
            tier_plan: tier.tier_plan.clone(),
            stop_on_quota_reach: tier.stop_on_quota_reach,
        }
    }
}

/// The unit a window's length reads in.
fn time_unit(unit_ms: i64) -> &'static str {
    match unit_ms {
        ms if ms % 86_400_000 == 0 => "day",
        ms if ms % 3_600_000 == 0 => "hour",
        ms if ms % 60_000 == 0 => "min",
        ms if ms % 1000 == 0 => "sec",
        _ => "ms",
    }
}
