//! What every handler shares ([`AppState`]), and what a change tells the compiler it
//! touched ([`Touches`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use sqlx::AnyPool;

use crate::clients::ClientCache;
use crate::config::Config;
use crate::gateways::ManifestHub;
use crate::manifest::Touched;
use crate::scopes::ScopeNames;
use crate::signing::KeyRing;
use crate::users::VerifiedLogins;

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
    /// The current route manifest, and where changes are reported.
    pub manifests: Arc<ManifestHub>,
    /// The key route manifests are signed with.
    pub manifest_keys: Arc<KeyRing>,
    /// What gateways present to pull the manifest.
    pub gateway_secret: String,
    /// Users whose DefaultApplication is known to exist (saves a write per store call).
    pub store_users: Arc<Mutex<HashSet<String>>>,
    /// Clients as the token endpoint last read them.
    pub clients: Arc<ClientCache>,
    /// Passwords verified lately.
    pub logins: Arc<VerifiedLogins>,
    /// Where published APIs' endpoints may point.
    pub endpoints: Arc<crate::apis::EndpointPolicy>,
    /// What secrets at rest are encrypted with.
    pub data_keys: Arc<crate::secrets::DataKeys>,
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
