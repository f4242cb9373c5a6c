//! The API record of the publisher (spec 2.3, WSO2's `APIDetailed`) and the `apis` row
//! that holds it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Error;

/// What `GET /apis/{id}` shows of a backend password (credentials are write-only, as in
/// later WSO2 versions); sent back in an update, it keeps the stored password.
pub const MASKED_PASSWORD: &str = "********";

/// An API record; every field is stored and returned as given. Nested objects are kept
/// as the JSON they came in (absent members stay absent) and checked against their
/// typed shapes below by [`ApiRecord::validate`]. Properties WSO2 2.6 fills in when a
/// client leaves them out get its values when absent (an explicit null stays null: WSO2
/// refuses it where it is required, and keeps it as given elsewhere); a stored record read
/// back gets them the same way.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiRecord {
    pub id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub context: Option<String>,
    pub version: Option<String>,
    pub provider: Option<String>,
    pub api_definition: Option<String>,
    pub wsdl_uri: Option<String>,
    pub status: Option<String>,
    pub thumbnail_uri: Option<String>,
    /// Absent: `Disabled`.
    #[serde(default = "caching_disabled")]
    pub response_caching: Option<String>,
    /// Absent: WSO2's `APIConstants.API_RESPONSE_CACHE_TIMEOUT`, 300 seconds.
    #[serde(default = "default_cache_timeout")]
    pub cache_timeout: Option<i64>,
    /// A boolean in the spec, a string ("Disabled") in WSO2's swagger: either is kept.
    pub destination_stats_enabled: Option<Value>,
    /// Absent: `false`, as WSO2's API model has it (an explicit null stays null, refused).
    #[serde(default = "not_default_version")]
    pub is_default_version: Option<bool>,
    /// WSO2's model fills in `HTTP` when the field is absent (an explicit null stays null).
    #[serde(rename = "type", default = "http_api_type")]
    pub api_type: Option<String>,
    /// Absent: `http` and `https`, as WSO2's `APIProviderImpl.validateAndSetTransports`.
    #[serde(default = "both_transports")]
    pub transport: Option<Vec<String>>,
    /// Absent: none.
    #[serde(default = "no_tags")]
    pub tags: Option<Vec<String>>,
    pub tiers: Option<Vec<String>>,
    pub api_level_policy: Option<String>,
    pub authorization_header: Option<String>,
    pub max_tps: Option<Value>,
    /// Absent: `PUBLIC`, what the store already took an API without visibility for.
    #[serde(default = "public_visibility")]
    pub visibility: Option<String>,
    pub visible_roles: Option<Vec<String>>,
    pub visible_tenants: Option<Vec<String>>,
    pub endpoint_config: Option<String>,
    pub endpoint_security: Option<Value>,
    pub gateway_environments: Option<String>,
    pub labels: Option<Vec<Value>>,
    pub sequences: Option<Value>,
    /// Absent: the API's own tenant, what the store already took no value for.
    #[serde(default = "current_tenant")]
    pub subscription_availability: Option<String>,
    pub subscription_available_tenants: Option<Vec<String>>,
    pub additional_properties: Option<Map<String, Value>>,
    /// Absent: `NONE`, no publisher access control.
    #[serde(default = "no_access_control")]
    pub access_control: Option<String>,
    pub access_control_roles: Option<Vec<String>>,
    pub business_information: Option<Value>,
    /// Absent: WSO2's default, switched off (`APIMappingUtil.fromDTOtoAPI` takes
    /// `APIUtil.getDefaultCorsConfiguration()`), so gateways answer no CORS for it.
    #[serde(default = "wso2_default_cors")]
    pub cors_configuration: Option<Value>,
}

fn http_api_type() -> Option<String> {
    Some("HTTP".into())
}

fn not_default_version() -> Option<bool> {
    Some(false)
}

fn both_transports() -> Option<Vec<String>> {
    Some(vec!["http".into(), "https".into()])
}

fn public_visibility() -> Option<String> {
    Some("PUBLIC".into())
}

fn caching_disabled() -> Option<String> {
    Some("Disabled".into())
}

/// `cacheTimeout` when none is given: WSO2's `APIConstants.API_RESPONSE_CACHE_TIMEOUT`.
pub const DEFAULT_CACHE_TIMEOUT: i64 = 300;

fn default_cache_timeout() -> Option<i64> {
    Some(DEFAULT_CACHE_TIMEOUT)
}

fn no_tags() -> Option<Vec<String>> {
    Some(Vec::new())
}

fn current_tenant() -> Option<String> {
    Some("current_tenant".into())
}

fn no_access_control() -> Option<String> {
    Some("NONE".into())
}

/// WSO2 2.6's `APIUtil.getDefaultCorsConfiguration()`: disabled, with the origins, headers
/// and methods of its stock `api-manager.xml` (`CORSConfiguration`), as its examples show.
fn wso2_default_cors() -> Option<Value> {
    Some(serde_json::json!({
        "corsConfigurationEnabled": false,
        "accessControlAllowOrigins": ["*"],
        "accessControlAllowCredentials": false,
        "accessControlAllowHeaders": [
            "authorization", "Access-Control-Allow-Origin", "Content-Type", "SOAPAction"
        ],
        "accessControlAllowMethods": ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"],
    }))
}

/// Per-environment transactions per second.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaxTps {
    pub production: Option<i64>,
    pub sandbox: Option<i64>,
}

/// Credentials the gateway sends to the backend.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSecurity {
    #[serde(rename = "type")]
    pub security_type: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
}

/// A mediation sequence reference.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sequence {
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub sequence_type: Option<String>,
    pub id: Option<String>,
    pub shared: Option<bool>,
    pub config: Option<Value>,
}

/// Owners of the API.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BusinessInformation {
    pub business_owner: Option<String>,
    pub business_owner_email: Option<String>,
    pub technical_owner: Option<String>,
    pub technical_owner_email: Option<String>,
}

/// CORS settings the gateway applies.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CorsConfiguration {
    pub cors_configuration_enabled: Option<bool>,
    pub access_control_allow_origins: Option<Vec<String>>,
    pub access_control_allow_credentials: Option<bool>,
    pub access_control_allow_headers: Option<Vec<String>>,
    pub access_control_allow_methods: Option<Vec<String>>,
}

impl ApiRecord {
    /// `maxTps` in its typed shape (none when absent; validated records always parse).
    pub fn max_tps_limits(&self) -> Option<MaxTps> {
        typed("maxTps", &self.max_tps).ok().flatten()
    }

    /// `endpointSecurity` in its typed shape.
    pub fn backend_security(&self) -> Option<EndpointSecurity> {
        typed("endpointSecurity", &self.endpoint_security)
            .ok()
            .flatten()
    }

    /// `sequences` as (name, type) pairs, in order (a part missing is empty text, which
    /// names no policy).
    pub fn sequence_names(&self) -> Vec<(String, String)> {
        typed::<Vec<Sequence>>("sequences", &self.sequences)
            .ok()
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .map(|s| {
                (
                    s.name.unwrap_or_default(),
                    s.sequence_type.unwrap_or_default(),
                )
            })
            .collect()
    }

    /// `corsConfiguration` in its typed shape.
    pub fn cors(&self) -> Option<CorsConfiguration> {
        typed("corsConfiguration", &self.cors_configuration)
            .ok()
            .flatten()
    }

    /// `apiDefinition` read as JSON; `null` when absent or unreadable (stored records are
    /// checked when written).
    pub fn definition(&self) -> Value {
        self.api_definition
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null)
    }
}

impl ApiRecord {
    /// `endpointSecurity.password` as stored (encrypted, or in clear from an earlier
    /// version); none when absent or empty.
    pub fn stored_backend_password(&self) -> Option<String> {
        self.endpoint_security
            .as_ref()?
            .get("password")?
            .as_str()
            .filter(|p| !p.is_empty())
            .map(str::to_string)
    }

    /// Replaces `endpointSecurity.password` (which [`Self::stored_backend_password`] found).
    pub fn set_backend_password(&mut self, password: String) {
        if let Some(Value::Object(security)) = &mut self.endpoint_security {
            security.insert("password".into(), Value::String(password));
        }
    }

    /// The record as answered: the backend password masked.
    pub fn masked(mut self) -> Self {
        if self.stored_backend_password().is_some() {
            self.set_backend_password(MASKED_PASSWORD.into());
        }
        self
    }
}

/// A nested member in its typed shape; a member of the wrong shape is refused.
pub(super) fn typed<T: serde::de::DeserializeOwned>(
    property: &str,
    value: &Option<Value>,
) -> Result<Option<T>, Error> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|e| Error::Invalid(format!("Invalid {property}: {e}"))),
    }
}

/// A row of `apis`: the indexed columns, the revision and the record as stored (JSON).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApiRow {
    pub id: String,
    pub tenant: String,
    pub provider: String,
    pub name: String,
    pub version: String,
    pub context: String,
    pub status: String,
    /// Bumped by every write of the row, so the compiler sees which changed.
    pub revision: i64,
    pub record: String,
    /// Its MCP server's settings (JSON), when its provider set them.
    pub mcp: Option<String>,
}

/// The columns of [`ApiRow`], in its order.
pub const API_COLUMNS: &str =
    "id, tenant, provider, name, version, context, status, revision, record, mcp";

/// An API as stored: indexed columns plus the record.
#[derive(Debug, Clone)]
pub struct StoredApi {
    pub id: String,
    pub tenant: String,
    pub provider: String,
    pub name: String,
    pub version: String,
    pub context: String,
    pub status: String,
    pub record: ApiRecord,
    /// Its MCP server's settings (JSON), when its provider set them.
    pub mcp: Option<String>,
}

impl TryFrom<ApiRow> for StoredApi {
    type Error = Error;

    fn try_from(row: ApiRow) -> Result<Self, Error> {
        let record = serde_json::from_str(&row.record)
            .map_err(|e| anyhow::anyhow!("stored record of API {} is unreadable: {e}", row.id))?;
        Ok(StoredApi {
            id: row.id,
            tenant: row.tenant,
            provider: row.provider,
            name: row.name,
            version: row.version,
            context: row.context,
            status: row.status,
            record,
            mcp: row.mcp,
        })
    }
}

impl StoredApi {
    /// `provider-name-version`, as subscriptions show the API (`@` kept, `-` in parts as %2D).
    pub fn identifier(&self) -> String {
        let part = |s: &str| s.replace('-', "%2D");
        format!(
            "{}-{}-{}",
            part(&self.provider),
            part(&self.name),
            part(&self.version)
        )
    }

    /// The record with the authoritative id and status.
    pub fn full_record(&self) -> ApiRecord {
        let mut record = self.record.clone();
        record.id = Some(self.id.clone());
        record.status = Some(self.status.clone());
        record
    }
}
