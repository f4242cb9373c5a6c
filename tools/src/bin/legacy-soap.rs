//! `legacy-soap`: a stand-in for the customer's legacy SOAP service (RepoDeWS), for local
//! runs, demos and tests. Settings: `legacy-soap --help`; the service: `tools::legacy`.

use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    tools::legacy::service::run(tools::legacy::config::Config::parse()).await
}
