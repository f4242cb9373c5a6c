//! Keeps gateways current: recompiles the manifest after every change, signs it, and
//! pushes it to each configured gateway, retrying until it lands or a newer one replaces it.

use std::sync::Arc;
use std::time::Duration;

use sqlx::AnyPool;
use tokio::sync::{Notify, watch};

use crate::keys::KeyRing;
use crate::manifest;

/// Changes arriving within this window are compiled into one manifest.
const DEBOUNCE: Duration = Duration::from_millis(25);
/// Longest wait between two attempts to reach a gateway.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(10);

/// A compiled, signed manifest.
#[derive(Debug)]
pub struct SignedManifest {
    /// Its version.
    pub version: u64,
    /// The compact JWS.
    pub jws: String,
}

/// Where handlers report changes and readers find the current manifest.
pub struct ManifestHub {
    latest: watch::Sender<Option<Arc<SignedManifest>>>,
    changed: Notify,
}

impl ManifestHub {
    /// A hub with no manifest yet.
    pub fn new() -> Arc<Self> {
        Arc::new(ManifestHub {
            latest: watch::Sender::new(None),
            changed: Notify::new(),
        })
    }

    /// Something gateways care about changed: compile a new manifest soon.
    pub fn request_recompile(&self) {
        self.changed.notify_one();
    }

    /// The newest manifest, once the first compile has run.
    pub fn current(&self) -> Option<Arc<SignedManifest>> {
        self.latest.borrow().clone()
    }
}

/// What the compiler needs.
pub struct Compiler {
    /// The database.
    pub db: AnyPool,
    /// Token keys, published in the manifest.
    pub token_keys: Arc<KeyRing>,
    /// The key manifests are signed with.
    pub manifest_keys: Arc<KeyRing>,
    /// `iss` of access tokens.
    pub issuer: String,
}

/// Starts compiling (now and after every change) and pushing to `gateways`.
pub fn spawn(hub: Arc<ManifestHub>, compiler: Compiler, gateways: Vec<String>) {
    tokio::spawn(compile_loop(hub.clone(), compiler));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("HTTP client");
    for gateway in gateways {
        tokio::spawn(push_loop(hub.latest.subscribe(), client.clone(), gateway));
    }
}

async fn compile_loop(hub: Arc<ManifestHub>, compiler: Compiler) {
    loop {
        match compile_signed(&compiler).await {
            Ok(signed) => {
                tracing::info!(version = signed.version, "route manifest compiled");
                hub.latest.send_replace(Some(Arc::new(signed)));
                hub.changed.notified().await;
                tokio::time::sleep(DEBOUNCE).await;
            }
            Err(err) => {
                tracing::error!(error = ?err, "could not compile the route manifest; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn compile_signed(compiler: &Compiler) -> anyhow::Result<SignedManifest> {
    let manifest = manifest::compile(&compiler.db, &compiler.token_keys, &compiler.issuer).await?;
    Ok(SignedManifest {
        version: manifest.version,
        jws: manifest::sign(&compiler.manifest_keys, &manifest)?,
    })
}

/// Delivers every new manifest to one gateway; a failed push is retried with backoff
/// until it succeeds or a newer manifest takes its place.
async fn push_loop(
    mut latest: watch::Receiver<Option<Arc<SignedManifest>>>,
    client: reqwest::Client,
    gateway: String,
) {
    let url = format!(
        "{}{}",
        gateway.trim_end_matches('/'),
        apim_manifest::paths::GATEWAY_PUSH
    );
    loop {
        let Some(manifest) = latest.borrow_and_update().clone() else {
            if latest.changed().await.is_err() {
                return;
            }
            continue;
        };
        let mut delay = Duration::from_millis(250);
        loop {
            match push(&client, &url, &manifest).await {
                Ok(served) => {
                    tracing::info!(%gateway, version = manifest.version, served, "manifest delivered");
                    break;
                }
                Err(err) => {
                    tracing::warn!(%gateway, version = manifest.version, error = %err, "manifest push failed; will retry");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(delay) => delay = (delay * 2).min(MAX_RETRY_DELAY),
                changed = latest.changed() => {
                    if changed.is_err() { return; }
                    break;
                }
            }
        }
        if latest.has_changed().unwrap_or(false) {
            continue;
        }
        if latest.changed().await.is_err() {
            return;
        }
    }
}

/// Pushes one manifest; Ok with the version the gateway now serves, if at least ours.
async fn push(
    client: &reqwest::Client,
    url: &str,
    manifest: &SignedManifest,
) -> anyhow::Result<u64> {
    let response = client
        .post(url)
        .header("content-type", "application/jwt")
        .body(manifest.jws.clone())
        .send()
        .await?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    let served = body["version"].as_u64().unwrap_or(0);
    // 409: the gateway already serves this version or a newer one.
    if (status.is_success() || status.as_u16() == 409) && served >= manifest.version {
        Ok(served)
    } else {
        anyhow::bail!("gateway answered {status}: {body}")
    }
}
