//! OAuth clients: their records, queries and cache (`queries`) and dynamic client
//! registration (`registration`).

mod queries;
pub(crate) mod registration;

pub use queries::{
    ClientCache, OAuthClient, Principal, find, find_application_key, find_registered, insert,
    new_client_id, new_client_secret, replace_application_secret, replace_secret, stored_secrets,
    update_grants,
};
