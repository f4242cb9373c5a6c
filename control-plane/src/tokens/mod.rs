//! The OAuth 2.0 token service: access tokens as signed JWTs (`jwt`) or opaque tokens
//! (`opaque`, by the application's `tokenType`), refresh token families and revocations
//! (`queries`), the management API's bearer caller (`caller`), the token, revocation and
//! JWKS endpoints (`oauth`) and introspection for gateways (`oauth_introspect`).

mod caller;
mod jwt;
pub(crate) mod oauth;
pub(crate) mod oauth_introspect;
mod opaque;
pub(crate) mod queries;

pub use caller::{Caller, MaybeCaller, store_tenant};
pub use jwt::{Claims, TokenError, sign, verify};
pub use queries::{drop_families_of, is_revoked, live_revocations};
