//! An example request policy (`wit/policy/world.wit`): every call reaches the backend
//! with `x-policy: add-header` and `x-end-user` naming the token's user, without the
//! client's `x-debug`; a call whose query asks for `debug` is answered 403 here, the
//! backend never called.
//!
//! Build it with `cargo build -p add-header-policy --target wasm32-wasip2 --release`
//! and upload `target/wasm32-wasip2/release/add_header_policy.wasm` as an API's `in`
//! mediation policy (docs/gateway.md).

#![cfg(target_arch = "wasm32")]

#[allow(unsafe_code, reason = "wit-bindgen's export glue for the policy world")]
mod bindings {
    wit_bindgen::generate!({
        world: "request-policy",
        path: "../../wit/policy",
    });
}

use bindings::Guest;
use bindings::apim::policy::types::{Answer, Changes, Decision, Request};

struct Policy;

impl Guest for Policy {
    fn on_request(request: Request) -> Decision {
        if asks_for_debug(&request.path_with_query) {
            return Decision::Respond(Answer {
                status: 403,
                headers: vec![("content-type".into(), b"text/plain".to_vec())],
                body: b"no debugging through the gateway\n".to_vec(),
            });
        }
        Decision::Proceed(Changes {
            set_headers: vec![
                ("x-policy".into(), b"add-header".to_vec()),
                ("x-end-user".into(), request.call.end_user.into_bytes()),
            ],
            remove_headers: vec!["x-debug".into()],
            path_with_query: None,
            body: None,
        })
    }
}

#[allow(unsafe_code, reason = "wit-bindgen's export glue for the policy world")]
mod world_exports {
    use super::{Policy, bindings};
    bindings::export!(Policy with_types_in bindings);
}

/// Whether the query has a `debug` parameter.
fn asks_for_debug(path_with_query: &str) -> bool {
    let query = path_with_query
        .split_once('?')
        .map_or("", |(_, query)| query);
    query
        .split('&')
        .any(|pair| pair.split('=').next() == Some("debug"))
}
