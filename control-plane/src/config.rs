//! Configuration: one clap struct, every field settable by flag or environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// API management control plane: client registration, token service, publisher and store.
#[derive(Debug, Clone, Parser)]
#[command(version, about)]
pub struct Config {
    /// Address of the management listener (registration, token service, publisher, store).
    /// Port 0 picks a free port; the bound address is printed as "Serving HTTP on ...".
    #[arg(long, env = "APIM_MGMT_ADDR", default_value = "127.0.0.1:9763")]
    pub mgmt_addr: SocketAddr,

    /// Directory for the embedded SQLite file and the token signing keys.
    #[arg(long, env = "APIM_DATA_DIR", default_value = "apim-data")]
    pub data_dir: PathBuf,

    /// Database URL. Empty: the SQLite file `apim.db` in the data directory.
    /// A `postgres://` URL selects PostgreSQL.
    #[arg(long, env = "APIM_DATABASE_URL", default_value = "")]
    pub database_url: String,

    /// User name of the administrator account created or updated at start-up.
    #[arg(long, env = "APIM_ADMIN_USER", default_value = "admin")]
    pub admin_user: String,

    /// Password of the administrator account. Required on first start unless --dev is given.
    #[arg(long, env = "APIM_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,

    /// Development mode: without APIM_ADMIN_PASSWORD the administrator is admin/admin.
    /// Never use it in production.
    #[arg(long, env = "APIM_DEV_MODE")]
    pub dev: bool,

    /// Prefix of the management scopes (`<prefix>:api_view`, ...). `apim` matches WSO2 clients.
    #[arg(long, env = "APIM_SCOPE_PREFIX", default_value = "mgr")]
    pub scope_prefix: String,

    /// Issuer (`iss`) written into access tokens. Empty: derived from the management address.
    #[arg(long, env = "APIM_TOKEN_ISSUER", default_value = "")]
    pub token_issuer: String,

    /// Default validity of access tokens, seconds.
    #[arg(long, env = "APIM_TOKEN_VALIDITY", default_value_t = 3600)]
    pub token_validity_secs: i64,

    /// Validity of refresh tokens, seconds.
    #[arg(long, env = "APIM_REFRESH_TOKEN_VALIDITY", default_value_t = 84600)]
    pub refresh_token_validity_secs: i64,

    /// Largest request body accepted, bytes; larger ones get 413.
    #[arg(long, env = "APIM_MAX_BODY_BYTES", default_value_t = 5 * 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Where published APIs' endpoints may point, beyond the gateways' default egress
    /// policy (no loopback, link-local, unspecified, multicast or cloud-metadata
    /// addresses, nor the names of this machine): comma-separated CIDRs, addresses,
    /// `address:port`s and host names, as the gateways' `APIM_EGRESS_ALLOW`. Endpoints
    /// the policy would never allow, and this listener, are refused with a 400.
    #[arg(long, env = "APIM_EGRESS_ALLOW", default_value = "")]
    pub egress_allow: String,

    /// Gateways to push route manifests to: comma-separated base URLs, e.g.
    /// `http://127.0.0.1:8280`. Failed pushes are retried.
    #[arg(long, env = "APIM_GATEWAYS", value_delimiter = ',')]
    pub gateways: Vec<String>,

    /// Secret gateways present (as a bearer token) to pull the current manifest. Empty: one is
    /// generated on first start into `<data dir>/gateway-secret`.
    #[arg(
        long,
        env = "APIM_GATEWAY_SECRET",
        default_value = "",
        hide_env_values = true
    )]
    pub gateway_secret: String,

    /// Log as JSON lines instead of human-readable text. Filter with RUST_LOG.
    #[arg(long, env = "APIM_LOG_JSON")]
    pub log_json: bool,

    /// What to do; without a command the control plane serves.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Administrative commands that work on the data directory and database directly.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Serve the management listener (the default).
    Serve,
    /// Add a user, or replace the password and roles of an existing one.
    AddUser {
        /// User name; `name@domain` puts the user in tenant `domain`.
        #[arg(long)]
        username: String,
        /// Password; read from APIM_NEW_USER_PASSWORD when not given.
        #[arg(long, env = "APIM_NEW_USER_PASSWORD", hide_env_values = true)]
        password: String,
        /// Roles, comma separated: admin, creator, publisher, subscriber.
        #[arg(long, value_delimiter = ',', default_value = "subscriber")]
        roles: Vec<String>,
    },
    /// Make a new token signing key the active one; older keys stay in the JWKS.
    RotateSigningKey,
}

impl Config {
    /// Rejects values that cannot work, before anything starts.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.scope_prefix.is_empty() && !self.scope_prefix.contains([':', ' ']),
            "APIM_SCOPE_PREFIX must be a non-empty word without ':' or spaces"
        );
        anyhow::ensure!(
            self.token_validity_secs > 0 && self.refresh_token_validity_secs > 0,
            "token validities must be positive"
        );
        anyhow::ensure!(
            !self.admin_user.is_empty(),
            "APIM_ADMIN_USER must not be empty"
        );
        self.egress_policy()?;
        Ok(())
    }

    /// The egress policy endpoints are checked against.
    pub fn egress_policy(&self) -> anyhow::Result<apim_http::egress::EgressPolicy> {
        apim_http::egress::EgressPolicy::parse(&self.egress_allow)
            .map_err(|err| anyhow::anyhow!("APIM_EGRESS_ALLOW: {err}"))
    }

    /// The database URL in effect: the configured one, or the SQLite file in the data directory.
    pub fn effective_database_url(&self) -> String {
        if self.database_url.is_empty() {
            format!(
                "sqlite://{}?mode=rwc",
                self.data_dir.join("apim.db").display()
            )
        } else {
            self.database_url.clone()
        }
    }
}
