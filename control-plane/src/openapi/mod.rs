//! The control plane's own OpenAPI 3.1 document, served at `GET /api/am/openapi.json`
//! (`document`): WSO2's publisher and store contracts, which the control plane serves
//! (`wso2`), with the operations that are ours, described by their handlers (the
//! `#[utoipa::path]` beside each, collected by each room's `Api`), and the shapes of the
//! bodies they read and write as plain JSON (`shapes`), assembled in `document`.

pub(crate) mod document;
pub mod shapes;
pub mod wso2;

pub use document::{PATH, document};
pub use shapes::{
    AnalyticsReport, IntrospectForm, IntrospectionAnswer, JwkSet, LatestVersion, OAuthErrorBody,
    PageReport, RevokeForm, Status, TokenForm,
};
