//! The tiers in effect for a tenant: WSO2's defaults, each replaced by the tenant's row of
//! its name if it has one, then the tenant's own tiers by name; who may use them; and
//! what gateways enforce of every tenant's rows.

use std::collections::BTreeMap;

use sqlx::AnyPool;

use super::levels::{self, TierLevel};
use super::queries;
use super::records::{PermissionRow, TierSpec};

/// Every tier of a level in effect for the tenant.
pub async fn of_tenant(
    db: &AnyPool,
    tenant: &str,
    level: TierLevel,
) -> sqlx::Result<Vec<TierSpec>> {
    let mut rows = queries::of_level(db, tenant, level.path_name()).await?;
    let mut effective: Vec<TierSpec> = levels::tiers(level)
        .iter()
        .map(|tier| match rows.iter().position(|r| r.name == tier.name) {
            Some(at) => TierSpec::of_row(rows.remove(at), true),
            None => TierSpec::of_default(tier),
        })
        .collect();
    effective.extend(rows.into_iter().map(|row| TierSpec::of_row(row, false)));
    Ok(effective)
}

/// The tier of a level named `name` in effect for the tenant.
pub async fn find(
    db: &AnyPool,
    tenant: &str,
    level: TierLevel,
    name: &str,
) -> sqlx::Result<Option<TierSpec>> {
    Ok(of_tenant(db, tenant, level)
        .await?
        .into_iter()
        .find(|t| t.name == name))
}

/// Which of `names` the tenant has no tier of at this level.
pub async fn unknown<'a>(
    db: &AnyPool,
    tenant: &str,
    level: TierLevel,
    names: impl IntoIterator<Item = &'a str>,
) -> sqlx::Result<Vec<&'a str>> {
    let known = of_tenant(db, tenant, level).await?;
    Ok(names
        .into_iter()
        .filter(|name| !known.iter().any(|t| t.name == *name))
        .collect())
}

/// Every tenant's stored tiers as gateways enforce them, by tenant and level.
pub async fn tenant_rates(
    db: &AnyPool,
) -> sqlx::Result<BTreeMap<String, apim_manifest::TenantTiers>> {
    let mut rates: BTreeMap<String, apim_manifest::TenantTiers> = BTreeMap::new();
    for row in queries::all(db).await? {
        let (tenant, level, name) = (row.tenant.clone(), row.level.clone(), row.name.clone());
        let rate = TierSpec::of_row(row, false).rate();
        let tiers = rates.entry(tenant).or_default();
        let by_name = match TierLevel::from_path(&level) {
            Some(TierLevel::Subscription) => &mut tiers.subscription,
            Some(TierLevel::Application) => &mut tiers.application,
            Some(TierLevel::Resource) => &mut tiers.resource,
            None => continue,
        };
        by_name.insert(name, rate);
    }
    Ok(rates)
}

/// Who may use the tenant's tiers of a level: a tier without a permission is anyone's.
pub struct Permissions(Vec<PermissionRow>);

impl Permissions {
    /// The tenant's permissions of a level.
    pub async fn of(db: &AnyPool, tenant: &str, level: TierLevel) -> sqlx::Result<Self> {
        Ok(Permissions(
            queries::permissions(db, tenant, level.path_name()).await?,
        ))
    }

    /// Whether a user holding `roles` (none: anonymous) may use the tier: an `allow`
    /// permission names one of them, a `deny` permission none. Roles compare without
    /// `Internal/`; every user holds `everyone`, anonymous callers `anonymous`.
    pub fn allows(&self, tier: &str, roles: Option<&[String]>) -> bool {
        let Some(permission) = self.0.iter().find(|p| p.name == tier) else {
            return true;
        };
        let named: Vec<String> = serde_json::from_str(&permission.roles).unwrap_or_default();
        let holds = |role: &str| {
            let role = role.strip_prefix("Internal/").unwrap_or(role);
            match roles {
                None => role == "anonymous",
                Some(roles) => role == "everyone" || roles.iter().any(|r| r == role),
            }
        };
        let named_held = named.iter().any(|role| holds(role));
        match permission.permission_type.as_str() {
            "allow" => named_held,
            _ => !named_held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permission(name: &str, kind: &str, roles: &[&str]) -> PermissionRow {
        PermissionRow {
            name: name.into(),
            permission_type: kind.into(),
            roles: serde_json::to_string(roles).unwrap(),
        }
    }

    #[test]
    fn permissions_allow_or_deny_roles() {
        let permissions = Permissions(vec![
            permission("Gold", "allow", &["Internal/subscriber"]),
            permission("Bronze", "deny", &["admin"]),
            permission("Open", "allow", &["Internal/everyone"]),
        ]);
        let roles = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let subscriber = roles(&["subscriber"]);
        let admin = roles(&["admin"]);
        assert!(permissions.allows("Gold", Some(&subscriber)));
        assert!(!permissions.allows("Gold", Some(&admin)));
        assert!(!permissions.allows("Gold", None));
        assert!(permissions.allows("Bronze", Some(&subscriber)));
        assert!(!permissions.allows("Bronze", Some(&admin)));
        assert!(permissions.allows("Bronze", None));
        assert!(permissions.allows("Open", Some(&admin)));
        assert!(!permissions.allows("Open", None));
        assert!(permissions.allows("Silver", None));
    }
}
