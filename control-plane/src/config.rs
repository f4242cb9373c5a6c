//! Configuration: one clap struct, every field settable by flag or environment variable.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Longest any configured lifetime may be (ten years): every `now + lifetime` stays far
/// from overflowing.
pub const LIFETIME_CEILING_SECS: i64 = 10 * 365 * 24 * 3600;

/// API management control plane: client registration, token service, publisher and store.
#[derive(Debug, Clone, Parser)]
#[command(version, about)]
pub struct Config {
    /// Address of the operations listener (`/healthz`, `/readyz`, `/metrics`); none by
    /// default. Keep it off the public network: it is not authenticated.
    #[arg(long, env = "APIM_OPS_ADDR")]
    pub ops_addr: Option<SocketAddr>,

    /// Address of the management listener (registration, token service, publisher, store).
    /// Port 0 picks a free port; the bound address is printed as "Serving HTTP on ...".
    #[arg(long, env = "APIM_MGMT_ADDR", default_value = "127.0.0.1:9763")]
    pub mgmt_addr: SocketAddr,

    /// A PEM file of a certificate chain (the certificate first, then its intermediates)
    /// the management listener presents; repeatable, the environment variable
    /// comma-separated, each paired in order with a `--tls-key`. With any, the listener
    /// speaks TLS 1.2 and 1.3 only, HTTP/2 or HTTP/1.1 by ALPN, answers plain HTTP with 400,
    /// and is announced as `Serving HTTPS on https://ADDR/`. The certificate is chosen by
    /// the name the client asks for (SNI); the first is the default. Files changed on disk
    /// (or SIGHUP) are read again for new connections. Without any, plain HTTP/1.1 and h2c.
    #[arg(
        long = "tls-cert",
        value_name = "PEM",
        env = "APIM_MGMT_TLS_CERT",
        value_delimiter = ','
    )]
    pub tls_certs: Vec<PathBuf>,

    /// The PEM private key of each `--tls-cert`, in the same order.
    #[arg(
        long = "tls-key",
        value_name = "PEM",
        env = "APIM_MGMT_TLS_KEY",
        value_delimiter = ','
    )]
    pub tls_keys: Vec<PathBuf>,

    /// Directory for the embedded SQLite file and the token signing keys.
    #[arg(long, env = "APIM_DATA_DIR", default_value = "apim-data")]
    pub data_dir: PathBuf,

    /// Database URL. Empty: the SQLite file `apim.db` in the data directory.
    /// A `postgres://` URL selects PostgreSQL. Its value is not shown here: it may carry
    /// the database's password.
    #[arg(
        long,
        env = "APIM_DATABASE_URL",
        default_value = "",
        hide_env_values = true
    )]
    pub database_url: String,

    /// Most connections the control plane holds open to PostgreSQL (SQLite always has
    /// one writer, so one connection).
    #[arg(long, env = "APIM_DATABASE_MAX_CONNECTIONS", default_value_t = crate::db::DEFAULT_POOL_SIZE)]
    pub database_max_connections: u32,

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

    /// Validity of refresh tokens, seconds; a refresh gives the new refresh token as long.
    #[arg(long, env = "APIM_REFRESH_TOKEN_VALIDITY", default_value_t = 84600)]
    pub refresh_token_validity_secs: i64,

    /// Longest validity of an access token, seconds: a `validityTime` (generate-keys) or
    /// `validity_period` (token endpoint) above it gets 400, and keys stored with a longer
    /// one get tokens of this validity.
    #[arg(long, env = "APIM_MAX_TOKEN_VALIDITY", default_value_t = 365 * 24 * 3600)]
    pub max_token_validity_secs: i64,

    /// Consecutive failed logins (password grant, HTTP Basic) that lock a user name;
    /// 0 turns lock-out off.
    #[arg(long, env = "APIM_LOGIN_MAX_FAILURES", default_value_t = 5)]
    pub login_max_failures: u32,

    /// How long a lock-out lasts, seconds (an administrator can lift it sooner).
    #[arg(long, env = "APIM_LOGIN_LOCK_SECS", default_value_t = 300)]
    pub login_lock_secs: i64,

    /// Failed logins one client address may make within the window below before its
    /// logins get 429; 0 turns the throttle off.
    #[arg(long, env = "APIM_LOGIN_ADDRESS_MAX_FAILURES", default_value_t = 20)]
    pub login_address_max_failures: u32,

    /// The window of the per-address throttle, seconds.
    #[arg(long, env = "APIM_LOGIN_ADDRESS_WINDOW_SECS", default_value_t = 300)]
    pub login_address_window_secs: u64,

    /// Addresses of proxies in front of this listener (comma separated): for requests from
    /// them the client address is the last `X-Forwarded-For` entry that is not a proxy's.
    #[arg(long, env = "APIM_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<IpAddr>,

    /// Password checks that may wait for a CPU (one runs per core); past it logins get 503.
    #[arg(long, env = "APIM_ARGON2_QUEUE", default_value_t = 32)]
    pub argon2_queue: usize,

    /// The work a password hash costs. No flag or variable sets it: only a control plane
    /// embedded in code (the in-process tests) can choose [`PasswordCost::Minimal`].
    #[arg(skip)]
    pub password_cost: PasswordCost,

    /// Longest time a client may take to send a request head, and to start the next one
    /// on a kept-alive connection, milliseconds.
    #[arg(long, env = "APIM_MGMT_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,

    /// Longest time a client may take to send a request body, milliseconds; then 408.
    #[arg(long, env = "APIM_MGMT_BODY_TIMEOUT_MS", default_value_t = 30_000)]
    pub body_timeout_ms: u64,

    /// A connection on which no byte moves either way for this long is closed, milliseconds.
    #[arg(long, env = "APIM_MGMT_IDLE_TIMEOUT_MS", default_value_t = 60_000)]
    pub idle_timeout_ms: u64,

    /// Most connections served at once; further ones wait in the listen backlog.
    #[arg(long, env = "APIM_MGMT_MAX_CONNECTIONS", default_value_t = 1024)]
    pub max_connections: usize,

    /// How long per-API analytics (the gateways' per-minute reports) are kept, days;
    /// older ones are deleted, and no query may span more.
    #[arg(long, env = "APIM_ANALYTICS_RETENTION_DAYS", default_value_t = 90)]
    pub analytics_retention_days: u64,

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

    /// A PEM file of certificates the control plane trusts, beside the Mozilla roots, for
    /// what it fetches over HTTPS itself: client metadata documents (OAuth clients named by
    /// an `https://` URL).
    #[arg(long, env = "APIM_OUTBOUND_CA_FILE", value_name = "PEM")]
    pub outbound_ca_file: Option<PathBuf>,

    /// WSO2's advanced throttling (its default): an operation's `x-throttling-tier`
    /// names a resource tier (`/tiers/resource`). `false` is WSO2's legacy throttling
    /// (`EnableAdvanceThrottling` off): it names a subscription tier (`/tiers/api`), which
    /// the gateways enforce for the resource over all its callers.
    #[arg(long, env = "APIM_ADVANCED_THROTTLING", default_value_t = true, action = clap::ArgAction::Set)]
    pub advanced_throttling: bool,

    /// Gateways to push route manifests to: comma-separated base URLs, e.g.
    /// `http://127.0.0.1:8280`. Failed pushes are retried.
    #[arg(long, env = "APIM_GATEWAYS", value_delimiter = ',')]
    pub gateways: Vec<String>,

    /// Where API consumers reach the gateways: comma-separated base URLs, at most one
    /// `http://` and one `https://` (e.g. `http://gw.example.com:8280,https://gw.example.com:8243`).
    /// Shown as the endpoints of the gateway environments (publisher `GET /environments`)
    /// and filled into the store's Swagger (`host`, `schemes`). Empty: the first of
    /// APIM_GATEWAYS, else `http://127.0.0.1:8280`.
    #[arg(long, env = "APIM_GATEWAY_URLS", value_delimiter = ',')]
    pub gateway_urls: Vec<String>,

    /// Secret gateways present (as a bearer token) to pull the current manifest. Empty: one is
    /// generated on first start into `<data dir>/gateway-secret`.
    #[arg(
        long,
        env = "APIM_GATEWAY_SECRET",
        default_value = "",
        hide_env_values = true
    )]
    pub gateway_secret: String,

    /// Files holding data keys (32 random bytes in base64, e.g. from
    /// `head -c 32 /dev/urandom | base64`), comma separated: the first encrypts client
    /// secrets, consumer secrets and backend passwords at rest, the others only decrypt
    /// (keys being rotated out). Empty: a key generated into `<data dir>/data-keys`.
    #[arg(long, env = "APIM_DATA_KEY_FILE", value_delimiter = ',')]
    pub data_key_file: Vec<PathBuf>,

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
    /// Add a user, or replace the password and roles of an existing one. The password is
    /// read from --password-file, else from the environment variable
    /// APIM_NEW_USER_PASSWORD, else from standard input (a prompt without echo on a
    /// terminal), so that it never shows in `ps`.
    AddUser {
        /// User name; `name@domain` puts the user in tenant `domain`.
        #[arg(long)]
        username: String,
        /// A file whose first line is the password; `-` reads standard input.
        #[arg(long, value_name = "PATH")]
        password_file: Option<PathBuf>,
        /// Deprecated: a password on the command line shows in `ps` to every user of the
        /// machine. Still taken, with a warning.
        #[arg(long, hide = true)]
        password: Option<String>,
        /// Roles, comma separated: admin, creator, publisher, subscriber.
        #[arg(long, value_delimiter = ',', default_value = "subscriber")]
        roles: Vec<String>,
    },
    /// Lift a user name's lock-out after failed logins and forget its failures, as
    /// `POST /users/{username}/unlock` does, for when no other administrator can (an
    /// administrator locked out by someone guessing its password). Works beside a running
    /// control plane: the lock-out is in the database.
    UnlockUser {
        /// User name (`name@domain` for a tenant's user).
        #[arg(long)]
        username: String,
    },
    /// Make a new token signing key the active one; older keys stay in the JWKS.
    RotateSigningKey,
    /// Re-encrypt every secret at rest under a new data key (in `<data dir>/data-keys`), or
    /// under the first of APIM_DATA_KEY_FILE when the operator gives the keys.
    RotateDataKey,
}

/// The work of an argon2id password hash; a stored hash keeps its own parameters, so
/// checking a password costs what hashing it did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PasswordCost {
    /// argon2's defaults (19 MiB, two passes): OWASP's recommendation.
    #[default]
    Standard,
    /// The least argon2 allows (8 KiB, one pass): for tests that hash and check hundreds
    /// of passwords, never for a deployment.
    Minimal,
}

impl Config {
    /// Parses the command line and the environment, warning of each secret given as a
    /// flag rather than in the environment: `ps` shows it to every user of the machine.
    pub fn parse_warning_of_secrets() -> Self {
        apim_config_secrets::parse_warning_of_secrets()
    }

    /// Rejects values that cannot work, before anything starts.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.scope_prefix.is_empty() && !self.scope_prefix.contains([':', ' ']),
            "APIM_SCOPE_PREFIX must be a non-empty word without ':' or spaces"
        );
        for (name, secs) in [
            ("APIM_TOKEN_VALIDITY", self.token_validity_secs),
            (
                "APIM_REFRESH_TOKEN_VALIDITY",
                self.refresh_token_validity_secs,
            ),
            ("APIM_MAX_TOKEN_VALIDITY", self.max_token_validity_secs),
            ("APIM_LOGIN_LOCK_SECS", self.login_lock_secs),
        ] {
            anyhow::ensure!(
                (1..=LIFETIME_CEILING_SECS).contains(&secs),
                "{name} must be from 1 to {LIFETIME_CEILING_SECS} seconds"
            );
        }
        for url in &self.gateway_urls {
            anyhow::ensure!(
                (url.starts_with("http://") || url.starts_with("https://"))
                    && url.len() > "https://".len(),
                "APIM_GATEWAY_URLS must be http:// or https:// base URLs, not '{url}'"
            );
        }
        anyhow::ensure!(
            self.token_validity_secs <= self.max_token_validity_secs,
            "APIM_TOKEN_VALIDITY must not exceed APIM_MAX_TOKEN_VALIDITY"
        );
        for (name, value) in [
            (
                "APIM_LOGIN_ADDRESS_WINDOW_SECS",
                self.login_address_window_secs,
            ),
            ("APIM_MGMT_HEADER_TIMEOUT_MS", self.header_timeout_ms),
            ("APIM_MGMT_BODY_TIMEOUT_MS", self.body_timeout_ms),
            ("APIM_MGMT_IDLE_TIMEOUT_MS", self.idle_timeout_ms),
            ("APIM_MGMT_MAX_CONNECTIONS", self.max_connections as u64),
            (
                "APIM_DATABASE_MAX_CONNECTIONS",
                u64::from(self.database_max_connections),
            ),
            (
                "APIM_ANALYTICS_RETENTION_DAYS",
                self.analytics_retention_days,
            ),
        ] {
            anyhow::ensure!(value >= 1, "{name} must be at least 1");
        }
        anyhow::ensure!(
            self.analytics_retention_days <= 3660,
            "APIM_ANALYTICS_RETENTION_DAYS must be at most 3660 (ten years)"
        );
        anyhow::ensure!(
            !self.admin_user.is_empty(),
            "APIM_ADMIN_USER must not be empty"
        );
        self.egress_policy()?;
        self.tls_pairs()?;
        self.outbound_roots()?;
        Ok(())
    }

    /// The management listener's certificate and key files (none: plain HTTP).
    pub fn tls_pairs(&self) -> anyhow::Result<Vec<apim_tls::Pair>> {
        apim_tls::pairs(
            &self.tls_certs,
            &self.tls_keys,
            "APIM_MGMT_TLS_CERT and APIM_MGMT_TLS_KEY",
        )
    }

    /// The egress policy endpoints are checked against.
    pub fn egress_policy(&self) -> anyhow::Result<apim_http::egress::EgressPolicy> {
        apim_http::egress::EgressPolicy::parse(&self.egress_allow)
            .map_err(|err| anyhow::anyhow!("APIM_EGRESS_ALLOW: {err}"))
    }

    /// The certificates of `APIM_OUTBOUND_CA_FILE`, none without it.
    pub fn outbound_roots(&self) -> anyhow::Result<Vec<reqwest::Certificate>> {
        let Some(path) = &self.outbound_ca_file else {
            return Ok(Vec::new());
        };
        let pem = std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("APIM_OUTBOUND_CA_FILE {}: {e}", path.display()))?;
        let roots = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| anyhow::anyhow!("APIM_OUTBOUND_CA_FILE {}: {e}", path.display()))?;
        anyhow::ensure!(
            !roots.is_empty(),
            "APIM_OUTBOUND_CA_FILE {} holds no certificate",
            path.display()
        );
        Ok(roots)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Secrets given as flags are named, for a warning; other flags are not.
    #[test]
    fn secrets_given_as_flags_are_named() {
        let command = <Config as clap::CommandFactory>::command();
        let matches = command
            .clone()
            .try_get_matches_from([
                "control-plane",
                "--admin-password",
                "pw",
                "--admin-user",
                "root",
            ])
            .unwrap();
        let mut named: Vec<_> = apim_config_secrets::secrets_given_as_flags(&command, &matches)
            .into_iter()
            .map(|s| (s.flag, s.variable))
            .collect();
        named.sort();
        let mut expected = vec![(
            "admin-password".to_string(),
            "APIM_ADMIN_PASSWORD".to_string(),
        )];
        expected.sort();
        assert_eq!(named, expected);
        let none = command
            .clone()
            .try_get_matches_from(["control-plane"])
            .unwrap();
        assert!(apim_config_secrets::secrets_given_as_flags(&command, &none).is_empty());
    }

    /// The cheap password cost is code's choice alone: no flag or variable reaches it.
    #[test]
    fn no_flag_or_variable_makes_password_hashes_cheap() {
        assert!(Config::try_parse_from(["control-plane", "--password-cost", "minimal"]).is_err());
        let config = Config::try_parse_from(["control-plane"]).unwrap();
        assert_eq!(config.password_cost, PasswordCost::Standard);
        let env_names: Vec<String> = <Config as clap::CommandFactory>::command()
            .get_arguments()
            .filter_map(|arg| arg.get_env().map(|e| e.to_string_lossy().into_owned()))
            .collect();
        assert!(
            env_names.iter().all(|name| !name.contains("COST")),
            "{env_names:?}"
        );
    }

    fn validate(args: &[&str]) -> anyhow::Result<()> {
        let mut all = vec!["control-plane"];
        all.extend(args);
        Config::try_parse_from(all)?.validate()
    }

    #[test]
    fn lifetimes_and_limits_are_bounded() {
        validate(&[]).unwrap();
        for args in [
            &["--max-token-validity-secs", "315360000000"][..],
            &["--refresh-token-validity-secs", "9223372036854775807"],
            &["--token-validity-secs", "0"],
            &[
                "--token-validity-secs",
                "7201",
                "--max-token-validity-secs",
                "7200",
            ],
            &["--login-lock-secs", "0"],
            &["--header-timeout-ms", "0"],
            &["--max-connections", "0"],
        ] {
            assert!(validate(args).is_err(), "{args:?} accepted");
        }
        validate(&[
            "--max-token-validity-secs",
            "315360000",
            "--login-max-failures",
            "0",
        ])
        .unwrap();
    }
}
