//! The management listener: every REST resource, merged into one router.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use sqlx::AnyPool;
use tower_http::trace::TraceLayer;

use crate::clients::ClientCache;
use crate::config::Config;
use crate::gateways::ManifestHub;
use crate::keys::KeyRing;
use crate::manifest::Touched;
use crate::scopes::ScopeNames;
use crate::users::VerifiedLogins;

mod admin;
mod apis;
mod applications;
mod auth;
pub mod error;
mod extract;
mod gateway;
mod keys;
mod pagination;
mod registration;
mod subscriptions;
mod tiers;
mod token;

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
}

/// The whole management API.
pub fn app(state: AppState) -> Router {
    let body_limit = state.config.max_body_bytes;
    Router::new()
        .merge(registration::router())
        .merge(token::router())
        .merge(apis::router())
        .merge(tiers::router())
        .merge(applications::router())
        .merge(keys::router())
        .merge(subscriptions::router())
        .merge(admin::router())
        .merge(gateway::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            after_changes,
        ))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            body_limit,
            refuse_oversized_bodies,
        ))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Every successful change (any method but GET/HEAD/OPTIONS) may change what gateways
/// must do (lifecycle, updates, deletes, subscriptions, keys, revocations, key rotation)
/// and what the token endpoint knows of clients and users: asks for a compile of what it
/// [`Touches`] (changes during one are taken in by the next, so bursts cost few) and
/// clears the client cache.
/// Issuing tokens and registering clients change neither (a refresh grant's revocation
/// asks for its own compile), and at thousands of tokens a second they must not keep
/// the compiler busy.
async fn after_changes(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::Method;
    let path = request.uri().path();
    let changes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) && path != "/oauth2/token"
        && !path.starts_with("/client-registration/");
    let mut response = next.run(request).await;
    if changes && response.status().is_success() {
        match response.extensions_mut().remove::<Touches>() {
            Some(Touches(touched)) => state.manifests.touch(touched),
            None => state.manifests.request_recompile(),
        }
        state.clients.clear();
    }
    response
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

/// Answers 413 from the announced Content-Length, before reading a byte of the body.
/// (The body limit above still stops chunked bodies once they grow past it.)
async fn refuse_oversized_bodies(
    axum::extract::State(limit): axum::extract::State<usize>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let announced = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match announced {
        Some(length) if length > limit as u64 => {
            axum::response::IntoResponse::into_response(error::ApiError::PayloadTooLarge)
        }
        _ => next.run(request).await,
    }
}

async fn not_found(uri: axum::http::Uri) -> error::ApiError {
    error::ApiError::NotFoundWhy(format!("No resource at {}", uri.path()))
}

async fn method_not_allowed() -> error::ApiError {
    error::ApiError::MethodNotAllowed
}
