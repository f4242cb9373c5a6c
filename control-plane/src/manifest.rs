//! Compiles everything gateways need into a route manifest (apim-manifest), signed as a
//! compact JWS with the control plane's manifest key.

use std::collections::BTreeMap;

use anyhow::Context;
use apim_manifest::{
    ApiRoute, ApiState, ApplicationEntry, AuthType, Cors, Manifest, MaxTps, Operation,
    RevokedToken, SubscriptionEntry, Tiers, TokenKey, compile_template, specificity,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::jwk::AlgorithmParameters;
use jsonwebtoken::{Algorithm, Header};
use serde_json::Value;
use sqlx::AnyPool;

use crate::apis::{self, ApiRecord, CorsConfiguration, EndpointSecurity, METHODS};
use crate::keys::KeyRing;
use crate::tiers::{self, TierLevel, UNLIMITED};

/// Compiles the current state of the database into a manifest with the next version.
pub async fn compile(db: &AnyPool, token_keys: &KeyRing, issuer: &str) -> anyhow::Result<Manifest> {
    let version = next_version(db).await?;
    Ok(Manifest {
        version,
        issued_at: crate::db::now(),
        token_issuer: issuer.to_string(),
        token_keys: public_keys(token_keys),
        apis: api_routes(db).await?,
        applications: applications(db).await?,
        subscriptions: subscriptions(db).await?,
        revoked_tokens: revoked_tokens(db).await?,
        tiers: tier_limits(),
    })
}

/// Signs a manifest with the active manifest key (EdDSA, the key id in the header).
pub fn sign(manifest_keys: &KeyRing, manifest: &Manifest) -> anyhow::Result<String> {
    let key = manifest_keys.active();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(key.kid.clone());
    header.typ = Some("apim-manifest+jwt".into());
    jsonwebtoken::encode(&header, manifest, &key.encoding).context("could not sign the manifest")
}

async fn next_version(db: &AnyPool) -> anyhow::Result<u64> {
    let mut tx = db.begin().await?;
    // language=SQL
    sqlx::query("UPDATE manifest_state SET version = version + 1 WHERE id = 1")
        .execute(&mut *tx)
        .await?;
    // language=SQL
    let (version,): (i64,) = sqlx::query_as("SELECT version FROM manifest_state WHERE id = 1")
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(version as u64)
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

async fn api_routes(db: &AnyPool) -> anyhow::Result<Vec<ApiRoute>> {
    // language=SQL
    let rows: Vec<(String, String, String, String, String, String)> =
        sqlx::query_as("SELECT id, name, version, context, status, record FROM apis ORDER BY id")
            .fetch_all(db)
            .await?;
    let mut routes = Vec::new();
    for (id, name, version, context, status, record) in rows {
        let Some(state) = ApiState::deployed(&status) else {
            continue;
        };
        let record: ApiRecord = serde_json::from_str(&record)
            .with_context(|| format!("stored record of API {id} is unreadable"))?;
        routes.push(api_route(id, name, version, context, state, &record));
    }
    Ok(routes)
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
        environments: record
            .gateway_environments
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect(),
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

async fn applications(db: &AnyPool) -> sqlx::Result<Vec<ApplicationEntry>> {
    // language=SQL
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT id, throttling_tier FROM applications ORDER BY id")
            .fetch_all(db)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(id, tier)| ApplicationEntry { id, tier })
        .collect())
}

async fn subscriptions(db: &AnyPool) -> sqlx::Result<Vec<SubscriptionEntry>> {
    // language=SQL
    let rows: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT application_id, api_id, tier, status FROM subscriptions ORDER BY application_id, api_id",
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(application_id, api_id, tier, status)| SubscriptionEntry {
            application_id,
            api_id,
            tier,
            status,
        })
        .collect())
}

async fn revoked_tokens(db: &AnyPool) -> sqlx::Result<Vec<RevokedToken>> {
    // language=SQL
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT jti, expires_at FROM revoked_tokens WHERE expires_at > $1 ORDER BY jti",
    )
    .bind(crate::db::now())
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(jti, exp)| RevokedToken { jti, exp })
        .collect())
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
