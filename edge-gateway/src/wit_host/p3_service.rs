//! Hosting a WASIp3 component (one that exports `wasi:http/handler@0.3`) as Spin 4.1 does:
//! wasmtime-wasi-http's [`ProxyHandler`] hands requests to instances that each take up to
//! `p3_concurrency` of them at once and `p3_reuse` in all, then retire; an instance with
//! no request for [`IDLE_INSTANCE_TIMEOUT`] goes. Deadlines and epochs are those of the
//! WASI 0.2 path ([`super::instances`]): each request must be answered within the request
//! timeout (else 504, and the instance takes no more), and a guest running past the
//! deadline of its latest request traps at the next epoch.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::time::Sleep;
use wasmparser::{Parser, Payload};
use wasmtime::component::GuestTaskId;
use wasmtime::{Engine, Store, StoreContextMut};
use wasmtime_wasi_http::handler::{
    ExpirationError, HandlerState, Instance, InstantiationError, Proxy, ProxyHandler, ShouldAccept,
    WorkerExpiration, WorkerState, WorkerStatus,
};
use wasmtime_wasi_http::p3::bindings::ServicePre;
use wasmtime_wasi_http::{WasiBody, WasiHttpView};

use crate::failure::Failure;
use crate::wit_host::instance_state::{
    HostState, IDLE_INSTANCE_TIMEOUT, Limits, RequestMeta, Shared, new_store,
};

/// The export that makes a component a WASIp3 HTTP service.
const P3_HANDLER: &str = "wasi:http/handler@0.3";

/// Extra time past a request's deadline before an instance stuck in a host call is
/// dropped (as on the WASI 0.2 path).
const EXPIRY_GRACE: Duration = Duration::from_secs(1);

/// Whether the component at `path` is a WASIp3 HTTP service (it exports
/// `wasi:http/handler@0.3.x`); read before the engine is set up, which only then needs
/// wasmtime's concurrency support.
pub fn serves_p3(path: &Path) -> anyhow::Result<bool> {
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read component {}", path.display()))?;
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(&bytes) {
        match payload.with_context(|| format!("{} is not a component", path.display()))? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(exports) if depth == 0 => {
                for export in exports {
                    if export?.name.name.starts_with(P3_HANDLER) {
                        return Ok(true);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(false)
}

/// A WASIp3 component's instances, handed requests as they come.
pub struct Service(ProxyHandler<Pool>);

impl Service {
    /// Serves the component `pool` instantiates.
    pub fn new(pool: Pool) -> Self {
        Self(ProxyHandler::new(pool))
    }

    /// Runs one request in an instance (a new one if none takes it); resolves with the
    /// response once the guest has given it, its body still being written. The handler
    /// tells an instance past its deadline and one that could not be made by their errors'
    /// types.
    pub async fn handle(
        &self,
        meta: RequestMeta,
        request: http::Request<WasiBody>,
    ) -> Result<http::Response<WasiBody>, Failure> {
        self.0.handle(meta, request).await.map_err(|err| {
            if err.is::<ExpirationError>() {
                Failure::deadline()
            } else if err.is::<InstantiationError<RequestMeta>>() {
                Failure::no_instance(err)
            } else {
                Failure::of_component(err)
            }
        })
    }
}

/// What new instances are made of, and the limits they run under.
pub struct Pool {
    /// The engine (with concurrency support).
    pub engine: Engine,
    /// The component, linked.
    pub pre: ServicePre<HostState>,
    /// What every store shares.
    pub shared: Shared,
    /// Deadlines and reuse.
    pub limits: Limits,
    /// Instance numbers, shared with the runtime.
    pub instances: Arc<AtomicU64>,
    /// Raised when the host exits: instances take no more requests.
    pub closing: Arc<AtomicBool>,
}

impl HandlerState for Pool {
    type StoreData = HostState;
    type WorkerExpiration = Expiry;
    type WorkerState = Worker;

    async fn instantiate(&self) -> wasmtime::Result<Instance<HostState, Expiry, Worker>> {
        let mut store = new_store(&self.engine, &self.shared, &self.instances);
        let timeout = self.limits.request_timeout;
        store.data_mut().deadline = Some(Instant::now() + timeout);
        let service = self.pre.instantiate_async(&mut store).await?;
        crate::telemetry::metrics::instantiated();
        store.data_mut().deadline = None;
        tracing::debug!(instance = store.data().instance, "WASIp3 instance created");
        Ok(Instance {
            store,
            proxy: Proxy::P3(service),
            view: <HostState as WasiHttpView>::http,
            expiration: Expiry {
                timeout,
                closing: self.closing.clone(),
                timer: None,
            },
            state: Worker {
                reuse: self.limits.p3_reuse,
                concurrency: self.limits.p3_concurrency,
                timeout,
                closing: self.closing.clone(),
            },
        })
    }
}

/// How much one instance takes.
pub struct Worker {
    reuse: usize,
    concurrency: usize,
    timeout: Duration,
    closing: Arc<AtomicBool>,
}

impl WorkerState for Worker {
    type StoreData = HostState;
    type RequestData = RequestMeta;

    fn should_accept_request(&self, concurrent: usize, total: usize) -> ShouldAccept {
        if total >= self.reuse || self.closing.load(Ordering::Relaxed) {
            ShouldAccept::Never
        } else if concurrent >= self.concurrency {
            ShouldAccept::No
        } else {
            ShouldAccept::Yes
        }
    }

    fn on_request_start(
        &self,
        mut store: StoreContextMut<'_, HostState>,
        meta: RequestMeta,
        _task: GuestTaskId,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + Sync>> {
        let deadline = Instant::now() + self.timeout;
        let data = store.data_mut();
        data.deadline = Some(deadline);
        data.requests += 1;
        tracing::trace!(
            request = meta.id,
            instance = data.instance,
            "request accepted"
        );
        Box::pin(tokio::time::sleep_until(deadline.into()))
    }

    fn drop(&self, store: Store<HostState>, result: wasmtime::Result<()>) {
        let data = store.data();
        match result {
            Ok(()) => tracing::debug!(
                instance = data.instance,
                requests = data.requests,
                "WASIp3 instance retired"
            ),
            Err(err) if self.closing.load(Ordering::Relaxed) => tracing::debug!(
                instance = data.instance,
                "WASIp3 instance dropped at shutdown: {err}"
            ),
            Err(err) => tracing::warn!(
                instance = data.instance,
                requests = data.requests,
                "WASIp3 instance discarded after failure: {err:?}"
            ),
        }
    }
}

/// When an instance goes: idle for [`IDLE_INSTANCE_TIMEOUT`] (at once when the host
/// exits), or busy past its latest request's deadline and [`EXPIRY_GRACE`].
pub struct Expiry {
    timeout: Duration,
    closing: Arc<AtomicBool>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl WorkerExpiration for Expiry {
    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        status: WorkerStatus,
        start: Instant,
    ) -> Poll<()> {
        let ends = match status {
            WorkerStatus::Idle if self.closing.load(Ordering::Relaxed) => return Poll::Ready(()),
            WorkerStatus::Idle => start + IDLE_INSTANCE_TIMEOUT,
            WorkerStatus::Requests | WorkerStatus::PostReturn => {
                start + self.timeout + EXPIRY_GRACE
            }
        };
        let ends = tokio::time::Instant::from_std(ends);
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(ends)));
        if timer.deadline() != ends {
            timer.as_mut().reset(ends);
        }
        timer.as_mut().poll(cx)
    }
}
