//! Mediation policies (WSO2 v0.14): the record and its row (`records`), its rules
//! (`rules`), its queries (`store`), the global policies (`defaults`) and the
//! publisher's resources (`handlers`).

mod defaults;
mod handlers;
mod records;
mod rules;
mod store;

pub use handlers::router;
