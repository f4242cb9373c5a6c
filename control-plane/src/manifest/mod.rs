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
mod log;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use apim_manifest::Page;
use jsonwebtoken::{Algorithm, Header};
use sqlx::AnyPool;

use apim_manifest::key;

use crate::keys::KeyRing;
use log::Scope;
pub use log::read_page;

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
}

/// Compiles the database's state into entries, keeping what it compiled between calls.
pub struct Compiler {
    db: AnyPool,
    token_keys: Arc<KeyRing>,
    issuer: String,
    apis: compile::ApiCache,
    log: log::EntryLog,
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
    /// A compiler for `db`, publishing `token_keys` and `issuer` to gateways.
    pub fn new(db: AnyPool, token_keys: Arc<KeyRing>, issuer: String) -> Self {
        Compiler {
            db,
            token_keys,
            issuer,
            apis: compile::ApiCache::default(),
            log: log::EntryLog::default(),
        }
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
                    let desired =
                        compile::entries(&self.db, &mut self.apis, &self.token_keys, &self.issuer)
                            .await?;
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
        for touch in touched {
            match touch {
                Touched::Api(id) => apis.push(id.as_str()),
                Touched::Application(id) => applications.push(id.as_str()),
                Touched::Subscription { application, api } => {
                    subscriptions.push((application.as_str(), api.as_str()))
                }
                Touched::Revocation(jti) => revocations.push(jti.as_str()),
                Touched::SigningKeys => {}
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

        scope.keys.insert(key::META.to_string());
        desired.insert(
            key::META.to_string(),
            compile::meta_entry(&self.apis, &self.token_keys, &self.issuer),
        );
        Ok((scope, desired))
    }
}

/// Signs a page with the active manifest key (EdDSA, the key id in the header).
pub fn sign(manifest_keys: &KeyRing, page: &Page) -> anyhow::Result<String> {
    let key = manifest_keys.active();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(key.kid.clone());
    header.typ = Some("apim-manifest+jwt".into());
    jsonwebtoken::encode(&header, page, &key.encoding).context("could not sign the manifest page")
}
