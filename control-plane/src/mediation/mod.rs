//! Mediation policies (WSO2 v0.14): the record and its row (`records`), its rules
//! (`rules`), its queries (`queries`), the global policies (`defaults`), Synapse
//! sequences compiled for gateways (`synapse`), an API's sequences resolved into its plan
//! (`sequences`), the publisher's resources (`publisher`) and tenants' WebAssembly
//! policies as gateways fetch them (`gateway_api`).

mod defaults;
pub(crate) mod gateway_api;
pub(crate) mod publisher;
pub mod queries;
pub mod records;
mod rules;
pub mod sequences;
pub mod synapse;

pub use defaults::global;
pub use queries::copy_mediation_policies_to_version;
pub use rules::check as check_policy;
