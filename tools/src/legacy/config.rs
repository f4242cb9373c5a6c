//! Settings of the `legacy-soap` binary.

use std::net::SocketAddr;
use std::path::PathBuf;

/// A stand-in for the customer's legacy SOAP service (RepoDeWS): SOAP 1.1 on POST /ws,
/// its WSDL on GET /ws/developers.wsdl.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "legacy-soap", version)]
pub struct Config {
    /// Address to listen on (port 0: any free port; the bound one is printed).
    #[arg(long, env = "LEGACY_SOAP_ADDR", default_value = "127.0.0.1:8291")]
    pub addr: SocketAddr,
    /// SQLite file; created and seeded with the customer's data.sql when absent.
    #[arg(
        long,
        env = "LEGACY_SOAP_DB",
        default_value = "./legacy-soap-data/developers.db"
    )]
    pub db: PathBuf,
    /// HTTP Basic user name clients must present.
    #[arg(long, env = "LEGACY_SOAP_USER", default_value = "hydrogen")]
    pub user: String,
    /// HTTP Basic password clients must present.
    #[arg(long, env = "LEGACY_SOAP_PASSWORD", default_value = "pandaAsthma")]
    pub password: String,
    /// When set, every request body received on POST /ws is written here as 000001.xml, …
    #[arg(long, env = "LEGACY_SOAP_RECORD_DIR")]
    pub record_dir: Option<PathBuf>,
    /// Also read chunked request bodies, as Tomcat does. By default the service is as
    /// strict as the SOAP stacks and appliances often found in front of legacy services:
    /// a body must come with Content-Length, and a chunked one gets 411 Length Required.
    #[arg(long, env = "LEGACY_SOAP_ACCEPT_CHUNKED")]
    pub accept_chunked: bool,
}
