//! `legacy-soap`: a stand-in for the customer's legacy SOAP service (RepoDeWS), for local
//! runs, demos and tests. Settings: `legacy-soap --help`; the service: `e2e::legacy`.

use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    e2e::legacy::service::run(e2e::legacy::config::Config::parse()).await
}
