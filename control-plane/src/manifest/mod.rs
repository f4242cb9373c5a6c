//! The route manifest on the control plane's side: compiled from the database into keyed
//! entries ([`compile`]), recorded with the version that changed each ([`log`]), and read
//! back as signed pages of what changed after a gateway's version.
//!
//! A compile reads the small rows whole and recompiles only the APIs whose revision
//! moved, then records only the entries that differ, so that a change costs about the
//! same with ten APIs or ten thousand, and so does delivering it.

mod compile;
mod log;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use apim_manifest::Page;
use jsonwebtoken::{Algorithm, Header};
use sqlx::AnyPool;

use crate::keys::KeyRing;
pub use log::read_page;

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
        let started = Instant::now();
        loop {
            self.log
                .catch_up(&self.db)
                .await
                .context("could not read the recorded manifest entries")?;
            let desired =
                compile::entries(&self.db, &mut self.apis, &self.token_keys, &self.issuer).await?;
            let changes = self.log.changes(&desired);
            if changes.is_empty() {
                self.log.collect_garbage(&self.db).await?;
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
}

/// Signs a page with the active manifest key (EdDSA, the key id in the header).
pub fn sign(manifest_keys: &KeyRing, page: &Page) -> anyhow::Result<String> {
    let key = manifest_keys.active();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(key.kid.clone());
    header.typ = Some("apim-manifest+jwt".into());
    jsonwebtoken::encode(&header, page, &key.encoding).context("could not sign the manifest page")
}
