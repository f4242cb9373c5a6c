//! `control-plane`: parse configuration, set up logging, run.

use control_plane::config::Config;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse_warning_of_secrets();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if config.log_json {
        logs.json().init();
    } else {
        logs.init();
    }
    control_plane::server::run(config).await
}
