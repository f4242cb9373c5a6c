//! `edge-gateway`: a native wasmtime host for the gateway WebAssembly component.
//!
//! The component is a WASI 0.2 `wasi:http` proxy that also imports
//! `wasi:keyvalue` (draft2) and `wasi:config`, exactly what Spin provides; this
//! crate provides the same imports so the same `.wasm` runs here. See
//! [`config::Config`] for the settings and [`run`] for the start-up sequence.
#![deny(missing_docs)]

pub mod bindings;
pub mod config;
pub mod config_store;
pub mod gateway;
pub mod instances;
pub mod keyvalue;
pub mod outbound;
pub mod server;
pub mod sync;

use std::sync::Arc;

use crate::config::Config;
use crate::gateway::Gateway;
use crate::instances::{EpochTicker, Limits, Runtime, Shared};
use crate::keyvalue::KvStore;
use crate::outbound::OutboundClient;

/// Validates `config`, compiles the component, listens, and serves until
/// SIGTERM or Ctrl-C (a signal received during start-up is honoured as soon
/// as the listener is up).
pub async fn run(config: Config) -> anyhow::Result<()> {
    config.validate()?;
    let signal = server::ShutdownSignal::install()?;
    let engine = instances::engine(&limits(&config))?;
    let _ticker = EpochTicker::start(engine.clone())?;
    let gateway = Arc::new(start_gateway(&config, engine).await?);

    let listener = server::bind(config.addr).await?;
    let local = listener.local_addr()?;
    let sync = config
        .sync_interval()
        .map(|interval| sync::spawn(gateway.clone(), local, interval));
    let shutdown = async move {
        signal.recv().await;
        if let Some(sync) = sync {
            sync.abort();
        }
    };
    let served = server::serve(listener, gateway.clone(), shutdown, config.shutdown_grace()).await;
    gateway.begin_shutdown();
    served
}

/// Instance limits from the configuration.
fn limits(config: &Config) -> Limits {
    Limits {
        reuse: config.instance_reuse,
        max_instances: config.max_instances,
        memory_bytes: config.instance_memory_bytes(),
        request_timeout: config.request_timeout(),
    }
}

/// Compiles the component and connects the key-value backend.
async fn start_gateway(config: &Config, engine: wasmtime::Engine) -> anyhow::Result<Gateway> {
    let pre = instances::prepare(&engine, &config.component)?;
    let kv = KvStore::connect(&config.kv_url, &config.kv_namespace).await?;
    let vars = config.variables()?;
    let limits = limits(config);
    tracing::info!(
        kv = kv.describe(),
        variables = vars.len(),
        reuse = limits.reuse,
        max_instances = limits.max_instances,
        memory_mb = config.instance_memory_mb,
        "gateway host configured"
    );
    let shared = Shared {
        kv,
        vars: Arc::new(vars),
        outbound: OutboundClient::new(config.backend_timeout()),
    };
    Ok(Gateway::new(Runtime::new(engine, pre, shared, limits)))
}
