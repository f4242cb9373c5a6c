//! `edge-gateway` binary: parses the configuration, sets up logging, runs the host.

use std::io::IsTerminal as _;

use edge_gateway::config::Config;
use edge_gateway::server::Inherited;
use tracing_subscriber::EnvFilter;

/// Every request allocates in hyper, `http` and wasmtime's resource tables; mimalloc makes
/// those allocations cheaper than the system allocator does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let config = Config::parse_warning_of_secrets();
    // Sockets passed by a supervisor, taken while this is the only thread: it edits the
    // environment.
    let inherited = Inherited::from_env();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let served = inherited.and_then(|inherited| {
        runtime(config.worker_threads)
            .map_err(anyhow::Error::from)
            .and_then(|runtime| runtime.block_on(edge_gateway::run(config, inherited)))
    });
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("edge-gateway failed: {err:?}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// One thread per CPU the process may use (or `workers`); on one, a single-threaded
/// runtime, which spares every task and wake-up the cross-thread bookkeeping.
fn runtime(workers: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    let workers = workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let mut builder = if workers == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(workers);
        builder
    };
    builder.enable_all().build()
}
