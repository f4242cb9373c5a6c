//! The gateways that keep themselves current: who asks for changes and waits for them
//! (`sync`), and what they read and report (`handlers`: manifest pages, the manifest key,
//! changes, reports, behind the gateway secret).

mod handlers;
mod sync;

pub use handlers::{require_gateway_secret, router};
pub use sync::{
    Checkin, GatewayRecord, MAX_WAIT, follow_database, list, record, wait_for_version_after,
};

/// This room's operations in the control plane's OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    handlers::manifest_page,
    handlers::changes,
    handlers::manifest_key,
    handlers::page_report
))]
pub struct Api;
