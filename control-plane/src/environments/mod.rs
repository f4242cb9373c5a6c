//! Gateway environments, as WSO2's publisher lists them (`GET /environments`): where API
//! consumers reach the gateways (`records`) and the publisher's resource (`publisher`).

pub(crate) mod publisher;
mod records;

pub use records::{DEFAULT_ENVIRONMENT, Endpoints, endpoints, gateway_urls};
