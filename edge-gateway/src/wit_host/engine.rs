//! The wasmtime engine: Cranelift, epoch interruption and a pooling allocator whose slots
//! for `max_instances` (plus some slack for instances being torn down) are reserved up
//! front, each instance's linear memory capped at `instance_memory_mb`; wasmtime's
//! compilation cache; and the [`EpochTicker`] that stops runaway guests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::error::Context as _;
use wasmtime::{
    Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig,
    ProfilingStrategy,
};

use crate::config::CompileCache;
use crate::wit_host::instance_state::Limits;

/// Period of the engine's epoch; also the granularity of the guest deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Upper bounds of core instances, memories and tables per component, used to
/// size the pool (a Rust `wasm32-wasip2` component needs far fewer).
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
const MEMORIES_PER_COMPONENT: u32 = 2;
const TABLES_PER_COMPONENT: u32 = 4;

/// Builds the engine: Cranelift, epoch interruption, and a pooling allocator sized for
/// `components` components with `limits.max_instances` instances each. With `perf_map`,
/// compiled guest code is listed in `/tmp/perf-<pid>.map` so `perf` can name it; with a
/// `cache`, compiled components are kept there and loaded again at the next start. Only
/// with `p3` (a WASIp3 component is hosted) do stores carry wasmtime's concurrency state.
pub fn engine(
    limits: &Limits,
    components: u32,
    perf_map: bool,
    cache: &CompileCache,
    p3: bool,
) -> anyhow::Result<Engine> {
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
        .concurrency_support(p3)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    if perf_map {
        config.profiler(ProfilingStrategy::PerfMap);
    }
    config.cache(compile_cache(cache)?);
    Ok(Engine::new(&config).context("cannot create the wasmtime engine")?)
}

/// wasmtime's compilation cache in the chosen directory. Compilations are keyed by the
/// component's bytes, wasmtime's version and the engine's settings, so a changed `.wasm`
/// or host compiles afresh. A directory the operator named must work; the default one
/// may not exist (no home directory), and then the gateway compiles at every start.
fn compile_cache(choice: &CompileCache) -> anyhow::Result<Option<Cache>> {
    let (dir, named) = match choice {
        CompileCache::Off => return Ok(None),
        CompileCache::Default(None) => {
            tracing::info!(
                "no compilation cache (neither XDG_CACHE_HOME nor HOME is set; see \
                 APIM_COMPILE_CACHE_DIR): components compile at every start"
            );
            return Ok(None);
        }
        CompileCache::Default(Some(dir)) => (dir, false),
        CompileCache::Dir(dir) => (dir, true),
    };
    let mut config = CacheConfig::new();
    config.with_directory(dir);
    match Cache::new(config) {
        Ok(cache) => {
            tracing::info!(dir = %dir.display(), "compilation cache");
            Ok(Some(cache))
        }
        Err(err) if named => Err(anyhow::anyhow!(
            "APIM_COMPILE_CACHE_DIR {}: {err:#}",
            dir.display()
        )),
        Err(err) => {
            tracing::warn!(
                dir = %dir.display(),
                "no compilation cache, components compile at every start: {err:#}"
            );
            Ok(None)
        }
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
