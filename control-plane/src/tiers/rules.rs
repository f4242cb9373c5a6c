//! What a tier written through the publisher must be (WSO2's `Tier` and `TierPermission`).

use serde::Deserialize;
use serde_json::{Map, Value};

use axum::Json;

use super::levels::{TierLevel, UNLIMITED};
use super::records::{TierDto, TierRow, TierSpec};
use crate::error::{Error, Result};
use crate::http::pagination::{ListEnvelope, Page};

/// Longest tier name and description.
const MAX_NAME_CHARS: usize = 60;
const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Longest window: a year (WSO2's largest unit).
const MAX_UNIT_TIME_MS: i64 = 366 * 86_400_000;
/// Most attributes, and most roles in a permission.
const MAX_ATTRIBUTES: usize = 50;
const MAX_ROLES: usize = 100;

/// WSO2's `Tier` as a request body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TierBody {
    name: Option<String>,
    description: Option<String>,
    tier_level: Option<String>,
    attributes: Option<Map<String, Value>>,
    request_count: Option<i64>,
    unit_time: Option<i64>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    time_unit: Option<String>,
    tier_plan: Option<String>,
    stop_on_quota_reach: Option<bool>,
}

impl TierBody {
    /// The row this body stores for the tenant at the level; 400 with WSO2's words for
    /// the first problem.
    pub fn row(self, tenant: &str, level: TierLevel) -> Result<TierRow> {
        crate::error::require_present(&[
            ("name", self.name.is_none()),
            ("tierPlan", self.tier_plan.is_none()),
            ("requestCount", self.request_count.is_none()),
            ("unitTime", self.unit_time.is_none()),
            ("stopOnQuotaReach", self.stop_on_quota_reach.is_none()),
        ])?;
        let name = self.name.unwrap_or_default();
        check_name(&name)?;
        if let Some(given) = &self.tier_level
            && given != level.path_name()
        {
            return Err(Error::Invalid(format!(
                "tierLevel '{given}' of the body is not the path's '{}'",
                level.path_name()
            )));
        }
        let description = self.description.unwrap_or_default();
        if description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(Error::Invalid(format!(
                "The description must be at most {MAX_DESCRIPTION_CHARS} characters"
            )));
        }
        let request_count = self.request_count.unwrap_or_default();
        if !(1..=UNLIMITED).contains(&request_count) {
            return Err(Error::Invalid(format!(
                "requestCount must be from 1 to {UNLIMITED} (unlimited)"
            )));
        }
        let unit_time = self.unit_time.unwrap_or_default();
        if !(1000..=MAX_UNIT_TIME_MS).contains(&unit_time) || unit_time % 1000 != 0 {
            return Err(Error::Invalid(format!(
                "unitTime must be whole seconds in milliseconds, from 1000 to {MAX_UNIT_TIME_MS}"
            )));
        }
        let tier_plan = self.tier_plan.unwrap_or_default();
        if !matches!(tier_plan.as_str(), "FREE" | "COMMERCIAL") {
            return Err(Error::Invalid(
                "tierPlan must be one of FREE, COMMERCIAL".into(),
            ));
        }
        let attributes = attributes(self.attributes.unwrap_or_default())?;
        Ok(TierRow {
            tenant: tenant.to_string(),
            level: level.path_name().to_string(),
            name,
            description,
            request_count,
            unit_time,
            tier_plan,
            stop_on_quota_reach: i64::from(self.stop_on_quota_reach.unwrap_or(true)),
            attributes: Value::Object(attributes).to_string(),
        })
    }
}

/// A tier name: what WSO2 takes in names, at most 60 characters.
fn check_name(name: &str) -> Result<()> {
    let forbidden = |c: char| c.is_control() || "~!@#;:%^*()+={}|\\<>\"',&$/[]?".contains(c);
    if name.trim().is_empty()
        || name.trim() != name
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(forbidden)
    {
        return Err(Error::Invalid(format!(
            "The tier name must be 1 to {MAX_NAME_CHARS} characters, without surrounding spaces or any of ~!@#;:%^*()+={{}}|\\<>\"',&$/[]?"
        )));
    }
    Ok(())
}

/// Attributes as strings (WSO2 turns numbers and booleans into their text).
fn attributes(given: Map<String, Value>) -> Result<Map<String, Value>> {
    if given.len() > MAX_ATTRIBUTES {
        return Err(Error::Invalid(format!(
            "A tier has at most {MAX_ATTRIBUTES} attributes"
        )));
    }
    given
        .into_iter()
        .map(|(key, value)| match value {
            Value::String(_) => Ok((key, value)),
            Value::Number(n) => Ok((key, Value::String(n.to_string()))),
            Value::Bool(b) => Ok((key, Value::String(b.to_string()))),
            _ => Err(Error::Invalid(format!(
                "The attribute '{key}' must be a string"
            ))),
        })
        .collect()
}

/// WSO2's `TierPermission` as a request body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionBody {
    permission_type: Option<String>,
    roles: Option<Vec<String>>,
}

impl PermissionBody {
    /// `(allow or deny, roles as a JSON array)`; 400 for anything else.
    pub fn checked(self) -> Result<(String, String)> {
        let (Some(kind), Some(roles)) = (self.permission_type, self.roles) else {
            return Err(Error::InvalidFields(vec![
                ("permissionType".into(), "may not be null".into()),
                ("roles".into(), "may not be null".into()),
            ]));
        };
        if !matches!(kind.as_str(), "allow" | "deny") {
            return Err(Error::Invalid(
                "permissionType must be one of allow, deny".into(),
            ));
        }
        let fine = |role: &String| {
            !role.trim().is_empty()
                && role.chars().count() <= 100
                && !role.chars().any(char::is_control)
        };
        if roles.is_empty() || roles.len() > MAX_ROLES || !roles.iter().all(fine) {
            return Err(Error::Invalid(format!(
                "roles must name 1 to {MAX_ROLES} roles of at most 100 characters"
            )));
        }
        Ok((
            kind,
            serde_json::to_string(&roles).map_err(anyhow::Error::from)?,
        ))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
/// A page of a level's tiers.
pub(super) struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
}

/// The store knows `api` and `application`; the publisher also `resource`.
pub(super) fn parse_level(level: &str, publisher: bool) -> Result<TierLevel> {
    match TierLevel::from_path(level) {
        Some(TierLevel::Resource) if !publisher => Err(unknown_level(level)),
        Some(parsed) => Ok(parsed),
        None => Err(unknown_level(level)),
    }
}

fn unknown_level(level: &str) -> Error {
    Error::Invalid(format!(
        "tierLevel '{level}' is not one of api, application, resource"
    ))
}

/// A page of `all`, with WSO2's list envelope.
pub(super) fn list(
    level: TierLevel,
    all: Vec<TierSpec>,
    q: ListQuery,
) -> Result<Json<ListEnvelope<TierDto>>> {
    let page = Page::new(q.limit, q.offset)?;
    let total = all.len() as i64;
    let list = page.slice(all.iter().map(|t| TierDto::new(level, t)).collect());
    let link =
        |limit, offset| format!("/tiers/{}?limit={limit}&offset={offset}", level.path_name());
    Ok(Json(ListEnvelope::new(list, total, page, link)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(value: Value) -> Result<TierRow> {
        serde_json::from_value::<TierBody>(value)
            .unwrap()
            .row("acme.com", TierLevel::Subscription)
    }

    #[test]
    fn tiers_are_checked() {
        let good = serde_json::json!({"name": "Low", "tierPlan": "FREE", "requestCount": 5,
            "unitTime": 60000, "stopOnQuotaReach": true, "attributes": {"a": 10, "b": "x"}});
        let row = body(good.clone()).unwrap();
        assert_eq!(row.attributes, r#"{"a":"10","b":"x"}"#);
        assert_eq!(row.level, "api");
        let with = |key: &str, value: Value| {
            let mut changed = good.clone();
            changed[key] = value;
            body(changed)
        };
        assert!(with("name", Value::Null).is_err());
        assert!(with("name", "a/b".into()).is_err());
        assert!(with("name", " Low".into()).is_err());
        assert!(with("requestCount", 0.into()).is_err());
        assert!(with("requestCount", (-5).into()).is_err());
        assert!(with("unitTime", 999.into()).is_err());
        assert!(with("unitTime", 1500.into()).is_err());
        assert!(with("tierPlan", "GRATIS".into()).is_err());
        assert!(with("tierLevel", "application".into()).is_err());
        assert!(with("tierLevel", "api".into()).is_ok());
        assert!(with("attributes", serde_json::json!({"a": [1]})).is_err());
    }
}
