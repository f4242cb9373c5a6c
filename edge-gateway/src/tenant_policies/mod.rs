//! Tenants' own WebAssembly policies (`wit/policy/world.wit`), which this host runs on
//! the calls whose verdict names one (`forward.tenant-policy`), after their limits admit
//! them and before their backend is called.
//!
//! A policy is named by its digest: fetched from the control plane behind the gateway
//! secret ([`fetch`]), checked against its digest and size and against the policy world
//! (`apim-policy-world`), compiled (one compile at a time; bytes that are not a policy,
//! or do not compile, are not fetched again) and kept per API ([`sandbox::Loaded`]: an
//! API's instances are its own); a manifest that names another digest swaps it with the
//! next call. At most [`MAX_RUNNING`] calls run at once. Each call runs within [`sandbox::Budgets`]; a policy that
//! traps or runs past one fails that call alone, and the caller counts it ([`Ran`]). A
//! policy whose calls run past their budgets [`STRIKES`] times in a row is suspended, its
//! calls refused at once, for a second, then twice as long each time it does so again.

mod bindings;
pub mod changes;
mod fetch;
mod sandbox;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OnceCell, Semaphore};
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

pub use bindings::apim::policy::types::{
    Answer, Call as PolicyCall, Changes, Decision, Request as PolicyRequest,
};
pub use fetch::Source;
pub use sandbox::{Budgets, Failed};
use sandbox::{Loaded, PolicyState};

/// Policies kept compiled at most (one per API and digest); the least recently used goes
/// first.
const MAX_LOADED: usize = 64;
/// Policy calls running at once, on every API together; a call that waits past its time
/// budget for one fails as unavailable.
const MAX_RUNNING: usize = 64;
/// How long a policy that could not be loaded is not tried again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Consecutive calls past a budget after which a policy is suspended.
const STRIKES: u32 = 3;
/// The first suspension; each next one, without a call decided between, lasts twice as
/// long, up to [`LONGEST_SUSPENSION`].
const FIRST_SUSPENSION: Duration = Duration::from_secs(1);
const LONGEST_SUSPENSION: Duration = Duration::from_secs(60);

/// Why a policy gave no decision, as the host's verdict says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// It ran and failed.
    Ran(Failed),
    /// It could not be had: not fetched, not a policy, or no control plane to fetch from.
    Unavailable,
    /// It is suspended: its last calls ran past their budgets, so its calls are refused
    /// at once for a while rather than let it burn the gateway's CPU.
    Suspended,
}

/// The host's policies: loaded by digest, run within budgets, counted.
pub struct Policies {
    engine: Engine,
    linker: Linker<PolicyState>,
    budgets: Budgets,
    source: Option<Source>,
    /// By API and digest: an API's instances, strikes and suspension are its own.
    loaded: Mutex<HashMap<String, Arc<Slot>>>,
    /// One compile at a time: compiling is the costliest thing a tenant can ask for.
    compiling: Semaphore,
    running: Semaphore,
    clock: Instant,
}

/// Why a policy could not be loaded.
#[derive(Debug)]
enum Load {
    /// Its bytes are not a policy, or do not compile or link: they never will.
    NotAPolicy(String),
    /// It could not be fetched now.
    Failed(String),
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotAPolicy(why) | Self::Failed(why) => f.write_str(why),
        }
    }
}

/// A policy being loaded, loaded, or recently failed to load.
#[derive(Default)]
struct Slot {
    cell: OnceCell<Arc<Loaded>>,
    /// When it was last used (milliseconds since the host's clock started).
    used_ms: AtomicU64,
    /// When loading it last failed (the same clock, plus one; 0: never).
    failed_ms: AtomicU64,
    /// Loading it failed in a way that will not change: its bytes are not a policy, or
    /// do not compile or link (the same bytes give the same result).
    failed_for_good: AtomicBool,
    /// Consecutive calls past a budget.
    strikes: AtomicU32,
    /// Suspensions since a call was last decided.
    suspensions: AtomicU32,
    /// Until when it is suspended (the same clock; 0: not).
    suspended_until_ms: AtomicU64,
}

/// What a call of a policy came to, and what it spent.
#[derive(Debug)]
pub struct Ran {
    /// Its decision, or why there is none.
    pub decided: Result<Decision, Failure>,
    /// Fuel burnt.
    pub fuel: u64,
    /// Wall-clock time, loading included.
    pub elapsed: Duration,
}

impl Ran {
    /// The outcome as a metric's label.
    pub fn outcome(&self) -> &'static str {
        match &self.decided {
            Ok(Decision::Proceed(_)) => "proceeded",
            Ok(Decision::Respond(_)) => "answered",
            Err(Failure::Ran(Failed::Trapped)) => "trapped",
            Err(Failure::Ran(Failed::Cpu)) => "cpu_budget",
            Err(Failure::Ran(Failed::Memory)) => "memory_budget",
            Err(Failure::Ran(Failed::Time)) => "time_budget",
            Err(Failure::Unavailable) => "unavailable",
            Err(Failure::Suspended) => "suspended",
        }
    }
}

impl Policies {
    /// Policies run within `budgets`, fetched from `source` (none: every call naming a
    /// policy fails as unavailable).
    pub fn new(budgets: Budgets, source: Option<Source>) -> anyhow::Result<Self> {
        let engine = sandbox::engine()?;
        let linker = sandbox::linker(&engine)?;
        Ok(Self {
            engine,
            linker,
            budgets,
            source,
            loaded: Mutex::new(HashMap::new()),
            compiling: Semaphore::new(1),
            running: Semaphore::new(MAX_RUNNING),
            clock: Instant::now(),
        })
    }

    /// The engine, for the epoch ticker.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Runs API `api`'s policy `digest` (of `size` bytes) on `request`.
    pub async fn run(&self, api: &str, digest: &str, size: u64, request: &PolicyRequest) -> Ran {
        let slot = self.slot(&apim_http::joined([api, "/", digest]));
        let started = Instant::now();
        if slot.suspended_until_ms.load(Ordering::Relaxed) > self.now_ms() {
            return Ran {
                decided: Err(Failure::Suspended),
                fuel: 0,
                elapsed: started.elapsed(),
            };
        }
        let Some(loaded) = self.load(&slot, digest, size).await else {
            return Ran {
                decided: Err(Failure::Unavailable),
                fuel: 0,
                elapsed: started.elapsed(),
            };
        };
        let waiting = tokio::time::timeout(self.budgets.time, self.running.acquire());
        let Ok(Ok(_running)) = waiting.await else {
            return Ran {
                decided: Err(Failure::Unavailable),
                fuel: 0,
                elapsed: started.elapsed(),
            };
        };
        let (decided, fuel) = loaded.call(request, self.budgets).await;
        self.strike_or_clear(&slot, digest, decided.as_ref().err());
        Ran {
            decided: decided.map_err(Failure::Ran),
            fuel,
            elapsed: started.elapsed(),
        }
    }

    /// Counts a failed call (a trap or a budget) against the policy, suspending it at
    /// [`STRIKES`] in a row; or clears its record when the call decided.
    fn strike_or_clear(&self, slot: &Slot, digest: &str, failed: Option<&Failed>) {
        let Some(failed) = failed else {
            slot.strikes.store(0, Ordering::Relaxed);
            slot.suspensions.store(0, Ordering::Relaxed);
            return;
        };
        tracing::warn!(policy = digest, ?failed, "a tenant's policy failed a call");
        if slot.strikes.fetch_add(1, Ordering::Relaxed) + 1 < STRIKES {
            return;
        }
        slot.strikes.store(0, Ordering::Relaxed);
        let doublings = slot.suspensions.fetch_add(1, Ordering::Relaxed).min(6);
        let length = (FIRST_SUSPENSION * 2u32.pow(doublings)).min(LONGEST_SUSPENSION);
        let until = self.now_ms() + u64::try_from(length.as_millis()).unwrap_or(u64::MAX);
        slot.suspended_until_ms.store(until, Ordering::Relaxed);
        tracing::warn!(
            policy = digest,
            seconds = length.as_secs(),
            "a tenant's policy is suspended: its calls ran past their budgets"
        );
    }

    /// The slot of `key` (API and digest), made (and the least recently used one dropped)
    /// if new.
    fn slot(&self, key: &str) -> Arc<Slot> {
        let now = self.now_ms();
        let Ok(mut loaded) = self.loaded.lock() else {
            return Arc::default();
        };
        if let Some(slot) = loaded.get(key) {
            slot.used_ms.store(now, Ordering::Relaxed);
            return slot.clone();
        }
        if loaded.len() >= MAX_LOADED {
            let oldest = loaded
                .iter()
                .min_by_key(|(_, slot)| slot.used_ms.load(Ordering::Relaxed))
                .map(|(digest, _)| digest.clone());
            if let Some(oldest) = oldest {
                loaded.remove(&oldest);
            }
        }
        let slot = Arc::new(Slot::default());
        slot.used_ms.store(now, Ordering::Relaxed);
        loaded.insert(key.to_string(), slot.clone());
        slot
    }

    /// The policy loaded (once, whoever asks meanwhile waits for it); `None` when it
    /// cannot be: for good, or within [`RETRY_AFTER`] of a failed fetch.
    async fn load(&self, slot: &Slot, digest: &str, size: u64) -> Option<Arc<Loaded>> {
        if let Some(loaded) = slot.cell.get() {
            return Some(loaded.clone());
        }
        if self.failed_lately(slot) {
            return None;
        }
        let loading = slot.cell.get_or_try_init(|| async {
            // Whoever waited behind a failed load sees its failure, not a load of its own.
            if self.failed_lately(slot) {
                return Err(Load::Failed("it failed a moment ago".into()));
            }
            self.fetch_and_compile(digest, size).await
        });
        match loading.await {
            Ok(loaded) => Some(loaded.clone()),
            Err(err) => {
                tracing::error!(policy = digest, "a tenant's policy cannot be loaded: {err}");
                if matches!(err, Load::NotAPolicy(_)) {
                    slot.failed_for_good.store(true, Ordering::Relaxed);
                }
                slot.failed_ms.store(self.now_ms() + 1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Whether loading the slot's policy failed for good, or less than [`RETRY_AFTER`] ago.
    fn failed_lately(&self, slot: &Slot) -> bool {
        if slot.failed_for_good.load(Ordering::Relaxed) {
            return true;
        }
        let failed = slot.failed_ms.load(Ordering::Relaxed);
        let retry_ms = u64::try_from(RETRY_AFTER.as_millis()).unwrap_or(u64::MAX);
        failed != 0 && self.now_ms() + 1 < failed.saturating_add(retry_ms)
    }

    async fn fetch_and_compile(&self, digest: &str, size: u64) -> Result<Arc<Loaded>, Load> {
        let source = self
            .source
            .as_ref()
            .ok_or_else(|| Load::Failed("no control plane to fetch policies from".into()))?;
        let bytes = source.fetch(digest, size).await.map_err(|err| match err {
            fetch::Fetched::NotAPolicy(why) => Load::NotAPolicy(why),
            fetch::Fetched::Failed(why) => Load::Failed(why),
        })?;
        let _compiling = self.compiling.acquire().await;
        let engine = self.engine.clone();
        let started = Instant::now();
        let component = tokio::task::spawn_blocking(move || Component::new(&engine, &bytes))
            .await
            .map_err(|err| Load::Failed(err.to_string()))?
            .map_err(|err| Load::NotAPolicy(format!("it does not compile: {err:#}")))?;
        let loaded = Loaded::new(&self.linker, &component)
            .map_err(|err| Load::NotAPolicy(format!("{err:#}")))?;
        tracing::info!(
            policy = digest,
            size,
            compile_ms = started.elapsed().as_millis(),
            "a tenant's policy loaded"
        );
        Ok(Arc::new(loaded))
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}
