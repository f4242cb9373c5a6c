//! An API's WSDL (WSO2 v0.14): its row and queries (`store`) and the publisher's
//! resource (`handlers`).

mod handlers;
mod store;

pub use handlers::router;

/// This room's own operation in the control plane's OpenAPI document (`PUT`, beside
/// WSO2's `GET` and `POST`, described by its contract).
#[derive(utoipa::OpenApi)]
#[openapi(paths(handlers::put_wsdl))]
pub struct Api;
