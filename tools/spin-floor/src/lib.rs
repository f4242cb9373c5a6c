//! The least a WASIp3 component can do for a gateway: forward each request, as it came,
//! to the backend its `x-backend` header names (`host:port`, plain HTTP), and give back
//! the backend's answer. The benchmark's `spin` part runs it under the same Spin as the
//! gateway's artefacts, so that what Spin costs per request (its HTTP server and client,
//! instances, the component model's calls) is measured apart from what the gateway adds.
//! Nothing is checked: it is never deployed.

#![cfg(target_arch = "wasm32")]

use wasip3::http::types::{ErrorCode, Request, Response, Scheme};

struct Floor;

#[allow(
    unsafe_code,
    reason = "wit-bindgen's export glue for wasi:http/handler"
)]
mod export {
    use super::Floor;
    wasip3::http::service::export!(Floor);
}

impl wasip3::exports::http::handler::Guest for Floor {
    async fn handle(request: Request) -> Result<Response, ErrorCode> {
        let backend = request.get_headers().get("x-backend");
        let authority = backend
            .first()
            .and_then(|value| std::str::from_utf8(value).ok())
            .ok_or(ErrorCode::HttpRequestDenied)?
            .to_owned();
        let addressed = request.set_scheme(Some(&Scheme::Http)).is_ok()
            && request.set_authority(Some(&authority)).is_ok();
        if !addressed {
            return Err(ErrorCode::HttpRequestUriInvalid);
        }
        wasip3::http::client::send(request).await
    }
}
