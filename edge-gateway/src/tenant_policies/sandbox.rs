//! Where tenants' policies run: an engine of their own that counts fuel (the CPU budget)
//! and is interrupted by its epoch (the wall-clock budget), stores whose memory is capped
//! (the memory budget), WASI with nothing to reach (no environment, directory, standard
//! input or network; output dropped), and each policy's idle instances, reused until one
//! fails. A store's memories together, its instances, memories, tables and resources
//! are bounded; an instance that grew large is not kept.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::error::Context as _;
use wasmtime::{Config, Engine, ResourceLimiter, Store, Trap};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::apim::policy::types::{Decision, Request};
use super::bindings::{RequestPolicy, RequestPolicyPre};

/// Calls one instance serves before it is replaced (a policy's leftovers do not grow
/// without end).
const CALLS_PER_INSTANCE: u32 = 4096;
/// Idle instances kept per policy.
const IDLE_PER_POLICY: usize = 2;
/// An instance whose memories grew past this is not kept idle (its memory goes with it).
const KEEP_MEMORY_BYTES: usize = 8 * 1024 * 1024;
/// Most core instances, memories and tables one policy's store may make (a Rust, Go or
/// JavaScript component needs a few of each), and resources its table may hold.
const MAX_CORE_INSTANCES: usize = 32;
const MAX_MEMORIES: usize = 8;
const MAX_TABLES: usize = 16;
const MAX_RESOURCES: usize = 4096;
/// Fuel a policy burns between yields to the host's other work.
const FUEL_BETWEEN_YIELDS: u64 = 1_000_000;
/// Most table elements a policy may grow to.
const MAX_TABLE_ELEMENTS: usize = 100_000;

/// What one call of a policy may use.
#[derive(Debug, Clone, Copy)]
pub struct Budgets {
    /// Fuel (about one unit per WebAssembly instruction).
    pub fuel: u64,
    /// Linear memory, bytes.
    pub memory_bytes: usize,
    /// Wall-clock time, host calls included.
    pub time: Duration,
    /// How often the engine's epoch ticks (the ticker's period).
    pub epoch_tick: Duration,
}

/// Why a call gave no decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    /// It trapped: a panic, an unreachable, an out-of-bounds access.
    Trapped,
    /// Past its fuel.
    Cpu,
    /// It tried to grow its memory past its limit.
    Memory,
    /// Past its wall-clock time.
    Time,
}

/// The engine tenants' policies compile and run on.
pub fn engine() -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .consume_fuel(true)
        .epoch_interruption(true)
        // Policies are WASI 0.2 (upload refuses the async ABI): calls take the plain
        // fiber path, not the concurrent one's task bookkeeping (about 1.5 µs a call).
        .concurrency_support(false);
    Ok(Engine::new(&config).context("cannot create the policies' wasmtime engine")?)
}

/// The data of one policy instance's store.
pub struct PolicyState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: MemoryCap,
}

impl WasiView for PolicyState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Refuses growth of the store's memories, all together, past the budget (and remembers
/// that it did), and more instances, memories and tables than a policy needs.
struct MemoryCap {
    bytes: usize,
    /// What the store's memories hold together.
    used: usize,
    refused: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let grown = self.used.saturating_add(desired.saturating_sub(current));
        let fits = grown <= self.bytes;
        if fits {
            self.used = grown;
        }
        self.refused |= !fits;
        Ok(fits)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_CORE_INSTANCES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }
}

/// WASI 0.2 for policies. Only what the policy world allows is ever imported (checked at
/// upload and again when loaded); the context gives it nothing to reach besides.
pub fn linker(engine: &Engine) -> anyhow::Result<Linker<PolicyState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // The world's types: an instance with no functions.
    linker.instance("apim:policy/types@0.1.0")?;
    Ok(linker)
}

/// A policy compiled and linked, with its idle instances.
pub struct Loaded {
    pre: RequestPolicyPre<PolicyState>,
    idle: Mutex<Vec<Instance>>,
}

struct Instance {
    store: Store<PolicyState>,
    policy: RequestPolicy,
    calls: u32,
}

impl Loaded {
    /// Links `component`.
    pub fn new(linker: &Linker<PolicyState>, component: &Component) -> anyhow::Result<Self> {
        let pre = linker
            .instantiate_pre(component)
            .context("the policy's imports cannot be satisfied")?;
        let pre = RequestPolicyPre::new(pre).context("the policy does not export on-request")?;
        anyhow::Ok(Self {
            pre,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Runs the policy on `request` within `budgets` (a new instance's making counted in
    /// them): its decision, and the fuel it burnt.
    pub async fn call(
        &self,
        request: &Request,
        budgets: Budgets,
    ) -> (Result<Decision, Failed>, u64) {
        let started = Instant::now();
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let mut instance = match idle {
            Some(mut instance) => {
                let store = &mut instance.store;
                let limits = &mut store.data_mut().limits;
                limits.bytes = budgets.memory_bytes;
                limits.refused = false;
                if store.set_fuel(budgets.fuel).is_err() {
                    return (Err(Failed::Trapped), 0);
                }
                store.set_epoch_deadline(ticks(budgets));
                instance
            }
            None => match self.instantiate(budgets).await {
                Ok(instance) => instance,
                Err(failed) => return (Err(failed), budgets.fuel),
            },
        };
        let left = budgets.time.saturating_sub(started.elapsed());
        let called = instance
            .policy
            .call_on_request(&mut instance.store, request);
        let outcome = tokio::time::timeout(left, called).await;
        let burnt = budgets
            .fuel
            .saturating_sub(instance.store.get_fuel().unwrap_or(0));
        let decided = match outcome {
            Err(_) => Err(Failed::Time),
            Ok(Ok(decision)) => Ok(decision),
            Ok(Err(err)) => Err(failure_of(&err, instance.store.data().limits.refused)),
        };
        if decided.is_ok() {
            self.keep(instance);
        }
        (decided, burnt)
    }

    async fn instantiate(&self, budgets: Budgets) -> Result<Instance, Failed> {
        let wasi = WasiCtx::builder()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        let state = PolicyState {
            wasi,
            table,
            limits: MemoryCap {
                bytes: budgets.memory_bytes,
                used: 0,
                refused: false,
            },
        };
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(|state| &mut state.limits);
        // Instantiation runs the policy's start code: within the call's budgets.
        store.set_fuel(budgets.fuel).map_err(|_| Failed::Trapped)?;
        store
            .fuel_async_yield_interval(Some(FUEL_BETWEEN_YIELDS))
            .map_err(|_| Failed::Trapped)?;
        store.epoch_deadline_trap();
        store.set_epoch_deadline(ticks(budgets));
        let made = tokio::time::timeout(budgets.time, self.pre.instantiate_async(&mut store)).await;
        match made {
            Err(_) => Err(Failed::Time),
            Ok(Err(err)) => Err(failure_of(&err, store.data().limits.refused)),
            Ok(Ok(policy)) => Ok(Instance {
                store,
                policy,
                calls: 0,
            }),
        }
    }

    /// Keeps an instance that decided for the next call, unless it has served enough,
    /// holds much memory, or enough are idle.
    fn keep(&self, mut instance: Instance) {
        instance.calls += 1;
        let big = instance.store.data().limits.used > KEEP_MEMORY_BYTES;
        if instance.calls >= CALLS_PER_INSTANCE || big {
            return;
        }
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < IDLE_PER_POLICY
        {
            idle.push(instance);
        }
    }
}

/// Epoch ticks the wall-clock budget lasts (at least one, and one more for the tick
/// under way).
fn ticks(budgets: Budgets) -> u64 {
    let ticks = budgets.time.as_millis() / budgets.epoch_tick.as_millis().max(1);
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1) + 1
}

/// What a policy's error says about why it failed.
fn failure_of(err: &wasmtime::Error, memory_refused: bool) -> Failed {
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => Failed::Cpu,
        Some(Trap::Interrupt) => Failed::Time,
        _ if memory_refused => Failed::Memory,
        _ => Failed::Trapped,
    }
}
