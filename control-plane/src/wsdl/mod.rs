//! An API's WSDL (WSO2 v0.14): its row and queries (`queries`) and the publisher's
//! resource (`publisher`).

pub(crate) mod publisher;
mod queries;

pub use queries::copy_wsdl_to_version;
