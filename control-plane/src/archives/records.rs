//! WSO2 2.6's model of an API as its export writes it (`Meta-information/api.json`: Gson
//! of `org.wso2.carbon.apimgt.api.model.API`, absent fields left out), and of a document
//! (`Docs/docs.json`), made from our records.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::apis::records::ApiRecord;

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

/// WSO2's form of a provider's name in a project: a tenant's `@` as `-AT-`.
pub fn provider_in_project(provider: &str) -> String {
    provider.replace('@', "-AT-")
}

/// The REST API's `accessControl` (`NONE`, `RESTRICTED`) as WSO2's model has it (`all`,
/// `restricted`).
fn access_control_in_model(rest: &str) -> String {
    if rest.eq_ignore_ascii_case("NONE") {
        "all".into()
    } else {
        rest.to_lowercase()
    }
}

/// A list as WSO2's model keeps it: comma-separated, none when empty.
fn joined(list: Option<&Vec<String>>) -> Option<String> {
    list.filter(|l| !l.is_empty()).map(|l| l.join(","))
}

fn text_of(value: Option<&Value>, member: &str) -> Option<String> {
    value?.get(member)?.as_str().map(str::to_string)
}

impl ApiJson {
    /// WSO2's model of an API whose record is `record` (as the publisher answers it,
    /// its backend password masked): the password itself never goes in.
    pub fn of_record(record: &ApiRecord) -> Self {
        let name = record.name.clone().unwrap_or_default();
        let version = record.version.clone().unwrap_or_default();
        let provider = record.provider.clone().unwrap_or_default();
        let context = record.context.clone().unwrap_or_default();
        let template = if context.contains("{version}") {
            context.clone()
        } else {
            format!("{}/{{version}}", context.trim_end_matches('/'))
        };
        let sequence = |flow: &str| {
            record
                .sequence_names()
                .into_iter()
                .find(|(_, f)| f == flow)
                .map(|(n, _)| n)
        };
        let security = record.backend_security();
        let business = record.business_information.as_ref();
        let max_tps = record.max_tps_limits();
        ApiJson {
            id: Some(ApiIdentifier {
                provider_name: provider_in_project(&provider),
                api_name: name,
                version: version.clone(),
            }),
            uuid: record.id.clone(),
            description: record.description.clone(),
            api_type: Some(
                record
                    .api_type
                    .clone()
                    .unwrap_or_else(|| "HTTP".into())
                    .to_uppercase(),
            ),
            context: Some(template.replace("{version}", &version)),
            context_template: Some(template),
            tags: record.tags.clone().unwrap_or_default(),
            documents: Vec::new(),
            available_tiers: (record.tiers.clone().unwrap_or_default())
                .into_iter()
                .map(|name| TierName {
                    display_name: Some(name.clone()),
                    name,
                })
                .collect(),
            api_level_policy: record.api_level_policy.clone(),
            status: record.status.clone(),
            technical_owner: text_of(business, "technicalOwner"),
            technical_owner_email: text_of(business, "technicalOwnerEmail"),
            business_owner: text_of(business, "businessOwner"),
            business_owner_email: text_of(business, "businessOwnerEmail"),
            production_max_tps: max_tps
                .as_ref()
                .and_then(|m| m.production)
                .map(|n| n.to_string()),
            sandbox_max_tps: max_tps
                .as_ref()
                .and_then(|m| m.sandbox)
                .map(|n| n.to_string()),
            visibility: record.visibility.as_deref().map(str::to_lowercase),
            visible_roles: joined(record.visible_roles.as_ref()),
            visible_tenants: joined(record.visible_tenants.as_ref()),
            endpoint_secured: security.is_some(),
            endpoint_auth_digest: security
                .as_ref()
                .and_then(|s| s.security_type.as_deref())
                .is_some_and(|t| t.eq_ignore_ascii_case("digest")),
            endpoint_ut_username: security.as_ref().and_then(|s| s.username.clone()),
            endpoint_ut_password: security.as_ref().map(|_| String::new()),
            transports: joined(record.transport.as_ref()),
            in_sequence: sequence("in"),
            out_sequence: sequence("out"),
            fault_sequence: sequence("fault"),
            // WSO2's model always says it; an API that does not is its tenant's alone.
            subscription_availability: Some(
                record
                    .subscription_availability
                    .as_deref()
                    .unwrap_or("current_tenant")
                    .to_lowercase(),
            ),
            subscription_available_tenants: joined(record.subscription_available_tenants.as_ref()),
            cors_configuration: record.cors_configuration.clone(),
            endpoint_config: record.endpoint_config.clone(),
            response_cache: Some(
                if record
                    .response_caching
                    .as_deref()
                    .is_some_and(|c| c.eq_ignore_ascii_case("enabled"))
                {
                    "Enabled".into()
                } else {
                    "Disabled".into()
                },
            ),
            cache_timeout: record.cache_timeout,
            implementation: Some("ENDPOINT".into()),
            authorization_header: record.authorization_header.clone(),
            scopes: Vec::new(),
            is_default_version: record.is_default_version.unwrap_or(false),
            is_published_default_version: false,
            environments: record
                .gateway_environments
                .as_deref()
                .map(|e| {
                    e.split(',')
                        .map(str::trim)
                        .filter(|e| !e.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            additional_properties: record.additional_properties.clone().unwrap_or_default(),
            access_control: record
                .access_control
                .as_deref()
                .map(access_control_in_model),
            access_control_roles: joined(record.access_control_roles.as_ref()),
            other: Map::new(),
        }
    }
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

    fn record() -> ApiRecord {
        serde_json::from_value(serde_json::json!({
            "name": "Pets", "version": "1.0.0", "provider": "ann@acme.com",
            "context": "/t/acme.com/pets", "type": "HTTP", "tags": ["pets"],
            "tiers": ["Gold", "Unlimited"], "visibility": "RESTRICTED",
            "visibleRoles": ["a", "b"], "transport": ["http", "https"],
            "endpointConfig": "{\"endpoint_type\":\"http\"}", "responseCaching": "Enabled",
            "cacheTimeout": 60, "isDefaultVersion": true, "accessControl": "NONE",
            "gatewayEnvironments": "Production and Sandbox",
            "sequences": [{"name": "add_header", "type": "in"}],
            "maxTps": {"production": 100, "sandbox": 10},
            "businessInformation": {"businessOwner": "Jane"},
            "endpointSecurity": {"type": "basic", "username": "svc", "password": "pw"}
        }))
        .unwrap()
    }

    #[test]
    fn wso2s_model_says_what_the_record_says() {
        let model = ApiJson::of_record(&record());
        let json = serde_json::to_value(&model).unwrap();
        assert_eq!(json["id"]["providerName"], "ann-AT-acme.com");
        assert_eq!(json["context"], "/t/acme.com/pets/1.0.0");
        assert_eq!(json["contextTemplate"], "/t/acme.com/pets/{version}");
        assert_eq!(json["visibleRoles"], "a,b");
        assert_eq!(json["productionMaxTps"], "100");
        assert_eq!(json["responseCache"], "Enabled");
        assert_eq!(json["endpointUTPassword"], "");
        assert!(!json.to_string().contains("\"pw\""));
    }

    #[test]
    fn the_record_comes_back_from_wso2s_model() {
        let model = ApiJson::of_record(&record());
        let (back, not_taken) = model.to_record(Some("{\"swagger\":\"2.0\"}"));
        assert_eq!(back["provider"], "ann@acme.com");
        assert_eq!(back["context"], "/t/acme.com/pets");
        assert_eq!(back["visibility"], "RESTRICTED");
        assert_eq!(back["visibleRoles"], serde_json::json!(["a", "b"]));
        assert_eq!(
            back["maxTps"],
            serde_json::json!({"production": 100, "sandbox": 10})
        );
        assert_eq!(back["accessControl"], "NONE");
        assert_eq!(
            back["sequences"],
            serde_json::json!([{"name": "add_header", "type": "in"}])
        );
        assert_eq!(back["apiDefinition"], "{\"swagger\":\"2.0\"}");
        assert_eq!(
            back["endpointSecurity"],
            serde_json::json!({"type": "basic", "username": "svc"})
        );
        assert_eq!(not_taken, vec!["endpointUTPassword".to_string()]);
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
