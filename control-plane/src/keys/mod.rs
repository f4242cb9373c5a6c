//! Application keys: what WSO2 shows of them (`records`) and the store resources that
//! generate and read them (`handlers`) and change them (`updates`: grants, callback URL,
//! secret).

mod handlers;
mod pending;
mod records;
mod updates;

pub use handlers::router;
pub use pending::approve_key_request;
pub use records::{ApplicationKey, application_keys};
