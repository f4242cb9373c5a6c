//! The WASI 0.2 glue: the `wasi:http/incoming-handler` export (the host over WASI is
//! [`crate::wasi_host`]).

use apim_http::wasi as http;
use wasip2::http::types::{IncomingRequest, ResponseOutparam};

use crate::wasi_host::answer;

struct Component;

wasip2::http::proxy::export!(Component);

impl wasip2::exports::http::incoming_handler::Guest for Component {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let response = answer(http::read_request(&request));
        http::write_response(response_out, response);
    }
}
