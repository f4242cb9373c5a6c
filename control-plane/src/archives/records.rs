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
            subscription_availability: record
                .subscription_availability
                .as_deref()
                .map(str::to_lowercase),
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
