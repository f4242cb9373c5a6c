//! WSO2 2.6's model of an API as its export writes it (`Meta-information/api.json`: Gson
//! of `org.wso2.carbon.apimgt.api.model.API`, absent fields left out), read as the REST
//! API's record; and of a document (`Docs/docs.json`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `id`: who provides the API, its name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiIdentifier {
    /// The provider, a tenant's `@` written `-AT-` (WSO2's `replaceEmailDomain`).
    pub provider_name: String,
    pub api_name: String,
    pub version: String,
}

/// A tier an API is available under: WSO2 matches them by `name` on import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TierName {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// `Meta-information/api.json`: the fields WSO2 2.6's export writes that this platform
/// has, in WSO2's order; any other member is kept in `other`, so that a project from a
/// WSO2 export can say what it carries that is not taken.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiJson {
    pub id: Option<ApiIdentifier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub api_type: Option<String>,
    /// The context with the version (`/pets/1.0.0`).
    pub context: Option<String>,
    /// The context with `{version}` where the version goes (`/pets/{version}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_template: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub documents: Vec<Value>,
    #[serde(default)]
    pub available_tiers: Vec<TierName>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_level_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub technical_owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub technical_owner_email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub business_owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub business_owner_email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub production_max_tps: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_max_tps: Option<String>,
    /// `public`, `restricted`, `private`, `controlled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    /// Comma-separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visible_roles: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visible_tenants: Option<String>,
    #[serde(default)]
    pub endpoint_secured: bool,
    #[serde(default)]
    pub endpoint_auth_digest: bool,
    #[serde(rename = "endpointUTUsername", skip_serializing_if = "Option::is_none")]
    pub endpoint_ut_username: Option<String>,
    /// Always empty in an export (WSO2 strips it).
    #[serde(rename = "endpointUTPassword", skip_serializing_if = "Option::is_none")]
    pub endpoint_ut_password: Option<String>,
    /// Comma-separated: `http,https`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transports: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_sequence: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_sequence: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_sequence: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_availability: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_available_tenants: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cors_configuration: Option<Value>,
    /// The endpoint configuration as a JSON text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint_config: Option<String>,
    /// `Enabled` or `Disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_cache: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_timeout: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_header: Option<String>,
    #[serde(default)]
    pub scopes: Vec<Value>,
    #[serde(default)]
    pub is_default_version: bool,
    #[serde(default)]
    pub is_published_default_version: bool,
    #[serde(default)]
    pub environments: Vec<String>,
    #[serde(default)]
    pub additional_properties: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_control: Option<String>,
    /// Comma-separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_control_roles: Option<String>,
    /// Members this platform does not read (WSO2's `uriTemplates` come from
    /// `swagger.json`, its ratings and timestamps are its own).
    #[serde(flatten, skip_serializing)]
    pub other: Map<String, Value>,
}

/// Refuses YAML with anchors or aliases (`&name`, `*name`): each alias replays its
/// anchor, so a megabyte of them can expand to gigabytes. WSO2's exports write none; a
/// model that needs them can be given as JSON. Quoted text and comments are skipped.
pub fn check_plain_yaml(text: &str) -> Result<(), String> {
    let refused =
        || "YAML anchors and aliases (&name, *name) are not taken; give the file as JSON".into();
    // Only where a node starts (a line's first token, after `- `, `: `, `? `, `[`, `{` or
    // `,`) does `&` or `*` begin an anchor or an alias; inside a scalar they are text.
    let (mut quote, mut node_starts, mut previous) = (None, true, '\n');
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next_is_space = chars.peek().is_none_or(|n| n.is_whitespace());
        match quote {
            Some(q) if c == q => {
                quote = None;
                node_starts = false;
            }
            Some(_) => {}
            None if c == '\n' => node_starts = true,
            None if c.is_whitespace() => {}
            None if c == '#' && previous.is_whitespace() => {
                for rest in chars.by_ref() {
                    if rest == '\n' {
                        break;
                    }
                }
                node_starts = true;
                previous = '\n';
                continue;
            }
            None if matches!(c, ':' | '-' | '?') && next_is_space => node_starts = true,
            None if matches!(c, '[' | '{' | ',') => node_starts = true,
            None if node_starts && (c == '"' || c == '\'') => quote = Some(c),
            None if node_starts && (c == '&' || c == '*') && !next_is_space => {
                return Err(refused());
            }
            None => node_starts = false,
        }
        previous = c;
    }
    Ok(())
}

/// A YAML document read as `T`, refused when it has anchors or aliases
/// ([`check_plain_yaml`]).
pub fn from_yaml<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    check_plain_yaml(text)?;
    serde_norway::from_str(text).map_err(|e| e.to_string())
}

/// A file of a project read as `T`: YAML when its path says so ([`from_yaml`]), JSON
/// otherwise; what is wrong names the path.
pub fn from_file<T: serde::de::DeserializeOwned>(path: &str, bytes: &[u8]) -> Result<T, String> {
    let parsed = if path.ends_with(".yaml") || path.ends_with(".yml") {
        from_yaml(bytes)
    } else {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    };
    parsed.map_err(|why| format!("{path} cannot be read: {why}"))
}

/// WSO2's form of a provider's name in a project: a tenant's `@` as `-AT-`.
pub fn provider_in_project(provider: &str) -> String {
    provider.replace('@', "-AT-")
}

/// Members of WSO2's model that say nothing this platform keeps, or that it derives
/// elsewhere (`uriTemplates` from `swagger.json`): never reported as not taken.
const DERIVED_OR_WSO2_OWN: &[&str] = &[
    "uuid",
    "lastUpdated",
    "createdTime",
    "rating",
    "isLatest",
    "uriTemplates",
    "documents",
    "environmentList",
    "availableSubscriptionLevelPolicies",
    "apiHeaderChanged",
    "apiResourcePatternsChanged",
    "scopes",
    "advertiseOnly",
];

impl ApiJson {
    /// The REST API's record (v0.14 `API`, as `POST /apis` takes it) of this model and
    /// its `swagger` definition; and the members it carries that the record cannot, by
    /// name (a backend password, which exports never carry, among them).
    pub fn to_record(&self, swagger: Option<&str>) -> (Value, Vec<String>) {
        let mut not_taken: Vec<String> = self
            .other
            .keys()
            .filter(|k| !DERIVED_OR_WSO2_OWN.contains(&k.as_str()))
            .cloned()
            .collect();
        let id = self.id.clone().unwrap_or(ApiIdentifier {
            provider_name: String::new(),
            api_name: String::new(),
            version: String::new(),
        });
        let template = self
            .context_template
            .clone()
            .or_else(|| self.context.clone())
            .unwrap_or_default();
        let context = template
            .strip_suffix("/{version}")
            .map_or(template.clone(), str::to_string);
        let split = |list: &Option<String>| -> Option<Vec<String>> {
            list.as_ref().map(|l| {
                l.split(',')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
                    .collect()
            })
        };
        let mut record = serde_json::json!({
            "name": id.api_name,
            "version": id.version,
            "provider": id.provider_name.replace("-AT-", "@"),
            "context": context,
            "type": self.api_type.clone().unwrap_or_else(|| "HTTP".into()),
            "tags": self.tags,
            "tiers": self.available_tiers.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
            "isDefaultVersion": self.is_default_version,
            "responseCaching": self.response_cache.clone().unwrap_or_else(|| "Disabled".into()),
        });
        let mut set = |member: &str, value: Option<Value>| {
            if let Some(value) = value {
                record[member] = value;
            }
        };
        set("description", self.description.clone().map(Value::from));
        set("apiDefinition", swagger.map(Value::from));
        set(
            "endpointConfig",
            self.endpoint_config.clone().map(Value::from),
        );
        set("cacheTimeout", self.cache_timeout.map(Value::from));
        set(
            "apiLevelPolicy",
            self.api_level_policy.clone().map(Value::from),
        );
        set(
            "authorizationHeader",
            self.authorization_header.clone().map(Value::from),
        );
        set(
            "visibility",
            self.visibility
                .as_deref()
                .map(|v| Value::from(v.to_uppercase())),
        );
        set("visibleRoles", split(&self.visible_roles).map(Value::from));
        set(
            "visibleTenants",
            split(&self.visible_tenants).map(Value::from),
        );
        set("transport", split(&self.transports).map(Value::from));
        set(
            "subscriptionAvailability",
            self.subscription_availability.clone().map(Value::from),
        );
        set(
            "subscriptionAvailableTenants",
            split(&self.subscription_available_tenants).map(Value::from),
        );
        set("corsConfiguration", self.cors_configuration.clone());
        set(
            "accessControl",
            self.access_control.as_deref().map(|a| {
                Value::from(if a.eq_ignore_ascii_case("all") {
                    "NONE".into()
                } else {
                    a.to_uppercase()
                })
            }),
        );
        set(
            "accessControlRoles",
            split(&self.access_control_roles).map(Value::from),
        );
        if !self.environments.is_empty() {
            set(
                "gatewayEnvironments",
                Some(Value::from(self.environments.join(","))),
            );
        }
        if !self.additional_properties.is_empty() {
            set(
                "additionalProperties",
                Some(Value::Object(self.additional_properties.clone())),
            );
        }
        let owners = [
            ("businessOwner", &self.business_owner),
            ("businessOwnerEmail", &self.business_owner_email),
            ("technicalOwner", &self.technical_owner),
            ("technicalOwnerEmail", &self.technical_owner_email),
        ];
        if owners.iter().any(|(_, v)| v.is_some()) {
            let mut business = Map::new();
            for (name, value) in owners {
                if let Some(value) = value {
                    business.insert(name.into(), Value::from(value.clone()));
                }
            }
            set("businessInformation", Some(Value::Object(business)));
        }
        let tps = |n: &Option<String>| n.as_deref().and_then(|n| n.trim().parse::<i64>().ok());
        let (production, sandbox) = (tps(&self.production_max_tps), tps(&self.sandbox_max_tps));
        if production.is_some() || sandbox.is_some() {
            set(
                "maxTps",
                Some(serde_json::json!({"production": production, "sandbox": sandbox})),
            );
        }
        let sequences: Vec<Value> = [
            ("in", &self.in_sequence),
            ("out", &self.out_sequence),
            ("fault", &self.fault_sequence),
        ]
        .into_iter()
        .filter_map(|(flow, name)| {
            name.as_ref()
                .map(|name| serde_json::json!({"name": name, "type": flow}))
        })
        .collect();
        set("sequences", Some(Value::from(sequences)));
        if self.endpoint_secured {
            // WSO2's exports never carry the password: the username comes across, and the
            // password is set anew.
            let kind = if self.endpoint_auth_digest {
                "digest"
            } else {
                "basic"
            };
            let mut security = serde_json::json!({"type": kind});
            if let Some(username) = &self.endpoint_ut_username {
                security["username"] = Value::from(username.clone());
            }
            set("endpointSecurity", Some(security));
            not_taken.push("endpointUTPassword".into());
        }
        if self
            .implementation
            .as_deref()
            .is_some_and(|i| !i.eq_ignore_ascii_case("ENDPOINT"))
        {
            not_taken.push("implementation".into());
        }
        not_taken.sort();
        (record, not_taken)
    }
}

/// A document in `Docs/docs.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `HOWTO`, `SAMPLES`, `PUBLIC_FORUM`, `SUPPORT_FORUM`, `API_MESSAGE_FORMAT`,
    /// `SWAGGER_DOC`, `OTHER`.
    #[serde(rename = "type")]
    pub doc_type: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// `INLINE`, `MARKDOWN` (both with their content under `Docs/InlineContents/`), `URL`,
    /// `FILE`.
    pub source_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    /// A `FILE` document's file under `Docs/FileContents/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_type_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_aliases_are_refused_and_plain_yaml_taken() {
        let bomb = "a: &x [0, 0, 0]\nb: [*x, *x, *x]\n";
        assert!(check_plain_yaml(bomb).is_err());
        assert!(check_plain_yaml("- &first one\n- *first\n").is_err());
        for plain in [
            "description: R&D *and* more\n",
            "name: 'a *quoted* &thing'\n",
            "text: \"*x\"\n",
            "# a comment with *x and &y\nname: Pets\n",
            "glob: a*b\n",
        ] {
            assert_eq!(check_plain_yaml(plain), Ok(()), "{plain}");
        }
    }

    #[test]
    fn what_a_wso2_export_carries_beyond_the_record_is_named() {
        let exported = serde_json::json!({
            "id": {"providerName": "admin", "apiName": "PizzaShackAPI", "version": "1.0.0"},
            "context": "/pizzashack/1.0.0", "contextTemplate": "/pizzashack/{version}",
            "uriTemplates": [], "isLatest": true, "rating": 0.0,
            "wsdlArchivePath": "x", "gatewayLabels": [], "implementation": "INLINE"
        });
        let model: ApiJson = serde_json::from_value(exported).unwrap();
        let (record, not_taken) = model.to_record(None);
        assert_eq!(record["context"], "/pizzashack");
        assert_eq!(
            not_taken,
            vec!["gatewayLabels", "implementation", "wsdlArchivePath"]
        );
    }
}
