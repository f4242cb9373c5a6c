//! The API gateway as a WebAssembly component: the WASI 0.2 HTTP proxy world, or with the
//! feature `p3` WASI 0.3's `wasi:http/service`.
//!
//! Per request it routes by context and version, matches the operation, checks the bearer
//! token and subscription, throttles, and forwards to the backend, answering failures the
//! way WSO2's gateway does. State shared between instances (the route manifest entry by
//! entry, throttling counters, cached responses, opaque tokens' introspections) lives in the host's key-value store; each
//! instance keeps the entries it has read and the tokens it has verified while it lives.
//!
//! Everything but the WASI glue (`wasm`, or with the feature `p3` `wasm_p3`, over
//! `wasi_host`; built only for wasm32) is plain Rust behind the [`host::Host`] trait, so
//! it is tested natively.

pub mod access;
pub mod audience;
pub mod auth;
pub mod backend_jwt;
pub mod balance;
pub mod cache;
pub mod call;
pub mod cors;
pub mod faults;
pub mod forward;
pub mod gateway;
pub mod host;
pub mod input_schema;
pub mod internal;
pub mod introspect;
pub mod kept;
pub mod keys;
pub mod mcp;
pub mod mediate;
pub mod payloads;
pub mod relay;
pub mod resource;
pub mod small_blocks;
pub mod state;
pub mod sync;
pub mod throttle;
pub mod trace;
pub mod upgrade;
pub mod view;

/// A request's head and verdict cross the boundary as dozens of small allocations: those
/// come from free lists of their own ([`small_blocks`]), the rest from talc rather than
/// Rust's default dlmalloc, which made allocating a tenth of the component's instructions.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: small_blocks::SmallBlocks<talc::wasm::WasmDynamicTalc> =
    small_blocks::SmallBlocks::new(talc::wasm::new_wasm_dynamic_allocator());

#[cfg(target_arch = "wasm32")]
mod wasi_host;
#[cfg(all(target_arch = "wasm32", not(feature = "p3")))]
mod wasm;
#[cfg(all(target_arch = "wasm32", feature = "p3"))]
mod wasm_p3;

#[cfg(test)]
mod tests;
