//! Throttling tiers: WSO2's defaults (`levels`), a tenant's own and changed ones
//! (`records`, `queries`), the tiers in effect for a tenant and who may use them
//! (`catalogue`), what a written tier must be (`rules`), what keeps one from being deleted
//! (`usage`), and the publisher's and the store's resources (`publisher`, `store_api`).

mod catalogue;
mod levels;
pub(crate) mod publisher;
mod queries;
mod records;
mod rules;
pub(crate) mod store_api;
mod usage;

pub use catalogue::{Permissions, find as find_tier, tenant_rates, unknown};
pub use levels::{Tier, TierLevel, UNLIMITED, find, tiers};
pub use records::{TierDto, TierSpec};
