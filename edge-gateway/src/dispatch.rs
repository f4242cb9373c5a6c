//! Hands HTTP requests to the component and turns failures into plain HTTP errors.
//!
//! With host forwarding (the gateway component exports `apim:gateway/policy`), the
//! component first decides about each request from its head, once, and names the limits
//! an API call counts against, which are counted here ([`crate::counters`]; a refused
//! call gets the component's `throttled` answer): API calls it admits and `/token` relays
//! are forwarded here ([`crate::proxy`]), WebSocket handshakes it admits are relayed
//! ([`crate::websocket`]), its refusals and cached answers are answered at once, and only
//! its own endpoints (`/_apim/...`) go to its `wasi:http` handler.
//!
//! Every call into the component — a decision, a `wasi:http` request, a manifest pull
//! — takes one of `max_instances` permits; a `wasi:http` request holds it
//! until its response body has been sent, a decision only while it is made, so the
//! number of busy instances stays bounded. Requests that get no permit within the
//! request timeout are answered 503. Guest failures are logged and answered with an
//! empty 500 (504 when the deadline was exceeded).
//!
//! Each request's future is allocated and moved whole (kilobytes), so the branches few
//! requests take (throttled and failed answers, WebSocket openings, the component's own
//! handlers) are boxed where they are taken, and the future is the size of the forwarded
//! call's path. Without host forwarding every request takes the handlers' branch, and
//! pays one allocation more for it.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::header::HOST;
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt as _, Empty, Full};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime_wasi_http::WasiBody;

use apim_http::contract;
use apim_http::endpoints::{self, Balance, HealthBook, MemoryBook};
use apim_http::mcp::{self, Era, Reply};
use apim_manifest::{Position, paths};
use apim_tls::connection::Drain;

use crate::counters::{Counters, Refused};
use crate::failure::{BackendFailure, ErrorSource, Failure, Kind};
use crate::proxy;
use crate::responses::{BoxError, ResponseBody, empty};
use crate::telemetry::access_log::Entry;
use crate::telemetry::spans::{Finished, RequestTrace};
use crate::telemetry::{Called, Outcome, Telemetry};
use crate::tenant_policies::changes;
use crate::tenant_policies::{
    Changes, Decision as PolicyDecision, Failed, Failure as PolicyRunFailure, Policies, PolicyCall,
    PolicyRequest,
};
use crate::websocket::{self, WebSocketSettings};
use crate::wit_host::bindings::exports::apim::gateway::policy::{
    self, Call, Decision, Forward, Limit, PolicyFailure, RequestHead, Response as PolicyResponse,
    TenantPolicy, ToolReply, Verdict,
};
use crate::wit_host::instance_state::RequestMeta;
use crate::wit_host::instances::Runtime;

/// Header carrying the client's socket address, as Spin sets it.
pub const CLIENT_ADDR_HEADER: HeaderName = HeaderName::from_static(contract::CLIENT_ADDR_HEADER);

/// The component behind a concurrency limit.
pub struct Gateway {
    runtime: Arc<Runtime>,
    /// Whether the component decides and the host forwards.
    host_forwarding: bool,
    /// The host's count of the limits the component's verdicts carry.
    counters: Counters,
    /// Endpoints' round-robin turns and suspensions, shared by every instance of this
    /// node.
    endpoints: MemoryBook,
    permits: Arc<Semaphore>,
    /// Request deadline; also the longest wait for a free instance.
    request_timeout: Duration,
    next_id: AtomicU64,
    /// `Bearer <gateway_secret>` for the host's sync requests to a component without the
    /// `apim:gateway/sync` export (`/_apim/*` answer only to callers that prove the secret).
    sync_authorization: Option<HeaderValue>,
    /// Where requests are counted.
    telemetry: Arc<Telemetry>,
    /// The largest request body forwarded here (`max_request_body_bytes`); `None`: no cap.
    body_limit: Option<u64>,
    /// How WebSocket APIs' connections are relayed.
    websocket: WebSocketSettings,
    /// Tenants' WebAssembly policies; none: calls naming one are refused.
    policies: Option<Arc<Policies>>,
}

impl Gateway {
    /// Wraps `runtime`; concurrency and queueing follow its limits. With
    /// `host_forwarding`, a component that can decide requests does.
    pub fn new(runtime: Runtime, host_forwarding: bool) -> Self {
        let limits = *runtime.limits();
        let permits = usize::try_from(limits.max_instances).unwrap_or(usize::MAX);
        Self {
            host_forwarding: host_forwarding && runtime.has_policy(),
            counters: Counters::new(runtime.kv().clone()),
            endpoints: MemoryBook::default(),
            runtime: Arc::new(runtime),
            permits: Arc::new(Semaphore::new(permits)),
            request_timeout: limits.request_timeout,
            next_id: AtomicU64::new(0),
            sync_authorization: None,
            telemetry: Arc::default(),
            body_limit: None,
            websocket: WebSocketSettings::default(),
            policies: None,
        }
    }

    /// Runs the tenants' policies calls name with `policies`.
    pub fn with_policies(mut self, policies: Arc<Policies>) -> Self {
        self.policies = Some(policies);
        self
    }

    /// Cuts off request bodies forwarded here once they grow past `limit` bytes (the
    /// component refuses announced lengths over it from the head).
    pub fn with_body_limit(mut self, limit: Option<u64>) -> Self {
        self.body_limit = limit;
        self
    }

    /// Relays WebSocket APIs' connections with these settings.
    pub fn with_websocket(mut self, settings: WebSocketSettings) -> Self {
        self.websocket = settings;
        self
    }

    /// Counts requests, instances in use and the manifest held in `telemetry`.
    pub fn with_telemetry(mut self, telemetry: Arc<Telemetry>) -> Self {
        let size = usize::try_from(self.runtime.limits().max_instances).unwrap_or(usize::MAX);
        telemetry
            .metrics
            .watch_instances(self.permits.clone(), size);
        self.telemetry = telemetry;
        self
    }

    /// The gateway secret the host's sync requests prove ([`Gateway::sync_by_request`]).
    pub fn with_sync_secret(mut self, secret: Option<&str>) -> Self {
        self.sync_authorization = secret.and_then(|secret| {
            let mut value = HeaderValue::from_str(&format!("Bearer {secret}")).ok()?;
            value.set_sensitive(true);
            Some(value)
        });
        self
    }

    /// The control plane announced `latest` as its newest manifest version.
    pub fn announced(&self, latest: u64) {
        self.telemetry.announced(latest);
    }

    /// Marks the host as exiting (see [`Runtime::begin_shutdown`]).
    pub fn begin_shutdown(&self) {
        self.runtime.begin_shutdown();
    }

    /// Serves one client request received on the connection `addresses` describes.
    pub async fn serve<B>(
        &self,
        request: Request<B>,
        addresses: &Addresses,
    ) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes, Error = hyper::Error> + Send + 'static,
    {
        let started = Instant::now();
        let mut request = request.map(|body| {
            body.map_err(wasmtime_wasi_http::Error::Hyper)
                .boxed_unsync()
        });
        let authority = request.uri().authority().cloned();
        prepare_headers(request.headers_mut(), authority.as_ref(), addresses);
        crate::scheme::settle(&mut request, addresses.arrival);
        let traced = (self.telemetry.tracing).begin(request.headers_mut(), self.host_forwarding);
        let request_bytes = proxy::content_length(request.headers());
        if !self.host_forwarding {
            let method = request.method().clone();
            let response = Box::pin(self.dispatch(request)).await;
            let served = Served {
                method: method.as_str(),
                call: &Called::default(),
                client: &addresses.client,
                request_bytes,
                started,
                outcome: Outcome::default(),
                traced: &traced,
            };
            self.record(served, &response);
            return response;
        }
        let head = proxy::head_of(&request);
        let (response, call, outcome) = self.carry_out(request, &head, addresses).await;
        let served = Served {
            method: &head.method,
            call: &Called::of(&call),
            client: &addresses.client,
            request_bytes,
            started,
            outcome,
            traced: &traced,
        };
        self.record(served, &response);
        response
    }

    /// Has the component decide about a request, and does what it decided: the answer,
    /// what the component said the request is, and how it ended.
    async fn carry_out(
        &self,
        request: Request<WasiBody>,
        head: &RequestHead,
        addresses: &Addresses,
    ) -> (Response<ResponseBody>, Call, Outcome) {
        let mut outcome = Outcome::default();
        let deciding = Instant::now();
        let decided = self.decide(head, None).await;
        outcome.timeline.decide = Some((deciding, deciding.elapsed()));
        let mut verdict = match decided {
            Ok(verdict) => verdict,
            Err(failed) => return (failed, unrouted(), outcome),
        };
        let mut request = request;
        // A body read whole can be sent again to the next endpoint a list tries.
        let mut held = None;
        if let Decision::ReadBody(limit) = verdict.decision {
            let read = Box::pin(self.decide_with_body(request, head, limit, &mut outcome));
            match read.await {
                Ok((with_body, bytes, again)) => {
                    (request, held, verdict) = (with_body, Some(bytes), again);
                }
                Err(answer) => return (answer, verdict.call, outcome),
            }
        }
        let Verdict {
            limits,
            decision,
            call,
        } = verdict;
        if let Err(refused) = self.counters.admit(&limits).await {
            outcome.throttled = Some(refused.kind);
            let mediation = match &decision {
                Decision::Forward(plan) => plan.mediation.as_deref(),
                _ => None,
            };
            let response = Box::pin(self.throttled(head, refused, mediation, &mut outcome)).await;
            return (response, call, outcome);
        }
        let response = match decision {
            Decision::Forward(plan) if plan.upgrade && plan.tenant_policy.is_some() => {
                // The relay runs no policy; a call is never let through without it.
                let failure = PolicyFailure::Unavailable;
                Box::pin(self.policy_failed(head, failure, &mut outcome)).await
            }
            Decision::Forward(mut plan) if plan.tenant_policy.is_some() => {
                let policy = plan.tenant_policy.take();
                let policy = policy.as_ref().expect("matched with a policy");
                // The client's headers that pass on: never its credentials, nor the
                // endpoint's or the backend JWT the gateway adds.
                let passing = proxy::client_headers_passing_on(request.headers(), &plan);
                let headers = proxy::header_list(&passing);
                let decided = self.run_policy(headers, held.as_ref(), head, &call, policy);
                match Box::pin(decided).await {
                    Ok(changes) => {
                        let applied = changes::apply(&mut plan, &policy.resource, changes);
                        match applied {
                            Ok(()) => {
                                let sending = Sending {
                                    head,
                                    call: &call,
                                    held,
                                };
                                Box::pin(self.forward(request, sending, plan, &mut outcome)).await
                            }
                            Err(failure) => {
                                Box::pin(self.policy_failed(head, failure, &mut outcome)).await
                            }
                        }
                    }
                    Err(Ok(mut answer)) => {
                        // CORS and the out flow's headers, as on the backend's answer.
                        apim_http::set_headers(&mut answer.headers, plan.response_headers);
                        proxy::response(answer)
                    }
                    Err(Err(failure)) => {
                        Box::pin(self.policy_failed(head, failure, &mut outcome)).await
                    }
                }
            }
            Decision::Forward(plan) if plan.upgrade => {
                let drain = addresses.drain.as_ref();
                Box::pin(self.open_websocket(request, head, plan, limits, drain, &mut outcome))
                    .await
            }
            Decision::Forward(plan) => {
                let sending = Sending {
                    head,
                    call: &call,
                    held,
                };
                self.forward(request, sending, plan, &mut outcome).await
            }
            Decision::Respond(answer) => {
                outcome.fault_code = answer.fault_code;
                proxy::response(answer)
            }
            Decision::Handle => Box::pin(self.dispatch(request)).await,
            // The component never asks twice.
            Decision::ReadBody(_) => empty(StatusCode::INTERNAL_SERVER_ERROR),
        };
        (response, call, outcome)
    }

    /// Runs the API's WebAssembly `policy` on the call whose client headers that pass on
    /// are `headers` (and the client's body, where the policy is given it): the changes
    /// it makes to the backend's request; or its own answer; or why it failed.
    async fn run_policy(
        &self,
        headers: apim_http::Headers,
        held: Option<&Bytes>,
        head: &RequestHead,
        call: &Call,
        policy: &TenantPolicy,
    ) -> Result<Changes, Result<PolicyResponse, PolicyFailure>> {
        let Some(policies) = &self.policies else {
            return Err(Err(PolicyFailure::Unavailable));
        };
        let [api, api_id, version, _, application, _, user] =
            apim_http::packed::unpack_texts::<7>(&call.texts).unwrap_or_default();
        let asked = PolicyRequest {
            method: head.method.clone(),
            path_with_query: changes::shown_path(&policy.resource),
            headers,
            body: policy
                .with_body
                .then(|| held.map(|body| body.to_vec()).unwrap_or_default()),
            call: PolicyCall {
                api: api.to_string(),
                api_version: version.to_string(),
                application_id: application.to_string(),
                end_user: user.to_string(),
            },
        };
        let ran = policies
            .run(api_id, &policy.digest, policy.size, &asked)
            .await;
        (self.telemetry.metrics).policy_call(&policy.digest, ran.outcome(), ran.fuel, ran.elapsed);
        match ran.decided {
            Ok(PolicyDecision::Proceed(changes)) => Ok(changes),
            Ok(PolicyDecision::Respond(answer)) => Err(changes::answer(answer)),
            Err(PolicyRunFailure::Ran(failed)) => Err(Err(match failed {
                Failed::Trapped => PolicyFailure::Trapped,
                Failed::Cpu => PolicyFailure::CpuBudget,
                Failed::Memory => PolicyFailure::MemoryBudget,
                Failed::Time => PolicyFailure::TimeBudget,
            })),
            Err(PolicyRunFailure::Unavailable) => Err(Err(PolicyFailure::Unavailable)),
            Err(PolicyRunFailure::Suspended) => Err(Err(PolicyFailure::Suspended)),
        }
    }

    /// The component's answer for a call whose API's policy failed.
    async fn policy_failed(
        &self,
        head: &RequestHead,
        failure: PolicyFailure,
        outcome: &mut Outcome,
    ) -> Response<ResponseBody> {
        let answer = self.runtime.policy_failed(head, failure);
        let fallback = StatusCode::INTERNAL_SERVER_ERROR;
        self.answer(answer, "a policy's failure", fallback, outcome)
            .await
    }

    /// Reads a request's body whole, at most `limit` bytes (a longer one gets the
    /// component's 413), and has the component decide again with it: the request, its
    /// body now held (and its bytes), and the verdict.
    async fn decide_with_body(
        &self,
        request: Request<WasiBody>,
        head: &RequestHead,
        limit: u64,
        outcome: &mut Outcome,
    ) -> Result<(Request<WasiBody>, Bytes, Verdict), Response<ResponseBody>> {
        let (parts, body) = request.into_parts();
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let bytes = match whole(body, limit).await {
            Whole::Read(bytes) => bytes,
            Whole::TooLong => {
                let answer = self.runtime.body_too_large(head);
                let fallback = StatusCode::PAYLOAD_TOO_LARGE;
                return Err(self
                    .answer(answer, "a body over the limit", fallback, outcome)
                    .await);
            }
            Whole::BrokeOff(why) => {
                tracing::debug!("the client's body broke off: {why}");
                return Err(empty(StatusCode::BAD_REQUEST));
            }
        };
        let verdict = self.decide(head, Some(&bytes)).await?;
        Ok((
            Request::from_parts(parts, held(bytes.clone())),
            bytes,
            verdict,
        ))
    }

    /// What the client gets of a backend's `answer` that the API's out flow needs: the
    /// answer read whole (at most [`apim_http::bodies::MAX_MEDIATED_BYTES`]) and made by
    /// the component.
    async fn mediated_answer(
        &self,
        sending: &Sending<'_>,
        mediation: &[u8],
        answer: Response<ResponseBody>,
        outcome: &mut Outcome,
    ) -> Response<ResponseBody> {
        let (parts, read) = match held_answer(answer).await {
            Ok(held) => held,
            Err(broke_off) => return broke_off,
        };
        let read = read.map(|bytes| PolicyResponse {
            status: parts.status.as_u16(),
            headers: proxy::header_list(&parts.headers),
            body: bytes.to_vec(),
            fault_code: 0,
        });
        let answer = self
            .runtime
            .mediate_answer(sending.head, sending.call, mediation, read);
        self.answer(
            answer,
            "a mediated answer",
            StatusCode::BAD_GATEWAY,
            outcome,
        )
        .await
    }

    /// An MCP tool call's result, made here of its operation's `answer` read whole as
    /// [`Gateway::mediated_answer`] reads it (an answer too long to hold gets the
    /// component's refusal, by `mediation`).
    async fn tool_result(
        &self,
        sending: &Sending<'_>,
        reply: &ToolReply,
        mediation: &[u8],
        answer: Response<ResponseBody>,
        outcome: &mut Outcome,
    ) -> Response<ResponseBody> {
        let (parts, bytes) = match held_answer(answer).await {
            Ok((parts, Some(bytes))) => (parts, bytes),
            Ok((_, None)) => {
                let answer =
                    (self.runtime).mediate_answer(sending.head, sending.call, mediation, None);
                let fallback = StatusCode::BAD_GATEWAY;
                return self
                    .answer(answer, "a tool's answer", fallback, outcome)
                    .await;
            }
            Err(broke_off) => return broke_off,
        };
        let Ok(id) = serde_json::from_str(&reply.id) else {
            tracing::error!("the component gave a tool call's id that is not JSON");
            return empty(StatusCode::INTERNAL_SERVER_ERROR);
        };
        let era = if reply.stateless {
            Era::Stateless
        } else {
            Era::Handshake
        };
        let made = mcp::tool_result(
            &Reply { era, id },
            reply.structured,
            parts.status.as_u16(),
            &bytes,
        );
        proxy::made(made.status, &made.headers, made.body)
    }

    /// Counts an answered request, exports its spans and writes its access-log line.
    fn record(&self, served: Served<'_>, response: &Response<ResponseBody>) {
        let status = response.status().as_u16();
        let elapsed = served.started.elapsed();
        let outcome = &served.outcome;
        self.telemetry
            .metrics
            .record(served.method, served.call, status, elapsed, outcome);
        let finished = Finished {
            method: served.method,
            call: served.call,
            status,
            started: served.started,
            elapsed,
            timeline: outcome.timeline,
            backend: outcome.backend,
        };
        self.telemetry.tracing.finish(served.traced, &finished);
        let now = SystemTime::now();
        if let Some(analytics) = &self.telemetry.analytics {
            let call = served.call;
            analytics.record(call.api_id, call.application, status, elapsed, now);
        }
        let Some(log) = &self.telemetry.access_log else {
            return;
        };
        let millis = |duration: Duration| duration.as_secs_f64() * 1e3;
        let trace_id = served.traced.trace.trace_id_hex();
        let entry = Entry {
            client: served.client.to_str().unwrap_or_default(),
            method: served.method,
            status,
            fault_code: (outcome.fault_code != 0).then_some(outcome.fault_code),
            duration_ms: millis(elapsed),
            backend_ms: outcome.backend.map(millis),
            request_bytes: served.request_bytes,
            response_bytes: proxy::content_length(response.headers())
                .or_else(|| response.body().size_hint().exact()),
            trace_id: std::str::from_utf8(&trace_id).unwrap_or_default(),
            call: *served.call,
            ..Entry::default()
        };
        log.write(entry, now);
    }

    /// The component's decision about a request (with its body, where the host read it
    /// whole); a failed decision is answered.
    async fn decide(
        &self,
        head: &RequestHead,
        body: Option<&[u8]>,
    ) -> Result<Verdict, Response<ResponseBody>> {
        let Some(_permit) = self.permit().await else {
            tracing::warn!("no free instance; answering 503");
            return Err(empty(StatusCode::SERVICE_UNAVAILABLE));
        };
        let started = Instant::now();
        self.runtime.decide(head, body).await.map_err(|err| {
            let status = failure_status(&err, started.elapsed() >= self.request_timeout);
            tracing::error!(%status, "component failed to decide: {err:?}");
            empty(status)
        })
    }

    /// Forwards a request the component admitted to its endpoints as their list says
    /// ([`HealthBook::plan`], with this node's book): each failure recorded against its
    /// endpoint and, for `load_balance` and `failover`, the call sent on to the next
    /// (only a call without a body: a streamed body cannot be sent twice). When every
    /// endpoint is suspended, or the last one fails, the component's answer for that.
    async fn forward(
        &self,
        request: Request<WasiBody>,
        sending: Sending<'_>,
        mut plan: Forward,
        outcome: &mut Outcome,
    ) -> Response<ResponseBody> {
        let head = sending.head;
        let outbound = self.runtime.outbound();
        let suspensions = plan.targets.iter().map(|t| t.settings.suspend_ms);
        let lone = !endpoints::needs_book(balance(plan.balance), suspensions);
        let order = if lone {
            vec![0]
        } else {
            let keys: Vec<&str> = plan.targets.iter().map(|t| t.key.as_str()).collect();
            self.endpoints.plan(
                balance(plan.balance),
                &plan.list,
                &keys,
                apim_http::time::now_ms(),
            )
        };
        let (parts, body) = request.into_parts();
        // A body the API's in flow made, or one read whole, is sent to each endpoint tried.
        let made = plan.body.take().map(Bytes::from).or(sending.held.clone());
        let resendable = body.is_end_stream() || made.is_some();
        let (body, overflow) = capped(body, self.body_limit);
        let mut body = Some(body);
        let mut failed = None;
        let sent = Instant::now();
        outcome.timeline.backend_sent = Some(sent);
        for index in order {
            let Some(target) = plan.targets.get(index) else {
                break;
            };
            let this_body = match &made {
                Some(made) => held(made.clone()),
                None => match body.take().or_else(|| resendable.then(no_body)) {
                    Some(body) => body,
                    None => break,
                },
            };
            let attempt = proxy::send(
                outbound,
                self.runtime.kv(),
                &parts,
                this_body,
                &plan,
                target,
            )
            .await;
            outcome.backend = Some(sent.elapsed());
            let failure = match attempt {
                Ok(response) => {
                    if !lone {
                        self.endpoints.succeeded(&target.key);
                    }
                    if let Some(reply) = &plan.tool_reply {
                        let mediation = plan.mediation.as_deref().unwrap_or_default();
                        let answering =
                            self.tool_result(&sending, reply, mediation, response, outcome);
                        return Box::pin(answering).await;
                    }
                    if let Some(mediation) = &plan.mediation {
                        let answering =
                            self.mediated_answer(&sending, mediation, response, outcome);
                        return Box::pin(answering).await;
                    }
                    return response;
                }
                Err(failure) => overflow.blame(failure),
            };
            if failure.error_source() == ErrorSource::Downstream {
                // The client's fault, not the endpoint's: nothing counts against it.
                let answer = self.runtime.body_too_large(head);
                let fallback = StatusCode::PAYLOAD_TOO_LARGE;
                let answering = self.answer(answer, "a body over the limit", fallback, outcome);
                return Box::pin(answering).await;
            }
            let failure = failure.backend_failure();
            let config = proxy::endpoint_config(&target.settings);
            if !lone {
                self.endpoints.failed(
                    &target.key,
                    &config,
                    failure.code(),
                    apim_http::time::now_ms(),
                );
            }
            if failure == BackendFailure::TimedOut && config.discard_on_timeout {
                // WSO2 drops a discarded call without a fault.
                outcome.backend_failed = Some(BackendFailure::TimedOut);
                return empty(StatusCode::GATEWAY_TIMEOUT);
            }
            failed = Some(failure);
            if !endpoints::goes_on(balance(plan.balance), &config, failure.code()) {
                break;
            }
        }
        // With every endpoint suspended, none could be reached.
        outcome.backend_failed = Some(failed.unwrap_or(BackendFailure::Unreachable));
        let timed_out = failed == Some(BackendFailure::TimedOut);
        let answer = self.runtime.backend_failed(
            head,
            timed_out,
            failed.is_none(),
            plan.mediation.as_deref(),
        );
        let fallback = StatusCode::BAD_GATEWAY;
        Box::pin(self.answer(answer, "a backend failure", fallback, outcome)).await
    }

    /// Forwards an admitted WebSocket handshake as [`Gateway::forward`] does any call
    /// (the backend's refusal goes back as it is); once the backend switches, answers
    /// the client's 101 and relays the connection in a task of its own
    /// ([`websocket::relay`]), counting the client's messages against `limits` and
    /// closing with 1001 when the listener's `drain` ends its connections.
    async fn open_websocket(
        &self,
        mut request: Request<WasiBody>,
        head: &RequestHead,
        plan: Forward,
        limits: Vec<Limit>,
        drain: Option<&Drain>,
        outcome: &mut Outcome,
    ) -> Response<ResponseBody> {
        let client = hyper::upgrade::on(&mut request);
        let call = unrouted();
        let sending = Sending {
            head,
            call: &call,
            held: None,
        };
        let mut answer = self.forward(request, sending, plan, outcome).await;
        if answer.status() != StatusCode::SWITCHING_PROTOCOLS {
            return answer;
        }
        let backend = hyper::upgrade::on(&mut answer);
        let Some(response) = websocket::switching(head, answer.headers()) else {
            return empty(StatusCode::BAD_REQUEST);
        };
        let session = websocket::Session {
            counters: self.counters.clone(),
            limits,
            recheck: websocket::Recheck {
                runtime: self.runtime.clone(),
                permits: self.permits.clone(),
                head: head.clone(),
            },
            settings: self.websocket,
            shutdown: drain.map(Drain::watcher),
        };
        tokio::spawn(websocket::relay(client, backend, session));
        response
    }

    /// The component's answer for a request one of its limits refused.
    async fn throttled(
        &self,
        head: &RequestHead,
        refused: Refused,
        mediation: Option<&[u8]>,
        outcome: &mut Outcome,
    ) -> Response<ResponseBody> {
        let answer = self
            .runtime
            .throttled(head, refused.kind, refused.window_end_ms, mediation);
        let fallback = StatusCode::TOO_MANY_REQUESTS;
        self.answer(answer, "a throttled request", fallback, outcome)
            .await
    }

    /// An answer of the component's own, made under an instance permit (its fault code
    /// noted in `outcome`); `fallback` (empty) when it cannot give one.
    async fn answer(
        &self,
        answer: impl Future<Output = Result<PolicyResponse, Failure>>,
        what: &str,
        fallback: StatusCode,
        outcome: &mut Outcome,
    ) -> Response<ResponseBody> {
        let Some(_permit) = self.permit().await else {
            return empty(StatusCode::SERVICE_UNAVAILABLE);
        };
        match answer.await {
            Ok(answer) => {
                outcome.fault_code = answer.fault_code;
                proxy::response(answer)
            }
            Err(err) => {
                tracing::error!("component failed to answer {what}: {err:?}");
                empty(fallback)
            }
        }
    }

    /// A permit to use an instance, waiting up to the request timeout.
    async fn permit(&self) -> Option<OwnedSemaphorePermit> {
        // Most of the time one is free: no timer for that.
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Some(permit);
        }
        let acquire = self.permits.clone().acquire_owned();
        match tokio::time::timeout(self.request_timeout, acquire).await {
            Ok(Ok(permit)) => Some(permit),
            _ => None,
        }
    }

    /// Has the component pull what it misses from the control plane: the manifest
    /// version it holds once it has pulled everything, `None` when it could not. The
    /// WASI 0.2 gateway is asked through its `apim:gateway/sync` export; a WASIp3
    /// artefact exports only `wasi:http/handler`, and wasmtime's handler keeps its
    /// instances to itself, so it is asked as an operator would be, by a
    /// `POST /_apim/sync` proving the gateway secret (`local`, the listener's address,
    /// is the request's `Host`).
    pub async fn sync(&self, local: SocketAddr) -> Option<u64> {
        let held = if self.runtime.has_policy() {
            self.pull().await
        } else {
            self.sync_by_request(local).await
        };
        if let Some(version) = held {
            self.telemetry.manifest_held(version);
        }
        held
    }

    /// [`Gateway::sync`] through the component's `apim:gateway/sync` export, under an
    /// instance permit.
    async fn pull(&self) -> Option<u64> {
        let Some(_permit) = self.permit().await else {
            tracing::debug!("no free instance to sync");
            return None;
        };
        match self.runtime.pull().await {
            Ok(Ok(version)) => Some(version),
            Ok(Err(reason)) => {
                tracing::debug!(%reason, "the component could not sync");
                None
            }
            Err(err) => {
                tracing::warn!("the component failed to sync: {err:?}");
                None
            }
        }
    }

    /// [`Gateway::sync`] by a `POST /_apim/sync` request, for a component without the
    /// `apim:gateway/sync` export; the gateway's answer is the position it holds.
    async fn sync_by_request(&self, local: SocketAddr) -> Option<u64> {
        let body = Empty::new().map_err(|never| match never {}).boxed_unsync();
        let mut request = Request::post(paths::GATEWAY_SYNC)
            .body(body)
            .expect("static request is valid");
        prepare_headers(request.headers_mut(), None, &Addresses::new(local, local));
        if let Some(authorization) = &self.sync_authorization {
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, authorization.clone());
        }
        let response = self.dispatch(request).await;
        let status = response.status();
        let body = match response.into_body().collect().await {
            Ok(body) => body.to_bytes(),
            Err(err) => {
                tracing::debug!("sync response body failed: {err}");
                return None;
            }
        };
        tracing::debug!(%status, "sync request answered");
        let held = serde_json::from_slice::<Position>(&body).ok()?;
        status.is_success().then_some(held.version)
    }

    async fn dispatch(&self, request: Request<WasiBody>) -> Response<ResponseBody> {
        let meta = RequestMeta {
            id: self.next_id.fetch_add(1, Ordering::Relaxed) + 1,
        };
        let Some(permit) = self.permit().await else {
            tracing::warn!(request = meta.id, "no free instance; answering 503");
            return empty(StatusCode::SERVICE_UNAVAILABLE);
        };
        let started = Instant::now();
        match self.runtime.handle(meta, request).await {
            Ok(response) => response.map(|body| {
                PermitBody {
                    inner: body,
                    permit: Some(permit),
                }
                .map_err(BoxError::from)
                .boxed_unsync()
            }),
            Err(err) => {
                let status = failure_status(&err, started.elapsed() >= self.request_timeout);
                tracing::error!(request = meta.id, %status, "component failed: {err:?}");
                empty(status)
            }
        }
    }
}

/// A request as it was served, for its metrics and access-log line.
struct Served<'a> {
    method: &'a str,
    call: &'a Called<'a>,
    client: &'a HeaderValue,
    request_bytes: Option<u64>,
    started: Instant,
    outcome: Outcome,
    traced: &'a RequestTrace,
}

/// A connection's client and listener addresses as header values, made once per
/// connection.
#[derive(Debug, Clone)]
pub struct Addresses {
    client: HeaderValue,
    listener: HeaderValue,
    /// How its requests arrive, which decides their scheme.
    arrival: crate::scheme::Arrival,
    /// The listener's graceful shutdown, which the WebSocket relays it opens watch.
    drain: Option<Drain>,
}

impl Addresses {
    /// The addresses of a connection from `peer` to the listener at `local`.
    pub fn new(peer: SocketAddr, local: SocketAddr) -> Self {
        let value = |addr: SocketAddr| {
            HeaderValue::from_str(&addr.to_string()).expect("socket address is a valid header")
        };
        Self {
            client: value(peer),
            listener: value(local),
            arrival: crate::scheme::Arrival::default(),
            drain: None,
        }
    }

    /// The same, for a connection whose requests arrive as `arrival` says.
    pub fn arriving(self, arrival: crate::scheme::Arrival) -> Self {
        Self { arrival, ..self }
    }

    /// The same, for a connection of a listener that `drain` shuts down: its WebSocket
    /// relays close with 1001 when the drain ends its connections.
    pub fn draining(self, drain: Drain) -> Self {
        Self {
            drain: Some(drain),
            ..self
        }
    }
}

/// Sets `spin-client-addr` (replacing any sent by the client) and a `Host` if missing:
/// the request's authority (HTTP/2 sends `:authority` instead of `Host`), else the
/// listener's address.
fn prepare_headers(
    headers: &mut http::HeaderMap,
    authority: Option<&http::uri::Authority>,
    addresses: &Addresses,
) {
    headers.insert(CLIENT_ADDR_HEADER, addresses.client.clone());
    if !headers.contains_key(HOST) {
        let host = authority
            .and_then(|authority| HeaderValue::from_str(authority.as_str()).ok())
            .unwrap_or_else(|| addresses.listener.clone());
        headers.insert(HOST, host);
    }
}

/// Status for a request the component did not answer; `overran` tells
/// whether the failure came after the request deadline (a guest interrupted
/// by the deadline surfaces only as a missing response).
fn failure_status(failure: &Failure, overran: bool) -> StatusCode {
    if overran {
        return StatusCode::GATEWAY_TIMEOUT;
    }
    match failure.kind() {
        Kind::Deadline => StatusCode::GATEWAY_TIMEOUT,
        Kind::NoInstance => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The balance of a list as the shared decision names it.
fn balance(balance: policy::Balance) -> Balance {
    match balance {
        policy::Balance::Single => Balance::Single,
        policy::Balance::LoadBalance => Balance::LoadBalance,
        policy::Balance::Failover => Balance::Failover,
    }
}

/// The call record of a request the component did not decide about: nothing known.
fn unrouted() -> Call {
    Call {
        texts: Vec::new(),
        cached: false,
    }
}

/// What forwarding a request needs besides its plan.
struct Sending<'a> {
    head: &'a RequestHead,
    /// What the component said the request came to.
    call: &'a Call,
    /// Its body, where the host read it whole.
    held: Option<Bytes>,
}

/// A body read whole.
enum Whole {
    Read(Bytes),
    /// It was longer than the limit.
    TooLong,
    /// It ended in an error: why.
    BrokeOff(String),
}

/// Reads `body` whole, at most `limit` bytes.
async fn whole<B>(mut body: B, limit: usize) -> Whole
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let mut read = Vec::new();
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_trailers) => continue,
            },
            Err(err) => return Whole::BrokeOff(err.to_string()),
        };
        if read.len() + data.len() > limit {
            return Whole::TooLong;
        }
        read.extend_from_slice(&data);
    }
    Whole::Read(Bytes::from(read))
}

/// A backend's answer read whole, as the host holds it for an answer to be made of it:
/// its head, and its body (none: longer than [`apim_http::bodies::MAX_MEDIATED_BYTES`]);
/// an answer that broke off is a 502.
async fn held_answer(
    answer: Response<ResponseBody>,
) -> Result<(http::response::Parts, Option<Bytes>), Response<ResponseBody>> {
    let (parts, body) = answer.into_parts();
    match whole(body, apim_http::bodies::MAX_MEDIATED_BYTES).await {
        Whole::Read(bytes) => Ok((parts, Some(bytes))),
        Whole::TooLong => Ok((parts, None)),
        Whole::BrokeOff(why) => {
            tracing::debug!("the backend's answer broke off: {why}");
            Err(empty(StatusCode::BAD_GATEWAY))
        }
    }
}

/// A request body held whole.
fn held(bytes: Bytes) -> WasiBody {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// An empty request body, for a call sent on to another endpoint.
fn no_body() -> WasiBody {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// `body`, cut off with an error once more than `limit` bytes have come (none: as it
/// is), and what tells whether it was.
fn capped(body: WasiBody, limit: Option<u64>) -> (WasiBody, Overflow) {
    let overflow = Overflow::default();
    let Some(limit) = limit else {
        return (body, overflow);
    };
    let capped = CappedBody {
        inner: body,
        left: limit,
        limit,
        overflow: overflow.clone(),
    };
    (capped.boxed_unsync(), overflow)
}

/// Whether a [`CappedBody`] grew past its limit.
#[derive(Debug, Clone, Default)]
struct Overflow(Arc<AtomicBool>);

impl Overflow {
    fn crossed(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `failure`, put down to the client when its body grew past the limit: that is what
    /// broke the exchange off, whatever the backend side saw of it.
    fn blame(&self, failure: Failure) -> Failure {
        if !self.crossed() {
            return failure;
        }
        let over = "the request body grew past the limit";
        Failure::because(Kind::BodyTooLarge, over, failure)
    }
}

/// A request body counted as it streams: past `limit` bytes it ends in an error (which
/// breaks off the exchange with the backend) and says so in `overflow`.
struct CappedBody {
    inner: WasiBody,
    /// Bytes it may still bring.
    left: u64,
    limit: u64,
    overflow: Overflow,
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let poll = Pin::new(&mut self.inner).poll_frame(cx);
        let length = match &poll {
            Poll::Ready(Some(Ok(frame))) => frame.data_ref().map_or(0, |data| data.len() as u64),
            _ => 0,
        };
        match self.left.checked_sub(length) {
            Some(left) => {
                self.left = left;
                poll
            }
            None => {
                self.overflow.0.store(true, Ordering::Relaxed);
                let limit = self.limit;
                Poll::Ready(Some(Err(wasmtime_wasi_http::Error::HttpRequestBodySize(
                    Some(limit),
                ))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Response body that holds an instance permit until it is finished or dropped.
struct PermitBody {
    inner: WasiBody,
    permit: Option<OwnedSemaphorePermit>,
}

impl Body for PermitBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let poll = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(poll, Poll::Ready(None)) {
            self.permit = None;
        }
        poll
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_addr_is_replaced_and_host_defaulted() {
        let peer: SocketAddr = "10.1.2.3:4567".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8280".parse().unwrap();
        let mut headers = http::HeaderMap::new();
        headers.append(CLIENT_ADDR_HEADER, HeaderValue::from_static("6.6.6.6:1"));
        headers.append(CLIENT_ADDR_HEADER, HeaderValue::from_static("7.7.7.7:1"));
        prepare_headers(&mut headers, None, &Addresses::new(peer, local));
        let values: Vec<_> = headers.get_all(CLIENT_ADDR_HEADER).iter().collect();
        assert_eq!(values, ["10.1.2.3:4567"]);
        assert_eq!(headers[HOST], "127.0.0.1:8280");

        let mut headers = http::HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("api.example"));
        prepare_headers(&mut headers, None, &Addresses::new(peer, local));
        assert_eq!(headers[HOST], "api.example");

        // HTTP/2: the `:authority` stands for `Host`.
        let mut headers = http::HeaderMap::new();
        let authority = http::uri::Authority::from_static("gw.example:8243");
        prepare_headers(&mut headers, Some(&authority), &Addresses::new(peer, local));
        assert_eq!(headers[HOST], "gw.example:8243");
    }

    #[test]
    fn failures_map_to_statuses() {
        let status = |failure| failure_status(&failure, false);
        assert_eq!(status(Failure::deadline()), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(
            status(Failure::no_instance(wasmtime::Error::msg("full"))),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            status(Failure::of_component(wasmtime::Error::msg("trap"))),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        let deep = wasmtime::Error::new(Failure::deadline()).context("while handling");
        assert_eq!(
            status(Failure::of_component(deep)),
            StatusCode::GATEWAY_TIMEOUT
        );
        let late = Failure::new(
            Kind::Component,
            "guest never invoked `response-outparam::set` method",
        );
        assert_eq!(failure_status(&late, true), StatusCode::GATEWAY_TIMEOUT);
    }
}
