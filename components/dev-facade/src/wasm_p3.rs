//! The WASI 0.3 glue: the `wasi:http/handler@0.3.0` export of the `wasi:http/service`
//! world (the host over WASI is [`crate::wasi_host`]); it answers as WASI 0.2's does.

use apim_http::wasi_p3::{self as http, wasip3};
use wasip3::http::types::{ErrorCode, Request as WasiRequest, Response as WasiResponse};

use crate::wasi_host::answer;

struct Component;

http::export_handler!(Component);

impl wasip3::exports::http::handler::Guest for Component {
    async fn handle(request: WasiRequest) -> Result<WasiResponse, ErrorCode> {
        let response = answer(http::read_request(request).await);
        Ok(http::response(response))
    }
}
