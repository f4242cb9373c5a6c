//! The WASI 0.3 glue: the `wasi:http/handler@0.3.0` export of the `wasi:http/service`
//! world (the host over WASI is [`crate::wasi_host`]). It answers as WASI 0.2's handler
//! does; hosts that keep an instance for many requests (Spin from 4.1, edge-gateway) keep
//! its gateway, with the entries it has read and the tokens it has verified, warm. There
//! is no `apim:gateway/policy` export: such hosts forward through `wasi:http`.

use apim_http::wasi_p3::{self as http, wasip3};
use wasip3::http::types::{ErrorCode, Request as WasiRequest, Response as WasiResponse};

use crate::access::{self, Logged};
use crate::call::Call;
use crate::gateway;
use crate::host::{Host, Request, Response};
use crate::wasi_host::{GATEWAY, WasiHost, access_log_on, body_fault};
use apim_http::bodies::Carriage;

struct Component;

http::export_handler!(Component);

impl wasip3::exports::http::handler::Guest for Component {
    async fn handle(request: WasiRequest) -> Result<WasiResponse, ErrorCode> {
        // Spin from 4.1 and edge-gateway keep a WASIp3 instance for many requests.
        crate::kept::keep();
        let started = WasiHost.now_millis();
        let mut head = http::request_head(&request);
        let traced = crate::trace::begin(&WasiHost, &mut head.headers);
        let logged = access_log_on().then(|| Logged::of(&head));
        let mut call = Call::default();
        let response = answer(request, head, &mut call).await;
        let status = response.status;
        let answer = http::response(response);
        if let Some(logged) = logged {
            let now = WasiHost.now_millis();
            let trace_id = traced.trace_id_hex();
            let line = access::line(&call, &logged, &trace_id, status, (now, now - started));
            println!("{line}");
        }
        // Once answered, where the host runs no loop of its own, catch up if it is time.
        let head = GATEWAY.with(|gateway| gateway.borrow_mut().take_head_read());
        wasip3::spawn(async move { crate::sync::catch_up_if_due(&WasiHost, head) });
        Ok(answer)
    }
}

/// The gateway's answer to `request`, whose head is `head`; refusals that need only the
/// head come before any body is read.
async fn answer(request: WasiRequest, mut head: Request, call: &mut Call) -> Response {
    let target = match gateway::admit_target(&WasiHost, &head, Carriage::Held) {
        Ok(target) => target,
        Err((refusal, code)) => {
            call.fault_code = code;
            return refusal;
        }
    };
    let limit = gateway::held_body_limit(&WasiHost, &target);
    if let Err(err) = http::read_request_body(request, &mut head, limit).await {
        let fault = body_fault(err);
        call.fault_code = fault.code;
        return fault.render(&head.headers);
    }
    GATEWAY.with(|gateway| gateway.borrow_mut().handle_described(&WasiHost, head, call))
}
