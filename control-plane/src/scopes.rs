//! Roles and management scopes, mapped as WSO2's `tenant-conf.json` maps them.

/// A management scope, named without its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Read APIs in the publisher.
    ApiView,
    /// Create, update and delete APIs.
    ApiCreate,
    /// Change an API's lifecycle state.
    ApiPublish,
    /// Applications, subscriptions and keys in the store.
    Subscribe,
    /// List tiers in the publisher.
    TierView,
    /// Manage tiers.
    TierManage,
    /// List subscriptions in the publisher.
    SubscriptionView,
    /// Block and unblock subscriptions.
    SubscriptionBlock,
}

/// Every scope with the roles that may have it (tenant-conf.json `RESTAPIScopes`).
const SCOPE_ROLES: &[(Scope, &str, &[&str])] = &[
    (
        Scope::ApiView,
        "api_view",
        &["admin", "publisher", "creator"],
    ),
    (Scope::ApiCreate, "api_create", &["admin", "creator"]),
    (Scope::ApiPublish, "api_publish", &["admin", "publisher"]),
    (Scope::Subscribe, "subscribe", &["admin", "subscriber"]),
    (
        Scope::TierView,
        "tier_view",
        &["admin", "publisher", "creator"],
    ),
    (Scope::TierManage, "tier_manage", &["admin"]),
    (
        Scope::SubscriptionView,
        "subscription_view",
        &["admin", "creator"],
    ),
    (
        Scope::SubscriptionBlock,
        "subscription_block",
        &["admin", "publisher"],
    ),
];

/// The roles a user can hold.
pub const ROLES: &[&str] = &["admin", "creator", "publisher", "subscriber"];

/// Scopes any client may ask for, whatever its roles.
const OPEN_SCOPES: &[&str] = &["default", "am_application_scope", "openid"];

/// Scope given when nothing requested can be granted.
pub const DEFAULT_SCOPE: &str = "default";

/// Scope the client_credentials grant always adds.
pub const APPLICATION_SCOPE: &str = "am_application_scope";

/// Scope names under one configured prefix.
#[derive(Debug, Clone)]
pub struct ScopeNames {
    prefix: String,
}

impl ScopeNames {
    /// Scope names with this prefix (`mgr`, or `apim` for WSO2 clients).
    pub fn new(prefix: &str) -> Self {
        ScopeNames {
            prefix: prefix.to_string(),
        }
    }

    /// The full name of a scope, e.g. `mgr:api_view`.
    pub fn name(&self, scope: Scope) -> String {
        let suffix = SCOPE_ROLES
            .iter()
            .find(|(s, _, _)| *s == scope)
            .map(|(_, suffix, _)| *suffix)
            .unwrap_or_default();
        format!("{}:{suffix}", self.prefix)
    }

    /// The scopes granted for a request: requested scopes the roles allow, in the order
    /// asked, without duplicates; `default` when none remain (WSO2's RoleBasedScopesIssuer).
    pub fn grant(&self, requested: &str, roles: &[String]) -> Vec<String> {
        let mut granted: Vec<String> = Vec::new();
        for scope in requested.split_whitespace() {
            if self.allowed(scope, roles) && !granted.iter().any(|g| g == scope) {
                granted.push(scope.to_string());
            }
        }
        if granted.is_empty() {
            granted.push(DEFAULT_SCOPE.to_string());
        }
        granted
    }

    fn allowed(&self, scope: &str, roles: &[String]) -> bool {
        if OPEN_SCOPES.contains(&scope) {
            return true;
        }
        let Some(suffix) = scope
            .strip_prefix(self.prefix.as_str())
            .and_then(|s| s.strip_prefix(':'))
        else {
            return false;
        };
        SCOPE_ROLES
            .iter()
            .find(|(_, name, _)| *name == suffix)
            .is_some_and(|(_, _, allowed)| roles.iter().any(|r| allowed.contains(&r.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn drops_scopes_the_roles_lack_and_falls_back_to_default() {
        let names = ScopeNames::new("mgr");
        let all = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe";
        assert_eq!(names.grant(all, &roles(&["admin"])).join(" "), all);
        assert_eq!(
            names.grant(all, &roles(&["subscriber"])),
            vec!["mgr:subscribe"]
        );
        assert_eq!(
            names.grant(all, &roles(&["creator"])),
            vec!["mgr:api_view", "mgr:api_create"]
        );
        assert_eq!(
            names.grant("mgr:api_publish", &roles(&["subscriber"])),
            vec!["default"]
        );
        assert_eq!(names.grant("", &roles(&["admin"])), vec!["default"]);
        assert_eq!(
            names.grant("apim:api_view", &roles(&["admin"])),
            vec!["default"]
        );
        assert_eq!(names.name(Scope::TierView), "mgr:tier_view");
    }
}
