//! A request policy that tries to reach the network: its component imports
//! `wasi:sockets`, which the policy world refuses at upload (tests only).

#![cfg(target_arch = "wasm32")]

#[allow(unsafe_code, reason = "wit-bindgen's export glue for the policy world")]
mod bindings {
    wit_bindgen::generate!({
        world: "request-policy",
        path: "../../wit/policy",
    });
}

use bindings::Guest;
use bindings::apim::policy::types::{Changes, Decision, Request};

struct Policy;

impl Guest for Policy {
    fn on_request(_request: Request) -> Decision {
        let reached = std::net::TcpStream::connect("127.0.0.1:9").is_ok();
        Decision::Proceed(Changes {
            set_headers: vec![("x-reached".into(), reached.to_string().into_bytes())],
            remove_headers: Vec::new(),
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
