//! Engine, compiled component and the lifecycle of component instances.
//!
//! - The engine uses the pooling instance allocator: slots for
//!   `max_instances` (plus some slack for instances being torn down) are
//!   reserved up front, and each instance's linear memory is capped at
//!   `instance_memory_mb`.
//! - The component is compiled once and pre-instantiated against a linker
//!   holding WASI, `wasi:http`, `wasi:keyvalue` and `wasi:config`.
//! - [`Runtime`] is the [`HandlerState`] of wasmtime-wasi-http's
//!   [`ProxyHandler`](wasmtime_wasi_http::handler::ProxyHandler): every
//!   instance serves up to `instance_reuse` requests, one at a time, and then
//!   retires; idle instances retire after [`IDLE_INSTANCE_TIMEOUT`].
//! - Runaway guests are stopped by epoch interruption: an [`EpochTicker`]
//!   advances the engine's epoch every [`EPOCH_TICK`], and each store's
//!   epoch callback yields to the async runtime or, past the request's
//!   deadline, traps with [`DeadlineExceeded`].

use std::fmt;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, GuestTaskId, Linker, ResourceTable};
use wasmtime::error::Context as _;
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreContextMut,
    UpdateDeadline,
};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::handler::{
    self, HandlerState, ProxyPre, ShouldAccept, WorkerExpiration, WorkerState, WorkerStatus,
};
use wasmtime_wasi_http::p2::bindings::ProxyPre as P2ProxyPre;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::config_store::{self, ConfigView, Variables};
use crate::keyvalue::{self, KvStore, KvView};
use crate::outbound::OutboundClient;

/// Period of the engine's epoch; also the granularity of the guest deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// An instance with no request for this long is dropped.
pub const IDLE_INSTANCE_TIMEOUT: Duration = Duration::from_secs(60);
/// Extra time past the request deadline before a worker whose store is stuck
/// (e.g. in a host call) is torn down from outside.
const EXPIRY_GRACE: Duration = Duration::from_secs(1);
/// Upper bounds of core instances, memories and tables per component, used to
/// size the pool (a Rust `wasm32-wasip2` component needs far fewer).
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
const MEMORIES_PER_COMPONENT: u32 = 2;
const TABLES_PER_COMPONENT: u32 = 4;

/// Limits applied to instances.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Requests served by one instance before it retires.
    pub reuse: usize,
    /// Instances running at once.
    pub max_instances: u32,
    /// Linear memory limit of one instance, in bytes.
    pub memory_bytes: usize,
    /// Execution deadline of one request.
    pub request_timeout: Duration,
}

/// Per-request data handed through the proxy handler.
#[derive(Debug, Clone, Copy)]
pub struct RequestMeta {
    /// Sequence number for logs.
    pub id: u64,
}

/// The guest ran past its request deadline and was interrupted.
#[derive(Debug)]
pub struct DeadlineExceeded;

impl fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("guest exceeded its execution deadline")
    }
}

impl std::error::Error for DeadlineExceeded {}

/// State shared by every store.
#[derive(Clone)]
pub struct Shared {
    /// Key-value backend.
    pub kv: KvStore,
    /// `wasi:config` variables.
    pub vars: Arc<Variables>,
    /// Pooled outbound HTTP client.
    pub outbound: OutboundClient,
}

/// The data of one store, i.e. of one component instance.
pub struct HostState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    shared: Shared,
    /// When the current request must be finished by.
    deadline: Option<Instant>,
    /// Instance sequence number, for logs.
    instance: u64,
    /// Requests accepted so far.
    requests: usize,
}

impl HostState {
    fn new(shared: Shared, instance: u64) -> Self {
        // Guest output goes to the host's stderr (stdout carries only the
        // "Serving HTTP" line); raw sockets are off: outbound traffic must use
        // wasi:http and its connection pool.
        let wasi = WasiCtx::builder()
            .stdout(std::io::stderr())
            .stderr(std::io::stderr())
            .allow_tcp(false)
            .allow_udp(false)
            .build();
        Self {
            wasi,
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            shared,
            deadline: None,
            instance,
            requests: 0,
        }
    }

    fn kv(&mut self) -> KvView<'_> {
        KvView {
            table: &mut self.table,
            store: &self.shared.kv,
        }
    }

    fn config(&mut self) -> ConfigView<'_> {
        ConfigView {
            vars: &self.shared.vars,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.shared.outbound,
        }
    }
}

/// Builds the engine: Cranelift, epoch interruption, and a pooling allocator sized for
/// `components` components with `limits.max_instances` instances each.
pub fn engine(limits: &Limits, components: u32) -> anyhow::Result<Engine> {
    let per_component = limits.max_instances + limits.max_instances.div_ceil(4) + 2;
    let slots = per_component.saturating_mul(components.max(1));
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(slots.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
        .total_memories(slots.saturating_mul(MEMORIES_PER_COMPONENT))
        .total_tables(slots.saturating_mul(TABLES_PER_COMPONENT))
        .total_stacks(slots.saturating_mul(2))
        .max_memory_size(limits.memory_bytes);
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Ok(Engine::new(&config).context("cannot create the wasmtime engine")?)
}

/// Compiles the component at `path` and links it against the host.
pub fn prepare(engine: &Engine, path: &Path) -> anyhow::Result<ProxyPre<HostState>> {
    let started = Instant::now();
    let component = Component::from_file(engine, path)
        .with_context(|| format!("cannot load component {}", path.display()))?;
    tracing::info!(
        path = %path.display(),
        elapsed_ms = started.elapsed().as_millis(),
        "component compiled"
    );
    let linker = linker(engine)?;
    let pre = linker
        .instantiate_pre(&component)
        .context("the component's imports cannot be satisfied")?;
    let pre = P2ProxyPre::new(pre)
        .context("the component does not export wasi:http/incoming-handler@0.2")?;
    Ok(ProxyPre::P2(pre))
}

fn linker(engine: &Engine) -> anyhow::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    keyvalue::add_to_linker(&mut linker, HostState::kv)?;
    config_store::add_to_linker(&mut linker, HostState::config)?;
    Ok(linker)
}

/// Creates instances for the proxy handler and decides when they retire.
pub struct Runtime {
    engine: Engine,
    pre: ProxyPre<HostState>,
    shared: Shared,
    limits: Limits,
    instances: AtomicU64,
    closing: Arc<AtomicBool>,
}

impl Runtime {
    /// A runtime instantiating `pre` with `shared` state under `limits`.
    pub fn new(engine: Engine, pre: ProxyPre<HostState>, shared: Shared, limits: Limits) -> Self {
        Self {
            engine,
            pre,
            shared,
            limits,
            instances: AtomicU64::new(0),
            closing: Arc::default(),
        }
    }

    /// Notes that the host is exiting: instances dropped from now on were
    /// cancelled, not broken.
    pub fn begin_shutdown(&self) {
        self.closing.store(true, Ordering::Relaxed);
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn new_store(&self) -> Store<HostState> {
        let id = self.instances.fetch_add(1, Ordering::Relaxed) + 1;
        let mut store = Store::new(&self.engine, HostState::new(self.shared.clone(), id));
        store.epoch_deadline_callback(on_epoch);
        store.set_epoch_deadline(1);
        store
    }
}

/// Epoch callback: trap past the deadline, otherwise let other tasks run.
fn on_epoch(store: StoreContextMut<'_, HostState>) -> wasmtime::Result<UpdateDeadline> {
    match store.data().deadline {
        Some(deadline) if Instant::now() >= deadline => Err(wasmtime::Error::new(DeadlineExceeded)),
        _ => Ok(UpdateDeadline::Yield(1)),
    }
}

impl HandlerState for Runtime {
    type StoreData = HostState;
    type WorkerExpiration = Expiry;
    type WorkerState = Worker;

    async fn instantiate(&self) -> wasmtime::Result<handler::Instance<HostState, Expiry, Worker>> {
        let mut store = self.new_store();
        let id = store.data().instance;
        store.data_mut().deadline = Some(Instant::now() + self.limits.request_timeout);
        let proxy = self.pre.instantiate_async(&mut store).await?;
        store.data_mut().deadline = None;
        tracing::debug!(instance = id, "instance created");
        Ok(handler::Instance {
            store,
            proxy,
            view: <HostState as WasiHttpView>::http,
            expiration: Expiry::new(self.limits.request_timeout),
            state: Worker {
                reuse: self.limits.reuse,
                request_timeout: self.limits.request_timeout,
                closing: self.closing.clone(),
            },
        })
    }
}

/// Per-instance request admission and retirement.
pub struct Worker {
    reuse: usize,
    request_timeout: Duration,
    closing: Arc<AtomicBool>,
}

impl WorkerState for Worker {
    type StoreData = HostState;
    type RequestData = RequestMeta;

    fn should_accept_request(&self, concurrent: usize, total: usize) -> ShouldAccept {
        if total >= self.reuse {
            ShouldAccept::Never
        } else if concurrent > 0 {
            // WASIp2 handlers run one request at a time.
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
        let data = store.data_mut();
        data.deadline = Some(Instant::now() + self.request_timeout);
        data.requests += 1;
        tracing::trace!(
            request = meta.id,
            instance = data.instance,
            "request accepted"
        );
        Box::pin(tokio::time::sleep(self.request_timeout))
    }

    fn drop(&self, store: Store<HostState>, result: wasmtime::Result<()>) {
        let data = store.data();
        match result {
            Ok(()) => tracing::debug!(
                instance = data.instance,
                requests = data.requests,
                "instance retired"
            ),
            Err(err) if self.closing.load(Ordering::Relaxed) => tracing::debug!(
                instance = data.instance,
                "instance dropped at shutdown: {err}"
            ),
            Err(err) => tracing::warn!(
                instance = data.instance,
                requests = data.requests,
                "instance discarded after failure: {err:?}"
            ),
        }
    }
}

/// Decides, from outside the store's event loop, when a worker must go:
/// idle too long, or a request (or its post-return work) overran the deadline.
pub struct Expiry {
    request_timeout: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl Expiry {
    fn new(request_timeout: Duration) -> Self {
        Self {
            request_timeout,
            timer: Box::pin(tokio::time::sleep(IDLE_INSTANCE_TIMEOUT)),
        }
    }

    fn limit(&self, status: WorkerStatus) -> Duration {
        match status {
            WorkerStatus::Idle => IDLE_INSTANCE_TIMEOUT,
            WorkerStatus::Requests | WorkerStatus::PostReturn => {
                self.request_timeout + EXPIRY_GRACE
            }
        }
    }
}

impl WorkerExpiration for Expiry {
    fn poll(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        status: WorkerStatus,
        start: Instant,
    ) -> Poll<()> {
        let this = self.get_mut();
        let deadline = start + this.limit(status);
        if Instant::now() >= deadline {
            return Poll::Ready(());
        }
        let deadline = tokio::time::Instant::from_std(deadline);
        if this.timer.deadline() != deadline {
            this.timer.as_mut().reset(deadline);
        }
        this.timer.as_mut().poll(cx)
    }
}

/// Background thread advancing the engine's epoch every [`EPOCH_TICK`].
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts ticking `engine`.
    pub fn start(engine: Engine) -> anyhow::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .context("cannot start the epoch thread")?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
