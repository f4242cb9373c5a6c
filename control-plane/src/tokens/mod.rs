//! The OAuth 2.0 token service: access tokens as signed JWTs (`jwt`), refresh token
//! families and revocations (`store`), and the token, revocation and JWKS endpoints
//! (`handlers`).

mod handlers;
mod jwt;
mod store;

pub use handlers::{TokenResponse, issue, router};
pub use jwt::{Claims, TokenError, sign, verify};
pub use store::{drop_families_of, live_revocations};

/// This room's operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(handlers::token_endpoint, handlers::revoke_endpoint, handlers::jwks))]
pub struct Api;
