//! Application keys: what WSO2 shows of them (`records`) and the store resources that
//! generate and read them (`handlers`).

mod handlers;
mod records;

pub use handlers::router;
pub use records::{ApplicationKey, application_keys};
