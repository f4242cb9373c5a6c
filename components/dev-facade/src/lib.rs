//! The developer-management REST facade (spec 4.6) over the legacy SOAP service, as a
//! WebAssembly component (WASI 0.2 HTTP proxy world; with the feature `p3`, WASI 0.3's
//! `wasi:http/service`).
//!
//! Each REST call becomes one or more SOAP 1.1 calls of the service's `developers.xsd`
//! contract (`getDeveloper`, `addDeveloper`, `deleteDeveloper`, `getRepo`, `addRepo`), and
//! each answer or fault becomes a JSON record or a JSON error. The service's address and
//! Basic credentials are settings (`dev_soap_url`, `dev_soap_user`, `dev_soap_password`).
//!
//! Everything but the WASI glue (`wasm`, or with the feature `p3` `wasm_p3`, over
//! `wasi_host`; built only for wasm32) is plain Rust behind the [`backend::Host`] trait,
//! so it is tested natively.

pub mod backend;
pub mod errors;
pub mod facade;
pub mod records;
pub mod soap;
pub use apim_http::xml;

#[cfg(target_arch = "wasm32")]
mod wasi_host;
#[cfg(all(target_arch = "wasm32", not(feature = "p3")))]
mod wasm;
#[cfg(all(target_arch = "wasm32", feature = "p3"))]
mod wasm_p3;

#[cfg(test)]
mod tests;
