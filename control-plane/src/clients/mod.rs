//! OAuth clients: their records, queries and cache (`queries`), dynamic client
//! registration (`registration`), and clients named by the URL of their metadata
//! document (`metadata_document`).

pub mod first_party;
mod metadata_document;
mod queries;
pub(crate) mod registration;

pub use metadata_document::MetadataFetcher;

pub use queries::{
    ClientCache, OAuthClient, Principal, find, find_application_key, find_registered, insert,
    new_client_id, new_client_secret, replace_application_secret, replace_secret, stored_secrets,
    update_grants,
};
