//! `edge-gateway` binary: parses the configuration, sets up logging, runs the host.

use std::io::IsTerminal as _;

use clap::Parser as _;
use edge_gateway::config::Config;
use tracing_subscriber::EnvFilter;

/// Every request allocates in hyper, `http` and wasmtime's resource tables; mimalloc makes
/// those allocations cheaper than the system allocator does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let config = Config::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match edge_gateway::run(config).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("edge-gateway failed: {err:?}");
            std::process::ExitCode::FAILURE
        }
    }
}
