//! Gateway environments, as WSO2's publisher lists them (`GET /environments`): where API
//! consumers reach the gateways (`records`) and the publisher's resource (`handlers`).

mod handlers;
mod records;

pub use handlers::router;
pub use records::{DEFAULT_ENVIRONMENT, Endpoints, endpoints};
