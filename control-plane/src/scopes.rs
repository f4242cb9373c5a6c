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
    /// List the global mediation policies.
    MediationPolicyView,
    /// Approve or reject what waits for approval (`/workflows/update-workflow-status`).
    ApiWorkflow,
    /// The administration operations (`/api/am/admin/v0.14`) by bearer token.
    Admin,
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
    (
        Scope::MediationPolicyView,
        "mediation_policy_view",
        &["admin"],
    ),
    (Scope::ApiWorkflow, "api_workflow", &["admin"]),
    (Scope::Admin, "admin", &["admin"]),
];

/// The roles a user can hold.
pub const ROLES: &[&str] = &["admin", "creator", "publisher", "subscriber"];

/// Scopes any client may ask for, whatever its roles.
const OPEN_SCOPES: &[&str] = &["default", "am_application_scope", "openid", "profile"];

/// Whether any client may ask for this scope, whatever its roles.
pub fn is_open(scope: &str) -> bool {
    OPEN_SCOPES.contains(&scope)
}

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

    /// Every management scope's full name.
    pub fn all(&self) -> Vec<String> {
        SCOPE_ROLES
            .iter()
            .map(|(_, suffix, _)| format!("{}:{suffix}", self.prefix))
            .collect()
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

    /// The scopes granted to an application's consumer key: requested scopes that are
    /// open (`default`, `am_application_scope`, `openid`) or that an API the application
    /// subscribes to declares for one of the user's roles; never a management scope,
    /// whatever an API declares. `default` when none remain.
    pub fn grant_application(
        &self,
        requested: &str,
        roles: &[String],
        api_scopes: &[ApiScope],
    ) -> Vec<String> {
        let mut granted: Vec<String> = Vec::new();
        for scope in requested.split_whitespace() {
            let allowed = is_open(scope)
                || (!self.is_management(scope)
                    && api_scopes
                        .iter()
                        .any(|api| api.key == scope && api.allows(roles)));
            if allowed && !granted.iter().any(|g| g == scope) {
                granted.push(scope.to_string());
            }
        }
        if granted.is_empty() {
            granted.push(DEFAULT_SCOPE.to_string());
        }
        granted
    }

    /// Whether a scope names a management scope: under the configured prefix or either
    /// of the two in use (`mgr`, WSO2's `apim`).
    pub fn is_management(&self, scope: &str) -> bool {
        [self.prefix.as_str(), "mgr", "apim"].iter().any(|prefix| {
            scope
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(':'))
        })
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

/// A scope an API declares in its Swagger definition, as WSO2 2.6 does
/// (`x-wso2-security.apim.x-wso2-scopes: [{key, name, roles}]`, roles comma separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiScope {
    /// The scope's name in tokens.
    pub key: String,
    /// Its display name (the key when none is declared).
    pub name: String,
    /// Its description, possibly empty.
    pub description: String,
    /// Roles that may have it; empty: any user.
    pub roles: Vec<String>,
}

impl ApiScope {
    /// Whether a user of these roles may have the scope.
    pub fn allows(&self, roles: &[String]) -> bool {
        self.roles.is_empty() || self.roles.iter().any(|r| roles.contains(r))
    }
}

/// The scopes an API record (JSON, as stored) declares in its `apiDefinition`.
pub fn declared_by(record: &str) -> Vec<ApiScope> {
    let definition = serde_json::from_str::<serde_json::Value>(record)
        .ok()
        .and_then(|record| record["apiDefinition"].as_str().map(str::to_string))
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .unwrap_or_default();
    declared_in(&definition)
}

/// The scopes a Swagger definition declares.
pub fn declared_in(definition: &serde_json::Value) -> Vec<ApiScope> {
    let Some(declared) = definition["x-wso2-security"]["apim"]["x-wso2-scopes"].as_array() else {
        return Vec::new();
    };
    declared
        .iter()
        .filter_map(|scope| {
            let key = scope["key"].as_str().filter(|k| !k.trim().is_empty())?;
            let roles = scope["roles"]
                .as_str()
                .unwrap_or_default()
                .split(',')
                .map(|r| r.trim())
                .filter(|r| !r.is_empty())
                .map(|r| r.strip_prefix("Internal/").unwrap_or(r).to_string())
                .collect();
            let text = |member: &str| scope[member].as_str().unwrap_or_default().trim();
            Some(ApiScope {
                key: key.trim().to_string(),
                name: Some(text("name"))
                    .filter(|name| !name.is_empty())
                    .unwrap_or(key.trim())
                    .to_string(),
                description: text("description").to_string(),
                roles,
            })
        })
        .collect()
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

    #[test]
    fn application_keys_get_open_and_subscribed_api_scopes_only() {
        let names = ScopeNames::new("mgr");
        let definition = serde_json::json!({"swagger": "2.0", "paths": {},
            "x-wso2-security": {"apim": {"x-wso2-scopes": [
                {"key": "devs_read", "name": "read", "roles": "subscriber"},
                {"key": "devs_any", "name": "any", "roles": ""},
                {"key": "mgr:subscribe", "name": "sneaky", "roles": ""},
                {"key": "apim:api_view", "name": "sneaky", "roles": ""}]}}});
        let record = serde_json::json!({"apiDefinition": definition.to_string()}).to_string();
        let declared = declared_by(&record);
        assert_eq!(declared.len(), 4);
        let asked = "mgr:subscribe apim:api_view mgr:api_create devs_read devs_any default \
                     am_application_scope undeclared";
        assert_eq!(
            names
                .grant_application(asked, &roles(&["subscriber", "admin"]), &declared)
                .join(" "),
            "devs_read devs_any default am_application_scope"
        );
        assert_eq!(
            names
                .grant_application(asked, &roles(&["creator"]), &declared)
                .join(" "),
            "devs_any default am_application_scope"
        );
        assert_eq!(
            names.grant_application("mgr:subscribe", &roles(&["admin"]), &declared),
            vec!["default"]
        );
        assert!(declared_by("not json").is_empty());
        assert!(names.is_management("apim:subscribe") && !names.is_management("apim"));
    }
}
