//! The request pipeline: internal routes, then for API calls routing, CORS, resource
//! matching, authentication, throttling, the response cache and forwarding.
//!
//! Each API's protected-resource metadata (RFC 9728) is answered on both paths, without a
//! token ([`crate::resource`]).
//!
//! An API call is first admitted ([`Gateway::plan`]), which ends in an answer or a
//! [`Forwarding`]. [`Gateway::handle`] (the `wasi:http` handler) then forwards itself;
//! [`Gateway::decide`] (the `policy` export) leaves counting the call against its limits
//! and forwarding it to a host that does both natively.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use apim_http::bodies::{self, Carriage};
use apim_manifest::canon::{self, Target};
use apim_manifest::mcp::McpTool;
use apim_manifest::mediation::Mediation;
use apim_manifest::{ApiRoute, ApiState, ApiType, AuthType, Operation, paths};

use crate::audience::Addressed;
use crate::auth::{self, Admitted, Environment};
use crate::balance;
pub use crate::call::Call;
use crate::faults::{Fault, PolicyFailure};
use crate::forward::{BackendRequest, ForwardSettings, TenantPolicy};
use crate::host::{Headers, Host, MAX_BODY_BYTES, Request, Response, content_length, header};
use crate::kept;
use crate::mediate::{self, Body, Facts, FaultOutcome, Rewrite};
use crate::relay::{token_relay, token_service, token_service_path};
use crate::state;
use crate::sync::{self, settings};
use crate::throttle::{Counting, Limit};
use crate::view::View;
use crate::{backend_jwt, cache, cors, forward, internal, mcp, resource, throttle, upgrade};

/// How long a request waits for another instance to finish pulling the first manifest.
const FIRST_MANIFEST_WAIT_MS: u64 = 5_000;
/// How often it looks meanwhile.
const FIRST_MANIFEST_POLL_MS: u64 = 5;

/// One instance's gateway: its view of the manifest, with what it has verified under it.
/// Correct whether it lives for one request (Spin) or many (edge-gateway reuse).
#[derive(Default)]
pub struct Gateway {
    view: Option<View>,
    /// Forwarding's settings, read once (settings do not change under an instance).
    forwarding: Option<Rc<ForwardSettings>>,
    /// The head as the last request read it, for its catch-up ([`Gateway::take_head_read`]).
    head_read: Option<Vec<u8>>,
    /// The host's moment for the decision being made ([`Gateway::decide_at`]).
    moment: Option<Moment>,
    /// The epoch under which the view last read the head; `None` after any read without
    /// one.
    head_epoch: Option<u64>,
    /// When a kept instance last read the head without a host's moment (milliseconds
    /// since the epoch), and the head as stored then ([`kept::HEAD_FRESH_MS`]).
    head_checked: Option<(i64, Vec<u8>)>,
    /// MCP tools' input schemas, each read once per instance.
    mcp_validators: mcp::Validators,
}

/// What a host that decides requests by `apim:gateway/policy` knows as it asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    /// Its number for the writes of the manifest's head it has seen.
    pub manifest_epoch: u64,
    /// Its clock, milliseconds since the Unix epoch.
    pub now_ms: i64,
}

/// The API a request is routed to, and the resource path within it.
type Routed<'p> = (Rc<ApiRoute>, &'p str);

/// How much of a request the gateway has when it plans the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// All of it, for the component to forward itself (its handler, MCP tool calls).
    Whole,
    /// Its head, from a host that forwards (and upgrades connections) itself.
    Head,
    /// Its head and its body read whole, from such a host.
    HeadAndBody,
}

impl Arrival {
    /// How its body is carried, for its limit.
    fn carriage(self) -> Carriage {
        match self {
            Arrival::Head => Carriage::Streamed,
            Arrival::Whole | Arrival::HeadAndBody => Carriage::Held,
        }
    }
}

/// What an admitted API call comes to.
#[allow(
    clippy::large_enum_variant,
    reason = "made and taken apart once per call; boxing the forwarding would cost every \
              forwarded call an allocation to spare the others a few bytes (64-bit only)"
)]
pub enum Plan {
    /// An answer of the gateway's own (a CORS preflight).
    Respond(Response),
    /// A request for the backend.
    Forward(Forwarding),
    /// A message for the API's MCP server, which the component serves itself
    /// ([`Gateway::serve_mcp`]).
    Mcp(Rc<ApiRoute>),
    /// The API's in flow reads or makes the body, which was not read: read it whole and
    /// plan again.
    ReadBody,
}

/// A request for the backend, and what the answer gets on its way back.
pub struct Forwarding {
    /// The request, as it differs from the client's.
    pub backend: BackendRequest,
    /// Headers set on the answer (CORS, an API's out flow).
    pub response_headers: Headers,
    /// Headers taken off the backend's answer (an API's out flow).
    pub response_removed: Vec<String>,
    /// The answer an API's in flow gave (`respond`), instead of the backend's, once the
    /// call has counted against its limits.
    pub answer: Option<Box<Response>>,
    /// The API's out flow needs the backend's answer: read it whole and have
    /// [`Gateway::mediate_answer`] make the client's of it with the mediation of this, the
    /// API as the decision read it (a manifest read meanwhile may have changed it).
    pub mediate_answer: Option<Rc<ApiRoute>>,
    /// The call is an MCP tool's, for a host that forwards by itself: what makes the
    /// tool's result of the backend's answer (boxed: few calls are tools').
    pub tool: Option<Box<mcp::Answering>>,
    /// Cache key and seconds, for a GET of an API that caches responses.
    pub cache: Option<(String, u64)>,
    /// The limits the call counts against before it is forwarded or answered from the
    /// cache.
    pub limits: Vec<Limit>,
    /// How the component writes them, where it counts them.
    counting: Counting,
    /// When the call was admitted.
    now_ms: i64,
}

/// A [`Decision`], and the limits that must each admit the request before the host
/// carries it out (the host counts them; see [`throttle`]).
pub struct Verdict {
    /// The limits, in the order they are checked.
    pub limits: Vec<Limit>,
    /// What to do once they have admitted the request.
    pub decision: Decision,
    /// What the request came to, for the host's metrics and access log.
    pub call: Call,
}

impl Verdict {
    /// Answer `response`, counting against no limit.
    fn respond(response: Response, call: Call) -> Self {
        Self {
            limits: Vec::new(),
            decision: Decision::Respond(response),
            call,
        }
    }
}

impl From<Decision> for Verdict {
    fn from(decision: Decision) -> Self {
        Self {
            limits: Vec::new(),
            decision,
            call: Call::default(),
        }
    }
}

/// What the component needs, once a host that forwards by itself has the backend's
/// answer, to make the client's of it: the API's out flow as the decision read it, and
/// for an MCP tool call, how to make its result. The host carries it opaque with the
/// verdict (`forward`'s `mediation`), so that a manifest change while the backend
/// answers never splits one call between two versions of its flows.
#[derive(Debug, Default, Deserialize)]
pub struct AnswerShape {
    /// The API's out flow.
    #[serde(default)]
    pub plan: Option<Mediation>,
    /// The tool call's.
    #[serde(default)]
    pub tool: Option<mcp::Answering>,
}

/// [`AnswerShape`] as a forwarding writes it.
#[derive(Serialize)]
struct ShapeOf<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<&'a Mediation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a mcp::Answering>,
}

impl AnswerShape {
    /// The shape a host gave back; `None` when it is not one.
    pub fn read(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }

    /// The tool call a verdict's shape says a call is, if one (and the shape is one).
    pub fn tool_of(bytes: Option<&[u8]>) -> Option<mcp::Answering> {
        bytes.and_then(Self::read).and_then(|shape| shape.tool)
    }
}

impl Forwarding {
    /// The answer the response cache holds for the call, where it caches one; `headers`
    /// are the request's.
    fn cached(&self, host: &dyn Host, headers: &Headers) -> Option<Response> {
        let (key, _) = self.cache.as_ref()?;
        cache::lookup(host, key, self.now_ms, headers)
    }

    /// Its [`AnswerShape`], for the host to carry: none when the backend's answer goes to
    /// the client as it is.
    pub fn answer_shape(&self) -> Option<Vec<u8>> {
        let plan = (self.mediate_answer.as_ref()).and_then(|api| api.mediation.as_ref());
        let tool = self.tool.as_deref();
        if plan.is_none() && tool.is_none() {
            return None;
        }
        serde_json::to_vec(&ShapeOf { plan, tool }).ok()
    }

    /// The tool call whose result the host may make of the backend's answer by itself:
    /// one whose API has no out flow to run first.
    pub fn tool_answered_by_host(&self) -> Option<&mcp::Answering> {
        let plan = (self.mediate_answer.as_ref()).and_then(|api| api.mediation.as_ref());
        self.tool.as_deref().filter(|_| plan.is_none())
    }
}

/// What a message to an API's MCP server asks.
enum McpTurn {
    /// The server's own answer.
    Answer(Response),
    /// A tool call, and its operation's request (boxed: the answers outnumber the calls).
    Call(Box<(mcp::Call, Request)>),
}

/// What a host that forwards by itself is to do with a request.
#[allow(
    clippy::large_enum_variant,
    reason = "made and taken apart once per call; boxing the forwarding would cost every \
              forwarded call an allocation to spare the others a few bytes (64-bit only)"
)]
pub enum Decision {
    /// Forward it (and keep the answer where `cache` says).
    Forward(Forwarding),
    /// Answer this.
    Respond(Response),
    /// Give the component the whole request ([`Gateway::handle`]).
    Handle,
    /// Read the request's body whole, at most this many bytes (a longer one is refused
    /// with [`Fault::payload_too_large`]), and decide again with it
    /// ([`Gateway::decide_with_body`]): the API's in flow reads or makes the body.
    ReadBody(u64),
}

impl Gateway {
    /// Handles one request.
    pub fn handle(&mut self, host: &dyn Host, request: Request) -> Response {
        self.handle_described(host, request, &mut Call::default())
    }

    /// Handles one request, noting in `call` what it came to (for the access log).
    pub fn handle_described(
        &mut self,
        host: &dyn Host,
        request: Request,
        call: &mut Call,
    ) -> Response {
        let target = match admit_target(host, &request, Carriage::Held) {
            Ok(target) => target,
            Err((refusal, _)) => return refusal,
        };
        if target.path == paths::GATEWAY_PUSH || target.path == paths::GATEWAY_SYNC {
            // What this instance writes there, its next request sees.
            self.head_checked = None;
        }
        match (request.method.as_str(), target.path.as_str()) {
            ("POST", paths::GATEWAY_PUSH) => sync::receive_push(host, &request),
            ("GET", paths::GATEWAY_PUSH) => sync::status(host),
            ("POST", paths::GATEWAY_SYNC) => sync::sync_now(host),
            (_, path) if internal::is_internal(path) => Fault::not_found().render(&request.headers),
            (_, "/token" | "/revoke") => token_service(host, &request, &target),
            (_, path) if resource::metadata_target(path).is_some() => self
                .protected_resource_metadata(host, &request, &target)
                .unwrap_or_else(|fault| {
                    call.fault_code = fault.code;
                    fault.render(&request.headers)
                }),
            _ => self
                .plan(host, &request, &target, call, Arrival::Whole)
                .and_then(|plan| match plan {
                    Plan::Respond(response) => Ok(response),
                    Plan::Forward(forwarding) => self
                        .forward_mediated(host, &request, forwarding, call)
                        .or_else(|fault| self.fault_flow(host, &request, fault)),
                    Plan::Mcp(api) => self.serve_mcp(host, &request, &target, api, call),
                    Plan::ReadBody => Err(Fault::not_found()),
                })
                .unwrap_or_else(|fault| {
                    call.fault_code = fault.code;
                    fault.render(&request.headers)
                }),
        }
    }

    /// What a host that forwards by itself does with a request whose head is `request`:
    /// the same decision [`Gateway::handle`] makes, taken once. API calls are forwarded
    /// (bodies streamed as they come, chunked ones chunked; a cacheable GET with where to
    /// keep the answer), answered (refusals, preflights, cached answers), and `/token` and
    /// `/revoke` forwarded to the token service; only the gateway's own endpoints go to
    /// [`Gateway::handle`]. The host counts an API call against its limits before it
    /// forwards it or answers it from the cache.
    pub fn decide(&mut self, host: &dyn Host, request: &Request) -> Verdict {
        self.decide_on(host, request, Arrival::Head)
    }

    /// [`Gateway::decide`] for a request whose body the host has read whole, as
    /// [`Decision::ReadBody`] asked, at the host's `moment`.
    pub fn decide_with_body(
        &mut self,
        host: &dyn Host,
        request: &Request,
        moment: Moment,
    ) -> Verdict {
        self.decide_on_at(host, request, Arrival::HeadAndBody, moment)
    }

    /// [`Gateway::decide_on`] at the host's `moment` (see [`Gateway::decide_at`]).
    fn decide_on_at(
        &mut self,
        host: &dyn Host,
        request: &Request,
        arrival: Arrival,
        moment: Moment,
    ) -> Verdict {
        self.moment = Some(moment);
        let verdict = self.decide_on(host, request, arrival);
        self.moment = None;
        verdict
    }

    /// [`Gateway::decide`] for a request that `arrival` says how much of the host has
    /// given.
    fn decide_on(&mut self, host: &dyn Host, request: &Request, arrival: Arrival) -> Verdict {
        let target = match admit_target(host, request, arrival.carriage()) {
            Ok(target) => target,
            Err((refusal, fault_code)) => {
                let call = Call {
                    fault_code,
                    ..Call::default()
                };
                return Verdict::respond(refusal, call);
            }
        };
        let path = target.path.as_str();
        if internal::is_internal(path) {
            return Decision::Handle.into();
        }
        if let Some(service) = token_service_path(path) {
            return match token_relay(host, service, &target, &request.headers) {
                Ok(backend) => Decision::Forward(Forwarding {
                    backend,
                    response_headers: Headers::new(),
                    response_removed: Vec::new(),
                    answer: None,
                    mediate_answer: None,
                    tool: None,
                    cache: None,
                    limits: Vec::new(),
                    counting: Counting::Batched,
                    now_ms: host.now_millis(),
                }),
                Err(fault) => return refused(Call::default(), &fault, request),
            }
            .into();
        }
        if resource::metadata_target(path).is_some() {
            return match self.protected_resource_metadata(host, request, &target) {
                Ok(document) => Verdict::respond(document, Call::default()),
                Err(fault) => refused(Call::default(), &fault, request),
            };
        }
        let mut call = Call::default();
        let mut forwarding = match self.plan(host, request, &target, &mut call, arrival) {
            Err(fault) => return refused(call, &fault, request),
            Ok(Plan::Respond(response)) => return Verdict::respond(response, call),
            Ok(Plan::Forward(forwarding)) => forwarding,
            Ok(Plan::Mcp(api)) => {
                return self.mcp_verdict(host, request, &target, (api, call), arrival);
            }
            Ok(Plan::ReadBody) => {
                let limit = read_body_limit(host, &target);
                return Verdict {
                    limits: Vec::new(),
                    decision: Decision::ReadBody(limit),
                    call,
                };
            }
        };
        let limits = std::mem::take(&mut forwarding.limits);
        if let Some(answer) = forwarding.answer.take() {
            return Verdict {
                limits,
                decision: Decision::Respond(*answer),
                call,
            };
        }
        let decision = match forwarding.cached(host, &request.headers) {
            Some(mut hit) => {
                remove_headers(&mut hit, &forwarding.response_removed);
                set_headers(&mut hit, forwarding.response_headers);
                call.cached = true;
                Decision::Respond(hit)
            }
            None => Decision::Forward(forwarding),
        };
        Verdict {
            limits,
            decision,
            call,
        }
    }

    /// The answer to a forwarded request whose backend failed (`timed_out`, or every
    /// endpoint `suspended`, or unreachable), and the failure's code: the gateway's fault,
    /// or what the API's fault flow makes of it; for an MCP `tool` call, its refusal.
    pub fn backend_failed(
        &mut self,
        host: &dyn Host,
        request: &Request,
        timed_out: bool,
        suspended: bool,
        tool: Option<&mcp::Answering>,
    ) -> (Response, u32) {
        let fault = crate::relay::forwarding_failed(request, timed_out, suspended);
        let code = fault.code;
        if let Some(tool) = tool {
            // As on the component's path: the failure as the call's refusal, no fault flow.
            return (tool_refusal(&tool.reply, &fault), code);
        }
        match self.fault_flow(host, request, fault) {
            Ok(answer) => (answer, code),
            Err(fault) => (fault.render(&request.headers), code),
        }
    }

    /// What the API's fault flow makes of a backend's failure: its own answer, or the
    /// fault with the headers it sets; any other fault as it is.
    fn fault_flow(
        &mut self,
        host: &dyn Host,
        request: &Request,
        fault: Fault,
    ) -> Result<Response, Fault> {
        if !fault.is_backend_failure() {
            return Err(fault);
        }
        let Some((api, target, settings)) = self.mediated_api(host, request) else {
            return Err(fault);
        };
        let Some(plan) = api.mediation.as_ref().filter(|plan| !plan.fault.is_empty()) else {
            return Err(fault);
        };
        let facts = Facts {
            error: Some((fault.code, &fault.description)),
            ..Facts::after(&api, request, &target, host.now_millis())
        };
        match mediate::fault(plan, &request.headers, &facts, &settings.patterns) {
            FaultOutcome::Answer(answer) => Ok(answer),
            FaultOutcome::Headers(headers) => Err(fault.with_headers(headers)),
        }
    }

    /// The answer the client gets of the backend's `answer` to `request`, where its API's
    /// out flow needs it ([`Forwarding::mediate_answer`]): the flow's, or its fault.
    /// `user` and `application` are the call's. With the code of the fault it is, if one.
    pub fn mediate_answer(
        &mut self,
        host: &dyn Host,
        request: &Request,
        plan: &Mediation,
        answer: Response,
        (user, application): (&str, &str),
    ) -> (Response, u32) {
        let Some((api, target, settings)) = self.routed_api(host, request) else {
            // The API went while its backend answered: nothing names the call's facts.
            return (answer, 0);
        };
        let facts = Facts {
            user,
            application,
            ..Facts::after(&api, request, &target, host.now_millis())
        };
        match mediate::answer(plan, &request.headers, &facts, &settings.patterns, answer) {
            Ok(made) => (made, 0),
            Err(fault) => (fault.render(&request.headers), fault.code),
        }
    }

    /// The answer the client gets of the backend's `answer` to `request` as its verdict's
    /// `shape` says: the API's out flow run on it, then for an MCP tool call the tool's
    /// result made of that. `answer` is `None` when it was longer than the host holds.
    /// With the code of the fault it is, if one.
    pub fn shape_answer(
        &mut self,
        host: &dyn Host,
        request: &Request,
        shape: &AnswerShape,
        answer: Option<Response>,
        caller: (&str, &str),
    ) -> (Response, u32) {
        let Some(answer) = answer else {
            let fault = Fault::payload_past_its_bound();
            let refusal = match &shape.tool {
                Some(tool) => tool_refusal(&tool.reply, &fault),
                None => fault.render(&request.headers),
            };
            return (refusal, fault.code);
        };
        let Some(tool) = &shape.tool else {
            return match &shape.plan {
                Some(plan) => self.mediate_answer(host, request, plan, answer, caller),
                None => (answer, 0),
            };
        };
        let (made, code) = match &shape.plan {
            Some(plan) => {
                // The out flow sees the operation's request, as on the component's path.
                let operation = Request {
                    method: tool.method.clone(),
                    path_with_query: tool.path_with_query.clone(),
                    headers: request.headers.clone(),
                    body: Vec::new(),
                    scheme: request.scheme,
                };
                self.mediate_answer(host, &operation, plan, answer, caller)
            }
            None => (answer, 0),
        };
        (tool.result(&made), code)
    }

    /// The API a forwarded `request` went to, when it has mediation, with its target and
    /// the forwarding settings: what a flow run after the decision needs.
    fn mediated_api(
        &mut self,
        host: &dyn Host,
        request: &Request,
    ) -> Option<(Rc<ApiRoute>, Target, Rc<ForwardSettings>)> {
        self.routed_api(host, request)
            .filter(|(api, _, _)| api.mediation.is_some())
    }

    /// The API a forwarded `request` went to, with its target and the forwarding settings.
    fn routed_api(
        &mut self,
        host: &dyn Host,
        request: &Request,
    ) -> Option<(Rc<ApiRoute>, Target, Rc<ForwardSettings>)> {
        let target = Target::parse(&request.path_with_query).ok()?;
        let (api, _) = self.route(host, &target.path).ok()?;
        let settings = self
            .forwarding
            .get_or_insert_with(|| Rc::new(ForwardSettings::read(host)))
            .clone();
        Some((api, target, settings))
    }

    /// Forwards an admitted call through the component's outbound HTTP
    /// ([`forward_and_cache`]), its answer then through the API's out flow where that
    /// needs it.
    fn forward_mediated(
        &mut self,
        host: &dyn Host,
        request: &Request,
        forwarding: Forwarding,
        call: &Call,
    ) -> Result<Response, Fault> {
        if forwarding.backend.policy.is_some() {
            // Run only by a host that forwards by itself; never skipped.
            return Err(Fault::policy_failed(PolicyFailure::Unavailable));
        }
        let decided = forwarding.mediate_answer.clone();
        let response = forward_and_cache(host, request, forwarding)?;
        Ok(
            match decided.as_ref().and_then(|api| api.mediation.as_ref()) {
                Some(plan) => {
                    let caller = (call.user.as_str(), call.application.as_str());
                    self.mediate_answer(host, request, plan, response, caller).0
                }
                None => response,
            },
        )
    }

    /// [`Gateway::decide`] at the host's `moment`: its clock, and its number for the
    /// writes of the manifest's head it has seen, so that the head is read again only
    /// when the number moved since this instance last read it (which spares a reused
    /// instance a store read per request).
    pub fn decide_at(&mut self, host: &dyn Host, request: &Request, moment: Moment) -> Verdict {
        self.decide_on_at(host, request, Arrival::Head, moment)
    }

    /// The view of the manifest the store holds now; when the store holds none yet, the
    /// control plane's, pulled (or, while another instance pulls it, waited for).
    fn current(&mut self, host: &dyn Host) -> Option<&mut View> {
        let epoch = self.moment.map(|moment| moment.manifest_epoch);
        if epoch.is_some() && self.head_epoch == epoch && self.view.is_some() {
            return self.view.as_mut();
        }
        let now = host.now_millis();
        if let Some((checked_at, stored)) = &self.head_checked
            && epoch.is_none()
            && self.view.is_some()
            && now.saturating_sub(*checked_at) < kept::HEAD_FRESH_MS
        {
            self.head_read = Some(stored.clone());
            return self.view.as_mut();
        }
        self.head_epoch = None;
        self.head_checked = None;
        let head = match state::read_head_as_stored(host) {
            Ok(Some((head, stored))) => {
                if epoch.is_none() && kept::is_kept() {
                    self.head_checked = Some((now, stored.clone()));
                }
                self.head_read = Some(stored);
                self.head_epoch = epoch;
                head
            }
            Ok(None) => first_manifest(host)?,
            Err(err) => {
                // The store is down: serve what this instance has seen, if anything; pulling
                // for every request would only add the control plane to the outage.
                eprintln!("the manifest head is unreadable: {err}");
                return self.view.as_mut();
            }
        };
        match &mut self.view {
            Some(view) => view.advance(host, head),
            None => {
                let environment = host.setting(settings::GATEWAY_ENVIRONMENT);
                self.view = View::load(host, head, environment);
            }
        }
        self.view.as_mut()
    }

    /// The head as stored when the last request read it (then forgotten), if it did: the
    /// catch-up after its answer ([`sync::catch_up_if_due`]) needs it.
    pub fn take_head_read(&mut self) -> Option<Vec<u8>> {
        self.head_read.take()
    }

    /// The API serving `path` under the current manifest, and the resource path within it.
    fn route<'p>(&mut self, host: &dyn Host, path: &'p str) -> Result<Routed<'p>, Fault> {
        let view = self.current(host).ok_or_else(Fault::not_found)?;
        view.route(host, path).ok_or_else(Fault::not_found)
    }

    /// The protected-resource metadata of the API serving the path after the well-known
    /// prefix of `target` (a GET or HEAD, on a transport the API takes); 404 otherwise,
    /// as for any path that names no API.
    fn protected_resource_metadata(
        &mut self,
        host: &dyn Host,
        request: &Request,
        target: &Target,
    ) -> Result<Response, Fault> {
        let path = resource::metadata_target(&target.path).ok_or_else(Fault::not_found)?;
        if !matches!(request.method.as_str(), "GET" | "HEAD") {
            return Err(Fault::not_found());
        }
        let (api, rest) = self.route(host, path)?;
        if !api.transports.serve(request.scheme) {
            return Err(Fault::not_found());
        }
        let addressed = Addressed::of(path, rest, &api);
        let meta = &self.view.as_ref().ok_or_else(Fault::not_found)?.meta().meta;
        let base = resource::base_url(&meta.gateway_urls, request).ok_or_else(Fault::not_found)?;
        Ok(resource::metadata(&base, &api, addressed, meta))
    }

    /// A 401 refusing a call to `api` with the challenge that says where its metadata is,
    /// and whether the token sent is the trouble; other faults as they are.
    fn challenged(
        &self,
        fault: Fault,
        api: &ApiRoute,
        addressed: Addressed,
        request: &Request,
    ) -> Fault {
        if fault.status != 401 && !fault.is_insufficient_scope() {
            return fault;
        }
        let gateway_urls = self
            .view
            .as_ref()
            .map_or(&[][..], |view| &view.meta().meta.gateway_urls);
        let metadata_url = resource::base_url(gateway_urls, request)
            .map(|base| resource::metadata_url(&base, api, addressed));
        let problem = match &fault.needed_scope {
            Some(scope) => resource::Problem::InsufficientScope(scope),
            None if fault.is_missing_credentials() => resource::Problem::NoToken,
            None => resource::Problem::InvalidToken,
        };
        let challenge = resource::challenge(metadata_url.as_deref(), problem);
        fault.with_challenge(challenge)
    }

    /// Serves a message to `api`'s MCP server ([`mcp`]): a POST from a caller whose token
    /// the API admits, as for any of its operations; a tool call is then the operation's
    /// request, planned and forwarded as any call to it (its tiers, cache, backend JWT and
    /// endpoints), and the answer the tool's result.
    fn serve_mcp(
        &mut self,
        host: &dyn Host,
        request: &Request,
        target: &Target,
        api: Rc<ApiRoute>,
        call: &mut Call,
    ) -> Result<Response, Fault> {
        let (asked, operation) = match self.take_mcp_message(host, request, target, &api, call)? {
            McpTurn::Answer(answer) => return Ok(answer),
            McpTurn::Call(turn) => *turn,
        };
        let tool = mcp::tool_at(&api, asked.tool).ok_or_else(Fault::not_found)?;
        let answer = self
            .plan_tool_call(host, &operation, tool, call, Arrival::Whole)
            .and_then(|plan| match plan {
                Plan::Forward(forwarding) => {
                    self.forward_mediated(host, &operation, forwarding, call)
                }
                Plan::Respond(response) => Ok(response),
                Plan::Mcp(_) | Plan::ReadBody => Err(Fault::resource_mismatch()),
            });
        call.resource = apim_http::joined(["mcp:", tool.name.as_str()]);
        Ok(match answer {
            Ok(response) => {
                let structured = tool.output_schema.is_some();
                mcp::tool_result(&asked.reply, structured, response.status, &response.body)
            }
            Err(fault) => {
                call.fault_code = fault.code;
                tool_refusal(&asked.reply, &fault)
            }
        })
    }

    /// [`Gateway::serve_mcp`] for a host that forwards by itself: the message read whole
    /// (its body asked for once the caller's token is admitted), a tool call decided as a
    /// call to its operation whose request the host makes of the client's (the
    /// operation's method, headers and body instead of the message's) and whose answer it
    /// has the component make the tool's result of ([`Forwarding::tool`]).
    fn mcp_verdict(
        &mut self,
        host: &dyn Host,
        request: &Request,
        target: &Target,
        (api, mut call): (Rc<ApiRoute>, Call),
        arrival: Arrival,
    ) -> Verdict {
        if arrival == Arrival::Head && request.method == "POST" {
            // The caller's token first: nobody else has a message read.
            let addressed = Addressed::of(&target.path, mcp::ENDPOINT, &api);
            if let Err(fault) = self.admit_caller(host, request, &api, addressed) {
                let fault = self.challenged(fault, &api, addressed, request);
                return refused(call, &fault, request);
            }
            let limit = read_body_limit(host, target);
            return Decision::ReadBody(limit).into();
        }
        let (asked, operation) = match self.take_mcp_message(host, request, target, &api, &mut call)
        {
            Err(fault) => return refused(call, &fault, request),
            Ok(McpTurn::Answer(answer)) => return Verdict::respond(answer, call),
            Ok(McpTurn::Call(turn)) => *turn,
        };
        let Some(tool) = mcp::tool_at(&api, asked.tool) else {
            return refused(call, &Fault::not_found(), request);
        };
        let planned = self.plan_tool_call(host, &operation, tool, &mut call, Arrival::HeadAndBody);
        call.resource = apim_http::joined(["mcp:", tool.name.as_str()]);
        let answering = mcp::Answering {
            reply: asked.reply,
            structured: tool.output_schema.is_some(),
            method: operation.method.clone(),
            path_with_query: operation.path_with_query.clone(),
        };
        let refuse = |mut call: Call, fault: Fault| {
            call.fault_code = fault.code;
            Verdict::respond(tool_refusal(&answering.reply, &fault), call)
        };
        let mut forwarding = match planned {
            Ok(Plan::Forward(forwarding)) => forwarding,
            Ok(Plan::Respond(response)) => {
                return Verdict::respond(answering.result(&response), call);
            }
            Ok(Plan::Mcp(_) | Plan::ReadBody) => return refuse(call, Fault::resource_mismatch()),
            Err(fault) => return refuse(call, fault),
        };
        if forwarding.backend.policy.is_some() {
            // The policy would see the message, not the operation's request.
            return refuse(call, Fault::policy_failed(PolicyFailure::Unavailable));
        }
        let limits = std::mem::take(&mut forwarding.limits);
        let answered = forwarding.answer.take().map(|answer| *answer).or_else(|| {
            let hit = forwarding.cached(host, &operation.headers)?;
            call.cached = true;
            Some(hit)
        });
        let decision = match answered {
            Some(answer) => Decision::Respond(answering.result(&answer)),
            None => {
                forwarding
                    .backend
                    .take_operation(&request.headers, operation);
                forwarding.tool = Some(Box::new(answering));
                Decision::Forward(forwarding)
            }
        };
        Verdict {
            limits,
            decision,
            call,
        }
    }

    /// What a message to `api`'s MCP server asks: the server's own answer, or a tool call
    /// with the tool and the operation's request it comes to. Its caller is admitted by
    /// token as for any of the API's operations.
    fn take_mcp_message(
        &mut self,
        host: &dyn Host,
        request: &Request,
        target: &Target,
        api: &Rc<ApiRoute>,
        call: &mut Call,
    ) -> Result<McpTurn, Fault> {
        if request.method != "POST" {
            return Ok(McpTurn::Answer(mcp::method_not_allowed()));
        }
        let Some(server) = api.mcp.as_ref() else {
            return Err(Fault::not_found());
        };
        let addressed = Addressed::of(&target.path, mcp::ENDPOINT, api);
        let admitted = self
            .admit_caller(host, request, api, addressed)
            .map_err(|fault| self.challenged(fault, api, addressed, request))?;
        admitted.describe(call);
        let scopes = &admitted.claims().scope;
        let step = mcp::step(
            server,
            request,
            &|scope| scopes.has(scope),
            &mut self.mcp_validators,
        );
        let asked = match step {
            mcp::Step::Answer(answer) => return Ok(McpTurn::Answer(answer)),
            mcp::Step::Call(asked) => asked,
        };
        let tool = &server.tools[asked.tool];
        let base = apim_http::joined([api.context.as_str(), "/", api.version.as_str()]);
        let operation = mcp::operation_request(tool, &asked.arguments, &base, request);
        Ok(McpTurn::Call(Box::new((asked, operation))))
    }

    /// Plans a tool's `operation` request as any call to it: refused when its arguments
    /// made the path of another operation (or of the MCP endpoint).
    fn plan_tool_call(
        &mut self,
        host: &dyn Host,
        operation: &Request,
        tool: &McpTool,
        call: &mut Call,
        arrival: Arrival,
    ) -> Result<Plan, Fault> {
        let target = Target::parse(&operation.path_with_query)
            .map_err(|why| Fault::bad_request(why.describe()))?;
        match self.plan(host, operation, &target, call, arrival)? {
            Plan::Forward(forwarding) if call.resource == tool.template => {
                Ok(Plan::Forward(forwarding))
            }
            Plan::Respond(response) => Ok(Plan::Respond(response)),
            _ => Err(Fault::resource_mismatch()),
        }
    }

    /// The caller of `api` by its bearer token, admitted as for any of its operations.
    fn admit_caller(
        &mut self,
        host: &dyn Host,
        request: &Request,
        api: &ApiRoute,
        addressed: Addressed,
    ) -> Result<Admitted, Fault> {
        let token = auth::bearer(header(&request.headers, "authorization"))
            .ok_or_else(Fault::missing_credentials)?;
        let client = forward::client_ip(&request.headers).unwrap_or_default();
        let now_secs = host.now_millis() / 1000;
        let view = self.view.as_mut().ok_or_else(Fault::not_found)?;
        auth::admit(view, host, api, addressed, token, &client, now_secs)
    }

    /// Routes and admits an API call to `target`, noting in `call` how far it got, as
    /// much of it as has `arrival`ed.
    fn plan(
        &mut self,
        host: &dyn Host,
        request: &Request,
        target: &Target,
        call: &mut Call,
        arrival: Arrival,
    ) -> Result<Plan, Fault> {
        let routed = self.route(host, &target.path)?;
        call.api.clone_from(&routed.0.name);
        call.api_id.clone_from(&routed.0.id);
        call.version.clone_from(&routed.0.version);
        let api = routed.0.clone();
        let addressed = Addressed::of(&target.path, routed.1, &api);
        self.admit(host, request, target, routed, call, arrival)
            .map_err(|fault| {
                let fault = self.challenged(fault, &api, addressed, request);
                match &api.cors {
                    Some(cors) => fault.with_headers(cors::headers(cors, &request.headers)),
                    None => fault,
                }
            })
    }

    /// Admits a call [`Gateway::route`] has just routed (with the view it brought up to
    /// date): CORS preflight, WebSocket or not, operation, token and subscription,
    /// throttling; then the request for the backend.
    fn admit(
        &mut self,
        host: &dyn Host,
        request: &Request,
        target: &Target,
        (api, resource): Routed<'_>,
        call: &mut Call,
        arrival: Arrival,
    ) -> Result<Plan, Fault> {
        // Only a host that forwards itself upgrades connections.
        let upgrades = arrival != Arrival::Whole;
        let now_ms = match self.moment {
            Some(moment) => moment.now_ms,
            None => host.now_millis(),
        };
        let settings = self
            .forwarding
            .get_or_insert_with(|| Rc::new(ForwardSettings::read(host)))
            .clone();
        let view = self.view.as_mut().ok_or_else(Fault::not_found)?;
        let shared = &api;
        let api = &**shared;
        // WSO2 2.6 (Synapse's `API.canProcess`) leaves a request on a transport the API
        // does not take unclaimed, which its main sequence answers 404: first of all.
        if !api.transports.serve(request.scheme) {
            return Err(Fault::not_found());
        }
        if api.state == ApiState::Blocked {
            return Err(Fault::api_blocked());
        }
        if forward::has_looped(&settings.gateway_id, &request.headers) {
            return Err(Fault::loop_detected());
        }
        if let Some(cors) = &api.cors
            && cors::is_preflight(&request.method, &request.headers)
        {
            return Ok(Plan::Respond(cors::preflight(cors, &request.headers)));
        }
        if mcp::is_endpoint(api, resource) {
            return Ok(Plan::Mcp(Rc::clone(shared)));
        }
        let websocket = api.api_type == ApiType::Ws;
        check_websocket(api, request, upgrades)?;
        let operation = find_operation(
            &api.operations,
            &request.method,
            resource,
            &api.context,
            &api.version,
        )?;
        call.resource.clone_from(&operation.template);
        let caller = match operation.auth {
            AuthType::None => None,
            AuthType::Required => {
                let token = auth::bearer(header(&request.headers, "authorization"))
                    .or_else(|| {
                        websocket
                            .then(|| upgrade::query_token(target.query.as_deref()))
                            .flatten()
                    })
                    .ok_or_else(Fault::missing_credentials)?;
                let client = forward::client_ip(&request.headers).unwrap_or_default();
                let addressed = Addressed::of(&target.path, resource, api);
                let now_secs = now_ms / 1000;
                let admitted = auth::admit(view, host, api, addressed, token, &client, now_secs)?;
                admitted.describe(call);
                if let Some(scope) = &operation.scope
                    && !admitted.claims().scope.has(scope)
                {
                    return Err(
                        Fault::insufficient_scope(&api.context, &api.version).needing(scope)
                    );
                }
                Some(admitted)
            }
        };
        let environment = environment_of(caller.as_ref(), api.production_url.is_some());
        let limits = throttle::limits(
            &view.meta().meta,
            api,
            operation,
            caller.as_ref(),
            environment,
        );

        // The backend gets exactly the canonical path that was matched, and its query
        // (a WebSocket API's without the token).
        let resource_with_query = if websocket {
            match upgrade::without_token(target.query.as_deref()) {
                Some(query) => apim_http::joined([resource, "?", query.as_str()]),
                None => resource.to_string(),
            }
        } else {
            target.with_query(resource)
        };
        // An in flow may make the backend's request differ per call (a header, the
        // user, the time) where the cache's key does not, and an out flow that needs
        // the answer changes what would be kept: such an API is not cached.
        let mediated = api.mediation.as_ref().is_some_and(|p| {
            !p.request.is_empty() || p.wasm.is_some() || mediate::needs_answer(&p.response)
        });
        let cache = (request.method == "GET" && !websocket && !mediated)
            .then_some(api.cache_timeout_secs)
            .flatten()
            .map(|ttl| {
                let key = cache::key(api, environment, caller.as_ref(), &resource_with_query, ttl);
                (key, ttl)
            });
        let mut response_headers = api
            .cors
            .as_ref()
            .map(|cors| cors::headers(cors, &request.headers))
            .unwrap_or_default();
        let mut rewrite = Rewrite::default();
        let mut mediate_answer = None;
        if let Some(plan) = &api.mediation {
            // A WebSocket handshake has no body, and its answer is the connection: its
            // flows run on the heads alone.
            let body = if mediate::touches_body(&plan.request) && !websocket {
                if arrival == Arrival::Head {
                    return Ok(Plan::ReadBody);
                }
                if request.body.len() > bodies::MAX_MEDIATED_BYTES {
                    return Err(Fault::payload_too_large());
                }
                Some(Body::of(&request.headers, request.body.clone()))
            } else {
                None
            };
            if mediate::needs_answer(&plan.response) && !websocket {
                mediate_answer = Some(shared.clone());
            }
            let facts = Facts {
                api,
                method: &request.method,
                query: target.query.as_deref(),
                user: &call.user,
                application: &call.application,
                now_ms,
                error: None,
            };
            rewrite = mediate::run(plan, &request.headers, body, &facts, &settings.patterns)?;
            if websocket {
                rewrite.body = None;
            }
        }
        if let Some(mut answer) = rewrite.answer.take() {
            // Answered by the in flow: no backend, whether or not it has one.
            apim_http::set_headers(&mut answer.headers, response_headers);
            return Ok(Plan::Forward(Forwarding {
                backend: BackendRequest::unsent(),
                response_headers: Headers::new(),
                response_removed: Vec::new(),
                answer: Some(Box::new(answer)),
                mediate_answer: None,
                tool: None,
                cache: None,
                limits,
                counting: settings.counting,
                now_ms,
            }));
        }
        let resource_with_query = match rewrite.path.take() {
            Some(path) => mediated_path(&path)?,
            None => resource_with_query,
        };
        let wasm = api.mediation.as_ref().and_then(|plan| plan.wasm.as_ref());
        let with_body = wasm.is_some_and(|policy| policy.body_bytes > 0) && !websocket;
        if with_body && arrival == Arrival::Head {
            return Ok(Plan::ReadBody);
        }
        if with_body && wasm.is_some_and(|policy| request.body.len() as u64 > policy.body_bytes) {
            return Err(Fault::payload_too_large());
        }
        let mut backend =
            forward::backend_request(&settings, api, environment, &resource_with_query, request)?;
        backend.policy = wasm.map(|policy| {
            Box::new(TenantPolicy {
                digest: policy.digest.clone(),
                size: policy.size,
                with_body,
                resource: resource_with_query.clone(),
            })
        });
        if let (Some(assertions), Some(caller), Some(config)) = (
            &settings.backend_jwt,
            &caller,
            &view.meta().meta.backend_jwt,
        ) && let Some(assertion) = assertions.for_call(config, api, caller, now_ms / 1000)?
        {
            backend
                .added_headers
                .push((backend_jwt::HEADER.into(), assertion.to_vec()));
        }
        if api.mediation.is_some() {
            backend.mediate(
                std::mem::take(&mut rewrite.removed),
                std::mem::take(&mut rewrite.added),
                rewrite.body.take().map(|body| body.bytes),
            );
            response_headers.retain(|(name, _)| !rewrite.response_removed.contains(name));
            apim_http::set_headers(&mut response_headers, rewrite.response_set);
        }
        Ok(Plan::Forward(Forwarding {
            backend,
            response_headers,
            response_removed: rewrite.response_removed,
            answer: None,
            mediate_answer,
            tool: None,
            cache,
            limits,
            counting: settings.counting,
            now_ms,
        }))
    }
}

/// The path and query an in flow set (`REST_URL_POSTFIX`), as the backend gets it after
/// the endpoint's ([`canon::backend_postfix`]), else refused.
fn mediated_path(path: &str) -> Result<String, Fault> {
    canon::backend_postfix(path).ok_or_else(|| {
        Fault::bad_request("The API's mediation made a backend path that is not canonical.")
    })
}

/// A tool call refused with `fault`: a JSON-RPC error carrying its WSO2 code.
pub fn tool_refusal(reply: &mcp::Reply, fault: &Fault) -> Response {
    reply.refused(fault.status, fault.code, &fault_text(fault))
}

/// A fault's message and description, as one sentence for a JSON-RPC error.
fn fault_text(fault: &Fault) -> String {
    if fault.description.is_empty() {
        fault.message.to_string()
    } else {
        apim_http::joined([fault.message, ". ", fault.description.as_str()])
    }
}

/// Whether a request and an API agree about WebSocket: a handshake only to a WebSocket
/// API, and nothing but handshakes to a WebSocket API. Where the host cannot upgrade
/// connections, every request to a WebSocket API is refused saying so (rather than let
/// it fail at the backend): such a host need not even pass `Upgrade` on (wasmtime's
/// `wasi:http` drops it as hop-by-hop).
fn check_websocket(api: &ApiRoute, request: &Request, upgrades: bool) -> Result<(), Fault> {
    let asks = upgrade::asks_for_websocket(&request.headers);
    match (api.api_type, asks) {
        (ApiType::Http, false) => Ok(()),
        (ApiType::Http, true) => Err(Fault::not_a_websocket_api(&api.context, &api.version)),
        (ApiType::Ws, _) if !upgrades => Err(Fault::upgrade_unsupported()),
        (ApiType::Ws, false) => Err(Fault::websocket_only(&api.context, &api.version)),
        (ApiType::Ws, true) => upgrade::check_handshake(&request.method, &request.headers),
    }
}

/// The verdict refusing a request with `fault` (rendered for `request`), with what
/// `call` says it came to.
fn refused(mut call: Call, fault: &Fault, request: &Request) -> Verdict {
    call.fault_code = fault.code;
    Verdict::respond(fault.render(&request.headers), call)
}

/// The canonical target of a request the gateway may look into: refused with a 400 when
/// its path or query has no canonical form, with a 401 when it is for the gateway's own
/// endpoints without the gateway secret, with a 413 when its announced body is over the
/// limit for a body carried as `carriage` ([`body_limit`]). Checked from the head alone,
/// before any body is read. A refusal answers with its fault code.
pub fn admit_target(
    host: &dyn Host,
    request: &Request,
    carriage: Carriage,
) -> Result<Target, (Response, u32)> {
    let refuse = |fault: Fault| (fault.render(&request.headers), fault.code);
    let target = Target::parse(&request.path_with_query)
        .map_err(|why| refuse(Fault::bad_request(why.describe())))?;
    if internal::is_internal(&target.path) {
        internal::authorize(host, &request.headers).map_err(refuse)?;
    }
    let limit = body_limit(host, &target, carriage);
    if content_length(&request.headers).is_some_and(|length| bodies::exceeds(limit, length as u64))
    {
        return Err(refuse(Fault::payload_too_large()));
    }
    Ok(target)
}

/// The largest body a request to `target` may bring, carried as `carriage`: API calls and
/// the token service the gateway's limit ([`bodies::limit`]); the gateway's own endpoints,
/// which take manifest pages, what a component holds whatever the limit.
pub fn body_limit(host: &dyn Host, target: &Target, carriage: Carriage) -> Option<u64> {
    if internal::is_internal(&target.path) {
        return Some(MAX_BODY_BYTES as u64);
    }
    let configured = bodies::configured(host.setting(settings::MAX_REQUEST_BODY_BYTES).as_deref());
    bodies::limit(configured, carriage)
}

/// The most bytes a host reads of a body the decision asks for whole (`read-body`).
fn read_body_limit(host: &dyn Host, target: &Target) -> u64 {
    held_body_limit(host, target).min(bodies::MAX_MEDIATED_BYTES) as u64
}

/// [`body_limit`] for a body the component reads whole.
pub fn held_body_limit(host: &dyn Host, target: &Target) -> usize {
    body_limit(host, target, Carriage::Held)
        .and_then(|limit| usize::try_from(limit).ok())
        .map_or(MAX_BODY_BYTES, |limit| limit.min(MAX_BODY_BYTES))
}

/// Counts an admitted call against its limits, then forwards it through the host's
/// outbound HTTP (or answers from the cache, and caches).
fn forward_and_cache(
    host: &dyn Host,
    request: &Request,
    forwarding: Forwarding,
) -> Result<Response, Fault> {
    let Forwarding {
        backend,
        response_headers,
        response_removed,
        answer,
        mediate_answer: _,
        tool: _,
        cache,
        limits,
        counting,
        now_ms,
    } = forwarding;
    throttle::count(host, &limits, now_ms, counting)?;
    if let Some(answer) = answer {
        return Ok(*answer);
    }
    let cached = cache
        .as_ref()
        .and_then(|(key, _)| cache::lookup(host, key, now_ms, &request.headers));
    let mut response = match cached {
        Some(hit) => hit,
        None => {
            let response = balance::send(host, &backend, request)?;
            if let Some((key, ttl)) = &cache {
                cache::store(host, key, &response, *ttl, now_ms, &request.headers);
            }
            response
        }
    };
    remove_headers(&mut response, &response_removed);
    set_headers(&mut response, response_headers);
    Ok(response)
}

/// Sets headers on a response, replacing any of the same names.
fn set_headers(response: &mut Response, headers: Headers) {
    apim_http::set_headers(&mut response.headers, headers);
}

/// Takes headers of these names off a response.
fn remove_headers(response: &mut Response, names: &[String]) {
    apim_http::remove_headers(&mut response.headers, names);
}

/// The head once the first manifest is in the store: pulled by this request, or by
/// another instance that holds the lease meanwhile.
fn first_manifest(host: &dyn Host) -> Option<state::Head> {
    match sync::pull(host) {
        Ok(_) => {}
        Err(sync::PullError::Busy) => {
            let mut waited = 0;
            while waited < FIRST_MANIFEST_WAIT_MS {
                host.sleep_ms(FIRST_MANIFEST_POLL_MS);
                waited += FIRST_MANIFEST_POLL_MS;
                if let Ok(Some(head)) = state::read_head(host) {
                    return Some(head);
                }
            }
        }
        Err(err) => eprintln!("no route manifest yet and none could be pulled: {err}"),
    }
    state::read_head(host).ok().flatten()
}

/// Where a request goes: the key type's environment; production for open operations
/// (sandbox when the API has only a sandbox endpoint).
fn environment_of(caller: Option<&Admitted>, has_production: bool) -> Environment {
    match caller {
        Some(admitted) => admitted.environment,
        None if has_production => Environment::Production,
        None => Environment::Sandbox,
    }
}

/// The operation for this method and resource path: 404 when no template matches the
/// path, 403 (900906) when templates match but not for this method.
fn find_operation<'a>(
    operations: &'a [Operation],
    method: &str,
    resource: &str,
    context: &str,
    version: &str,
) -> Result<&'a Operation, Fault> {
    let mut path_matched = false;
    for operation in operations {
        if apim_manifest::matches(&operation.segments, resource) {
            if operation.method == method || (method == "HEAD" && operation.method == "GET") {
                return Ok(operation);
            }
            path_matched = true;
        }
    }
    Err(if path_matched {
        Fault::no_matching_resource(context, version)
    } else {
        Fault::resource_mismatch()
    })
}
