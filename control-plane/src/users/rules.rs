//! Rules of user names, tenants and roles.

use crate::scopes::ROLES;

/// The tenant of users without a `@domain`, as WSO2 names it.
pub const SUPER_TENANT: &str = "carbon.super";

/// The tenant a user name belongs to: the part after the last `@`.
pub fn tenant_of(username: &str) -> &str {
    match username.rsplit_once('@') {
        Some((_, domain)) if !domain.is_empty() => domain,
        _ => SUPER_TENANT,
    }
}

/// How a provider appears in unique names: `name@domain` becomes `name-AT-domain`.
pub fn provider_key(username: &str) -> String {
    username.replace('@', "-AT-")
}

/// Checks a role list, returning it normalised.
pub fn parse_roles(roles: &[String]) -> Result<Vec<String>, String> {
    let mut parsed: Vec<String> = Vec::new();
    for role in roles.iter().map(|r| r.trim()).filter(|r| !r.is_empty()) {
        let role = role.strip_prefix("Internal/").unwrap_or(role);
        if !ROLES.contains(&role) {
            return Err(format!(
                "Unknown role '{role}'. Roles are {}",
                ROLES.join(", ")
            ));
        }
        if !parsed.iter().any(|p| p == role) {
            parsed.push(role.to_string());
        }
    }
    Ok(parsed)
}

/// Checks a user name: non-empty, no spaces or ':' (it travels in HTTP Basic), no `-AT-`.
pub fn validate_username(username: &str) -> Result<(), String> {
    if username.is_empty() || username.len() > 100 {
        return Err("User name must have 1 to 100 characters".into());
    }
    if username.contains(|c: char| c.is_whitespace() || c == ':' || c.is_control()) {
        return Err("User name must not contain spaces, ':' or control characters".into());
    }
    // `-AT-` stands for '@' in unique API names (`alice-AT-acme.com-Pay-v1`): a name
    // holding it would claim another tenant's names.
    if username.to_ascii_uppercase().contains("-AT-") {
        return Err("User name must not contain '-AT-'".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_and_provider_keys() {
        assert_eq!(tenant_of("admin"), SUPER_TENANT);
        assert_eq!(tenant_of("alice@acme.com"), "acme.com");
        assert_eq!(provider_key("alice@acme.com"), "alice-AT-acme.com");
        assert_eq!(
            parse_roles(&["Internal/creator".into(), "creator".into()]).unwrap(),
            vec!["creator"]
        );
        assert!(parse_roles(&["root".into()]).is_err());
        assert!(validate_username("alice@acme.com").is_ok());
        assert!(validate_username("at-home").is_ok());
        for squatter in ["alice-AT-acme.com", "alice-at-acme.com"] {
            assert!(validate_username(squatter).is_err(), "{squatter}");
        }
    }
}
