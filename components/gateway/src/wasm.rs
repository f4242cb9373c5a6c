//! The WASI 0.2 glue: the `wasi:http/incoming-handler`, `apim:gateway/policy` and
//! `apim:gateway/sync` exports (the host over WASI is [`crate::wasi_host`]).

use apim_http::bodies::Carriage;
use apim_http::contract::Replaced;
use apim_http::endpoints::Balance;
use apim_http::wasi as http;
use apim_http::{Headers, packed};
use wasip2::http::types::{IncomingRequest, ResponseOutparam};

use crate::access::{self, Logged};
use crate::call::Call;
use crate::faults::{Fault, PolicyFailure};
use crate::forward::BackendTarget;
use crate::gateway::{self, AnswerShape, Decision, Moment};
use crate::host::{Host, Request, Response};
use crate::mcp;
use crate::throttle::{self, LimitKind};
use crate::wasi_host::{GATEWAY, WasiHost, access_log_on, body_fault};

mod bindings {
    wit_bindgen::generate!({
        world: "apim:gateway/gateway",
        path: "../../wit",
        with: {
            "wasi:config/store@0.2.0-draft-2024-09-27": apim_http::wasi::config_store,
            "wasi:keyvalue/store@0.2.0-draft2": crate::wasi_host::kv_store,
            "wasi:keyvalue/atomics@0.2.0-draft2": crate::wasi_host::kv_atomics,
        },
        generate_all,
    });
}

use bindings::exports::apim::gateway::{policy, sync};

struct Component;

wasip2::http::proxy::export!(Component);
#[allow(
    unsafe_code,
    reason = "wit-bindgen's export glue for apim:gateway/policy and apim:gateway/sync"
)]
mod world_exports {
    use super::{Component, bindings};
    bindings::export!(Component with_types_in bindings);
}

impl wasip2::exports::http::incoming_handler::Guest for Component {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let started = WasiHost.now_millis();
        let mut head = http::request_head(&request);
        let traced = crate::trace::begin(&WasiHost, &mut head.headers);
        let logged = access_log_on().then(|| Logged::of(&head));
        let mut call = Call::default();
        let response = answer(&request, head, &mut call);
        let status = response.status;
        http::write_response(response_out, response);
        if let Some(logged) = logged {
            let now = WasiHost.now_millis();
            let line = access::line(
                &call,
                &logged,
                &traced.trace_id_hex(),
                status,
                (now, now - started),
            );
            println!("{line}");
        }
        // Answered: now, where the host runs no loop of its own, catch up if it is time.
        let head = GATEWAY.with(|gateway| gateway.borrow_mut().take_head_read());
        crate::sync::catch_up_if_due(&WasiHost, head);
    }
}

/// The answer to the request whose head is `head`, noting in `call` what it came to.
/// Refusals that need only the head come before any body is read; the body is then read
/// within its limit, announced or chunked alike.
fn answer(request: &IncomingRequest, mut head: Request, call: &mut Call) -> Response {
    let target = match gateway::admit_target(&WasiHost, &head, Carriage::Held) {
        Ok(target) => target,
        Err((refusal, code)) => {
            call.fault_code = code;
            return refusal;
        }
    };
    let limit = gateway::held_body_limit(&WasiHost, &target);
    if let Err(err) = http::read_request_body(request, &mut head, limit) {
        let fault = body_fault(err);
        call.fault_code = fault.code;
        return fault.render(&head.headers);
    }
    GATEWAY.with(|gateway| gateway.borrow_mut().handle_described(&WasiHost, head, call))
}

impl policy::Guest for Component {
    fn decide(request: policy::RequestHead, moment: policy::Moment) -> policy::Verdict {
        let request = match request_of(request) {
            Ok(request) => request,
            Err(fault) => return unreadable(&fault),
        };
        let verdict = GATEWAY.with(|gateway| {
            (gateway.borrow_mut()).decide_at(&WasiHost, &request, moment_of(moment))
        });
        policy_verdict(verdict)
    }

    fn decide_with_body(
        request: policy::RequestHead,
        body: Vec<u8>,
        moment: policy::Moment,
    ) -> policy::Verdict {
        let mut request = match request_of(request) {
            Ok(request) => request,
            Err(fault) => return unreadable(&fault),
        };
        request.body = body;
        let verdict = GATEWAY.with(|gateway| {
            (gateway.borrow_mut()).decide_with_body(&WasiHost, &request, moment_of(moment))
        });
        policy_verdict(verdict)
    }

    fn mediate_answer(
        request: policy::RequestHead,
        call: policy::Call,
        mediation: Vec<u8>,
        answer: Option<policy::Response>,
    ) -> policy::Response {
        let request = match request_of(request) {
            Ok(request) => request,
            Err(fault) => return policy_response(fault.render(&Headers::new()), fault.code),
        };
        let Some(shape) = AnswerShape::read(&mediation) else {
            let fault = Fault::mediation_unreadable();
            return policy_response(fault.render(&request.headers), fault.code);
        };
        let answer = answer.map(|answer| Response {
            status: answer.status,
            headers: answer.headers,
            body: answer.body,
        });
        // The caller as the verdict named it: the application's id and the end user.
        let [_, _, _, _, application, _, user] =
            packed::unpack_texts::<7>(&call.texts).unwrap_or_default();
        let (made, code) = GATEWAY.with(|gateway| {
            let caller = (user, application);
            (gateway.borrow_mut()).shape_answer(&WasiHost, &request, &shape, answer, caller)
        });
        policy_response(made, code)
    }

    fn throttled(
        request: policy::RequestHead,
        kind: policy::LimitKind,
        window_end_ms: u64,
        mediation: Option<Vec<u8>>,
    ) -> policy::Response {
        let kind = match kind {
            policy::LimitKind::ApiTps => LimitKind::ApiTps,
            policy::LimitKind::ResourceTier => LimitKind::ResourceTier,
            policy::LimitKind::SubscriptionTier => LimitKind::SubscriptionTier,
            policy::LimitKind::ApplicationTier => LimitKind::ApplicationTier,
        };
        let window_end_ms = i64::try_from(window_end_ms).unwrap_or(i64::MAX);
        let fault = throttle::refusal(kind, window_end_ms);
        match AnswerShape::tool_of(mediation.as_deref()) {
            Some(tool) => policy_response(gateway::tool_refusal(&tool.reply, &fault), fault.code),
            None => rendered_for(request, &fault),
        }
    }

    fn policy_failed(
        request: policy::RequestHead,
        failure: policy::PolicyFailure,
    ) -> policy::Response {
        let failure = match failure {
            policy::PolicyFailure::Trapped => PolicyFailure::Trapped,
            policy::PolicyFailure::CpuBudget => PolicyFailure::CpuBudget,
            policy::PolicyFailure::MemoryBudget => PolicyFailure::MemoryBudget,
            policy::PolicyFailure::TimeBudget => PolicyFailure::TimeBudget,
            policy::PolicyFailure::BadPath => PolicyFailure::BadPath,
            policy::PolicyFailure::BadChange => PolicyFailure::BadChange,
            policy::PolicyFailure::Unavailable => PolicyFailure::Unavailable,
            policy::PolicyFailure::Suspended => PolicyFailure::Suspended,
        };
        rendered_for(request, &Fault::policy_failed(failure))
    }

    fn body_too_large(request: policy::RequestHead) -> policy::Response {
        rendered_for(request, &Fault::payload_too_large())
    }

    fn backend_failed(
        request: policy::RequestHead,
        timed_out: bool,
        suspended: bool,
        mediation: Option<Vec<u8>>,
    ) -> policy::Response {
        let tool = AnswerShape::tool_of(mediation.as_deref());
        match request_of(request) {
            Ok(request) => {
                let (answer, code) = GATEWAY.with(|gateway| {
                    let gateway = &mut *gateway.borrow_mut();
                    gateway.backend_failed(&WasiHost, &request, timed_out, suspended, tool.as_ref())
                });
                policy_response(answer, code)
            }
            Err(fault) => policy_response(fault.render(&Headers::new()), fault.code),
        }
    }
}

/// The host's moment as the gateway takes it.
fn moment_of(moment: policy::Moment) -> Moment {
    Moment {
        manifest_epoch: moment.manifest_epoch,
        now_ms: i64::try_from(moment.now_ms).unwrap_or(i64::MAX),
    }
}

/// How the host answers a tool call with its operation's answer.
fn policy_tool_reply(tool: &mcp::Answering) -> policy::ToolReply {
    policy::ToolReply {
        id: tool.reply.id.to_string(),
        stateless: tool.reply.era == mcp::Era::Stateless,
        structured: tool.structured,
    }
}

/// A verdict as the host takes it.
fn policy_verdict(verdict: gateway::Verdict) -> policy::Verdict {
    let decision = match verdict.decision {
        Decision::Forward(forwarding) => {
            let mediation = forwarding.answer_shape();
            let tool_reply = forwarding.tool_answered_by_host().map(policy_tool_reply);
            let backend = forwarding.backend;
            policy::Decision::Forward(policy::Forward {
                method: backend.method,
                targets: backend.targets.into_iter().map(policy_target).collect(),
                balance: match backend.balance {
                    Balance::Single => policy::Balance::Single,
                    Balance::LoadBalance => policy::Balance::LoadBalance,
                    Balance::Failover => policy::Balance::Failover,
                },
                list: backend.list,
                replaced: match backend.replaced {
                    Replaced::ApiCall => policy::ReplacedHeaders::ApiCall,
                    Replaced::WebSocket => policy::ReplacedHeaders::Websocket,
                    Replaced::TokenRelay => policy::ReplacedHeaders::TokenRelay,
                },
                removed_headers: backend.removed_headers,
                added_headers: backend.added_headers,
                response_removed: forwarding.response_removed,
                response_headers: forwarding.response_headers,
                cache: forwarding
                    .cache
                    .map(|(key, ttl_secs)| policy::CacheStore { key, ttl_secs }),
                upgrade: backend.upgrade,
                body: backend.body,
                mediation,
                tool_reply,
                tenant_policy: backend.policy.map(|policy| {
                    let policy = *policy;
                    policy::TenantPolicy {
                        digest: policy.digest,
                        size: policy.size,
                        with_body: policy.with_body,
                        resource: policy.resource,
                    }
                }),
            })
        }
        Decision::Respond(response) => {
            policy::Decision::Respond(policy_response(response, verdict.call.fault_code))
        }
        Decision::Handle => policy::Decision::Handle,
        Decision::ReadBody(limit) => policy::Decision::ReadBody(limit),
    };
    let limits = verdict
        .limits
        .into_iter()
        .map(|limit| policy::Limit {
            kind: match limit.kind {
                LimitKind::ApiTps => policy::LimitKind::ApiTps,
                LimitKind::ResourceTier => policy::LimitKind::ResourceTier,
                LimitKind::SubscriptionTier => policy::LimitKind::SubscriptionTier,
                LimitKind::ApplicationTier => policy::LimitKind::ApplicationTier,
            },
            key: limit.key,
            allowed: limit.allowed,
            window_ms: limit.window_ms,
        })
        .collect();
    policy::Verdict {
        limits,
        decision,
        call: policy_call(&verdict.call),
    }
}

impl sync::Guest for Component {
    fn pull() -> Result<u64, String> {
        crate::sync::pull(&WasiHost)
            .map(|position| position.version)
            .map_err(|err| err.to_string())
    }
}

/// An endpoint as the host takes it.
fn policy_target(target: BackendTarget) -> policy::Target {
    let config = target.config;
    policy::Target {
        scheme: target.scheme,
        authority: target.authority,
        path_with_query: target.path_with_query,
        timeout_ms: target.timeout_ms,
        key: target.key,
        settings: policy::EndpointSettings {
            discard_on_timeout: config.discard_on_timeout,
            suspend_codes: config.suspend_codes,
            suspend_ms: config.suspend_ms,
            suspend_max_ms: config.suspend_max_ms,
            factor: config.factor,
            retry_codes: config.retry_codes,
            retries: config.retries,
            retry_delay_ms: config.retry_delay_ms,
        },
    }
}

/// A request head from the host, as a request without a body; a 400 when its headers
/// cannot be unpacked (no host of ours packs them so).
fn request_of(head: policy::RequestHead) -> Result<Request, Fault> {
    let headers = packed::unpack(&head.headers)
        .map_err(|_| Fault::bad_request("The request's headers could not be read."))?;
    Ok(Request {
        method: head.method,
        path_with_query: head.path_with_query,
        headers,
        body: Vec::new(),
        scheme: match head.scheme {
            policy::Scheme::Http => apim_http::Scheme::Http,
            policy::Scheme::Https => apim_http::Scheme::Https,
        },
    })
}

/// `fault` rendered for the request whose head is `head`.
fn rendered_for(head: policy::RequestHead, fault: &Fault) -> policy::Response {
    let headers = packed::unpack(&head.headers).unwrap_or_default();
    policy_response(fault.render(&headers), fault.code)
}

/// The verdict for a head whose headers could not be read: `fault`, counted against no
/// limit.
fn unreadable(fault: &Fault) -> policy::Verdict {
    policy::Verdict {
        limits: Vec::new(),
        decision: policy::Decision::Respond(policy_response(
            fault.render(&Headers::new()),
            fault.code,
        )),
        call: policy_call(&Call::default()),
    }
}

/// What a request came to, as the host takes it.
fn policy_call(call: &Call) -> policy::Call {
    policy::Call {
        texts: packed::pack_texts(&[
            &call.api,
            &call.api_id,
            &call.version,
            &call.resource,
            &call.application,
            &call.key_type,
            &call.user,
        ]),
        cached: call.cached,
    }
}

/// An answer of the component's own, with the code of the fault it renders (0: none).
fn policy_response(response: Response, fault_code: u32) -> policy::Response {
    policy::Response {
        status: response.status,
        headers: response.headers,
        body: response.body,
        fault_code,
    }
}
