//! What every handler shares ([`AppState`]): the database, keys and settings. It names no
//! room; what a room keeps for the whole process reaches its handlers as an extension
//! (`crate::app::Services`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use sqlx::AnyPool;

use crate::config::Config;
use crate::scopes::ScopeNames;
use crate::signing::KeyRing;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The database pool.
    pub db: AnyPool,
    /// Token signing keys.
    pub keys: Arc<KeyRing>,
    /// Start-up configuration.
    pub config: Arc<Config>,
    /// Scope names under the configured prefix.
    pub scopes: ScopeNames,
    /// `iss` of issued tokens.
    pub issuer: String,
    /// `iss` values whose tokens verify: [`AppState::issuer`] first, then those tokens
    /// carried before it (the default issuer had the token endpoint's path).
    pub issuers: Vec<String>,
    /// The RS256 keys that sign OpenID Connect id_tokens.
    pub id_token_keys: Arc<KeyRing>,
    /// The RS256 keys gateways sign backend JWTs (`X-JWT-Assertion`) with.
    pub backend_jwt_keys: Arc<KeyRing>,
    /// The key route manifests are signed with.
    pub manifest_keys: Arc<KeyRing>,
    /// What gateways present to pull the manifest.
    pub gateway_secret: String,
    /// Users whose DefaultApplication is known to exist (saves a write per store call).
    pub store_users: Arc<Mutex<HashSet<String>>>,
    /// What secrets at rest are encrypted with.
    pub data_keys: Arc<crate::secrets::DataKeys>,
    /// What rooms keep for the whole process (the manifest hub, caches).
    pub shared: Shared,
}

impl AppState {
    /// The process-wide `T` a room keeps, as start-up registered it (`crate::app::shared`).
    pub fn shared<T: Send + Sync + 'static>(&self) -> &T {
        self.shared
            .0
            .get::<Arc<T>>()
            .unwrap_or_else(|| panic!("{} is registered at start-up", std::any::type_name::<T>()))
    }
}

/// What rooms keep for the whole process, each found by its type, so that the state that
/// every room uses names none of them.
#[derive(Clone, Default)]
pub struct Shared(Arc<axum::http::Extensions>);

impl Shared {
    /// With `value` registered as the process-wide `T`.
    pub fn with<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        Arc::make_mut(&mut self.0).insert(value);
        self
    }
}
