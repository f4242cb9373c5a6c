//! Approval workflows (WSO2's workflow extensions): a tenant's switches saying which
//! requests wait for an approval (`records`, `store`), the requests waiting, and their
//! approval or rejection (`handlers`: the tenant administrator's switches and the
//! publisher's `update-workflow-status`; `decide`: what a decision does to the
//! application, subscription or key it is about).

mod decide;
mod handlers;
mod records;
mod store;

pub use handlers::router;
pub use records::{Kind, Workflow};
pub use store::{forget, forget_application, latest_reference, open, pending, required};

/// This room's own operations in the control plane's OpenAPI document
/// (`update-workflow-status` is WSO2's, described by its contract).
#[derive(utoipa::OpenApi)]
#[openapi(paths(handlers::get_settings, handlers::put_settings, handlers::list_waiting))]
pub struct Api;
