//! The management API as one router: every room's handlers merged, with the layers they
//! share. Only this file and start-up name the rooms' handlers; a room's `mod.rs` faces
//! its data.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tower_http::normalize_path::NormalizePathLayer;
use tower_http::trace::TraceLayer;
use tower_layer::Layer as _;

use crate::clients::ClientCache;
use crate::fleet::ManifestHub;
use crate::http::routes::Routes;
use crate::http::{
    BodyLimits, method_not_allowed, not_found, read_body_in_time, refuse_oversized_bodies,
};
use crate::manifest::Touches;
use crate::state::{AppState, Shared};
use crate::users::VerifiedLogins;

/// What the rooms keep for the whole process, registered once for every handler.
pub fn shared(
    manifests: std::sync::Arc<ManifestHub>,
    clients: ClientCache,
    logins: VerifiedLogins,
    endpoints: crate::apis::EndpointPolicy,
    outbound: std::sync::Arc<crate::http::egress_fetch::Outbound>,
) -> Shared {
    use std::sync::Arc;
    Shared::default()
        .with(manifests)
        .with(Arc::new(clients))
        .with(Arc::new(logins))
        .with(Arc::new(endpoints))
        .with(outbound)
        .with(Arc::new(crate::web::calls::PublicApi::default()))
        .with(Arc::new(crate::apis::StoreListing::default()))
        .with(Arc::new(crate::web::signin::SignedInApps(vec![
            &crate::devportal::DEVPORTAL,
            &crate::publisher_console::PUBLISHER_CONSOLE,
        ])))
}

/// The whole management API, its paths' repeated slashes collapsed and trailing ones
/// trimmed before routing: WSO2's JAX-RS servers serve `/apis/` as `/apis`.
pub fn app(state: AppState) -> Router {
    let installed = state.clone();
    let trimmed = NormalizePathLayer::trim_trailing_slash().layer(routes(state));
    let routed = axum::middleware::map_request(collapse_repeated_slashes).layer(trimmed);
    let router = Router::new().fallback_service(routed);
    // The web applications call the management API through this same router.
    installed
        .shared::<crate::web::calls::PublicApi>()
        .install(router.clone());
    router
}

/// WSO2 collapses repeated slashes in a path (its own Java clients join base URL and path
/// into `/api/am/publisher/v0.14//apis`); so do we, keeping the query as it is.
async fn collapse_repeated_slashes(mut request: axum::extract::Request) -> axum::extract::Request {
    let uri = request.uri();
    if !uri.path().contains("//") {
        return request;
    }
    let mut target = String::with_capacity(uri.path().len());
    for c in uri.path().chars() {
        if !(c == '/' && target.ends_with('/')) {
            target.push(c);
        }
    }
    if let Some(query) = uri.query() {
        target.push('?');
        target.push_str(query);
    }
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = target.parse().ok();
    if let Ok(collapsed) = axum::http::Uri::from_parts(parts) {
        *request.uri_mut() = collapsed;
    }
    request
}

/// Every resource's routes and the layers they share.
fn routes(state: AppState) -> Router {
    let body_limit = state.config.max_body_bytes;
    rooms()
        .into_router()
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::web::signin::renew_sessions,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            after_changes,
        ))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            BodyLimits {
                max_bytes: body_limit,
                timeout: std::time::Duration::from_millis(state.config.body_timeout_ms),
            },
            read_body_in_time,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::fleet::gateway_api::require_gateway_secret,
        ))
        .layer(axum::middleware::from_fn_with_state(
            body_limit,
            refuse_oversized_bodies,
        ))
        // Outside every refusal above, so that they are counted too; `Router::layer` runs it
        // after routing, where the route template is known.
        .layer(axum::middleware::from_fn(
            crate::ops::metrics::count_request,
        ))
        // Outside `after_changes`, so that the changes a request reports name its span.
        .layer(axum::middleware::from_fn(crate::ops::trace::trace_request))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Every resource's routes, as the rooms declare them: what the management listener serves
/// and what the OpenAPI document must describe (`crate::openapi`).
pub fn rooms() -> Routes {
    Routes::new()
        .merge(crate::clients::registration::router())
        .merge(crate::tokens::oauth::router())
        .merge(crate::tokens::oauth_introspect::router())
        .merge(crate::tokens::oauth_discovery::router())
        .merge(crate::tokens::oauth_userinfo::router())
        .merge(crate::tokens::oauth_logout::router())
        .merge(crate::authorizations::oauth::router())
        .merge(crate::web::router())
        .merge(crate::devportal::pages::router())
        .merge(crate::devportal::applications::router())
        .merge(crate::devportal::documents::router())
        .merge(crate::devportal::keys::router())
        .merge(crate::devportal::try_it::router())
        .merge(crate::devportal::analytics::router())
        .merge(crate::publisher_console::pages::router())
        .merge(crate::publisher_console::create::router())
        .merge(crate::publisher_console::edit::router())
        .merge(crate::publisher_console::resources::router())
        .merge(crate::publisher_console::documents::router())
        .merge(crate::publisher_console::implementation::router())
        .merge(crate::publisher_console::actions::router())
        .merge(crate::publisher_console::administration::router())
        .merge(crate::publisher_console::analytics::router())
        .merge(crate::apis::publisher::router())
        .merge(crate::tiers::publisher::router())
        .merge(crate::tiers::store_api::router())
        .merge(crate::environments::publisher::router())
        .merge(crate::certificates::publisher::router())
        .merge(crate::applications::store_api::router())
        .merge(crate::applications::store_api_scopes::router())
        .merge(crate::applications::publisher::router())
        .merge(crate::applications::admin::router())
        .merge(crate::keys::store_api::router())
        .merge(crate::subscriptions::store_api::router())
        .merge(crate::subscriptions::publisher::router())
        .merge(crate::apis::store_api::router())
        .merge(crate::apis::store_api_tags::router())
        .merge(crate::documents::publisher::router())
        .merge(crate::documents::store_api::router())
        .merge(crate::thumbnails::publisher::router())
        .merge(crate::thumbnails::store_api::router())
        .merge(crate::wsdl::publisher::router())
        .merge(crate::mcp::publisher::router())
        .merge(crate::mcp::store_api::router())
        .merge(crate::mediation::publisher::router())
        .merge(crate::mediation::gateway_api::router())
        .merge(crate::archives::import_export::router())
        .merge(crate::archives::admin::router())
        .merge(crate::users::admin::router())
        .merge(crate::signing::admin::router())
        .merge(crate::fleet::admin::router())
        .merge(crate::workflows::admin::router())
        .merge(crate::backend_jwt::admin::router())
        .merge(crate::backend_jwt::oauth::router())
        .merge(crate::fleet::gateway_api::router())
        .merge(crate::analytics::gateway_api::router())
        .merge(crate::analytics::admin::router())
        .merge(crate::analytics::store_api::router())
        .merge(crate::openapi::document::router())
}

/// Every successful change (any method but GET/HEAD/OPTIONS) may change what gateways
/// must do (lifecycle, updates, deletes, subscriptions, keys, revocations, key rotation)
/// and what the token endpoint knows of clients and users: asks for a compile of what it
/// [`Touches`] (changes during one are taken in by the next, so bursts cost few) and
/// clears the client cache.
/// Issuing tokens, registering clients and gateways' analytics change neither (a refresh grant's revocation
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
        && path != apim_manifest::paths::CONTROL_PLANE_ANALYTICS
        && !path.starts_with("/client-registration/");
    let mut response = next.run(request).await;
    if changes && response.status().is_success() {
        match response.extensions_mut().remove::<Touches>() {
            Some(Touches(touched)) => state.shared::<ManifestHub>().touch(touched),
            None => state.shared::<ManifestHub>().request_recompile(),
        }
        state.shared::<ClientCache>().clear();
        state.shared::<crate::apis::StoreListing>().changed();
    }
    response
}
