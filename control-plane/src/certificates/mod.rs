//! Endpoint certificates uploaded in the publisher (`/certificates`): the row and WSO2's
//! shapes of it (`records`), what an upload must be (`parse`: one X.509 certificate in
//! PEM, never a private key), its alias, endpoint and room beside others (`rules`), its
//! queries (`queries`), its resources (`publisher`), and certificates as API projects
//! carry them (`carried`). Gateways trust each for its endpoint's host and port only
//! (`manifest::trust`).

mod carried;
mod parse;
pub(crate) mod publisher;
mod queries;
mod records;
mod rules;

pub use carried::{CarriedCertificate, Checked, add_carried, carried_for, check_carried};
pub use queries::bindings;
pub use records::CertificateRow;
