//! What the facade's glue for either WASI version (`wasm`, `wasm_p3`) shares: the answer,
//! and [`Host`] over `wasi:config/store` and the version's `wasi:http` client (through
//! [`apim_http::wasi`] or `apim_http::wasi_p3`).

#[cfg(not(feature = "p3"))]
use apim_http::wasi as http;
use apim_http::wasi::BodyError;
#[cfg(feature = "p3")]
use apim_http::wasi_p3 as http;
use apim_http::{Outbound, Request, Response, SendError};

use crate::backend::Host;
use crate::errors::ApiError;

/// The facade's answer to a request read whole, or to one whose body could not be read.
pub(crate) fn answer(read: Result<Request, BodyError>) -> Response {
    match read {
        Ok(request) => crate::facade::handle(&WasiHost, &request),
        Err(BodyError::TooLarge) => ApiError::PayloadTooLarge.response(),
        Err(BodyError::Broken(why)) => {
            ApiError::BadRequest(format!("The request body broke off: {why}")).response()
        }
    }
}

/// The component's host, over WASI.
pub(crate) struct WasiHost;

impl Host for WasiHost {
    fn setting(&self, name: &str) -> Option<String> {
        http::setting(name)
    }

    fn send(&self, request: Outbound) -> Result<Response, SendError> {
        http::send(request)
    }
}
