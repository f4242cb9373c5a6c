//! The OAuth 2.0 token service: access tokens as signed JWTs (`jwt`) or opaque tokens
//! (`opaque`, by the application's `tokenType`), refresh token families and revocations
//! (`store`), the token, revocation and JWKS endpoints (`handlers`) and introspection for
//! gateways (`introspect`).

mod handlers;
mod introspect;
mod jwt;
mod opaque;
mod store;

pub use handlers::{TokenResponse, issue, router};
pub use introspect::router as introspection_router;
pub use jwt::{Claims, TokenError, sign, verify};
pub use store::{drop_families_of, is_revoked, live_revocations};

/// This room's operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    handlers::token_endpoint,
    handlers::revoke_endpoint,
    handlers::jwks,
    introspect::introspect
))]
pub struct Api;
