//! `control-plane`: parse configuration, set up logging, run.

use control_plane::config::Config;
use tracing_subscriber::EnvFilter;

/// Each argon2 check takes a 19 MiB buffer. Once glibc's malloc has freed one, its mmap
/// threshold rises past that size and later buffers come from the heap, where small
/// allocations pin them: a burst of checks (32 password grants missing the remembered
/// logins at once) stayed resident, 300 MiB and more. mimalloc returns them to the system.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse_warning_of_secrets();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only on a terminal: piped to a file or a collector they are noise.
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if config.log_json {
        logs.json().init();
    } else {
        logs.init();
    }
    control_plane::server::run(config).await
}
