//! The WASI glue: the `wasi:http/incoming-handler` export, and [`Host`] over
//! `wasi:http/outgoing-handler` and `wasi:config/store` (through [`apim_http::wasi`]).

use apim_http::wasi::{self as http, BodyError};
use apim_http::{Outbound, Response, SendError};
use wasip2::http::types::{IncomingRequest, ResponseOutparam};

use crate::backend::Host;
use crate::errors::ApiError;

struct Component;

wasip2::http::proxy::export!(Component);

impl wasip2::exports::http::incoming_handler::Guest for Component {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let response = match http::read_request(&request) {
            Ok(request) => crate::facade::handle(&WasiHost, &request),
            Err(BodyError::TooLarge) => ApiError::PayloadTooLarge.response(),
            Err(BodyError::Broken(why)) => {
                ApiError::BadRequest(format!("The request body broke off: {why}")).response()
            }
        };
        http::write_response(response_out, response);
    }
}

/// The component's host, over WASI.
struct WasiHost;

impl Host for WasiHost {
    fn setting(&self, name: &str) -> Option<String> {
        http::setting(name)
    }

    fn send(&self, request: Outbound) -> Result<Response, SendError> {
        http::send(request)
    }
}
