//! `cargo run -p tools --bin spin-client-tls -- --token <admin token> --out <dir>`: writes
//! Spin's runtime configuration (`<dir>/runtime-config.toml`, `[[client_tls]]` sections)
//! and the PEM files it names (`<dir>/client-tls/`) from the control plane's endpoint
//! certificates, read through its REST API (see `tools::spin_tls` and docs/spin.md).

use clap::Parser;
use tools::spin_tls;

/// Where the control plane is, whose certificates to read, and where to write.
#[derive(Debug, Parser)]
#[command(
    about = "Writes Spin's [[client_tls]] runtime configuration from the control plane's endpoint certificates"
)]
struct Args {
    /// The control plane's management listener.
    #[arg(
        long,
        env = "APIM_MANAGEMENT_URL",
        default_value = "http://127.0.0.1:9763"
    )]
    management_url: String,
    /// An access token of a tenant's administrator (scope apim:api_create); once per
    /// tenant whose certificates Spin must trust.
    #[arg(
        long = "token",
        env = "APIM_ADMIN_TOKEN",
        required = true,
        value_delimiter = ','
    )]
    tokens: Vec<String>,
    /// The gateway's component id in spin.toml.
    #[arg(long, default_value = "gateway")]
    component: String,
    /// The folder to write into (`spin up --runtime-config-file <out>/runtime-config.toml`).
    #[arg(long, default_value = ".")]
    out: std::path::PathBuf,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(path) => {
            println!("{}", path.display());
            std::process::ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("spin-client-tls failed: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> anyhow::Result<std::path::PathBuf> {
    let http = reqwest::Client::new();
    let mut certificates = Vec::new();
    for token in &args.tokens {
        certificates.extend(spin_tls::fetch(&http, &args.management_url, token).await?);
    }
    let client_tls = spin_tls::client_tls(&certificates, &args.component);
    spin_tls::write(&args.out, &client_tls)
}
