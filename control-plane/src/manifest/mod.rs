//! The route manifest on the control plane's side: compiled from the database into keyed
//! entries ([`compile`]), recorded with the version that changed each ([`log`]), and read
//! back as signed pages of what changed after a gateway's version.
//!
//! A full compile (at start, then once a minute) reads every row, recompiling only the
//! APIs whose revision moved. Between them, each change is compiled alone from what its
//! handler says it [`Touched`]: the rows it names are read again and only the entries
//! they make are compared and recorded, so that a change costs about the same with ten
//! APIs or ten thousand, and so does delivering it.

mod compile;
mod credentials;
mod log;
mod pages;
mod route_parts;
mod trust;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use apim_manifest::bounds::MAX_PAGE_BYTES;
use apim_manifest::sealed::GatewayKey;
use apim_manifest::{BackendJwt, Page};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, Header};
use sqlx::AnyPool;

use apim_manifest::key;

use crate::signing::KeyRing;
pub use compile::check_api_entries;
pub use credentials::Credentials;
use log::Scope;
pub use log::latest_version;
pub use pages::read_page;

/// What a change touched: the rows whose entries a compile must look at again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Touched {
    /// An API's row (record, lifecycle state, removal).
    Api(String),
    /// An application's row and its subscriptions.
    Application(String),
    /// A subscription (and its application's row, which the store may have just made).
    Subscription {
        /// Application id.
        application: String,
        /// API id.
        api: String,
    },
    /// A revoked access token, by `jti`.
    Revocation(String),
    /// The token signing keys (the meta entry is always recompiled).
    SigningKeys,
    /// A tenant's tiers (read again into the meta entry).
    Tiers,
    /// A tenant's backend JWT switch, or its signing key (read again into the meta
    /// entry).
    BackendJwt,
    /// The certificates bound to an endpoint's host (lower-case, without brackets) and
    /// port, whichever tenant's.
    Trust {
        /// Host.
        host: String,
        /// Port.
        port: u16,
    },
}

/// Compiles the database's state into entries, keeping what it compiled between calls.
pub struct Compiler {
    db: AnyPool,
    token_keys: Arc<KeyRing>,
    /// Issuers, gateway URLs and the throttling mode, as the meta entry tells gateways.
    meta: compile::MetaSettings,
    apis: compile::ApiCache,
    log: log::EntryLog,
    /// Tenants' own tiers, as last read (at every full compile, and when touched).
    tenant_tiers: compile::TenantRates,
    /// The keys gateways sign backend JWTs with, when they may.
    backend_jwt_keys: Option<Arc<KeyRing>>,
    /// Seals the backend JWT key for the gateways.
    sealing: GatewayKey,
}

/// What a compile recorded.
#[derive(Debug, Clone, Copy)]
pub struct Compiled {
    /// The newest version now.
    pub version: u64,
    /// Entries changed or removed.
    pub changes: usize,
    /// Live entries.
    pub entries: usize,
    /// How long it took.
    pub elapsed: Duration,
}

impl Compiler {
    /// A compiler for `db`, publishing `token_keys`, `issuer` and backend credentials
    /// (sealed with `credentials`) to gateways.
    pub fn new(
        db: AnyPool,
        token_keys: Arc<KeyRing>,
        issuer: String,
        credentials: Credentials,
    ) -> Self {
        let sealing = credentials.gateway_key();
        Compiler {
            db,
            token_keys,
            meta: compile::MetaSettings {
                issuer,
                ..compile::MetaSettings::default()
            },
            apis: compile::ApiCache::new(credentials),
            log: log::EntryLog::default(),
            tenant_tiers: compile::TenantRates::new(),
            backend_jwt_keys: None,
            sealing,
        }
    }

    /// Gives gateways the active key of `keys`, sealed, to sign the backend JWTs of the
    /// tenants that switch them on.
    pub fn with_backend_jwt_keys(mut self, keys: Arc<KeyRing>) -> Self {
        self.backend_jwt_keys = Some(keys);
        self
    }

    /// The backend JWT as the meta entry tells gateways: `None` while no tenant has it
    /// on.
    async fn backend_jwt(&self) -> anyhow::Result<Option<BackendJwt>> {
        let Some(keys) = &self.backend_jwt_keys else {
            return Ok(None);
        };
        let tenants = crate::backend_jwt::queries::enabled_tenants(&self.db).await?;
        if tenants.is_empty() {
            return Ok(None);
        }
        let key = keys.active();
        let der = base64::engine::general_purpose::STANDARD.encode(&key.rsa_private_der);
        Ok(Some(BackendJwt {
            sealed_key: self
                .sealing
                .seal(&BackendJwt::sealing_label(&key.kid), &der),
            kid: key.kid.clone(),
            tenants,
        }))
    }

    /// Tells gateways that operations' tiers are subscription tiers (WSO2's throttling
    /// with advanced throttling off).
    pub fn with_legacy_throttling(mut self, legacy: bool) -> Self {
        self.meta.legacy_throttling = legacy;
        self
    }

    /// Tells gateways to take tokens of these issuers too, beside the issuer's own: a
    /// changed issuer then leaves the tokens issued under the old one valid until they
    /// expire.
    pub fn with_accepted_issuers(mut self, issuers: Vec<String>) -> Self {
        self.meta.accepted_issuers = issuers;
        self
    }

    /// Tells gateways the base URLs clients reach them at
    /// (`environments::gateway_urls`): what a token's audience must name, and
    /// where their protected-resource metadata says the APIs are.
    pub fn with_gateway_urls(mut self, urls: Vec<String>) -> Self {
        self.meta.gateway_urls = urls;
        self
    }

    /// The newest version recorded (0 before the first compile).
    pub fn version(&self) -> u64 {
        self.log.version()
    }

    /// Live entries.
    pub fn entries(&self) -> usize {
        self.log.live()
    }

    /// Deployed APIs compiled.
    pub fn apis(&self) -> usize {
        self.apis.deployed()
    }

    /// Brings the recorded entries up to date with the database; what it recorded, if
    /// anything changed.
    pub async fn compile(&mut self) -> anyhow::Result<Option<Compiled>> {
        self.compile_some(None).await
    }

    /// Compiles only what `touched` names (plus routes and meta, from the APIs in
    /// memory); what it recorded, if anything changed. Needs a full compile first.
    pub async fn compile_touched(
        &mut self,
        touched: &HashSet<Touched>,
    ) -> anyhow::Result<Option<Compiled>> {
        self.compile_some(Some(touched)).await
    }

    /// Compiles everything, or what was touched, and records what changed.
    async fn compile_some(
        &mut self,
        touched: Option<&HashSet<Touched>>,
    ) -> anyhow::Result<Option<Compiled>> {
        let started = Instant::now();
        if touched.is_none() {
            self.log.collect_garbage(&self.db).await?;
        }
        loop {
            let others = self
                .log
                .catch_up(&self.db)
                .await
                .context("could not read the recorded manifest entries")?;
            // Another control plane changed the database: the APIs in memory may be stale,
            // and routes and meta come from them, so compile everything.
            let touched = touched.filter(|_| !others);
            let changes = match touched {
                None => {
                    self.tenant_tiers = crate::tiers::tenant_rates(&self.db).await?;
                    self.meta.backend_jwt = self.backend_jwt().await?;
                    let mut desired = compile::entries(
                        &self.db,
                        &mut self.apis,
                        &self.token_keys,
                        &self.meta,
                        &self.tenant_tiers,
                    )
                    .await?;
                    desired.extend(trust::entries(&self.db, None).await?);
                    self.log.changes(&desired)
                }
                Some(touched) => {
                    let (scope, desired) = self.touched_entries(touched).await?;
                    self.log.changes_within(&scope, &desired)
                }
            };
            if changes.is_empty() {
                return Ok(None);
            }
            let count = changes.len();
            let recorded = self
                .log
                .record(&self.db, changes)
                .await
                .context("could not record the manifest entries")?;
            if let Some(version) = recorded {
                return Ok(Some(Compiled {
                    version,
                    changes: count,
                    entries: self.log.live(),
                    elapsed: started.elapsed(),
                }));
            }
            // Another control plane recorded meanwhile: take in its entries and retry.
        }
    }

    /// The keys `touched` decides, and the entries they should hold: a few queries, each
    /// for every row of a kind at once, however many changes a compile takes in.
    async fn touched_entries(
        &mut self,
        touched: &HashSet<Touched>,
    ) -> anyhow::Result<(Scope, compile::Entries)> {
        let mut apis = Vec::new();
        let mut applications = Vec::new();
        let mut subscriptions = Vec::new();
        let mut revocations = Vec::new();
        let mut endpoints = HashSet::new();
        for touch in touched {
            match touch {
                Touched::Api(id) => apis.push(id.as_str()),
                Touched::Application(id) => applications.push(id.as_str()),
                Touched::Subscription { application, api } => {
                    subscriptions.push((application.as_str(), api.as_str()))
                }
                Touched::Revocation(jti) => revocations.push(jti.as_str()),
                Touched::SigningKeys => {}
                Touched::Tiers => {
                    self.tenant_tiers = crate::tiers::tenant_rates(&self.db).await?;
                }
                Touched::BackendJwt => {
                    self.meta.backend_jwt = self.backend_jwt().await?;
                }
                Touched::Trust { host, port } => {
                    endpoints.insert((host.clone(), *port));
                }
            }
        }
        let mut scope = Scope::default();
        let mut desired = compile::Entries::new();

        let mut prefixes: HashSet<String> =
            apis.iter().flat_map(|id| self.apis.prefixes(id)).collect();
        self.apis.refresh_some(&self.db, &apis).await?;
        for id in &apis {
            prefixes.extend(self.apis.prefixes(id));
            scope.keys.insert(key::api(id));
            desired.extend(self.apis.entry(id).map(|e| (key::api(id), e)));
        }
        for prefix in prefixes {
            let route = key::route(&prefix);
            desired.extend(self.apis.route_entry(&prefix).map(|e| (route.clone(), e)));
            scope.keys.insert(route);
        }

        // A touched application takes its subscriptions along; a touched subscription
        // takes its application's row, which may be new too (the store makes
        // DefaultApplication on the first call).
        for id in &applications {
            scope.keys.insert(key::application(id));
            scope.prefixes.insert(key::subscription(id, ""));
        }
        desired.extend(compile::subscriptions_of(&self.db, &applications).await?);
        for (application, api) in &subscriptions {
            scope.keys.insert(key::subscription(application, api));
            scope.keys.insert(key::application(application));
            applications.push(application);
        }
        desired.extend(compile::subscription_entries(&self.db, &subscriptions).await?);
        applications.sort_unstable();
        applications.dedup();
        desired.extend(compile::application_entries(&self.db, &applications).await?);

        scope
            .keys
            .extend(revocations.iter().map(|jti| key::revocation(jti)));
        desired.extend(compile::revocation_entries(&self.db, &revocations).await?);

        if !endpoints.is_empty() {
            for (host, port) in &endpoints {
                scope.keys.insert(key::trust(host, *port));
            }
            desired.extend(trust::entries(&self.db, Some(&endpoints)).await?);
        }

        scope.keys.insert(key::META.to_string());
        desired.insert(
            key::META.to_string(),
            compile::meta_entry(&self.apis, &self.token_keys, &self.meta, &self.tenant_tiers),
        );
        Ok((scope, desired))
    }
}

/// Signs a page with the active manifest key (EdDSA, the key id in the header). A page
/// signed larger than gateways take is an error: [`read_page`] never makes one, and
/// sending it would only have it refused.
pub fn sign(manifest_keys: &KeyRing, page: &Page) -> anyhow::Result<String> {
    let key = manifest_keys.active();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(key.kid.clone());
    header.typ = Some("apim-manifest+jwt".into());
    let jws = jsonwebtoken::encode(&header, page, &key.encoding)
        .context("could not sign the manifest page")?;
    anyhow::ensure!(
        jws.len() <= MAX_PAGE_BYTES,
        "the manifest page after version {} signs to {} bytes, more than gateways take ({MAX_PAGE_BYTES})",
        page.after,
        jws.len()
    );
    Ok(jws)
}

/// Credentials for compilers in tests: a data key in memory, a made-up gateway secret.
#[cfg(test)]
pub fn test_credentials() -> Credentials {
    Credentials::new(
        Arc::new(crate::secrets::DataKeys::ephemeral()),
        "test-gateway-secret",
    )
}

/// What a change touched, as a part of its response: only that is compiled for gateways
/// (nothing, when empty). A successful change that does not say gets a full compile.
#[derive(Debug, Clone, Default)]
pub struct Touches(pub Vec<Touched>);

impl Touches {
    /// Nothing gateways see.
    pub fn nothing() -> Self {
        Touches(Vec::new())
    }

    /// One row.
    pub fn one(touched: Touched) -> Self {
        Touches(vec![touched])
    }
}

impl axum::response::IntoResponseParts for Touches {
    type Error = std::convert::Infallible;

    fn into_response_parts(
        self,
        mut parts: axum::response::ResponseParts,
    ) -> Result<axum::response::ResponseParts, Self::Error> {
        parts.extensions_mut().insert(self);
        Ok(parts)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Stores an API row as a handler would (or as anything writing into the database
    /// would, bounds or not), deployed, with one path of `path_bytes` and every method.
    async fn store_api(db: &AnyPool, id: &str, context: &str, path_bytes: usize, revision: i64) {
        let path = format!("/{}", "p".repeat(path_bytes));
        let methods: serde_json::Map<String, serde_json::Value> = crate::apis::METHODS
            .iter()
            .map(|m| (m.to_string(), serde_json::json!({})))
            .collect();
        let definition = serde_json::json!({"swagger": "2.0", "paths": {path: methods}});
        let record = serde_json::json!({"apiDefinition": definition.to_string(),
            "endpointConfig": r#"{"production_endpoints":{"url":"http://b"},"endpoint_type":"http"}"#});
        // language=SQL
        sqlx::query(
            "INSERT INTO apis (id, tenant, provider, name, version, context, status, unique_name, record, created_at, updated_at, revision)
             VALUES ($1, 'carbon.super', 'admin', $1, 'v1', $2, 'PUBLISHED', $1, $3, 0, 0, $4)
             ON CONFLICT (id) DO UPDATE SET record = excluded.record, revision = excluded.revision",
        )
        .bind(id)
        .bind(context)
        .bind(record.to_string())
        .bind(revision)
        .execute(db)
        .await
        .unwrap();
    }

    /// The meta entry as the pages from nothing carry it.
    async fn meta_of(db: &AnyPool) -> apim_manifest::Meta {
        // language=SQL
        let (value,): (String,) =
            sqlx::query_as("SELECT value FROM manifest_entries WHERE key = $1")
                .bind(key::META)
                .fetch_one(db)
                .await
                .unwrap();
        serde_json::from_str(&value).unwrap()
    }

    /// The backend JWT reaches gateways only once a tenant switches it on: the active
    /// key sealed for the gateway secret and bound to its id, and the tenants, sorted;
    /// a touch alone brings each change.
    #[tokio::test]
    async fn the_backend_jwt_key_is_sealed_into_the_meta_for_the_tenants_that_want_it() {
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        let dir = std::env::temp_dir().join(format!("apim-bjwt-{}", uuid::Uuid::new_v4()));
        let keys = Arc::new(KeyRing::load_or_create(&dir.join("keys")).unwrap());
        let backend_keys = Arc::new(
            KeyRing::load_or_create_of(&dir.join("backend"), crate::signing::KeyKind::Rsa).unwrap(),
        );
        let mut compiler = Compiler::new(db.clone(), keys, "issuer".into(), test_credentials())
            .with_backend_jwt_keys(backend_keys.clone());
        compiler.compile().await.unwrap();
        assert_eq!(meta_of(&db).await.backend_jwt, None, "off by default");

        let touched = HashSet::from([Touched::BackendJwt]);
        for tenant in ["zeta.com", "acme.com"] {
            // language=SQL
            sqlx::query("INSERT INTO backend_jwt_tenants (tenant, changed_at) VALUES ($1, 0)")
                .bind(tenant)
                .execute(&db)
                .await
                .unwrap();
        }
        compiler.compile_touched(&touched).await.unwrap();
        let config = meta_of(&db).await.backend_jwt.expect("switched on");
        let active = backend_keys.active();
        assert_eq!(config.kid, active.kid);
        assert_eq!(config.tenants, ["acme.com", "zeta.com"]);
        assert!(config.covers("acme.com") && !config.covers("carbon.super"));
        let label = apim_manifest::BackendJwt::sealing_label(&config.kid);
        let opened = GatewayKey::derive("test-gateway-secret")
            .open(&label, &config.sealed_key)
            .expect("opens with the gateway secret");
        let der = base64::engine::general_purpose::STANDARD
            .decode(opened)
            .unwrap();
        assert_eq!(der, active.rsa_private_der);
        assert_eq!(
            GatewayKey::derive("other").open(&label, &config.sealed_key),
            None
        );

        let rotated = backend_keys.rotate().unwrap();
        compiler.compile_touched(&touched).await.unwrap();
        assert_eq!(meta_of(&db).await.backend_jwt.unwrap().kid, rotated);

        // language=SQL
        sqlx::query("DELETE FROM backend_jwt_tenants")
            .execute(&db)
            .await
            .unwrap();
        compiler.compile_touched(&touched).await.unwrap();
        assert_eq!(meta_of(&db).await.backend_jwt, None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Every entry the pages from nothing carry: value or removal, by key.
    async fn snapshot(db: &AnyPool) -> BTreeMap<String, bool> {
        let mut entries = BTreeMap::new();
        let (mut after, mut snapshot) = (0, false);
        loop {
            let page = read_page(db, after, snapshot).await.unwrap().unwrap();
            for change in &page.changes {
                entries.insert(change.key.clone(), change.value.is_some());
            }
            if page.is_last() {
                return entries;
            }
            (after, snapshot) = (page.upto, true);
        }
    }

    /// An API past the entry bound in the database (stored before the bound, or written
    /// there directly) is left out, and recorded entries of it removed, while everything
    /// else compiles; once updated within the bound it is compiled again.
    #[tokio::test]
    async fn apis_past_the_entry_bound_are_left_out() {
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        let dir = std::env::temp_dir().join(format!("apim-compile-{}", uuid::Uuid::new_v4()));
        let keys = Arc::new(KeyRing::load_or_create(&dir).unwrap());
        store_api(&db, "good", "/good", 10, 0).await;
        store_api(&db, "big", "/big", 200 * 1024, 0).await;
        // What an earlier control plane recorded of it, before the bound.
        let oversized = format!("\"{}\"", "x".repeat(11 * 1024 * 1024));
        for (key, value) in [("api:big", oversized.as_str()), ("route:/big/v1", "[]")] {
            // language=SQL
            sqlx::query("INSERT INTO manifest_entries (key, value, version, changed_at) VALUES ($1, $2, 1, 0)")
                .bind(key)
                .bind(value)
                .execute(&db)
                .await
                .unwrap();
        }
        // language=SQL
        sqlx::query("UPDATE manifest_state SET version = 1 WHERE id = 1")
            .execute(&db)
            .await
            .unwrap();

        let mut compiler = Compiler::new(db.clone(), keys, "issuer".into(), test_credentials());
        compiler.compile().await.unwrap().unwrap();
        assert_eq!(compiler.apis(), 1);
        let entries = snapshot(&db).await;
        assert_eq!(entries.get("api:good"), Some(&true));
        assert_eq!(entries.get("route:/good/v1"), Some(&true));
        assert_eq!(entries.get("api:big"), Some(&false), "removed");
        assert_eq!(entries.get("route:/big/v1"), Some(&false), "removed");

        // Refused once, not compiled again while its row stays as it is.
        let touched = HashSet::from([Touched::Api("big".into())]);
        assert!(compiler.compile_touched(&touched).await.unwrap().is_none());
        assert!(compiler.compile().await.unwrap().is_none());

        store_api(&db, "big", "/big", 100, 1).await;
        compiler.compile_touched(&touched).await.unwrap().unwrap();
        let entries = snapshot(&db).await;
        assert_eq!(entries.get("api:big"), Some(&true));
        assert_eq!(entries.get("route:/big/v1"), Some(&true));
    }
}
