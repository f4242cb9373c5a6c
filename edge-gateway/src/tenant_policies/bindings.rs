//! Host bindings for tenants' request policies (`wit/policy/world.wit`, world
//! `apim:policy/request-policy`): its one export, called asynchronously so that a policy
//! past its budget can be interrupted.

#![allow(missing_docs, reason = "generated code")]

wasmtime::component::bindgen!({
    path: "../wit/policy",
    world: "apim:policy/request-policy",
    exports: { default: async },
});
