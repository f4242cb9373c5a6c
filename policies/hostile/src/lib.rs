//! A request policy that misbehaves as the request's `x-hostile` header asks, for the
//! containment tests and the benchmark (tests only): `loop` spins forever, `memory`
//! allocates until it cannot, `panic` panics, `headers` answers with enormous headers,
//! `sleep` blocks in a host call for a minute, `body` echoes the body it was given in a
//! header; `set` sets one header; `credentials` says whether it was shown the caller's
//! bearer token. Without the header it changes nothing (the
//! benchmark's no-op policy).

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

fn asked(request: &Request) -> Option<&[u8]> {
    request
        .headers
        .iter()
        .find(|(name, _)| name == "x-hostile")
        .map(|(_, value)| value.as_slice())
}

fn unchanged() -> Changes {
    Changes {
        set_headers: Vec::new(),
        remove_headers: Vec::new(),
        path_with_query: None,
        body: None,
    }
}

impl Guest for Policy {
    fn on_request(request: Request) -> Decision {
        let mut changes = unchanged();
        match asked(&request) {
            None => {}
            Some(b"loop") => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            Some(b"memory") => {
                let mut kept: Vec<Vec<u8>> = Vec::new();
                loop {
                    // Reserved, not written: memory grows at almost no fuel.
                    kept.push(Vec::with_capacity(1 << 20));
                    std::hint::black_box(&kept);
                }
            }
            Some(b"panic") => panic!("a policy that panics"),
            Some(b"headers") => {
                let value = vec![b'a'; 4 * 1024];
                changes.set_headers = (0..80)
                    .map(|i| (format!("x-huge-{i}"), value.clone()))
                    .collect();
            }
            Some(b"sleep") => std::thread::sleep(std::time::Duration::from_secs(60)),
            Some(b"body") => {
                let body = request.body.unwrap_or_default();
                changes.set_headers =
                    vec![("x-body-bytes".into(), body.len().to_string().into_bytes())];
            }
            Some(b"set") => changes.set_headers = vec![("x-policy".into(), b"set".to_vec())],
            Some(b"credentials") => {
                let bearer = request
                    .headers
                    .iter()
                    .any(|(name, value)| name == "authorization" && value.starts_with(b"Bearer "));
                let seen: &[u8] = if bearer { b"bearer" } else { b"none" };
                changes.set_headers = vec![("x-seen-authorization".into(), seen.to_vec())];
            }
            Some(_) => {}
        }
        Decision::Proceed(changes)
    }
}

#[allow(unsafe_code, reason = "wit-bindgen's export glue for the policy world")]
mod world_exports {
    use super::{Policy, bindings};
    bindings::export!(Policy with_types_in bindings);
}
