//! The gateways that keep themselves current (`admin`: the administration API's list): who asks for changes and waits for them
//! (`sync`), the compile loop and the pushes (`hub`), and what they read and report
//! (`gateway_api`: manifest pages, the manifest key,
//! changes, reports, behind the gateway secret).

pub(crate) mod admin;
pub(crate) mod gateway_api;
pub(crate) mod hub;
mod sync;

pub use hub::ManifestHub;
pub use sync::{
    Checkin, GatewayRecord, MAX_WAIT, follow_database, list, record, wait_for_version_after,
};
