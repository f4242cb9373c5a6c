//! The data of one store, i.e. of one component instance ([`HostState`]: WASI, `wasi:http`,
//! the key-value store and the variables, what every store shares, and the request's
//! deadline), the limits instances run under, and how a store traps past its deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, StoreContextMut, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::failure::Failure;
use crate::kv::KvStore;
use crate::outbound::OutboundClient;
use crate::wit_host::config_store::{ConfigView, Variables};
use crate::wit_host::keyvalue::KvView;

/// An instance with no request for this long is dropped.
pub const IDLE_INSTANCE_TIMEOUT: Duration = Duration::from_secs(60);

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
    /// Requests one instance of a WASIp3 component serves before it retires.
    pub p3_reuse: usize,
    /// Requests one instance of a WASIp3 component takes at once.
    pub p3_concurrency: usize,
}

/// Per-request data, for logs.
#[derive(Debug, Clone, Copy)]
pub struct RequestMeta {
    /// Sequence number for logs.
    pub id: u64,
}

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
    /// When the current request (of a WASIp3 instance, the latest one) must be finished by.
    pub(crate) deadline: Option<Instant>,
    /// Instance sequence number, for logs.
    pub(crate) instance: u64,
    /// Requests accepted so far.
    pub(crate) requests: usize,
}

impl HostState {
    pub(crate) fn new(shared: Shared, instance: u64) -> Self {
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

    pub(super) fn kv(&mut self) -> KvView<'_> {
        KvView {
            table: &mut self.table,
            store: &self.shared.kv,
        }
    }

    pub(super) fn config(&mut self) -> ConfigView<'_> {
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

/// A store for a new instance, numbered after `instances`, trapping past its deadline.
pub(crate) fn new_store(
    engine: &Engine,
    shared: &Shared,
    instances: &AtomicU64,
) -> Store<HostState> {
    let id = instances.fetch_add(1, Ordering::Relaxed) + 1;
    let mut store = Store::new(engine, HostState::new(shared.clone(), id));
    store.epoch_deadline_callback(on_epoch);
    store.set_epoch_deadline(1);
    store
}

/// Epoch callback: trap past the deadline (with the failure that says so, which the host
/// finds again in the trap), otherwise let other tasks run.
fn on_epoch(store: StoreContextMut<'_, HostState>) -> wasmtime::Result<UpdateDeadline> {
    match store.data().deadline {
        Some(deadline) if Instant::now() >= deadline => {
            Err(wasmtime::Error::new(Failure::deadline()))
        }
        _ => Ok(UpdateDeadline::Yield(1)),
    }
}
