//! Mediation policies (WSO2 v0.14): the record and its row (`records`), its rules
//! (`rules`), its queries (`queries`), the global policies (`defaults`) and the
//! publisher's resources (`publisher`).

mod defaults;
pub(crate) mod publisher;
mod queries;
mod records;
mod rules;

pub use queries::copy_mediation_policies_to_version;
