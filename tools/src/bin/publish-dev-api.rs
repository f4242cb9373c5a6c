//! `cargo run -p tools --bin publish-dev-api`: publishes a running developer-management
//! facade through a running platform with the public REST interface only (see
//! `tools::dev_api`), then prints a bearer token and example calls. Repeatable: what exists
//! already is reused, and the API's endpoints are updated to `--facade-url`.

use clap::Parser;
use tools::dev_api::{self, Target};

/// Where the platform and the facade are, and who publishes.
#[derive(Debug, Parser)]
#[command(
    about = "Publishes the developer-management facade as DevManagement /dev-management/v1.0.0"
)]
struct Args {
    /// {registration_url}: the control plane's management listener.
    #[arg(
        long,
        env = "APIM_MANAGEMENT_URL",
        default_value = "http://127.0.0.1:9763"
    )]
    management_url: String,
    /// {gateway_url}: the gateway (token endpoint and APIs).
    #[arg(
        long,
        env = "APIM_GATEWAY_URL",
        default_value = "http://127.0.0.1:8280"
    )]
    gateway_url: String,
    /// {dev_backend_url}: where the facade runs.
    #[arg(
        long,
        env = "APIM_DEV_BACKEND_URL",
        default_value = "http://127.0.0.1:8290"
    )]
    facade_url: String,
    /// An administrative user.
    #[arg(long, env = "APIM_ADMIN_USER", default_value = "admin")]
    user: String,
    /// Their password.
    #[arg(long, env = "APIM_ADMIN_PASSWORD", default_value = "admin")]
    password: String,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let target = Target {
        management_url: args.management_url.trim_end_matches('/').to_string(),
        gateway_url: args.gateway_url.trim_end_matches('/').to_string(),
        user: args.user,
        password: args.password,
        facade_url: args.facade_url.trim_end_matches('/').to_string(),
    };
    match dev_api::publish(&target).await {
        Ok(published) => {
            println!("{}", dev_api::summary(&published));
            std::process::ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("publishing DevManagement failed: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
