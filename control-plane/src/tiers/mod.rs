//! Throttling tiers: WSO2's catalogue of subscription, application and resource tiers
//! (`levels`) and its publisher and store resources (`handlers`).

mod handlers;
mod levels;

pub use handlers::router;
pub use levels::{Tier, TierDto, TierLevel, UNLIMITED, find, tiers};
