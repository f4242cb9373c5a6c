//! Endpoint certificates uploaded in the publisher (`/certificates`): the row and WSO2's
//! shapes of it (`records`), what an upload must be (`parse`: one X.509 certificate in
//! PEM, never a private key), its queries (`store`) and its resources (`handlers`).
//! Gateways do not use them yet.

mod handlers;
mod parse;
mod records;
mod store;

pub use handlers::router;
