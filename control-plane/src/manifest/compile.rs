//! What gateways need, compiled from the database into manifest entries: all of it (at
//! start and periodically), or only what one change touched. API records are compiled
//! once per revision and kept, so that routes and the meta entry can be recomputed in
//! memory.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use anyhow::Context;
use apim_manifest::bounds::MAX_ENTRY_BYTES;
use apim_manifest::entries::json;
use apim_manifest::mediation::Mediation;
use apim_manifest::{
    ApiRoute, ApiState, ApiType, Application, AuthType, BackendJwt, EntriesBuilder, Meta,
    Operation, Revocation, RouteSource, Subscription, TenantTiers, Tiers, TokenKey, Transports,
    compile_template, key, route_table, specificity, websocket_operations,
};
use jsonwebtoken::jwk::AlgorithmParameters;
use serde_json::Value;
use sqlx::AnyPool;

use apim_manifest::sealed::GatewayKey;

use super::credentials::{Credentials, basic};
use super::route_parts::{cors, endpoint_lists, endpoint_url, max_tps};
use crate::apis::queries as apis;
use crate::apis::records::{ApiRecord, ApiRow};
use crate::apis::rules::swagger_operations;
use crate::mcp::records::McpSettings;
use crate::mediation::records::MediationRow;
use crate::mediation::{self, sequences};
use crate::signing::KeyRing;
use crate::subscriptions::{self, Grant};
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

/// Deployed APIs compiled so far, by id, with the APIs claiming each route prefix (so
/// that one API's change recomputes its routes without looking at every other API).
pub struct ApiCache {
    credentials: Credentials,
    apis: HashMap<String, CompiledApi>,
    routes: BTreeMap<String, BTreeSet<String>>,
    /// Deployed APIs left out for an entry past [`MAX_ENTRY_BYTES`], with the revision and
    /// status refused (compiled again only once either moves).
    refused: HashMap<String, (i64, String)>,
}

/// Entries computed by a compile, by key.
pub type Entries = BTreeMap<String, Arc<str>>;

/// Tenants' own tiers as gateways enforce them, by tenant domain.
pub type TenantRates = BTreeMap<String, TenantTiers>;

/// What the meta entry says besides the token keys, tiers and route depth: who issues the
/// tokens gateways take, and where clients reach the gateways.
#[derive(Debug, Clone, Default)]
pub struct MetaSettings {
    /// The `iss` of the tokens issued now.
    pub issuer: String,
    /// Issuers whose tokens still verify (tokens issued before the issuer changed).
    pub accepted_issuers: Vec<String>,
    /// The gateways' public base URLs: what tokens' audiences must name.
    pub gateway_urls: Vec<String>,
    /// WSO2's legacy throttling: operations' tiers are subscription tiers.
    pub legacy_throttling: bool,
    /// The backend JWT's sealed key and tenants, while any tenant has it on.
    pub backend_jwt: Option<BackendJwt>,
}

/// Every entry the database's current state calls for.
pub async fn entries(
    db: &AnyPool,
    apis: &mut ApiCache,
    token_keys: &KeyRing,
    settings: &MetaSettings,
    tenant_tiers: &TenantRates,
) -> anyhow::Result<Entries> {
    apis.refresh(db).await?;
    let mut builder = EntriesBuilder::default();
    for api in apis.apis.values() {
        builder.api(api.source.clone(), api.json.clone());
    }
    for row in crate::applications::queries::gateway_rows(db).await? {
        let (id, application) = gateway_application(row);
        builder.application(&id, &application);
    }
    for (application, api, tier, status) in subscriptions::all_grants(db).await? {
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
    let meta = meta(token_keys, settings, tenant_tiers);
    Ok(builder.finish(meta))
}

/// The meta entry before its route depth is known.
fn meta(token_keys: &KeyRing, settings: &MetaSettings, tenant_tiers: &TenantRates) -> Meta {
    Meta {
        token_issuer: settings.issuer.clone(),
        token_keys: public_keys(token_keys),
        tiers: tier_limits(),
        tenant_tiers: tenant_tiers.clone(),
        route_depth: 0,
        legacy_throttling: settings.legacy_throttling,
        accepted_issuers: settings.accepted_issuers.clone(),
        gateway_urls: settings.gateway_urls.clone(),
        backend_jwt: settings.backend_jwt.clone(),
    }
}

/// The meta entry, with the route depth of the APIs in `apis`.
pub fn meta_entry(
    apis: &ApiCache,
    token_keys: &KeyRing,
    settings: &MetaSettings,
    tenant_tiers: &TenantRates,
) -> Arc<str> {
    let mut meta = meta(token_keys, settings, tenant_tiers);
    meta.route_depth = apis.route_depth();
    json(&meta)
}

/// The entries of these applications (those that exist).
pub async fn application_entries(db: &AnyPool, ids: &[&str]) -> sqlx::Result<Entries> {
    let rows = crate::applications::queries::gateway_rows_of(db, ids).await?;
    Ok(rows
        .into_iter()
        .map(gateway_application)
        .map(|(id, application)| (key::application(&id), json(&application)))
        .collect())
}

/// An application's row as its entry has it.
fn gateway_application(
    (id, tier, name, owner): crate::applications::queries::GatewayRow,
) -> (String, Application) {
    (id, Application { tier, name, owner })
}

/// The entry of a subscription row.
fn subscription_entry((application, api, tier, status): Grant) -> (String, Arc<str>) {
    let subscription = Subscription { tier, status };
    (key::subscription(&application, &api), json(&subscription))
}

/// The entries of every subscription of these applications.
pub async fn subscriptions_of(db: &AnyPool, applications: &[&str]) -> sqlx::Result<Entries> {
    let rows = subscriptions::grants_of(db, applications).await?;
    Ok(rows.into_iter().map(subscription_entry).collect())
}

/// The entries of these subscriptions, by (application, API) (those that exist).
pub async fn subscription_entries(db: &AnyPool, pairs: &[(&str, &str)]) -> sqlx::Result<Entries> {
    let rows = subscriptions::grants(db, pairs).await?;
    Ok(rows.into_iter().map(subscription_entry).collect())
}

/// The entries of these revoked tokens, while they have not expired.
pub async fn revocation_entries(db: &AnyPool, jtis: &[&str]) -> sqlx::Result<Entries> {
    let rows = crate::tokens::queries::live_revocations(db, jtis).await?;
    Ok(rows
        .into_iter()
        .map(|(jti, exp)| (key::revocation(&jti), json(&Revocation { exp })))
        .collect())
}

impl ApiCache {
    /// Nothing compiled yet; backend credentials go out as `credentials` seal them.
    pub fn new(credentials: Credentials) -> Self {
        ApiCache {
            credentials,
            apis: HashMap::new(),
            routes: BTreeMap::new(),
            refused: HashMap::new(),
        }
    }

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
        let claimants = self.routes.get(prefix)?;
        let sources = claimants
            .iter()
            .filter_map(|id| self.apis.get(id))
            .map(|api| &api.source);
        route_table(sources).get(prefix).map(json)
    }

    /// Most segments of a route prefix, as [`apim_manifest::route_depth`] counts them.
    fn route_depth(&self) -> usize {
        self.routes
            .keys()
            .map(|prefix| apim_manifest::entries::segments(prefix))
            .max()
            .unwrap_or(0)
    }

    fn insert(&mut self, id: String, api: CompiledApi) {
        self.remove(&id);
        for prefix in api.source.prefixes() {
            self.routes.entry(prefix).or_default().insert(id.clone());
        }
        self.apis.insert(id, api);
    }

    fn remove(&mut self, id: &str) {
        let Some(api) = self.apis.remove(id) else {
            return;
        };
        for prefix in api.source.prefixes() {
            if let Some(claimants) = self.routes.get_mut(&prefix) {
                claimants.remove(id);
                if claimants.is_empty() {
                    self.routes.remove(&prefix);
                }
            }
        }
    }

    /// Re-reads these APIs' rows: each compiled again, or forgotten once no longer
    /// deployed.
    pub async fn refresh_some(&mut self, db: &AnyPool, ids: &[&str]) -> anyhow::Result<()> {
        let rows = apis::rows_of(db, ids).await?;
        let policies = policies_by_api(mediation::queries::of_apis(db, ids).await?);
        for id in ids {
            self.remove(id);
            self.refused.remove(*id);
        }
        for row in rows {
            self.compile(row, &policies)?;
        }
        Ok(())
    }

    /// Drops APIs no longer deployed and compiles those whose row changed.
    async fn refresh(&mut self, db: &AnyPool) -> anyhow::Result<()> {
        let rows = apis::revisions(db).await?;
        let deployed: HashMap<String, (i64, String)> = rows
            .into_iter()
            .filter(|(_, _, status)| ApiState::deployed(status).is_some())
            .map(|(id, revision, status)| (id, (revision, status)))
            .collect();
        let gone: Vec<String> = self
            .apis
            .iter()
            .filter(|(id, api)| {
                !deployed.get(*id).is_some_and(|(revision, status)| {
                    *revision == api.revision && *status == api.status
                })
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            self.remove(&id);
        }
        self.refused
            .retain(|id, refused| deployed.get(id) == Some(&*refused));
        let stale: HashSet<String> = deployed
            .keys()
            .filter(|id| !self.apis.contains_key(*id) && !self.refused.contains_key(*id))
            .cloned()
            .collect();
        if stale.len() > BULK_FETCH {
            let rows = apis::all_rows(db).await?;
            // Only the stale APIs' policies: the others' are not compiled here.
            let ids: Vec<&str> = stale.iter().map(String::as_str).collect();
            let policies = policies_by_api(mediation::queries::of_apis(db, &ids).await?);
            for row in rows.into_iter().filter(|row| stale.contains(&row.id)) {
                self.compile(row, &policies)?;
            }
        } else {
            let ids: Vec<&str> = stale.iter().map(String::as_str).collect();
            self.refresh_some(db, &ids).await?;
        }
        Ok(())
    }

    /// Compiles a row (as read now, which may be newer than a scan before), if deployed,
    /// with its mediation policies among `policies`.
    fn compile(&mut self, row: ApiRow, policies: &PoliciesByApi) -> anyhow::Result<()> {
        let ApiRow {
            id,
            name,
            version,
            context,
            status,
            revision,
            record,
            mcp,
            ..
        } = row;
        let Some(state) = ApiState::deployed(&status) else {
            return Ok(());
        };
        let record: ApiRecord = serde_json::from_str(&record)
            .with_context(|| format!("stored record of API {id} is unreadable"))?;
        let entry = self
            .credentials
            .backend_authorization(&id, &record)
            .map_err(|err| format!("{err:#}"))
            .and_then(|authorization| {
                let own = policies.get(&id).map_or(&[][..], Vec::as_slice);
                let mediation = mediation_of(&id, &record, own);
                let route = api_route(
                    id.clone(),
                    name,
                    version,
                    context,
                    state,
                    &record,
                    mcp.as_deref(),
                    authorization,
                    mediation,
                );
                let source = RouteSource::of(&route, environments(&record));
                let json = json(&route);
                check_entries(&json, &source).map(|()| (json, source))
            });
        let (json, source) = match entry {
            Ok(entry) => entry,
            Err(why) => {
                self.refuse(id, revision, status, &why);
                return Ok(());
            }
        };
        let compiled = CompiledApi {
            revision,
            status,
            source,
            json,
        };
        self.insert(id, compiled);
        Ok(())
    }

    /// Leaves an API out: stored past the entry bound (before the bound, or written straight
    /// into the database) or with credentials this control plane cannot read, so that it
    /// cannot hold back what every other change sends.
    fn refuse(&mut self, id: String, revision: i64, status: String, why: &str) {
        tracing::error!(api = %id, revision, "{why}; the API is left out of the route manifest until it is updated");
        self.remove(&id);
        self.refused.insert(id, (revision, status));
    }
}

/// Mediation policies by API id.
type PoliciesByApi = HashMap<String, Vec<MediationRow>>;

fn policies_by_api(rows: Vec<MediationRow>) -> PoliciesByApi {
    let mut by_api = PoliciesByApi::new();
    for row in rows {
        by_api.entry(row.api_id.clone()).or_default().push(row);
    }
    by_api
}

/// An API's sequences compiled for gateways. Writes are checked, so a plan fails only
/// for rows stored before a check existed: the API is still served, without its
/// mediation, and the log says why.
fn mediation_of(id: &str, record: &ApiRecord, own: &[MediationRow]) -> Option<Mediation> {
    sequences::plan(&record.sequence_names(), own)
        .inspect_err(|why| {
            tracing::error!(api = %id, "{why}; the API is served without its sequences until they are fixed");
        })
        .ok()
        .flatten()
}

/// Lifecycle state an API is checked in before it is deployed: the one with the longest
/// name, so that an API that passes fits in every state (the state is in its entry).
const LONGEST_STATE: ApiState = ApiState::Deprecated;

/// Checks that an API compiles, as the compiler would compile it once deployed, into
/// entries no larger than [`MAX_ENTRY_BYTES`]; why not, otherwise. The record's id, name,
/// version and context are those it is (or will be) stored with; `mcp`, its MCP settings.
/// `mediation`, its sequences' plan.
pub fn check_api_entries(
    record: &ApiRecord,
    mcp: Option<&str>,
    mediation: Option<Mediation>,
) -> Result<(), String> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    // The password as stored (encrypted) is longer than in clear: sealed in its place, it
    // makes an entry at least as long as the one gateways will get.
    let authorization = record
        .backend_security()
        .and_then(|s| s.username)
        .map(|user| {
            let password = record.stored_backend_password().unwrap_or_default();
            GatewayKey::derive("").seal(&text(&record.id), &basic(&user, &password))
        });
    let route = api_route(
        text(&record.id),
        text(&record.name),
        text(&record.version),
        text(&record.context),
        LONGEST_STATE,
        record,
        mcp,
        authorization,
        mediation,
    );
    check_entries(
        &json(&route),
        &RouteSource::of(&route, environments(record)),
    )
}

/// Checks an API's entry (`route_json`) and the route entries it makes on its own against
/// [`MAX_ENTRY_BYTES`].
fn check_entries(route_json: &str, source: &RouteSource) -> Result<(), String> {
    let routes = route_table([source]);
    let largest_route = routes.values().map(|targets| json(targets).len()).max();
    let largest = route_json.len().max(largest_route.unwrap_or(0));
    if largest > MAX_ENTRY_BYTES {
        return Err(format!(
            "The API compiles to a gateway entry of {largest} bytes; at most {MAX_ENTRY_BYTES} are allowed (fewer or shorter paths, operations or gateway environments)"
        ));
    }
    Ok(())
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

/// The entry of an API; `mcp` its MCP settings as stored, `sealed_backend_authorization`
/// from [`Credentials`].
#[allow(clippy::too_many_arguments)]
fn api_route(
    id: String,
    name: String,
    version: String,
    context: String,
    state: ApiState,
    record: &ApiRecord,
    mcp: Option<&str>,
    sealed_backend_authorization: Option<String>,
    mediation: Option<Mediation>,
) -> ApiRoute {
    let endpoints: Value = record
        .endpoint_config
        .as_deref()
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or(Value::Null);
    let api_type = match record.api_type.as_deref() {
        Some("WS") => ApiType::Ws,
        _ => ApiType::Http,
    };
    let definition = swagger(record.api_definition.as_deref().unwrap_or("{}"));
    ApiRoute {
        id,
        name,
        version,
        context,
        state,
        default_version: record.is_default_version.unwrap_or(false),
        operations: match api_type {
            ApiType::Http => operations(&definition),
            ApiType::Ws => websocket_operations(),
        },
        production_url: endpoint_url(&endpoints["production_endpoints"]),
        sandbox_url: endpoint_url(&endpoints["sandbox_endpoints"]),
        sealed_backend_authorization,
        max_tps: max_tps(record.max_tps_limits()),
        cors: record.cors().and_then(cors),
        cache_timeout_secs: (record.response_caching.as_deref() == Some("Enabled")).then(|| {
            record
                .cache_timeout
                .unwrap_or(crate::apis::records::DEFAULT_CACHE_TIMEOUT)
                .max(0) as u64
        }),
        endpoints: endpoint_lists(&endpoints),
        api_type,
        transports: Transports::of_list(record.transport.iter().flatten().map(String::as_str)),
        scopes: match api_type {
            ApiType::Http => scopes(&definition),
            ApiType::Ws => Vec::new(),
        },
        mcp: match api_type {
            ApiType::Http => crate::mcp::rules::server(&definition, &McpSettings::of_row(mcp)),
            ApiType::Ws => None,
        },
        mediation,
    }
}

/// An API's Swagger document (`apiDefinition`); `null` when it does not read (records are
/// checked when stored).
fn swagger(definition: &str) -> Value {
    serde_json::from_str(definition).unwrap_or(Value::Null)
}

/// The OAuth scopes the swagger's operations name (`x-scope`, the scope key as WSO2 2.6
/// writes it), sorted and once each.
fn scopes(doc: &Value) -> Vec<String> {
    let named: BTreeSet<String> = swagger_operations(doc)
        .filter_map(|(_, _, operation)| scope_of(operation))
        .collect();
    named.into_iter().collect()
}

/// The scope an operation needs (`x-scope`), when it names one.
fn scope_of(operation: &Value) -> Option<String> {
    operation["x-scope"]
        .as_str()
        .map(str::trim)
        .filter(|scope| !scope.is_empty())
        .map(str::to_string)
}

/// The swagger's operations, most specific template first.
fn operations(doc: &Value) -> Vec<Operation> {
    let mut operations = Vec::new();
    for (template, method, operation) in swagger_operations(doc) {
        operations.push(Operation {
            method: method.to_ascii_uppercase(),
            template: template.clone(),
            segments: compile_template(template),
            auth: AuthType::from_swagger(operation["x-auth-type"].as_str()),
            throttling_tier: operation["x-throttling-tier"]
                .as_str()
                .filter(|t| *t != "Unlimited")
                .map(str::to_string),
            scope: scope_of(operation),
        });
    }
    operations.sort_by_key(|op| specificity(&op.segments));
    operations
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
    use crate::apis::METHODS;
    use crate::secrets::DataKeys;
    use apim_http::endpoints::Balance;

    #[test]
    fn operations_are_compiled_most_specific_first() {
        let swagger = r#"{"swagger":"2.0","paths":{
            "/*":{"get":{}},
            "/devs/{u}":{"get":{"x-auth-type":"None"},"delete":{"x-throttling-tier":"10KPerMin"}},
            "/devs/{u}/repos":{"get":{"x-throttling-tier":"Unlimited"}}}}"#;
        let ops = operations(&super::swagger(swagger));
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

    /// WSO2 2.6 names each operation's scope by its key in `x-scope`; the API's entry
    /// lists them once each, sorted, and leaves the list out when there are none.
    #[test]
    fn scopes_are_the_operations_x_scope_once_each() {
        let swagger = super::swagger(
            r#"{"swagger":"2.0","paths":{
            "/pizzas":{"get":{"x-scope":"pizza_read"},"post":{"x-scope":"pizza_write"}},
            "/pizzas/{id}":{"get":{"x-scope":"pizza_read"},"delete":{"x-scope":" "},
                "put":{"x-scope":7},"parameters":{"x-scope":"not_an_operation"}},
            "/menu":{"get":{}}}}"#,
        );
        assert_eq!(scopes(&swagger), ["pizza_read", "pizza_write"]);
        assert!(scopes(&super::swagger("not json")).is_empty());
        let mut record = record_with_paths(["/x".to_string()], &["get"]);
        let route = |record: &ApiRecord| {
            api_route(
                "id".into(),
                "T".into(),
                "v1".into(),
                "/t".into(),
                ApiState::Published,
                record,
                None,
                None,
                None,
            )
        };
        let without = route(&record);
        assert!(without.scopes.is_empty());
        assert!(!json(&without).contains("scopes"));
        record.api_definition =
            Some(r#"{"swagger":"2.0","paths":{"/x":{"get":{"x-scope":"t_read"}}}}"#.to_string());
        let with = route(&record);
        assert_eq!(with.scopes, ["t_read"]);
        assert!(json(&with).contains(r#""scopes":["t_read"]"#));
    }

    #[test]
    fn endpoints_security_and_cors_are_precomputed() {
        let config: Value = serde_json::json!({"production_endpoints": [{"url": "http://a"}], "sandbox_endpoints": null});
        assert_eq!(
            endpoint_url(&config["production_endpoints"]).as_deref(),
            Some("http://a")
        );
        assert_eq!(endpoint_url(&config["sandbox_endpoints"]), None);
        // A lone endpoint without settings keeps its entry as it was; lists go whole.
        assert_eq!(endpoint_lists(&config), None);
        let listed = serde_json::json!({"endpoint_type": "load_balance",
            "production_endpoints": [{"url": "http://a"}, {"url": "http://b"}]});
        let lists = endpoint_lists(&listed).unwrap();
        assert_eq!(
            (lists.balance, lists.production.len()),
            (Balance::LoadBalance, 2)
        );
        assert_eq!(basic("u", "p"), "Basic dTpw");
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

    /// A stored record of an API with these swagger paths, every one with `methods`.
    fn record_with_paths(paths: impl IntoIterator<Item = String>, methods: &[&str]) -> ApiRecord {
        let operations: serde_json::Map<String, Value> = methods
            .iter()
            .map(|m| {
                (
                    m.to_string(),
                    serde_json::json!({"x-auth-type": "Application"}),
                )
            })
            .collect();
        let paths: serde_json::Map<String, Value> = paths
            .into_iter()
            .map(|path| (path, Value::Object(operations.clone())))
            .collect();
        let definition = serde_json::json!({"swagger": "2.0", "paths": paths});
        serde_json::from_value(serde_json::json!({
            "id": "0b6f7a52-6c43-4f5e-9a43-c6a2d1c1f0aa", "name": "Big", "version": "v1",
            "context": "/big", "apiDefinition": definition.to_string(),
            "endpointConfig": r#"{"production_endpoints":{"url":"http://backend:8080/api"},"endpoint_type":"http"}"#,
        }))
        .unwrap()
    }

    /// The API's `transport` reaches its entry when it is one scheme; both (WSO2's default)
    /// leave the entry as it was.
    #[test]
    fn transports_are_compiled_when_not_both() {
        let compiled = |transport: Option<Vec<&str>>| {
            let mut record = record_with_paths(["/x".to_string()], &["get"]);
            record.transport = transport.map(|list| list.into_iter().map(String::from).collect());
            let route = api_route(
                "id".into(),
                "T".into(),
                "v1".into(),
                "/t".into(),
                ApiState::Published,
                &record,
                None,
                None,
                None,
            );
            (route.transports, json(&route))
        };
        let (transports, entry) = compiled(Some(vec!["https"]));
        assert_eq!(transports, Transports::Https);
        assert!(entry.contains(r#""transports":"https""#), "{entry}");
        assert_eq!(compiled(Some(vec!["http"])).0, Transports::Http);
        for both in [Some(vec!["http", "https"]), None] {
            let (transports, entry) = compiled(both);
            assert_eq!(transports, Transports::Both);
            assert!(!entry.contains("transports"), "{entry}");
        }
    }

    /// A long path with every method is refused; a large but realistic API (a few hundred
    /// resources, several methods each) passes with room to spare.
    #[test]
    fn entry_bound_refuses_oversized_apis_and_takes_large_ones() {
        let long_path = format!("/{}", "a".repeat(200 * 1024));
        let oversized = record_with_paths([long_path], METHODS);
        let why = check_api_entries(&oversized, None, None).unwrap_err();
        assert!(why.contains("gateway entry of"), "{why}");

        let resources =
            (0..400).map(|i| format!("/customers/{{customerId}}/orders{i}/{{orderId}}/items"));
        let large = record_with_paths(resources, &["get", "put", "post", "delete"]);
        assert!(crate::apis::validate_swagger(large.api_definition.as_deref().unwrap()).is_ok());
        check_api_entries(&large, None, None).unwrap();
        let route = api_route(
            "id".into(),
            "Big".into(),
            "v1".into(),
            "/big".into(),
            LONGEST_STATE,
            &large,
            None,
            None,
            None,
        );
        assert_eq!(route.operations.len(), 1_600);
        assert!(
            json(&route).len() < MAX_ENTRY_BYTES * 3 / 4,
            "{}",
            json(&route).len()
        );
    }

    /// Backend credentials leave the control plane sealed for the gateways: decrypted from
    /// the record with the data key, opened by a gateway with the gateway secret only.
    #[test]
    fn backend_credentials_are_sealed_for_gateways() {
        let data_keys = Arc::new(DataKeys::ephemeral());
        let credentials = Credentials::new(data_keys.clone(), "gateway-secret");
        let mut record: ApiRecord = serde_json::from_value(serde_json::json!({
            "endpointSecurity": {"type": "basic", "username": "u", "password": "p"}
        }))
        .unwrap();
        record
            .seal_backend_password(&data_keys, "api-1", None)
            .unwrap();
        let sealed = credentials
            .backend_authorization("api-1", &record)
            .unwrap()
            .unwrap();
        assert!(!sealed.contains("dTpw"));
        let gateway = GatewayKey::derive("gateway-secret");
        assert_eq!(
            gateway.open("api-1", &sealed).as_deref(),
            Some("Basic dTpw")
        );
        assert_eq!(
            credentials.backend_authorization("api-1", &record).unwrap(),
            Some(sealed),
            "the same each compile"
        );
        // A password encrypted for another API does not decrypt for this one.
        assert!(credentials.backend_authorization("api-2", &record).is_err());
        let none = ApiRecord::default();
        assert_eq!(
            credentials.backend_authorization("api-1", &none).unwrap(),
            None
        );
    }

    #[test]
    fn apis_are_checked_in_their_longest_state() {
        let states = [
            ApiState::Published,
            ApiState::Prototyped,
            ApiState::Deprecated,
            ApiState::Blocked,
        ];
        let longest = states.iter().map(|s| json(s).len()).max();
        assert_eq!(Some(json(&LONGEST_STATE).len()), longest);
    }
}
