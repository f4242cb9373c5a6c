//! An API's WSDL (WSO2 v0.14): its row and queries (`store`) and the publisher's
//! resource (`handlers`).

mod handlers;
mod store;

pub use handlers::router;
