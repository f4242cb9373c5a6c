//! The host's side of the WIT world (`wit/world.wit`, `apim:gateway/gateway`): the
//! generated bindings, the instances that run the component (WASI 0.2 and WASIp3), and
//! the imports the component needs besides WASI and `wasi:http`: `wasi:keyvalue` and
//! `wasi:config`. What host and component must agree on beyond the WIT types lives in
//! `apim-http`'s `contract`, which both use.

pub mod bindings;
pub mod config_store;
pub mod engine;
pub mod instance_state;
pub mod instances;
pub mod keyvalue;
pub mod p3_service;
