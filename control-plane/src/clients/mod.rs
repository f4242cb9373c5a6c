//! OAuth clients: their records, queries and cache (`store`) and dynamic client
//! registration (`registration`).

mod registration;
mod store;

pub use registration::router;
pub use store::{
    ClientCache, OAuthClient, Principal, find, find_application_key, find_registered, insert,
    new_client_id, new_client_secret, replace_application_secret, replace_secret, stored_secrets,
    update_grants,
};

/// This room's operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(registration::register))]
pub struct Api;
