//! Application keys: what WSO2 shows of them (`records`) and the store resources that
//! generate and read them (`store_api`) and change them (`store_api_updates`: grants, callback URL,
//! secret).

mod pending;
mod records;
pub(crate) mod store_api;
pub(crate) mod store_api_updates;

pub use pending::approve_key_request;
pub use records::{ApplicationKey, application_keys};
