//! Approval workflows (WSO2's workflow extensions): a tenant's switches saying which
//! requests wait for an approval (`records`, `queries`), the requests waiting, and their
//! approval or rejection (`admin`: the tenant administrator's switches and the
//! publisher's `update-workflow-status`; `decide`: what a decision does to the
//! application, subscription or key it is about).

pub(crate) mod admin;
mod decide;
mod queries;
mod records;

pub use queries::{forget, forget_application, latest_reference, open, pending, required};
pub use records::{Kind, Workflow};
