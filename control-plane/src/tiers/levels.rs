//! Throttling tiers, as WSO2 API Manager 2.6 creates them (advanced throttling defaults).
//! Every tenant has them; a tenant may change them (except `Unlimited`) and add its own
//! (`catalogue`). Enforcement belongs to the gateway.

/// Request count that stands for "unlimited" (Java's Integer.MAX_VALUE, as WSO2 stores it).
pub const UNLIMITED: i64 = 2_147_483_647;

/// The level a tier applies at, as named in `/tiers/{tierLevel}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierLevel {
    /// Subscription tiers (`api` in the REST path).
    Subscription,
    /// Application tiers.
    Application,
    /// API and resource tiers (`x-throttling-tier`).
    Resource,
}

impl TierLevel {
    /// Parses the REST path segment.
    pub fn from_path(level: &str) -> Option<Self> {
        match level {
            "api" => Some(Self::Subscription),
            "application" => Some(Self::Application),
            "resource" => Some(Self::Resource),
            _ => None,
        }
    }

    /// The REST path segment.
    pub fn path_name(self) -> &'static str {
        match self {
            Self::Subscription => "api",
            Self::Application => "application",
            Self::Resource => "resource",
        }
    }
}

/// One tier: a request count per minute.
#[derive(Debug, Clone, Copy)]
pub struct Tier {
    /// Tier name.
    pub name: &'static str,
    /// Requests allowed per unit time.
    pub request_count: i64,
    /// What WSO2 calls it.
    pub description: &'static str,
}

const SUBSCRIPTION: &[Tier] = &[
    tier("Gold", 5000, "Allows 5000 requests per minute"),
    tier("Silver", 2000, "Allows 2000 requests per minute"),
    tier("Bronze", 1000, "Allows 1000 requests per minute"),
    tier("Unauthenticated", 500, "Allows 500 request(s) per minute"),
    tier("Unlimited", UNLIMITED, "Allows unlimited requests"),
];

const APPLICATION: &[Tier] = &[
    tier("50PerMin", 50, "Allows 50 request per minute"),
    tier("20PerMin", 20, "Allows 20 request per minute"),
    tier("10PerMin", 10, "Allows 10 request per minute"),
    tier("Unlimited", UNLIMITED, "Allows unlimited requests"),
];

const RESOURCE: &[Tier] = &[
    tier("50KPerMin", 50_000, "Allows 50000 requests per minute"),
    tier("20KPerMin", 20_000, "Allows 20000 requests per minute"),
    tier("10KPerMin", 10_000, "Allows 10000 requests per minute"),
    tier("Unlimited", UNLIMITED, "Allows unlimited requests"),
];

const fn tier(name: &'static str, request_count: i64, description: &'static str) -> Tier {
    Tier {
        name,
        request_count,
        description,
    }
}

/// Every tier of a level, in WSO2's order.
pub fn tiers(level: TierLevel) -> &'static [Tier] {
    match level {
        TierLevel::Subscription => SUBSCRIPTION,
        TierLevel::Application => APPLICATION,
        TierLevel::Resource => RESOURCE,
    }
}

/// The tier of this name at this level.
pub fn find(level: TierLevel, name: &str) -> Option<&'static Tier> {
    tiers(level).iter().find(|t| t.name == name)
}
