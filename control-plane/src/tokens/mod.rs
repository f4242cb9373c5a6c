//! The OAuth 2.0 token service: access tokens as signed JWTs (`jwt`) or opaque tokens
//! (`opaque`, by the application's `tokenType`), refresh token families and revocations
//! (`queries`), the management API's bearer caller (`caller`), the token, revocation and
//! JWKS endpoints (`oauth`), the authorization code grant (`oauth_code`) with OpenID
//! Connect's id_tokens (`id_token`), UserInfo (`oauth_userinfo`), discovery
//! (`oauth_discovery`), RP-initiated logout (`oauth_logout`) and introspection for
//! gateways (`oauth_introspect`).

pub mod caller;
mod id_token;
pub(crate) mod issue;
mod jwt;
pub(crate) mod oauth;
mod oauth_code;
pub(crate) mod oauth_discovery;
pub(crate) mod oauth_introspect;
pub(crate) mod oauth_logout;
pub(crate) mod oauth_userinfo;
mod opaque;
pub(crate) mod queries;

pub use caller::{Caller, MaybeCaller, store_tenant};
pub use jwt::{Claims, TokenError, sign, verify};
pub use queries::{drop_families_of, is_revoked, live_revocations};
