//! Endpoint certificates uploaded in the publisher (`/certificates`): the row and WSO2's
//! shapes of it (`records`), what an upload must be (`parse`: one X.509 certificate in
//! PEM, never a private key), its queries (`store`) and its resources (`handlers`).
//! Gateways trust each for its endpoint's host and port only (`manifest::trust`).

mod handlers;
mod parse;
mod records;
mod store;

pub use handlers::router;
pub use store::bindings;
