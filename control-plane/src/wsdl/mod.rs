//! An API's WSDL (WSO2 v0.14): its row and queries (`queries`) and the publisher's
//! resource (`publisher`).

pub(crate) mod publisher;
mod queries;
mod rules;

pub use queries::{
    WsdlRow, copy_wsdl_to_version, delete_of as delete_wsdl, find as find_wsdl, put as put_wsdl,
};
pub use rules::check as check_wsdl;
