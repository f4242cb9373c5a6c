//! The rules of an API record: its fields' validation, the backend password's sealing,
//! and the checks on the swagger definition, context and endpoint configuration.

use std::net::{IpAddr, SocketAddr};

use apim_http::egress::EgressPolicy;
use apim_http::endpoints::Endpoints;
use apim_manifest::bounds::{
    MAX_CONTEXT_BYTES, MAX_OPERATIONS_PER_API, MAX_PATH_TEMPLATE_BYTES, MAX_PATHS_PER_API,
};
use serde_json::Value;

use super::records::{
    ApiRecord, BusinessInformation, CorsConfiguration, EndpointSecurity, MASKED_PASSWORD, MaxTps,
    Sequence, typed,
};
use crate::error::Error;
use crate::secrets::{DataKeys, Field};

/// Characters WSO2 refuses in API names and versions.
const FORBIDDEN_NAME_CHARS: &str = "~!@#;:%^*()+={}|\\<>\"',&$/[]?";

/// HTTP methods a swagger path item may define.
pub const METHODS: &[&str] = &["get", "put", "post", "delete", "patch", "head", "options"];

/// Every operation of a Swagger document: each path item's template, method (lower-case)
/// and operation object.
pub fn swagger_operations(doc: &Value) -> impl Iterator<Item = (&String, &str, &Value)> {
    doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(template, item)| {
            METHODS
                .iter()
                .filter_map(move |method| Some((template, *method, item.get(*method)?)))
        })
}

/// Values of an operation's `x-auth-type`.
pub const AUTH_TYPES: &[&str] = &[
    "None",
    "Application",
    "Application User",
    "Application & Application User",
    "Any",
];

impl ApiRecord {
    /// Takes what WSO2 2.6 takes as it reads it: endpoint URLs padded with white space
    /// ([`Self::trim_endpoint_urls`]) and a definition with the commas or colons
    /// json-simple forgives ([`super::swagger_json`]).
    pub fn read_as_wso2_does(&mut self) {
        self.trim_endpoint_urls();
        self.api_definition = self
            .api_definition
            .take()
            .map(super::swagger_json::forgiven);
    }

    /// Trims the white space around each endpoint URL of `endpointConfig`, as WSO2's
    /// gateway does with an address endpoint's URI (Synapse's `AddressEndpointFactory`):
    /// WSO2 2.6 accepts `" http://host/path"`. The rest of the config is kept as sent
    /// unless a URL changed; a config that is not JSON is left for [`Self::validate`].
    pub fn trim_endpoint_urls(&mut self) {
        let Some(config) = self.endpoint_config.as_deref() else {
            return;
        };
        let Ok(mut doc) = serde_json::from_str::<Value>(config) else {
            return;
        };
        let mut trimmed = false;
        for key in [
            "production_endpoints",
            "sandbox_endpoints",
            "production_failovers",
            "sandbox_failovers",
        ] {
            // `get_mut`, not indexing: a config that is JSON but not an object is left for
            // validation to refuse.
            let endpoints = match doc.get_mut(key) {
                Some(Value::Array(list)) => list.iter_mut().collect::<Vec<_>>(),
                Some(endpoint @ Value::Object(_)) => vec![endpoint],
                _ => Vec::new(),
            };
            for endpoint in endpoints {
                if let Some(Value::String(url)) = endpoint.get_mut("url")
                    && url.trim() != url
                {
                    *url = url.trim().to_string();
                    trimmed = true;
                }
            }
        }
        if trimmed {
            self.endpoint_config = Some(doc.to_string());
        }
    }

    /// Checks a record for create or update; the first problem found, in WSO2's words.
    pub fn validate(&self) -> Result<(), Error> {
        self.check_required()?;
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        check_name("name", &text(&self.name))?;
        check_name("version", &text(&self.version))?;
        check_context(&text(&self.context))?;
        self.check_tiers()?;
        check_enum(
            "visibility",
            self.visibility.as_deref(),
            &["PUBLIC", "PRIVATE", "RESTRICTED", "CONTROLLED"],
        )?;
        check_enum("type", self.api_type.as_deref(), &["HTTP", "WS"])?;
        check_enum(
            "responseCaching",
            self.response_caching.as_deref(),
            &["Enabled", "Disabled"],
        )?;
        check_enum(
            "subscriptionAvailability",
            self.subscription_availability.as_deref(),
            &["current_tenant", "all_tenants", "specific_tenants"],
        )?;
        check_enum(
            "accessControl",
            self.access_control.as_deref(),
            &["NONE", "RESTRICTED"],
        )?;
        let security: Option<EndpointSecurity> =
            typed("endpointSecurity", &self.endpoint_security)?;
        typed::<Vec<Sequence>>("sequences", &self.sequences)?;
        typed::<BusinessInformation>("businessInformation", &self.business_information)?;
        typed::<CorsConfiguration>("corsConfiguration", &self.cors_configuration)?;
        if let Some(security) = security {
            check_enum(
                "endpointSecurity.type",
                security.security_type.as_deref(),
                &["basic", "digest"],
            )?;
        }
        for transport in self.transport.iter().flatten() {
            check_enum("transport", Some(transport), &["http", "https"])?;
        }
        if self.transport.as_ref().is_some_and(Vec::is_empty) {
            return Err(Error::Invalid(
                "At least one transport (http or https) is required".into(),
            ));
        }
        if self.cache_timeout.is_some_and(|t| t < 0) {
            return Err(Error::Invalid("cacheTimeout must not be negative".into()));
        }
        if let Some(tps) = typed::<MaxTps>("maxTps", &self.max_tps)?
            && (tps.production.is_some_and(|t| t < 0) || tps.sandbox.is_some_and(|t| t < 0))
        {
            return Err(Error::Invalid("maxTps values must not be negative".into()));
        }
        validate_swagger(&text(&self.api_definition)).map_err(Error::Invalid)?;
        let websocket = self.api_type.as_deref() == Some("WS");
        validate_endpoint_config(&text(&self.endpoint_config), websocket)
            .map_err(Error::Invalid)?;
        Ok(())
    }

    /// The required properties WSO2's bean validation refuses when null; `tiers` is not
    /// among them (WSO2 says "No tier defined for the API", [`Self::check_tiers`]), and
    /// absent `type`, `isDefaultVersion`, `transport` and `visibility` got their defaults
    /// when the record was read.
    fn check_required(&self) -> Result<(), Error> {
        let present = [
            (
                "name",
                self.name.as_ref().is_some_and(|v| !v.trim().is_empty()),
            ),
            (
                "context",
                self.context.as_ref().is_some_and(|v| !v.trim().is_empty()),
            ),
            (
                "version",
                self.version.as_ref().is_some_and(|v| !v.trim().is_empty()),
            ),
            ("isDefaultVersion", self.is_default_version.is_some()),
            ("transport", self.transport.is_some()),
            ("endpointConfig", self.endpoint_config.is_some()),
            ("visibility", self.visibility.is_some()),
            ("type", self.api_type.is_some()),
            ("apiDefinition", self.api_definition.is_some()),
        ];
        let missing: Vec<(String, String)> = present
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(name, _)| (name.to_string(), "may not be null".to_string()))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::InvalidFields(missing))
        }
    }

    /// An API offers at least one tier; which tiers exist is the tenant's (see
    /// `checks::check_tiers_exist`).
    fn check_tiers(&self) -> Result<(), Error> {
        if self.tiers.as_deref().unwrap_or_default().is_empty() {
            return Err(Error::Invalid("No tier defined for the API".into()));
        }
        Ok(())
    }
}

impl ApiRecord {
    /// Encrypts the backend password of a record about to be stored for API `api_id`;
    /// [`MASKED_PASSWORD`] keeps the one `stored` has (refused when it has none).
    pub fn seal_backend_password(
        &mut self,
        keys: &DataKeys,
        api_id: &str,
        stored: Option<&ApiRecord>,
    ) -> Result<(), Error> {
        let Some(given) = self.stored_backend_password() else {
            return Ok(());
        };
        let sealed = if given == MASKED_PASSWORD {
            stored
                .and_then(ApiRecord::stored_backend_password)
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "endpointSecurity.password '{MASKED_PASSWORD}' keeps the stored password, and there is none: send the password"
                    ))
                })?
        } else {
            keys.seal(Field::BackendPassword, api_id, &given)
        };
        self.set_backend_password(sealed);
        Ok(())
    }
}

fn check_name(property: &str, value: &str) -> Result<(), Error> {
    if value != value.trim() {
        return Err(Error::Invalid(format!(
            "The API {property} must not start or end with spaces"
        )));
    }
    if value.len() > 60 {
        return Err(Error::Invalid(format!(
            "The API {property} must not be longer than 60 characters"
        )));
    }
    if let Some(c) = value
        .chars()
        .find(|c| FORBIDDEN_NAME_CHARS.contains(*c) || c.is_control())
    {
        return Err(Error::Invalid(format!(
            "The API {property} contains the illegal character '{c}'"
        )));
    }
    Ok(())
}

fn check_context(context: &str) -> Result<(), Error> {
    check_context_length(context).map_err(Error::Invalid)?;
    if context.ends_with('/') {
        return Err(Error::Invalid(
            "Context cannot end with '/' character".into(),
        ));
    }
    if context.contains(|c: char| c.is_whitespace() || "?#%\\".contains(c))
        || context.contains("//")
    {
        return Err(Error::Invalid(format!(
            "Context {context} is not a valid URL path"
        )));
    }
    Ok(())
}

/// A context within [`MAX_CONTEXT_BYTES`]: checked as given, and again as stored (tenants'
/// under `/t/<domain>`), which is what gateways route on.
pub fn check_context_length(context: &str) -> Result<(), String> {
    if context.len() > MAX_CONTEXT_BYTES {
        return Err(format!(
            "Context is {} bytes long; at most {MAX_CONTEXT_BYTES} are allowed",
            context.len()
        ));
    }
    Ok(())
}

fn check_enum(property: &str, value: Option<&str>, allowed: &[&str]) -> Result<(), Error> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(Error::Invalid(format!(
            "Invalid value '{v}' for {property}; allowed values are {}",
            allowed.join(", ")
        ))),
        _ => Ok(()),
    }
}

/// Refuses a context reaching into tenant space that is not the caller's: `/t/<domain>`
/// and everything under it belong to that tenant alone (gateways route `/t/<domain>/...`
/// to it), so a user of another tenant, or of the super tenant, may not claim it.
pub fn check_tenant_context(context: &str, tenant: &str) -> Result<(), String> {
    let mut segments = context.trim_start_matches('/').split('/');
    if !segments
        .next()
        .is_some_and(|first| first.eq_ignore_ascii_case("t"))
    {
        return Ok(());
    }
    let domain = segments.next().unwrap_or_default();
    let rest = segments.next().unwrap_or_default();
    if tenant != crate::users::SUPER_TENANT && domain == tenant && !rest.is_empty() {
        return Ok(());
    }
    Err(format!(
        "Context {context} is reserved: /t/<domain>/... belongs to the tenant <domain>"
    ))
}

/// The context as stored: a leading `/` added, tenants' APIs under `/t/<domain>`.
pub fn normalise_context(context: &str, tenant: &str) -> String {
    let context = if context.starts_with('/') {
        context.to_string()
    } else {
        format!("/{context}")
    };
    if tenant == crate::users::SUPER_TENANT || context.starts_with(&format!("/t/{tenant}/")) {
        context
    } else {
        format!("/t/{tenant}{context}")
    }
}

/// Checks that a definition is a Swagger 2.0 JSON document whose `paths` define operations
/// the gateway can route, with known `x-auth-type` and `x-throttling-tier` values.
pub fn validate_swagger(definition: &str) -> Result<Value, String> {
    let doc: Value = serde_json::from_str(definition)
        .map_err(|e| format!("apiDefinition is not a valid JSON document: {e}"))?;
    let object = doc
        .as_object()
        .ok_or("apiDefinition must be a JSON object")?;
    if object.get("swagger").and_then(Value::as_str) != Some("2.0") {
        return Err("apiDefinition must be a Swagger 2.0 document (\"swagger\": \"2.0\")".into());
    }
    let paths = object
        .get("paths")
        .and_then(Value::as_object)
        .ok_or("apiDefinition must have a \"paths\" object")?;
    if paths.len() > MAX_PATHS_PER_API {
        return Err(format!(
            "apiDefinition has {} paths; at most {MAX_PATHS_PER_API} are allowed",
            paths.len()
        ));
    }
    let mut operations = 0;
    for (path, item) in paths {
        check_path(path)?;
        let item = item
            .as_object()
            .ok_or_else(|| format!("Path '{}' in apiDefinition must be an object", shown(path)))?;
        for (method, operation) in item.iter().filter(|(k, _)| METHODS.contains(&k.as_str())) {
            validate_operation(path, method, operation)?;
            operations += 1;
        }
    }
    if operations > MAX_OPERATIONS_PER_API {
        return Err(format!(
            "apiDefinition has {operations} operations; at most {MAX_OPERATIONS_PER_API} are allowed"
        ));
    }
    check_declared_scopes(&doc)?;
    Ok(doc)
}

/// Longest scope key an API may declare.
const MAX_SCOPE_KEY_CHARS: usize = 100;
/// Scopes an API may declare at most.
const MAX_DECLARED_SCOPES: usize = 100;

/// The scopes an API declares (`x-wso2-security.apim.x-wso2-scopes`) are tokens can
/// carry: each key a scope-token of RFC 6749 (printable ASCII but space, `"` and `\`),
/// declared once.
fn check_declared_scopes(doc: &Value) -> Result<(), String> {
    let declared = &doc["x-wso2-security"]["apim"]["x-wso2-scopes"];
    if declared.is_null() {
        return Ok(());
    }
    let scopes = declared
        .as_array()
        .ok_or("x-wso2-scopes in apiDefinition must be a list")?;
    if scopes.len() > MAX_DECLARED_SCOPES {
        return Err(format!(
            "apiDefinition declares {} scopes; at most {MAX_DECLARED_SCOPES} are allowed",
            scopes.len()
        ));
    }
    let mut keys = std::collections::HashSet::new();
    for scope in scopes {
        let key = scope["key"].as_str().unwrap_or_default().trim();
        let token_char = |c: char| c.is_ascii_graphic() && c != '"' && c != '\\';
        if key.is_empty()
            || key.chars().count() > MAX_SCOPE_KEY_CHARS
            || !key.chars().all(token_char)
        {
            return Err(format!(
                "Each scope's key must be 1 to {MAX_SCOPE_KEY_CHARS} printable ASCII characters without spaces, '\"' or '\\'"
            ));
        }
        if !keys.insert(key) {
            return Err(format!("The scope '{key}' is declared twice"));
        }
    }
    Ok(())
}

/// A path template gateways can route: starting with `/`, within
/// [`MAX_PATH_TEMPLATE_BYTES`].
fn check_path(path: &str) -> Result<(), String> {
    if path.len() > MAX_PATH_TEMPLATE_BYTES {
        return Err(format!(
            "Path '{}' in apiDefinition is {} bytes long; at most {MAX_PATH_TEMPLATE_BYTES} are allowed",
            shown(path),
            path.len()
        ));
    }
    if !path.starts_with('/') {
        return Err(format!(
            "Path '{path}' in apiDefinition must start with '/'"
        ));
    }
    Ok(())
}

/// Characters of a path quoted in an error at most: enough to find it, not the whole of
/// a path that is refused for its length.
const SHOWN_PATH_CHARS: usize = 64;

/// A path as quoted in an error, cut short with `...` past [`SHOWN_PATH_CHARS`].
fn shown(path: &str) -> String {
    match path.char_indices().nth(SHOWN_PATH_CHARS) {
        Some((end, _)) => format!("{}...", &path[..end]),
        None => path.to_string(),
    }
}

fn validate_operation(path: &str, method: &str, operation: &Value) -> Result<(), String> {
    let operation = operation
        .as_object()
        .ok_or_else(|| format!("Operation {method} {path} must be an object"))?;
    if let Some(auth) = operation.get("x-auth-type")
        && !auth.as_str().is_some_and(|a| AUTH_TYPES.contains(&a))
    {
        return Err(format!(
            "x-auth-type of {method} {path} must be one of: {}",
            AUTH_TYPES.join(", ")
        ));
    }
    // Whether the tier exists is the tenant's to say (checks::check_tiers_exist).
    if let Some(tier) = operation.get("x-throttling-tier")
        && !tier.is_string()
    {
        return Err(format!(
            "x-throttling-tier of {method} {path} is not a known resource tier"
        ));
    }
    Ok(())
}

/// Where published APIs' endpoints may point: where the gateways' egress policy allows,
/// and never this control plane's own listener.
#[derive(Debug, Clone)]
pub struct EndpointPolicy {
    /// The gateways' egress policy (`APIM_EGRESS_ALLOW`).
    pub egress: EgressPolicy,
    /// The management listener, as bound.
    pub listener: SocketAddr,
}

impl EndpointPolicy {
    /// Checks every endpoint URL of a (valid) `endpointConfig`; the first refused, in words.
    pub fn check(&self, endpoint_config: &str) -> Result<(), String> {
        let Ok(config) = serde_json::from_str::<Value>(endpoint_config) else {
            return Ok(());
        };
        // Every list, failovers included (a list that does not read is refused before).
        let endpoints = Endpoints::from_wso2(&config).unwrap_or_default();
        for url in endpoints.urls() {
            self.check_url(url)?;
        }
        Ok(())
    }

    fn check_url(&self, url: &str) -> Result<(), String> {
        if self.is_listener(url) {
            return Err(format!(
                "Endpoint '{url}' is the control plane's own listener"
            ));
        }
        self.egress.check_url(url).map_err(|denied| {
            format!("Endpoint '{url}' is not allowed by the egress policy: {denied}")
        })
    }

    /// Whether `url` names this listener (by its address, or loopback for a listener on
    /// loopback or every address).
    fn is_listener(&self, url: &str) -> bool {
        let Some((host, port)) = apim_http::egress::host_and_port(url) else {
            return false;
        };
        let ip = match host.parse::<IpAddr>() {
            Ok(ip) => ip,
            // The name of this machine reaches its loopback listeners.
            Err(_) if host == "localhost" => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            Err(_) => return false,
        };
        apim_http::egress::reaches_listener(ip, port, self.listener)
    }
}

/// Checks an `endpointConfig` string: a JSON object with `endpoint_type` and production
/// and/or sandbox endpoints, each `{url, config}` (or a list of them) with an http(s) URL,
/// or for a WebSocket API (`websocket`) a ws(s) URL.
pub fn validate_endpoint_config(config: &str, websocket: bool) -> Result<Value, String> {
    let doc: Value = serde_json::from_str(config)
        .map_err(|e| format!("endpointConfig is not a valid JSON document: {e}"))?;
    let object = doc
        .as_object()
        .ok_or("endpointConfig must be a JSON object")?;
    if !object.get("endpoint_type").is_some_and(Value::is_string) {
        return Err("endpointConfig must have an \"endpoint_type\"".into());
    }
    let mut found = false;
    for key in ["production_endpoints", "sandbox_endpoints"] {
        match object.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for endpoint in list {
                    check_endpoint(key, endpoint, websocket)?;
                }
                found |= !list.is_empty();
            }
            Some(endpoint) => {
                check_endpoint(key, endpoint, websocket)?;
                found = true;
            }
        }
    }
    for key in ["production_failovers", "sandbox_failovers"] {
        let endpoints = match doc.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list.iter().collect(),
            Some(endpoint) => vec![endpoint],
        };
        for endpoint in endpoints {
            check_endpoint(key, endpoint, websocket)?;
        }
    }
    // Endpoint types, bounds and each endpoint's settings.
    Endpoints::from_wso2(&doc)?;
    if found {
        Ok(doc)
    } else {
        Err("endpointConfig must define production_endpoints or sandbox_endpoints".into())
    }
}

/// One endpoint's URL: http(s) for an HTTP API; ws(s) for a WebSocket API, which WSO2
/// refuses otherwise with "Endpoint URLs should be valid web socket URLs".
fn check_endpoint(key: &str, endpoint: &Value, websocket: bool) -> Result<(), String> {
    let url = endpoint
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{key} in endpointConfig must have a \"url\""))?;
    let schemes: &[&str] = if websocket {
        &["ws://", "wss://"]
    } else {
        &["http://", "https://"]
    };
    let rest = schemes
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme))
        .ok_or_else(|| {
            if websocket {
                format!(
                    "Endpoint URLs should be valid web socket URLs: {key} url '{url}' must be a ws:// or wss:// URL"
                )
            } else {
                format!("{key} url '{url}' must be an http:// or https:// URL")
            }
        })?;
    if rest.is_empty() || rest.starts_with('/') || url.contains(char::is_whitespace) {
        return Err(format!("{key} url '{url}' has no host"));
    }
    Ok(())
}

/// The resource tiers a Swagger definition's operations name: `(method, path, tier)`.
pub fn resource_tiers(definition: &str) -> Vec<(String, String, String)> {
    let doc: Value = serde_json::from_str(definition).unwrap_or(Value::Null);
    let mut named = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in METHODS {
            if let Some(tier) = item[*method]["x-throttling-tier"].as_str() {
                named.push((method.to_string(), path.clone(), tier.to_string()));
            }
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    /// Spaces around an endpoint URL go, in lists and failover lists too; a config
    /// without any keeps its text, and one that is not JSON is left to validation.
    #[test]
    fn endpoint_urls_are_trimmed_and_nothing_else_changes() {
        let mut record = ApiRecord::default();
        let padded = r#"{"endpoint_type":"load_balance","production_endpoints":[{"url":" http://a/x "},{"url":"http://b/"}],"sandbox_endpoints":{"url":"\thttp://c/"},"production_failovers":[{"url":" http://d/"}],"sandbox_failovers":[{"url":"http://e/ "}]}"#;
        record.endpoint_config = Some(padded.into());
        record.trim_endpoint_urls();
        let trimmed: Value =
            serde_json::from_str(record.endpoint_config.as_deref().unwrap()).unwrap();
        assert_eq!(trimmed["production_endpoints"][0]["url"], "http://a/x");
        assert_eq!(trimmed["production_endpoints"][1]["url"], "http://b/");
        assert_eq!(trimmed["sandbox_endpoints"]["url"], "http://c/");
        assert_eq!(trimmed["production_failovers"][0]["url"], "http://d/");
        assert_eq!(trimmed["sandbox_failovers"][0]["url"], "http://e/");
        for kept in [
            r#"{"production_endpoints": {"url": "http://a/"}}"#,
            "not json {",
        ] {
            record.endpoint_config = Some(kept.into());
            record.trim_endpoint_urls();
            assert_eq!(record.endpoint_config.as_deref(), Some(kept));
        }
    }

    #[test]
    fn tenant_space_belongs_to_its_tenant() {
        for context in [
            "/t/acme.com/pay",
            "t/acme.com/pay",
            "/T/acme.com/x",
            "/t",
            "/t/acme.com",
        ] {
            assert!(
                check_tenant_context(context, crate::users::SUPER_TENANT).is_err(),
                "{context}"
            );
        }
        assert!(check_tenant_context("/t/other.org/pay", "acme.com").is_err());
        assert!(check_tenant_context("/t/acme.com", "acme.com").is_err());
        assert!(check_tenant_context("/t/acme.com/pay", "acme.com").is_ok());
        assert!(check_tenant_context("/pay", "acme.com").is_ok());
        assert!(check_tenant_context("/pay/t/acme.com", crate::users::SUPER_TENANT).is_ok());
        assert!(check_tenant_context("/tea", crate::users::SUPER_TENANT).is_ok());
    }

    #[test]
    fn endpoints_follow_the_egress_policy_and_never_name_this_listener() {
        let policy = |allow: &str| EndpointPolicy {
            egress: EgressPolicy::parse(allow).unwrap(),
            listener: "127.0.0.1:9763".parse().unwrap(),
        };
        let config = |url: &str| {
            serde_json::json!({
                "production_endpoints": {"url": url},
                "sandbox_endpoints": [{"url": "https://backend.example/"}],
                "endpoint_type": "http"
            })
            .to_string()
        };
        let open = policy("127.0.0.0/8, localhost");
        assert!(open.check(&config("http://127.0.0.1:8080/")).is_ok());
        assert!(open.check(&config("http://localhost:8080/")).is_ok());
        for url in [
            "http://127.0.0.1:9763/",
            "http://127.0.0.2:9763/internal",
            "http://localhost:9763/",
            "http://169.254.169.254/latest/meta-data/",
        ] {
            let refused = open.check(&config(url)).unwrap_err();
            assert!(refused.contains(url), "{refused}");
        }
        let closed = policy("");
        assert!(closed.check(&config("http://127.0.0.1:8080/")).is_err());
        assert!(closed.check(&config("http://10.1.2.3:8080/")).is_ok());
    }

    #[test]
    fn swagger_must_be_2_0_with_paths_and_known_extensions() {
        assert!(validate_swagger(r#"{"swagger":"2.0","paths":{"/a":{"get":{}}}}"#).is_ok());
        assert!(validate_swagger(r#"{"swagger":"2.0"}"#).is_err());
        assert!(validate_swagger(r#"{"openapi":"3.0.0","paths":{}}"#).is_err());
    }

    #[test]
    fn declared_scopes_are_scope_tokens_each_declared_once() {
        let with = |scopes: Value| {
            let doc = json!({"swagger": "2.0", "paths": {},
                "x-wso2-security": {"apim": {"x-wso2-scopes": scopes}}});
            validate_swagger(&doc.to_string())
        };
        assert!(with(json!([{"key": "pets:read", "name": "Read", "roles": "admin"}])).is_ok());
        assert!(with(json!([])).is_ok());
        for refused in [
            json!({"key": "a"}),
            json!([{"key": "two words"}]),
            json!([{"key": ""}]),
            json!([{"name": "no key"}]),
            json!([{"key": "quote\""}]),
            json!([{"key": "x".repeat(101)}]),
            json!([{"key": "a"}, {"key": " a "}]),
        ] {
            assert!(with(refused.clone()).is_err(), "{refused}");
        }
        assert!(validate_swagger("not json").is_err());
        assert!(
            validate_swagger(
                r#"{"swagger":"2.0","paths":{"/a":{"get":{"x-auth-type":"Nobody"}}}}"#
            )
            .is_err()
        );
        // Which resource tiers exist is the tenant's (checks::check_tiers_exist); here
        // only that the tier is a name.
        assert!(
            validate_swagger(r#"{"swagger":"2.0","paths":{"/a":{"get":{"x-throttling-tier":7}}}}"#)
                .is_err()
        );
        let named = r#"{"swagger":"2.0","paths":{"/a":{"get":{"x-throttling-tier":"Gold"}}}}"#;
        assert_eq!(
            resource_tiers(named),
            [("get".to_string(), "/a".to_string(), "Gold".to_string())]
        );
        assert!(validate_swagger(r#"{"swagger":"2.0","paths":{"/a":{"get":{"x-throttling-tier":"10KPerMin","x-auth-type":"None"}}}}"#).is_ok());
    }

    #[test]
    fn endpoint_config_needs_an_http_endpoint() {
        let ok = r#"{"production_endpoints":{"url":"http://localhost:8080/api","config":null},"sandbox_endpoints":null,"endpoint_type":"http"}"#;
        assert!(validate_endpoint_config(ok, false).is_ok());
        assert!(validate_endpoint_config(r#"{"endpoint_type":"http"}"#, false).is_err());
        assert!(
            validate_endpoint_config(
                r#"{"production_endpoints":{"url":"ftp://x"},"endpoint_type":"http"}"#,
                false
            )
            .is_err()
        );
        assert!(validate_endpoint_config("{", false).is_err());
    }

    #[test]
    fn websocket_apis_take_ws_endpoints_only() {
        let config = |url: &str| {
            serde_json::json!({
                "production_endpoints": {"url": url},
                "sandbox_endpoints": {"url": "wss://backend.example/chat"},
                "endpoint_type": "http"
            })
            .to_string()
        };
        assert!(validate_endpoint_config(&config("ws://localhost:8080/echo"), true).is_ok());
        let refused =
            validate_endpoint_config(&config("http://localhost:8080/"), true).unwrap_err();
        assert!(refused.contains("valid web socket URLs"), "{refused}");
        let refused = validate_endpoint_config(&config("ws://localhost:8080/"), false).unwrap_err();
        assert!(refused.contains("http:// or https://"), "{refused}");
        assert!(validate_endpoint_config(&config("ws:///x"), true).is_err());
        // The egress policy reads ws(s) URLs as it reads http(s) ones.
        let policy = EndpointPolicy {
            egress: EgressPolicy::parse("").unwrap(),
            listener: "127.0.0.1:9763".parse().unwrap(),
        };
        assert!(policy.check(&config("ws://10.1.2.3:8080/")).is_ok());
        assert!(policy.check(&config("ws://127.0.0.1:8080/")).is_err());
        assert!(policy.check(&config("ws://169.254.169.254/")).is_err());
    }

    #[test]
    fn contexts_are_normalised_per_tenant() {
        assert_eq!(normalise_context("pizza", "carbon.super"), "/pizza");
        assert_eq!(normalise_context("/pizza", "acme.com"), "/t/acme.com/pizza");
        assert_eq!(
            normalise_context("/t/acme.com/pizza", "acme.com"),
            "/t/acme.com/pizza"
        );
    }

    /// A swagger whose paths are `paths`, each with `methods`.
    fn swagger(paths: impl IntoIterator<Item = String>, methods: &[&str]) -> String {
        let item: Map<String, Value> = methods
            .iter()
            .map(|m| (m.to_string(), serde_json::json!({})))
            .collect();
        let paths: Map<String, Value> = paths
            .into_iter()
            .map(|p| (p, Value::Object(item.clone())))
            .collect();
        serde_json::json!({"swagger": "2.0", "paths": paths}).to_string()
    }

    #[test]
    fn swagger_within_the_bounds_only() {
        let long = format!("/{}", "a".repeat(200 * 1024));
        let why = validate_swagger(&swagger([long], METHODS)).unwrap_err();
        assert!(why.contains("bytes long; at most 1024"), "{why}");
        assert!(why.len() < 200, "the path is not quoted whole: {why}");
        let longest = format!("/{}", "a".repeat(MAX_PATH_TEMPLATE_BYTES - 1));
        assert!(validate_swagger(&swagger([longest], METHODS)).is_ok());

        let paths = |n: usize| (0..n).map(|i| format!("/r{i}"));
        let why = validate_swagger(&swagger(paths(MAX_PATHS_PER_API + 1), &["get"])).unwrap_err();
        assert!(why.contains("paths; at most"), "{why}");
        assert!(validate_swagger(&swagger(paths(MAX_PATHS_PER_API), &["get"])).is_ok());

        let operations = MAX_OPERATIONS_PER_API / 4 + 1;
        let four = ["get", "put", "post", "delete"];
        let why = validate_swagger(&swagger(paths(operations), &four)).unwrap_err();
        assert!(why.contains("operations; at most"), "{why}");
        assert!(validate_swagger(&swagger(paths(operations - 1), &four)).is_ok());
    }

    #[test]
    fn contexts_within_the_bound_only() {
        let context = format!("/{}", "c".repeat(MAX_CONTEXT_BYTES));
        assert!(matches!(check_context(&context), Err(Error::Invalid(m)) if m.contains("at most")));
        assert!(check_context(&context[..MAX_CONTEXT_BYTES]).is_ok());
    }
}
