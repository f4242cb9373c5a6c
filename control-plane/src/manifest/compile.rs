//! What gateways need, compiled from the database into manifest entries: all of it (at
//! start and periodically), or only what one change touched. API records are compiled
//! once per revision and kept, so that routes and the meta entry can be recomputed in
//! memory.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use anyhow::Context;
use apim_manifest::entries::json;
use apim_manifest::{
    ApiRoute, ApiState, Application, AuthType, Cors, EntriesBuilder, MaxTps, Meta, Operation,
    Revocation, RouteSource, Subscription, Tiers, TokenKey, compile_template, key, route_depth,
    route_table, specificity,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::jwk::AlgorithmParameters;
use serde_json::Value;
use sqlx::AnyPool;

use crate::apis::{self, ApiRecord, CorsConfiguration, EndpointSecurity, METHODS};
use crate::keys::KeyRing;
use crate::tiers::{self, TierLevel, UNLIMITED};

/// Changed APIs past which one scan of every record beats a query per API.
const BULK_FETCH: usize = 64;

/// A deployed API as compiled from one revision of its row.
struct CompiledApi {
    revision: i64,
    status: String,
    source: RouteSource,
    json: Arc<str>,
}

/// Deployed APIs compiled so far, by id.
#[derive(Default)]
pub struct ApiCache {
    apis: HashMap<String, CompiledApi>,
}

/// Entries computed by a compile, by key.
pub type Entries = BTreeMap<String, Arc<str>>;

/// Every entry the database's current state calls for.
pub async fn entries(
    db: &AnyPool,
    apis: &mut ApiCache,
    token_keys: &KeyRing,
    issuer: &str,
) -> anyhow::Result<Entries> {
    apis.refresh(db).await?;
    let mut builder = EntriesBuilder::default();
    for api in apis.apis.values() {
        builder.api(api.source.clone(), api.json.clone());
    }
    // language=SQL
    let applications: Vec<(String, String)> =
        sqlx::query_as("SELECT id, throttling_tier FROM applications")
            .fetch_all(db)
            .await?;
    for (id, tier) in applications {
        builder.application(&id, &Application { tier });
    }
    // language=SQL
    let subscriptions: Vec<(String, String, String, String)> =
        sqlx::query_as("SELECT application_id, api_id, tier, status FROM subscriptions")
            .fetch_all(db)
            .await?;
    for (application, api, tier, status) in subscriptions {
        builder.subscription(&application, &api, &Subscription { tier, status });
    }
    // language=SQL
    let revoked: Vec<(String, i64)> =
        sqlx::query_as("SELECT jti, expires_at FROM revoked_tokens WHERE expires_at > $1")
            .bind(crate::db::now())
            .fetch_all(db)
            .await?;
    for (jti, exp) in revoked {
        builder.revocation(&jti, &Revocation { exp });
    }
    Ok(builder.finish(meta(token_keys, issuer)))
}

/// The meta entry before its route depth is known.
fn meta(token_keys: &KeyRing, issuer: &str) -> Meta {
    Meta {
        token_issuer: issuer.to_string(),
        token_keys: public_keys(token_keys),
        tiers: tier_limits(),
        route_depth: 0,
    }
}

/// The meta entry, with the route depth of the APIs in `apis`.
pub fn meta_entry(apis: &ApiCache, token_keys: &KeyRing, issuer: &str) -> Arc<str> {
    let mut meta = meta(token_keys, issuer);
    meta.route_depth = route_depth(apis.apis.values().map(|api| &api.source));
    json(&meta)
}

/// An application's entry and its subscriptions' entries, as the database has them.
pub async fn application_entries(db: &AnyPool, id: &str) -> sqlx::Result<Entries> {
    let mut entries = Entries::new();
    // language=SQL
    let tier: Option<(String,)> =
        sqlx::query_as("SELECT throttling_tier FROM applications WHERE id = $1")
            .bind(id)
            .fetch_optional(db)
            .await?;
    if let Some((tier,)) = tier {
        entries.insert(key::application(id), json(&Application { tier }));
    }
    // language=SQL
    let subscriptions: Vec<(String, String, String)> =
        sqlx::query_as("SELECT api_id, tier, status FROM subscriptions WHERE application_id = $1")
            .bind(id)
            .fetch_all(db)
            .await?;
    for (api, tier, status) in subscriptions {
        entries.insert(
            key::subscription(id, &api),
            json(&Subscription { tier, status }),
        );
    }
    Ok(entries)
}

/// A subscription's entry, if it exists.
pub async fn subscription_entry(
    db: &AnyPool,
    application: &str,
    api: &str,
) -> sqlx::Result<Option<Arc<str>>> {
    // language=SQL
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT tier, status FROM subscriptions WHERE application_id = $1 AND api_id = $2",
    )
    .bind(application)
    .bind(api)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(tier, status)| json(&Subscription { tier, status })))
}

/// A revoked token's entry, while it has not expired.
pub async fn revocation_entry(db: &AnyPool, jti: &str) -> sqlx::Result<Option<Arc<str>>> {
    // language=SQL
    let row: Option<(i64,)> =
        sqlx::query_as("SELECT expires_at FROM revoked_tokens WHERE jti = $1 AND expires_at > $2")
            .bind(jti)
            .bind(crate::db::now())
            .fetch_optional(db)
            .await?;
    Ok(row.map(|(exp,)| json(&Revocation { exp })))
}

type ApiRow = (String, String, String, String, String, i64, String);

/// The columns of [`ApiRow`].
const API_COLUMNS: &str = "id, name, version, context, status, revision, record";

impl ApiCache {
    /// Deployed APIs compiled.
    pub fn deployed(&self) -> usize {
        self.apis.len()
    }

    /// A deployed API's entry.
    pub fn entry(&self, id: &str) -> Option<Arc<str>> {
        self.apis.get(id).map(|api| api.json.clone())
    }

    /// Where an API is routed, while deployed.
    pub fn prefixes(&self, id: &str) -> Vec<String> {
        self.apis
            .get(id)
            .map(|api| api.source.prefixes().collect())
            .unwrap_or_default()
    }

    /// The entry of a route prefix: every deployed API claiming it; `None` when none does.
    pub fn route_entry(&self, prefix: &str) -> Option<Arc<str>> {
        let claimants: Vec<&RouteSource> = self
            .apis
            .values()
            .map(|api| &api.source)
            .filter(|source| source.prefixes().any(|p| p == prefix))
            .collect();
        route_table(claimants).get(prefix).map(json)
    }

    /// Re-reads one API's row: compiled again if it changed, forgotten once no longer
    /// deployed.
    pub async fn refresh_one(&mut self, db: &AnyPool, id: &str) -> anyhow::Result<()> {
        // language=SQL
        let row: Option<ApiRow> =
            sqlx::query_as(&format!("SELECT {API_COLUMNS} FROM apis WHERE id = $1"))
                .bind(id)
                .fetch_optional(db)
                .await?;
        self.apis.remove(id);
        if let Some(row) = row {
            self.compile(row)?;
        }
        Ok(())
    }

    /// Drops APIs no longer deployed and compiles those whose row changed.
    async fn refresh(&mut self, db: &AnyPool) -> anyhow::Result<()> {
        // language=SQL
        let rows: Vec<(String, i64, String)> =
            sqlx::query_as("SELECT id, revision, status FROM apis")
                .fetch_all(db)
                .await?;
        let deployed: HashMap<String, (i64, String)> = rows
            .into_iter()
            .filter(|(_, _, status)| ApiState::deployed(status).is_some())
            .map(|(id, revision, status)| (id, (revision, status)))
            .collect();
        self.apis.retain(|id, api| {
            deployed.get(id).is_some_and(|(revision, status)| {
                *revision == api.revision && *status == api.status
            })
        });
        let stale: HashSet<String> = deployed
            .keys()
            .filter(|id| !self.apis.contains_key(*id))
            .cloned()
            .collect();
        if stale.len() > BULK_FETCH {
            // language=SQL
            let rows: Vec<ApiRow> = sqlx::query_as(&format!("SELECT {API_COLUMNS} FROM apis"))
                .fetch_all(db)
                .await?;
            for row in rows.into_iter().filter(|row| stale.contains(&row.0)) {
                self.compile(row)?;
            }
        } else {
            for id in &stale {
                self.refresh_one(db, id).await?;
            }
        }
        Ok(())
    }

    /// Compiles a row (as read now, which may be newer than a scan before), if deployed.
    fn compile(&mut self, row: ApiRow) -> anyhow::Result<()> {
        let (id, name, version, context, status, revision, record) = row;
        let Some(state) = ApiState::deployed(&status) else {
            return Ok(());
        };
        let record: ApiRecord = serde_json::from_str(&record)
            .with_context(|| format!("stored record of API {id} is unreadable"))?;
        let route = api_route(id.clone(), name, version, context, state, &record);
        let compiled = CompiledApi {
            revision,
            status,
            source: RouteSource {
                id: id.clone(),
                context: route.context.clone(),
                version: route.version.clone(),
                default_version: route.default_version,
                environments: environments(&record),
            },
            json: json(&route),
        };
        self.apis.insert(id, compiled);
        Ok(())
    }
}

fn public_keys(keys: &KeyRing) -> Vec<TokenKey> {
    keys.jwks()
        .keys
        .into_iter()
        .filter_map(|jwk| match jwk.algorithm {
            AlgorithmParameters::OctetKeyPair(okp) => Some(TokenKey {
                kid: jwk.common.key_id.unwrap_or_default(),
                x: okp.x,
            }),
            _ => None,
        })
        .collect()
}

/// `gatewayEnvironments`, split at commas.
fn environments(record: &ApiRecord) -> Vec<String> {
    record
        .gateway_environments
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

fn api_route(
    id: String,
    name: String,
    version: String,
    context: String,
    state: ApiState,
    record: &ApiRecord,
) -> ApiRoute {
    let endpoints: Value = record
        .endpoint_config
        .as_deref()
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or(Value::Null);
    ApiRoute {
        id,
        name,
        version,
        context,
        state,
        default_version: record.is_default_version.unwrap_or(false),
        operations: operations(record.api_definition.as_deref().unwrap_or("{}")),
        production_url: endpoint_url(&endpoints["production_endpoints"]),
        sandbox_url: endpoint_url(&endpoints["sandbox_endpoints"]),
        backend_authorization: record.backend_security().and_then(backend_authorization),
        max_tps: max_tps(record.max_tps_limits()),
        cors: record.cors().and_then(cors),
        cache_timeout_secs: (record.response_caching.as_deref() == Some("Enabled"))
            .then(|| record.cache_timeout.unwrap_or(300).max(0) as u64),
    }
}

/// The swagger's operations, most specific template first.
fn operations(definition: &str) -> Vec<Operation> {
    let doc: Value = serde_json::from_str(definition).unwrap_or(Value::Null);
    let mut operations = Vec::new();
    for (template, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in METHODS {
            let Some(operation) = item.get(*method) else {
                continue;
            };
            operations.push(Operation {
                method: method.to_ascii_uppercase(),
                template: template.clone(),
                segments: compile_template(template),
                auth: AuthType::from_swagger(operation["x-auth-type"].as_str()),
                throttling_tier: operation["x-throttling-tier"]
                    .as_str()
                    .filter(|t| *t != "Unlimited")
                    .map(str::to_string),
            });
        }
    }
    operations.sort_by_key(|op| specificity(&op.segments));
    operations
}

/// The URL of `{url, config}`, or of the first of a list of them.
fn endpoint_url(endpoint: &Value) -> Option<String> {
    let endpoint = match endpoint {
        Value::Array(list) => list.first()?,
        other => other,
    };
    endpoint["url"].as_str().map(str::to_string)
}

fn backend_authorization(security: EndpointSecurity) -> Option<String> {
    let user = security.username?;
    let password = security.password.unwrap_or_default();
    Some(format!(
        "Basic {}",
        STANDARD.encode(format!("{user}:{password}"))
    ))
}

fn max_tps(limits: Option<apis::MaxTps>) -> MaxTps {
    let positive = |t: Option<i64>| t.filter(|t| *t > 0).map(|t| t as u64);
    MaxTps {
        production: positive(limits.as_ref().and_then(|l| l.production)),
        sandbox: positive(limits.as_ref().and_then(|l| l.sandbox)),
    }
}

fn cors(config: CorsConfiguration) -> Option<Cors> {
    if config.cors_configuration_enabled != Some(true) {
        return None;
    }
    Some(Cors {
        allow_origins: config.access_control_allow_origins.unwrap_or_default(),
        allow_headers: config
            .access_control_allow_headers
            .unwrap_or_default()
            .join(","),
        allow_methods: config
            .access_control_allow_methods
            .unwrap_or_default()
            .join(","),
        allow_credentials: config.access_control_allow_credentials.unwrap_or(false),
    })
}

fn tier_limits() -> Tiers {
    let level = |level: TierLevel| -> BTreeMap<String, Option<u64>> {
        tiers::tiers(level)
            .iter()
            .map(|t| {
                let limit = (t.request_count < UNLIMITED).then_some(t.request_count as u64);
                (t.name.to_string(), limit)
            })
            .collect()
    };
    Tiers {
        subscription: level(TierLevel::Subscription),
        application: level(TierLevel::Application),
        resource: level(TierLevel::Resource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_compiled_most_specific_first() {
        let swagger = r#"{"swagger":"2.0","paths":{
            "/*":{"get":{}},
            "/devs/{u}":{"get":{"x-auth-type":"None"},"delete":{"x-throttling-tier":"10KPerMin"}},
            "/devs/{u}/repos":{"get":{"x-throttling-tier":"Unlimited"}}}}"#;
        let ops = operations(swagger);
        let order: Vec<(&str, &str)> = ops
            .iter()
            .map(|o| (o.method.as_str(), o.template.as_str()))
            .collect();
        assert_eq!(order[0], ("GET", "/devs/{u}/repos"));
        assert_eq!(order.last().unwrap(), &("GET", "/*"));
        let get = ops
            .iter()
            .find(|o| o.template == "/devs/{u}" && o.method == "GET")
            .unwrap();
        assert_eq!(get.auth, AuthType::None);
        let delete = ops.iter().find(|o| o.method == "DELETE").unwrap();
        assert_eq!(delete.throttling_tier.as_deref(), Some("10KPerMin"));
        assert_eq!(ops[0].throttling_tier, None);
    }

    #[test]
    fn endpoints_security_and_cors_are_precomputed() {
        let config: Value = serde_json::json!({"production_endpoints": [{"url": "http://a"}], "sandbox_endpoints": null});
        assert_eq!(
            endpoint_url(&config["production_endpoints"]).as_deref(),
            Some("http://a")
        );
        assert_eq!(endpoint_url(&config["sandbox_endpoints"]), None);
        let security = serde_json::json!({"type": "basic", "username": "u", "password": "p"});
        assert_eq!(
            backend_authorization(serde_json::from_value(security).unwrap()).as_deref(),
            Some("Basic dTpw")
        );
        let cors_config = serde_json::json!({"corsConfigurationEnabled": true, "accessControlAllowOrigins": ["*"],
            "accessControlAllowMethods": ["GET", "POST"], "accessControlAllowHeaders": ["authorization"]});
        let compiled = cors(serde_json::from_value(cors_config).unwrap()).unwrap();
        assert_eq!(compiled.allow_methods, "GET,POST");
        assert!(
            cors(
                serde_json::from_value(serde_json::json!({"corsConfigurationEnabled": false}))
                    .unwrap()
            )
            .is_none()
        );
        assert_eq!(tier_limits().subscription["Gold"], Some(5000));
        assert_eq!(tier_limits().application["Unlimited"], None);
    }
}
