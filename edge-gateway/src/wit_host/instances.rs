//! The compiled component and the lifecycle of its instances.
//!
//! - The component is compiled once (or read from wasmtime's compilation cache, which a
//!   restarted gateway finds it in) and pre-instantiated against a linker holding WASI,
//!   `wasi:http`, `wasi:keyvalue` and `wasi:config`.
//! - [`Runtime`] keeps a pool of idle instances: every instance serves up to
//!   `instance_reuse` requests, one at a time, and then retires; idle instances
//!   retire after [`IDLE_INSTANCE_TIMEOUT`]. Requests are plain WASI 0.2
//!   `incoming-handler.handle` calls: wasmtime's concurrent (component-model
//!   async) machinery, which wasmtime-wasi-http's `ProxyHandler` needs, costs
//!   bookkeeping on every host call, and a 0.2 guest cannot use it anyway.
//! - A WASIp3 component (`wasi:http/handler@0.3`) is served by [`super::p3_service`]
//!   instead: each instance takes up to `p3_concurrency` requests at once and
//!   `p3_reuse` in all, as Spin 4.1 does, through wasmtime's concurrent machinery,
//!   which only such a component's engine turns on.
//! - Runaway guests are stopped by epoch interruption ([`super::engine::EpochTicker`]):
//!   past the request's deadline a store traps with [`Failure::deadline`].
//! - Every call into the component ends in the host's [`Failure`] when it fails: its
//!   deadline, no instance to be had, or the component's own failure.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::error::Context as _;
use wasmtime::{Engine, Store};
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::bindings::{Proxy, ProxyIndices};
use wasmtime_wasi_http::p3::bindings::ServicePre;
use wasmtime_wasi_http::{WasiBody, WasiHttpView};

use crate::failure::{Failure, Kind};
use crate::kv::KvStore;
use crate::outbound::OutboundClient;
use crate::wit_host::bindings::exports::apim::gateway::policy::{
    Call, LimitKind, Moment, PolicyFailure, RequestHead, Response, Verdict,
};
use crate::wit_host::bindings::{Gateway as PolicyExport, GatewayIndices as PolicyIndices};
use crate::wit_host::instance_state::{
    HostState, IDLE_INSTANCE_TIMEOUT, Limits, RequestMeta, Shared, new_store,
};
use crate::wit_host::p3_service::{Pool, Service};
use crate::wit_host::{config_store, keyvalue};

/// Attempts when no instance slot could be allocated (e.g. one is still being torn down).
const INSTANTIATE_ATTEMPTS: u32 = 4;
/// Pause between such attempts (multiplied by the attempt number).
const INSTANTIATE_BACKOFF: Duration = Duration::from_millis(5);
/// Extra time past the request deadline before a call stuck in a host call is dropped,
/// with its instance.
const EXPIRY_GRACE: Duration = Duration::from_secs(1);

/// A component compiled and linked, with where its exports are.
pub struct Prepared {
    pre: InstancePre<HostState>,
    exports: Exports,
}

/// What a component exports.
enum Exports {
    /// WASI 0.2's `wasi:http/incoming-handler`, and `apim:gateway/policy` and
    /// `apim:gateway/sync` where the component exports them (the gateway does; the
    /// facade does not).
    P2 {
        proxy: ProxyIndices,
        policy: Option<PolicyIndices>,
    },
    /// WASI 0.3's `wasi:http/handler` ([`super::p3_service`]).
    P3(ServicePre<HostState>),
}

/// Compiles the component at `path` and links it against the host; `p3` says it is a
/// WASIp3 component ([`crate::wit_host::p3_service::serves_p3`]).
pub fn prepare(engine: &Engine, path: &Path, p3: bool) -> anyhow::Result<Prepared> {
    let started = Instant::now();
    let component = Component::from_file(engine, path)
        .with_context(|| format!("cannot load component {}", path.display()))?;
    tracing::info!(
        path = %path.display(),
        elapsed_ms = started.elapsed().as_millis(),
        "component loaded (compiled, or read from the compilation cache)"
    );
    let linker = linker(engine, p3)?;
    let pre = linker
        .instantiate_pre(&component)
        .context("the component's imports cannot be satisfied")?;
    let exports = if p3 {
        let service = ServicePre::new(pre.clone())
            .context("the component does not export wasi:http/handler@0.3")?;
        Exports::P3(service)
    } else {
        let proxy = ProxyIndices::new(&pre)
            .context("the component does not export wasi:http/incoming-handler@0.2")?;
        let policy = PolicyIndices::new(&pre).ok();
        Exports::P2 { proxy, policy }
    };
    Ok(Prepared { pre, exports })
}

/// WASI (0.2, and with `p3` 0.3 too: what std's 0.2 imports are served beside),
/// `wasi:http`, `wasi:keyvalue` and `wasi:config`.
fn linker(engine: &Engine, p3: bool) -> anyhow::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    if p3 {
        wasmtime_wasi::p3::add_to_linker(&mut linker)?;
        wasmtime_wasi_http::p3::add_to_linker(&mut linker)?;
    }
    keyvalue::add_to_linker(&mut linker, HostState::kv)?;
    config_store::add_to_linker(&mut linker, HostState::config)?;
    Ok(linker)
}

/// A component instance; it serves requests one after the other.
struct Instance {
    store: Store<HostState>,
    proxy: Proxy,
    policy: Option<PolicyExport>,
}

/// An instance waiting for its next request.
struct Idle {
    instance: Instance,
    since: Instant,
}

/// Creates instances, runs requests in them, and decides when they retire.
pub struct Runtime {
    engine: Engine,
    pre: Prepared,
    shared: Shared,
    limits: Limits,
    instances: Arc<AtomicU64>,
    closing: Arc<AtomicBool>,
    idle: Mutex<Vec<Idle>>,
    /// A WASIp3 component's instances, which take several requests at once.
    service: Option<Service>,
}

impl Runtime {
    /// A runtime instantiating `pre` with `shared` state under `limits`.
    pub fn new(engine: Engine, pre: Prepared, shared: Shared, limits: Limits) -> Self {
        let instances = Arc::new(AtomicU64::new(0));
        let closing = Arc::new(AtomicBool::new(false));
        let service = match &pre.exports {
            Exports::P3(service) => Some(Service::new(Pool {
                engine: engine.clone(),
                pre: service.clone(),
                shared: shared.clone(),
                limits,
                instances: instances.clone(),
                closing: closing.clone(),
            })),
            Exports::P2 { .. } => None,
        };
        Self {
            engine,
            pre,
            shared,
            limits,
            instances,
            closing,
            idle: Mutex::default(),
            service,
        }
    }

    /// Notes that the host is exiting: idle instances go, busy ones retire when done.
    pub fn begin_shutdown(&self) {
        self.closing.store(true, Ordering::Relaxed);
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether the component decides requests for the host to forward, and pulls its
    /// manifest when told ([`Runtime::pull`]).
    pub fn has_policy(&self) -> bool {
        matches!(
            self.pre.exports,
            Exports::P2 {
                policy: Some(_),
                ..
            }
        )
    }

    /// The pooled outbound client.
    pub fn outbound(&self) -> &OutboundClient {
        &self.shared.outbound
    }

    /// The key-value store every instance shares.
    pub fn kv(&self) -> &KvStore {
        &self.shared.kv
    }

    /// Asks the component what to do with a request (it must have the policy export):
    /// from its head, or with its `body` read whole where a first decision asked for it.
    /// The instance goes back to the pool as soon as it has answered.
    pub async fn decide(
        &self,
        request: &RequestHead,
        body: Option<&[u8]>,
    ) -> Result<Verdict, Failure> {
        self.with_policy(async |policy, store| {
            // Taken once the instance is in hand, after any write it must see.
            let moment = Moment {
                manifest_epoch: self.kv().manifest_epoch(),
                now_ms: apim_http::time::now_ms(),
            };
            let policy = policy.apim_gateway_policy();
            match body {
                None => policy.call_decide(store, request, moment).await,
                Some(body) => (policy.call_decide_with_body(store, request, body, moment)).await,
            }
        })
        .await
    }

    /// What the client gets of a backend's answer that the API's out flow needs (none:
    /// it was longer than the host holds), by the `mediation` its verdict gave.
    pub async fn mediate_answer(
        &self,
        request: &RequestHead,
        call: &Call,
        mediation: &[u8],
        answer: Option<Response>,
    ) -> Result<Response, Failure> {
        self.with_policy(async |policy, store| {
            policy
                .apim_gateway_policy()
                .call_mediate_answer(store, request, call, mediation, answer.as_ref())
                .await
        })
        .await
    }

    /// The component's answer for a request a limit of `kind` refused in the window
    /// ending at `window_end_ms`; `mediation` is its verdict's forward's.
    pub async fn throttled(
        &self,
        request: &RequestHead,
        kind: LimitKind,
        window_end_ms: u64,
        mediation: Option<&[u8]>,
    ) -> Result<Response, Failure> {
        self.with_policy(async |policy, store| {
            policy
                .apim_gateway_policy()
                .call_throttled(store, request, kind, window_end_ms, mediation)
                .await
        })
        .await
    }

    /// The component's answer for a forwarded request whose backend did not answer (or
    /// whose every endpoint is `suspended`); `mediation` is its forward's.
    pub async fn backend_failed(
        &self,
        request: &RequestHead,
        timed_out: bool,
        suspended: bool,
        mediation: Option<&[u8]>,
    ) -> Result<Response, Failure> {
        self.with_policy(async |policy, store| {
            policy
                .apim_gateway_policy()
                .call_backend_failed(store, request, timed_out, suspended, mediation)
                .await
        })
        .await
    }

    /// The component's answer for a forwarded request whose body grew past the gateway's
    /// limit.
    pub async fn body_too_large(&self, request: &RequestHead) -> Result<Response, Failure> {
        self.with_policy(async |policy, store| {
            policy
                .apim_gateway_policy()
                .call_body_too_large(store, request)
                .await
        })
        .await
    }

    /// The component's answer for a forwarded request whose API's WebAssembly policy
    /// failed (`failure`).
    pub async fn policy_failed(
        &self,
        request: &RequestHead,
        failure: PolicyFailure,
    ) -> Result<Response, Failure> {
        self.with_policy(async |policy, store| {
            policy
                .apim_gateway_policy()
                .call_policy_failed(store, request, failure)
                .await
        })
        .await
    }

    /// Has the component pull what its store misses from the control plane
    /// (`apim:gateway/sync`, exported beside the policy): the manifest version it holds
    /// afterwards, or why it could not.
    pub async fn pull(&self) -> Result<Result<u64, String>, Failure> {
        self.with_policy(async |exports, store| exports.apim_gateway_sync().call_pull(store).await)
            .await
    }

    /// Runs `call` on an instance's policy export, within the request deadline; the
    /// instance is checked in again after, or dropped if the call failed.
    async fn with_policy<T>(
        &self,
        call: impl AsyncFnOnce(&PolicyExport, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, Failure> {
        let mut instance = self.checkout().await?;
        let Some(policy) = instance.policy.take() else {
            let missing = "the component does not export apim:gateway/policy";
            return Err(Failure::new(Kind::Component, missing));
        };
        let data = instance.store.data_mut();
        data.deadline = Some(Instant::now() + self.limits.request_timeout);
        data.requests += 1;
        let limit = self.limits.request_timeout + EXPIRY_GRACE;
        let outcome = match tokio::time::timeout(limit, call(&policy, &mut instance.store)).await {
            Ok(outcome) => outcome.map_err(Failure::of_component),
            Err(_) => Err(Failure::deadline()),
        };
        instance.policy = Some(policy);
        match &outcome {
            Ok(_) => self.checkin(instance),
            Err(err) => self.discard(&instance, err),
        }
        outcome
    }

    /// Runs one request in an instance. Resolves with the response once the guest has
    /// set it; the guest may still be writing the body, and the instance goes back to
    /// the pool when it returns.
    pub async fn handle(
        self: &Arc<Self>,
        meta: RequestMeta,
        request: http::Request<WasiBody>,
    ) -> Result<http::Response<WasiBody>, Failure> {
        if let Some(service) = &self.service {
            return service.handle(meta, request).await;
        }
        let mut instance = self.checkout().await?;
        let (sender, receiver) = oneshot::channel();
        let data = instance.store.data_mut();
        data.deadline = Some(Instant::now() + self.limits.request_timeout);
        data.requests += 1;
        let mut http = data.http();
        let scheme = if crate::scheme::is_https(request.uri()) {
            Scheme::Https
        } else {
            Scheme::Http
        };
        let incoming = http
            .new_incoming_request(scheme, request)
            .map_err(Failure::of_component)?;
        let outparam = http
            .new_response_outparam(sender)
            .map_err(Failure::of_component)?;
        tracing::trace!(
            request = meta.id,
            instance = data.instance,
            "request accepted"
        );
        let runtime = self.clone();
        let call = tokio::spawn(async move {
            let limit = runtime.limits.request_timeout + EXPIRY_GRACE;
            let handler = instance.proxy.wasi_http_incoming_handler();
            let call = handler.call_handle(&mut instance.store, incoming, outparam);
            match tokio::time::timeout(limit, call).await {
                Ok(Ok(())) => {
                    runtime.checkin(instance);
                    Ok(())
                }
                Ok(Err(err)) => {
                    let failure = Failure::of_component(err);
                    runtime.discard(&instance, &failure);
                    Err(failure)
                }
                // Stuck in a host call past the deadline: the instance is dropped.
                Err(_) => Err(Failure::deadline()),
            }
        });
        match receiver.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(code)) => Err(Failure::new(
                Kind::Component,
                format!("the component failed the request: {code:?}"),
            )),
            Err(_) => match call.await {
                Ok(Err(failure)) => Err(failure),
                Ok(Ok(())) => Err(Failure::new(
                    Kind::Component,
                    "guest never invoked `response-outparam::set` method",
                )),
                Err(join) => Err(Failure::because(
                    Kind::Component,
                    "the request task failed",
                    join,
                )),
            },
        }
    }

    /// The most recently used idle instance (its caches are the warmest), or a new one.
    /// Pool slots free up as retired instances are torn down, so a failed instantiation
    /// is retried a few times before the request is given up.
    async fn checkout(&self) -> Result<Instance, Failure> {
        let mut attempt = 1;
        loop {
            if let Some(instance) = self.pop_idle() {
                return Ok(instance);
            }
            match self.instantiate().await {
                Ok(instance) => return Ok(instance),
                Err(err) if attempt < INSTANTIATE_ATTEMPTS => {
                    tracing::debug!(attempt, "instantiation failed: {err:?}");
                    tokio::time::sleep(INSTANTIATE_BACKOFF * attempt).await;
                    attempt += 1;
                }
                Err(err) => return Err(Failure::no_instance(err)),
            }
        }
    }

    fn pop_idle(&self) -> Option<Instance> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        idle.retain(|i| now.duration_since(i.since) < IDLE_INSTANCE_TIMEOUT);
        idle.pop().map(|i| i.instance)
    }

    /// Returns a finished instance to the pool, unless it has served its share.
    fn checkin(&self, mut instance: Instance) {
        let data = instance.store.data_mut();
        data.deadline = None;
        if data.requests >= self.limits.reuse || self.closing.load(Ordering::Relaxed) {
            tracing::debug!(
                instance = data.instance,
                requests = data.requests,
                "instance retired"
            );
            return;
        }
        let idle = Idle {
            instance,
            since: Instant::now(),
        };
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(idle);
    }

    fn discard(&self, instance: &Instance, err: &Failure) {
        let data = instance.store.data();
        if self.closing.load(Ordering::Relaxed) {
            tracing::debug!(
                instance = data.instance,
                "instance dropped at shutdown: {err}"
            );
        } else {
            tracing::warn!(
                instance = data.instance,
                requests = data.requests,
                "instance discarded after failure: {err:?}"
            );
        }
    }

    async fn instantiate(&self) -> wasmtime::Result<Instance> {
        let Exports::P2 {
            proxy: proxy_indices,
            policy: policy_indices,
        } = &self.pre.exports
        else {
            wasmtime::bail!("a WASIp3 component's instances are the service's");
        };
        let mut store = new_store(&self.engine, &self.shared, &self.instances);
        store.data_mut().deadline = Some(Instant::now() + self.limits.request_timeout);
        let instance = self.pre.pre.instantiate_async(&mut store).await?;
        crate::telemetry::metrics::instantiated();
        let proxy = proxy_indices.load(&mut store, &instance)?;
        let policy = match policy_indices {
            Some(indices) => Some(indices.load(&mut store, &instance)?),
            None => None,
        };
        store.data_mut().deadline = None;
        tracing::debug!(instance = store.data().instance, "instance created");
        Ok(Instance {
            store,
            proxy,
            policy,
        })
    }
}
