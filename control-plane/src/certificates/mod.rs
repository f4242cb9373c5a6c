//! Endpoint certificates uploaded in the publisher (`/certificates`): the row and WSO2's
//! shapes of it (`records`), what an upload must be (`parse`: one X.509 certificate in
//! PEM, never a private key), its queries (`queries`) and its resources (`publisher`).
//! Gateways trust each for its endpoint's host and port only (`manifest::trust`).

mod parse;
pub(crate) mod publisher;
mod queries;
mod records;

pub use queries::bindings;
