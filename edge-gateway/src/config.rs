//! Command-line and environment configuration of the gateway host.
//!
//! Every setting is a flag with an `APIM_*` environment variable behind it, so
//! the same binary is configured the same way on a laptop, in CI and in a
//! container. [`Config::validate`] rejects nonsensical values before anything
//! is started.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use apim_http::contract::{self, settings};
use clap::Parser;

use crate::scheme::TrustedProxies;
use crate::wit_host::config_store::{Variables, parse_variable};

/// Parses `on` / `off` (also `true` / `false`).
fn parse_switch(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("expected on or off, got {text:?}")),
    }
}

/// Parses `ADDR=PATH` of `--extra-component`.
fn parse_listener(text: &str) -> Result<(SocketAddr, PathBuf), String> {
    let (addr, path) = text
        .split_once('=')
        .ok_or_else(|| format!("expected ADDR=PATH, got {text:?}"))?;
    let addr = addr
        .trim()
        .parse()
        .map_err(|e| format!("invalid address {addr:?}: {e}"))?;
    let path = path.trim();
    if path.is_empty() {
        return Err(format!("no component path in {text:?}"));
    }
    Ok((addr, PathBuf::from(path)))
}

/// A component to host: where it listens, its file, and the variables it may read.
#[derive(Debug, Clone)]
pub struct Hosted {
    /// Listener address.
    pub addr: SocketAddr,
    /// The component's `.wasm`.
    pub component: PathBuf,
    /// Its `wasi:config/store` variables.
    pub vars: Arc<Variables>,
}

/// Variables from NAME=VALUE pairs; a name given twice is an error.
fn variables_of(pairs: &[(String, String)]) -> anyhow::Result<Variables> {
    let mut vars = Variables::default();
    for (name, value) in pairs {
        if vars.insert(name.clone(), value.clone()).is_some() {
            bail!("variable {name:?} is given more than once");
        }
    }
    Ok(vars)
}

/// Largest accepted `--max-instances`.
const MAX_INSTANCES_LIMIT: u32 = 10_000;
/// Largest accepted `--instance-memory-mb` (the 32-bit linear memory maximum).
const MAX_INSTANCE_MEMORY_MB: u64 = 4096;

/// Configuration of the native gateway host.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "edge-gateway",
    version,
    about = "Runs the API gateway WebAssembly component (WASI 0.2 HTTP proxy world) natively, and any other components beside it."
)]
pub struct Config {
    /// Address to listen on for HTTP/1.1 and HTTP/2 (over TLS with `--tls-cert`). Port 0
    /// picks a free port; the bound address is printed as `Serving HTTP on http://ADDR/`
    /// (`Serving HTTPS on https://ADDR/` with TLS).
    #[arg(long, env = "APIM_GATEWAY_ADDR", default_value = "127.0.0.1:8280")]
    pub addr: SocketAddr,

    /// A PEM file of a certificate chain (the certificate first, then its intermediates)
    /// that the listeners present; repeatable, the environment variable comma-separated,
    /// each paired in order with a `--tls-key`. With any, every listener (the gateway's and
    /// each `--extra-component`'s) speaks TLS 1.2 and 1.3 only, HTTP/2 or HTTP/1.1 by ALPN,
    /// and answers plain HTTP with 400; it is announced as `Serving HTTPS on https://ADDR/`.
    /// The certificate is chosen by the name the client asks for (SNI) among each
    /// certificate's DNS names; the first is the default. Files changed on disk (or
    /// SIGHUP) are read again for new connections. Without any, plain HTTP/1.1 and h2c.
    #[arg(
        long = "tls-cert",
        value_name = "PEM",
        env = "APIM_TLS_CERT",
        value_delimiter = ','
    )]
    pub tls_certs: Vec<PathBuf>,

    /// The PEM private key of each `--tls-cert`, in the same order.
    #[arg(
        long = "tls-key",
        value_name = "PEM",
        env = "APIM_TLS_KEY",
        value_delimiter = ','
    )]
    pub tls_keys: Vec<PathBuf>,

    /// A second listener of the gateway, serving TLS with the `--tls-cert` certificates,
    /// while `--addr` stays plain HTTP/1.1 and h2c (as WSO2's gateway serves 8243 beside
    /// 8280): an API whose transports leave out `http` is then served here alone, one
    /// without `https` on `--addr` alone. Announced as `Serving HTTPS on https://ADDR/`
    /// after `--addr`'s `Serving HTTP` line. The `--extra-component` listeners speak TLS
    /// with certificates, as without it.
    #[arg(long, env = "APIM_GATEWAY_TLS_ADDR", value_name = "ADDR")]
    pub tls_addr: Option<SocketAddr>,

    /// Addresses and CIDR networks (comma-separated) of TLS-terminating proxies in front
    /// of a plain listener, whose `X-Forwarded-Proto: https` says a request came over TLS
    /// (its last value, the one the proxy appended). From any other address the header is
    /// ignored and removed before the request goes on; from these it passes on.
    #[arg(
        long,
        env = "APIM_TRUSTED_PROXIES",
        default_value = "",
        value_name = "CIDR,..."
    )]
    pub trusted_proxies: String,

    /// Address of the operations listener (`/healthz`, `/readyz`, `/metrics`); none by
    /// default. Keep it off the public network: it is not authenticated. Announced as
    /// `Serving operations on http://ADDR/`, before the components are compiled.
    #[arg(long, env = "APIM_OPS_ADDR")]
    pub ops_addr: Option<SocketAddr>,

    /// Path of the gateway component (.wasm). It is compiled once at start-up,
    /// so deploying a new component needs no rebuild of the host.
    #[arg(
        long,
        env = "APIM_GATEWAY_COMPONENT",
        default_value = "target/wasm32-wasip2/release/gateway.wasm"
    )]
    pub component: PathBuf,

    /// Another component to host on a listener of its own, as ADDR=PATH (for example
    /// `127.0.0.1:8290=target/wasm32-wasip2/release/dev_facade.wasm`); repeatable. The
    /// environment variable takes a comma-separated list. Extra components share the
    /// key-value store, the outbound client and the limits (each has its own instances),
    /// and read only the `--extra-var` variables, none of the gateway's; only the main
    /// component gets the sync requests.
    #[arg(
        long = "extra-component",
        value_name = "ADDR=PATH",
        env = "APIM_EXTRA_COMPONENTS",
        value_delimiter = ',',
        value_parser = parse_listener
    )]
    pub extra_components: Vec<(SocketAddr, PathBuf)>,

    /// Key-value backend for `wasi:keyvalue`: empty for a process-local
    /// in-memory store, or a `redis://host:port/db` URL so that several
    /// gateway nodes share throttling counters and cached answers (the manifest stays
    /// on each node; while Redis is down, those keys do too), or `sqlite:PATH` for every
    /// key in one SQLite table as Spin's default store keeps it (`sqlite::memory:` in
    /// memory), to host the component as Spin does. Its value is not shown
    /// here: it may carry Redis's password.
    #[arg(long, env = "APIM_KV_URL", default_value = "", hide_env_values = true)]
    pub kv_url: String,

    /// Key prefix used in Redis: bucket B's key K is stored as `NAMESPACE:B:K`.
    #[arg(long, env = "APIM_KV_NAMESPACE", default_value = "apim")]
    pub kv_namespace: String,

    /// A `wasi:config/store` variable as NAME=VALUE; repeatable. The
    /// environment variable takes a comma-separated list (values therefore
    /// cannot contain commas). Its value is not shown here: variables carry secrets.
    #[arg(
        long = "var",
        value_name = "NAME=VALUE",
        env = "APIM_VARS",
        value_delimiter = ',',
        value_parser = parse_variable,
        hide_env_values = true
    )]
    pub vars: Vec<(String, String)>,

    /// A `wasi:config/store` variable of the extra components (`--extra-component`), as
    /// NAME=VALUE; repeatable, the environment variable comma-separated. They get these
    /// and nothing else: neither `--var` nor the dedicated settings below (the gateway
    /// secret, the control plane's address), which only the gateway sees; nor does the
    /// gateway see these (the facade's SOAP credentials).
    #[arg(
        long = "extra-var",
        value_name = "NAME=VALUE",
        env = "APIM_EXTRA_VARS",
        value_delimiter = ',',
        value_parser = parse_variable,
        hide_env_values = true
    )]
    pub extra_vars: Vec<(String, String)>,
    /// The control plane's gateway secret (its `APIM_GATEWAY_SECRET`, or
    /// `<data dir>/gateway-secret`), exposed to the component as the variable
    /// `gateway_secret` (takes precedence over `--var`): it proves the gateway's own
    /// endpoints and opens the backend credentials in manifests. Give it in the
    /// environment, not on the command line, where `ps` shows it.
    #[arg(long, env = "APIM_GATEWAY_SECRET", hide_env_values = true)]
    pub gateway_secret: Option<String>,

    /// Base URL of the control plane, exposed to the component as the
    /// variable `control_plane_url` (takes precedence over `--var`).
    #[arg(long, env = "APIM_CONTROL_PLANE_URL")]
    pub control_plane_url: Option<String>,

    /// Public key that signs route manifests, exposed to the component as the
    /// variable `manifest_public_key` (takes precedence over `--var`).
    #[arg(long, env = "APIM_MANIFEST_PUBLIC_KEY")]
    pub manifest_public_key: Option<String>,

    /// Where backends may be, beyond the default policy (which refuses loopback,
    /// link-local, unspecified, multicast and cloud-metadata addresses, and the names of
    /// this machine): comma-separated CIDRs, addresses, `address:port`s and host names.
    /// Checked on every address a backend's name resolves to; the control plane's and this
    /// host's own listeners are refused whatever it says. Exposed to the components as
    /// the variable `egress_allow` (takes precedence over `--var`).
    #[arg(long, env = "APIM_EGRESS_ALLOW", default_value = "")]
    pub egress_allow: String,

    /// `on`: this gateway sends WSO2's backend JWT (`X-JWT-Assertion`) to the backends
    /// of the tenants whose administrators switched it on; `off` (the default, WSO2's):
    /// none. Exposed to the component as the variable `backend_jwt` (takes precedence
    /// over `--var`).
    #[arg(long, env = "APIM_BACKEND_JWT", default_value = "off", value_parser = ["on", "off"])]
    pub backend_jwt: String,

    /// The largest request body the gateway takes, in bytes, whether its length is
    /// announced (`Content-Length`: refused from the head) or not (chunked: cut off once
    /// it grows past it); either way 413 with WSO2's fault. Unset: no cap where the host
    /// streams bodies to backends (WSO2's default), 10 MiB where the component holds them
    /// whole (`APIM_HOST_FORWARDING=false`), which is also the most it takes there.
    /// Exposed to the component as the variable `max_request_body_bytes` (takes
    /// precedence over `--var`).
    #[arg(long, env = "APIM_MAX_REQUEST_BODY_BYTES")]
    pub max_request_body_bytes: Option<u64>,

    /// A PEM file of certificate authorities that backends' certificates may chain to,
    /// besides the Mozilla roots and this machine's (e.g. a private CA). A certificate
    /// that verifies against none is a 502, never a plain-text retry.
    #[arg(long, env = "APIM_BACKEND_CA_FILE")]
    pub backend_ca_file: Option<std::path::PathBuf>,

    /// Number of requests one component instance serves, one after the other,
    /// before it is discarded and a fresh one is instantiated.
    #[arg(long, env = "APIM_INSTANCE_REUSE", default_value_t = 4096)]
    pub instance_reuse: usize,

    /// Maximum number of component instances running at once; this is also
    /// the number of requests handled concurrently. Further requests wait for
    /// a free instance (up to the request timeout) and then get a 503.
    #[arg(long, env = "APIM_MAX_INSTANCES", default_value_t = 128)]
    pub max_instances: u32,

    /// Requests one instance of a WASIp3 component (`wasi:http/handler@0.3`) serves before
    /// it retires; 128, as Spin 4.1 does. (A WASI 0.2 component's instances follow
    /// `APIM_INSTANCE_REUSE`.)
    #[arg(long, env = "APIM_P3_REUSE", default_value_t = 128)]
    pub p3_reuse: usize,

    /// Requests one instance of a WASIp3 component takes at once; 16, as Spin 4.1 does.
    /// The component's logic runs them one at a time (an outbound call blocks its
    /// instance), so more instances serve more requests in parallel.
    #[arg(long, env = "APIM_P3_CONCURRENCY", default_value_t = 16)]
    pub p3_concurrency: usize,

    /// Linear memory limit of each instance, in MiB.
    #[arg(long, env = "APIM_INSTANCE_MEMORY_MB", default_value_t = 64)]
    pub instance_memory_mb: u64,

    /// Execution deadline of one request in the component, in milliseconds. A
    /// guest that exceeds it is interrupted and the client gets a 504.
    #[arg(long, env = "APIM_REQUEST_TIMEOUT_MS", default_value_t = 30_000)]
    pub request_timeout_ms: u64,

    /// Connect, first-byte and between-bytes timeout of backend calls, in
    /// milliseconds, on both forwarding paths (the gateway's `backend_timeout_ms`
    /// unless `--var` sets that), and of this host's outbound requests that set none.
    #[arg(long, env = "APIM_BACKEND_TIMEOUT_MS", default_value_t = 30_000)]
    pub backend_timeout_ms: u64,

    /// Interval in seconds between the internal `POST /_apim/sync` requests
    /// that make the component refresh its route manifest (one is also sent
    /// at start-up). 0 disables them.
    #[arg(long, env = "APIM_SYNC_INTERVAL_SECS", default_value_t = 30)]
    pub sync_interval_secs: u64,

    /// Threads serving requests; default: one per CPU the process may run on. With one,
    /// the host runs on a single-threaded runtime, which schedules with no cross-thread
    /// work at all.
    #[arg(long, env = "APIM_WORKER_THREADS")]
    pub worker_threads: Option<usize>,

    /// When the component exports `apim:gateway/policy` (the gateway does), ask it what to
    /// do with each request and forward API calls here, streaming bodies, rather than
    /// have the component forward them through `wasi:http` (as it does on Spin). The
    /// decisions are the same; the host's forwarding costs a fraction.
    #[arg(long, env = "APIM_HOST_FORWARDING", default_value_t = true, action = clap::ArgAction::Set)]
    pub host_forwarding: bool,

    /// One JSON line per request on standard output (`on` or `off`): time, client, API,
    /// version, resource, application, key type, user, status, fault code, latencies
    /// and bytes (see `telemetry::access_log`).
    #[arg(
        long,
        env = "APIM_ACCESS_LOG",
        default_value = "on",
        value_parser = parse_switch,
        action = clap::ArgAction::Set
    )]
    pub access_log: bool,

    /// How often, in milliseconds, per-API analytics (requests, errors and latencies per
    /// minute, API and application) are reported to the control plane; 0 turns them off.
    /// Needs the control plane's URL and the gateway secret (see `telemetry::analytics`).
    #[arg(long, env = "APIM_ANALYTICS_REPORT_MS", default_value_t = 10_000)]
    pub analytics_report_ms: u64,

    /// Lists compiled guest code in `/tmp/perf-<pid>.map`, so that `perf report` names
    /// the component's functions (for profiling; off in production).
    #[arg(long, env = "APIM_PERF_MAP", default_value_t = false)]
    pub perf_map: bool,

    /// Longest time in milliseconds a client may take to send a request head, counted
    /// also while a kept-alive connection waits for its next one: slow clients, and idle
    /// connections, are cut then.
    #[arg(long, env = "APIM_HEADER_TIMEOUT_MS", default_value_t = 30_000)]
    pub header_timeout_ms: u64,

    /// On SIGTERM or Ctrl-C, how long in seconds in-flight requests may take to
    /// finish before the host exits anyway.
    #[arg(long, env = "APIM_SHUTDOWN_GRACE_SECS", default_value_t = 30)]
    pub shutdown_grace_secs: u64,

    /// On SIGTERM or Ctrl-C, how long in milliseconds kept-alive connections may still
    /// bring a request, answered with `Connection: close`, before the idle ones are closed
    /// (within the shutdown grace). Closing an idle connection at once races a client
    /// sending on it at that moment; a client that sends within this time is told to
    /// reconnect instead, and reaches the next gateway.
    #[arg(long, env = "APIM_DRAIN_KEEPALIVE_MS", default_value_t = 1_000)]
    pub drain_keepalive_ms: u64,

    /// At start, how long in milliseconds the gateway waits for its first manifest before
    /// it announces its listeners (and tells a service manager it is ready) anyway, still
    /// trying in the background; connections wait in the backlog meanwhile. 0 serves at
    /// once, answering 404 until the manifest is in.
    #[arg(long, env = "APIM_FIRST_SYNC_TIMEOUT_MS", default_value_t = 5_000)]
    pub first_sync_timeout_ms: u64,

    /// Where compiled components are kept between starts (wasmtime's compilation cache),
    /// so that a restarted gateway loads its component in milliseconds instead of
    /// compiling it for about a second. Default: `$XDG_CACHE_HOME/apim-edge-gateway`, or
    /// `$HOME/.cache/apim-edge-gateway` (none, and no cache, without either); `off` turns
    /// the cache off. It holds native code the gateway runs: only the gateway's user
    /// should be able to write to it.
    #[arg(long, env = "APIM_COMPILE_CACHE_DIR", value_name = "DIR|off")]
    pub compile_cache_dir: Option<String>,

    /// Largest message (and frame), in bytes, a WebSocket API's client or backend may
    /// send through the gateway; a longer one closes the connection with 1009. Each
    /// side's message is held whole up to this size, never more.
    #[arg(long, env = "APIM_WS_MAX_MESSAGE_BYTES", default_value_t = 1 << 20)]
    pub ws_max_message_bytes: usize,

    /// Milliseconds a WebSocket connection may pass no message either way before the
    /// gateway closes it (1001).
    #[arg(long, env = "APIM_WS_IDLE_TIMEOUT_MS", default_value_t = 300_000)]
    pub ws_idle_timeout_ms: u64,

    /// How often, in milliseconds, an open WebSocket connection's handshake is decided
    /// again: a token revoked or expired, a subscription blocked or an API retired since
    /// closes it (4001, 4002 or 1008) within this time.
    #[arg(long, env = "APIM_WS_RECHECK_MS", default_value_t = 30_000)]
    pub ws_recheck_ms: u64,

    /// CPU budget of one call of a tenant's WebAssembly policy, in fuel (about one unit
    /// per WebAssembly instruction). A call past it is answered 500 101500.
    #[arg(long, env = "APIM_POLICY_FUEL", default_value_t = 10_000_000)]
    pub policy_fuel: u64,

    /// Linear memory limit of one instance of a tenant's WebAssembly policy, its memories
    /// together, in MiB. A call that tries to grow past it is answered 500 101500.
    #[arg(long, env = "APIM_POLICY_MEMORY_MB", default_value_t = 32)]
    pub policy_memory_mb: u64,

    /// Wall-clock budget of one call of a tenant's WebAssembly policy, in milliseconds,
    /// host calls included. A call past it is answered 500 101500.
    #[arg(long, env = "APIM_POLICY_TIMEOUT_MS", default_value_t = 100)]
    pub policy_timeout_ms: u64,
}

/// Where compiled components are cached, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileCache {
    /// Compile at every start.
    Off,
    /// The system's cache directory, when there is one (a failure there is only a warning).
    Default(Option<PathBuf>),
    /// A directory the operator named (a failure there stops the start).
    Dir(PathBuf),
}

/// Directory name of the default compilation cache, under the user's cache directory.
const COMPILE_CACHE_NAME: &str = "apim-edge-gateway";

/// The default compilation cache directory, from `XDG_CACHE_HOME` or `HOME`.
fn default_compile_cache(xdg_cache_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    let absolute = |dir: &str| Some(PathBuf::from(dir)).filter(|p| p.is_absolute());
    xdg_cache_home
        .and_then(absolute)
        .or_else(|| absolute(home?).map(|home| home.join(".cache")))
        .map(|cache| cache.join(COMPILE_CACHE_NAME))
}

impl Config {
    /// Parses the command line and the environment, warning of each secret given as a
    /// flag rather than in the environment: `ps` shows it to every user of the machine.
    pub fn parse_warning_of_secrets() -> Self {
        apim_config_secrets::parse_warning_of_secrets()
    }

    /// Checks value ranges and the key-value URL; returns the first problem found.
    pub fn validate(&self) -> anyhow::Result<()> {
        ensure!(
            self.instance_reuse >= 1,
            "APIM_INSTANCE_REUSE must be at least 1"
        );
        ensure!(
            self.p3_reuse >= 1 && self.p3_concurrency >= 1,
            "APIM_P3_REUSE and APIM_P3_CONCURRENCY must be at least 1"
        );
        ensure!(
            (1..=MAX_INSTANCES_LIMIT).contains(&self.max_instances),
            "APIM_MAX_INSTANCES must be between 1 and {MAX_INSTANCES_LIMIT}"
        );
        ensure!(
            (1..=MAX_INSTANCE_MEMORY_MB).contains(&self.instance_memory_mb),
            "APIM_INSTANCE_MEMORY_MB must be between 1 and {MAX_INSTANCE_MEMORY_MB}"
        );
        ensure!(
            self.request_timeout_ms >= 1,
            "APIM_REQUEST_TIMEOUT_MS must be at least 1"
        );
        ensure!(
            self.backend_timeout_ms >= 1,
            "APIM_BACKEND_TIMEOUT_MS must be at least 1"
        );
        ensure!(
            self.header_timeout_ms >= 1,
            "APIM_HEADER_TIMEOUT_MS must be at least 1"
        );
        ensure!(
            self.ws_max_message_bytes >= 125,
            "APIM_WS_MAX_MESSAGE_BYTES must be at least 125 (a control frame's payload)"
        );
        ensure!(
            self.ws_idle_timeout_ms >= 1,
            "APIM_WS_IDLE_TIMEOUT_MS must be at least 1"
        );
        ensure!(
            self.ws_recheck_ms >= 100,
            "APIM_WS_RECHECK_MS must be at least 100"
        );
        if let Some(dir) = &self.compile_cache_dir {
            ensure!(
                !dir.trim().is_empty(),
                "APIM_COMPILE_CACHE_DIR must be a directory or `off`, not empty"
            );
        }
        ensure!(
            !self.kv_namespace.is_empty() && !self.kv_namespace.contains(char::is_whitespace),
            "APIM_KV_NAMESPACE must be non-empty and contain no whitespace"
        );
        self.validate_kv_url()?;
        let vars = self.variables()?;
        apim_http::bodies::parse(vars.get(apim_http::bodies::SETTING).unwrap_or_default())
            .map_err(|err| anyhow::anyhow!("APIM_MAX_REQUEST_BODY_BYTES: {err}"))?;
        apim_http::egress::EgressPolicy::parse(&self.egress_allow)
            .map_err(|err| anyhow::anyhow!("APIM_EGRESS_ALLOW: {err}"))?;
        self.hosted()?;
        self.trusted_proxies()?;
        let pairs = self.tls_pairs()?;
        ensure!(
            self.tls_addr.is_none() || !pairs.is_empty(),
            "APIM_GATEWAY_TLS_ADDR needs certificates: set APIM_TLS_CERT and APIM_TLS_KEY"
        );
        self.validate_listeners()
    }

    /// Every hosted component with its listener address, the main one first.
    pub fn listeners(&self) -> Vec<(SocketAddr, PathBuf)> {
        std::iter::once((self.addr, self.component.clone()))
            .chain(self.extra_components.iter().cloned())
            .collect()
    }

    /// The addresses whose `X-Forwarded-Proto` is believed.
    pub fn trusted_proxies(&self) -> anyhow::Result<TrustedProxies> {
        TrustedProxies::parse(&self.trusted_proxies)
            .map_err(|err| anyhow::anyhow!("APIM_TRUSTED_PROXIES: {err}"))
    }

    /// No two listeners (the components', the gateway's TLS one) share a fixed address
    /// (port 0 always picks a new one).
    fn validate_listeners(&self) -> anyhow::Result<()> {
        let fixed: Vec<SocketAddr> = self
            .listeners()
            .into_iter()
            .map(|(addr, _)| addr)
            .chain(self.tls_addr)
            .filter(|addr| addr.port() != 0)
            .collect();
        for (i, addr) in fixed.iter().enumerate() {
            ensure!(
                !fixed[..i].contains(addr),
                "two listeners are configured on {addr}"
            );
        }
        Ok(())
    }

    fn validate_kv_url(&self) -> anyhow::Result<()> {
        let url = self.kv_url.trim();
        if url.is_empty() {
            return Ok(());
        }
        if let Some(path) = sqlite_path(url) {
            ensure!(
                !path.as_os_str().is_empty(),
                "APIM_KV_URL sqlite: needs a file path (or :memory:)"
            );
            return Ok(());
        }
        if !is_redis_url(url) {
            bail!(
                "APIM_KV_URL must be empty (in-memory), a redis:// URL or sqlite:PATH, got {:?}",
                redact_password(url)
            );
        }
        redis::Client::open(url)
            .with_context(|| format!("invalid APIM_KV_URL {:?}", redact_password(url)))?;
        Ok(())
    }

    /// The main component's (the gateway's) `wasi:config/store` variables: every
    /// `--var`, then the dedicated settings. Fails on a name given twice with `--var`.
    pub fn variables(&self) -> anyhow::Result<Variables> {
        let mut vars = variables_of(&self.vars)?;
        let egress_allow = Some(self.egress_allow.clone());
        let backend_jwt = Some(self.backend_jwt.clone());
        let max_body = self.max_request_body_bytes.map(|bytes| bytes.to_string());
        let dedicated = [
            (settings::CONTROL_PLANE_URL, &self.control_plane_url),
            (settings::MANIFEST_PUBLIC_KEY, &self.manifest_public_key),
            (settings::EGRESS_ALLOW, &egress_allow),
            (settings::GATEWAY_SECRET, &self.gateway_secret),
            (settings::MAX_REQUEST_BODY_BYTES, &max_body),
            (settings::BACKEND_JWT, &backend_jwt),
        ];
        for (name, value) in dedicated {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                vars.insert(name.to_owned(), value.to_owned());
            }
        }
        // This host makes and exports the gateway's trace span (crate::telemetry::spans).
        if vars.get(settings::TRACE_SPANS).is_none() {
            vars.insert(
                settings::TRACE_SPANS.to_owned(),
                contract::TRACE_SPANS_BY_HOST.to_owned(),
            );
        }
        if vars.get(settings::BACKEND_TIMEOUT_MS).is_none() {
            let timeout = self.backend_timeout_ms.to_string();
            vars.insert(settings::BACKEND_TIMEOUT_MS.to_owned(), timeout);
        }
        // On Redis a counter write costs no disk commit: the component, where it counts
        // (its own forwarding), writes every call.
        if is_redis_url(&self.kv_url) && vars.get(settings::EXACT_COUNTING).is_none() {
            vars.insert(settings::EXACT_COUNTING.to_owned(), "true".to_owned());
        }
        // This host keeps the component current itself (crate::manifest_watch): requests need not.
        if vars.get(settings::CATCH_UP_MS).is_none() {
            vars.insert(settings::CATCH_UP_MS.to_owned(), "0".to_owned());
        }
        Ok(vars)
    }

    /// The extra components' `wasi:config/store` variables: every `--extra-var`, and only
    /// those. Fails on a name given twice.
    pub fn extra_variables(&self) -> anyhow::Result<Variables> {
        variables_of(&self.extra_vars)
    }

    /// Every hosted component with its listener address and the variables it sees, the
    /// main one first.
    pub fn hosted(&self) -> anyhow::Result<Vec<Hosted>> {
        let main = Arc::new(self.variables()?);
        let extra = Arc::new(self.extra_variables()?);
        Ok(self
            .listeners()
            .into_iter()
            .enumerate()
            .map(|(i, (addr, component))| Hosted {
                addr,
                component,
                vars: if i == 0 { main.clone() } else { extra.clone() },
            })
            .collect())
    }

    /// The listeners' certificate and key files (none: plain HTTP).
    pub fn tls_pairs(&self) -> anyhow::Result<Vec<apim_tls::Pair>> {
        apim_tls::pairs(
            &self.tls_certs,
            &self.tls_keys,
            "APIM_TLS_CERT and APIM_TLS_KEY",
        )
    }

    /// Execution deadline of one request in the component.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// How WebSocket APIs' connections are relayed.
    pub fn websocket(&self) -> crate::websocket::WebSocketSettings {
        crate::websocket::WebSocketSettings {
            max_message_bytes: self.ws_max_message_bytes,
            idle_timeout: Duration::from_millis(self.ws_idle_timeout_ms),
            recheck_every: Duration::from_millis(self.ws_recheck_ms),
        }
    }

    /// Default timeout of outbound requests.
    pub fn backend_timeout(&self) -> Duration {
        Duration::from_millis(self.backend_timeout_ms)
    }

    /// Sync period, or `None` when syncing is disabled.
    pub fn sync_interval(&self) -> Option<Duration> {
        (self.sync_interval_secs > 0).then(|| Duration::from_secs(self.sync_interval_secs))
    }

    /// How often analytics are reported; `None` when off.
    pub fn analytics_interval(&self) -> Option<Duration> {
        (self.analytics_report_ms > 0).then(|| Duration::from_millis(self.analytics_report_ms))
    }

    /// Per-instance linear memory limit in bytes.
    pub fn instance_memory_bytes(&self) -> usize {
        usize::try_from(self.instance_memory_mb << 20).unwrap_or(usize::MAX)
    }

    /// Bounded wait for in-flight requests at shutdown.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    /// How the listeners treat connections.
    pub fn connections(&self) -> crate::server::Connections {
        let grace = self.shutdown_grace();
        crate::server::Connections {
            header_timeout: Duration::from_millis(self.header_timeout_ms),
            grace,
            keepalive_drain: Duration::from_millis(self.drain_keepalive_ms).min(grace),
        }
    }

    /// Where compiled components are cached: the directory given (relative to the working
    /// directory), none with `off`, or the system's cache directory.
    pub fn compile_cache(&self) -> CompileCache {
        match self.compile_cache_dir.as_deref().map(str::trim) {
            Some(off) if off.eq_ignore_ascii_case("off") => CompileCache::Off,
            Some(dir) => CompileCache::Dir(std::path::absolute(dir).unwrap_or_else(|_| dir.into())),
            None => CompileCache::Default(default_compile_cache(
                std::env::var("XDG_CACHE_HOME").ok().as_deref(),
                std::env::var("HOME").ok().as_deref(),
            )),
        }
    }
}

/// The file of a `sqlite:PATH` key-value URL (`:memory:` for none), if it is one.
pub fn sqlite_path(url: &str) -> Option<PathBuf> {
    url.trim().strip_prefix("sqlite:").map(PathBuf::from)
}

/// Whether `APIM_KV_URL` names a Redis server (TCP or a Unix socket).
fn is_redis_url(url: &str) -> bool {
    let url = url.trim();
    ["redis://", "redis+unix://", "unix://"]
        .iter()
        .any(|scheme| url.starts_with(scheme))
}

/// A URL with the password of its user information (`scheme://user:password@host`)
/// replaced by `***`, for errors and logs.
pub fn redact_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let authority_end = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    match url[scheme_end..authority_end].rfind('@') {
        Some(at) => {
            let user_info = &url[scheme_end..scheme_end + at];
            let user = user_info
                .split_once(':')
                .map_or(user_info, |(user, _)| user);
            format!(
                "{}{user}:***{}",
                &url[..scheme_end],
                &url[scheme_end + at..]
            )
        }
        None => url.to_string(),
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
                "edge-gateway",
                "--gateway-secret",
                "s",
                "--kv-url",
                "redis://h/0",
                "--addr",
                "127.0.0.1:0",
            ])
            .unwrap();
        let mut named: Vec<_> = apim_config_secrets::secrets_given_as_flags(&command, &matches)
            .into_iter()
            .map(|s| (s.flag, s.variable))
            .collect();
        named.sort();
        let mut expected = vec![
            ("kv-url".to_string(), "APIM_KV_URL".to_string()),
            (
                "gateway-secret".to_string(),
                "APIM_GATEWAY_SECRET".to_string(),
            ),
        ];
        expected.sort();
        assert_eq!(named, expected);
        let none = command
            .clone()
            .try_get_matches_from(["edge-gateway"])
            .unwrap();
        assert!(apim_config_secrets::secrets_given_as_flags(&command, &none).is_empty());
    }

    #[test]
    fn secrets_stay_out_of_help_and_errors() {
        use clap::CommandFactory;
        let mut command = Config::command();
        let help = command.render_long_help().to_string();
        for var in ["APIM_VARS", "APIM_GATEWAY_SECRET", "APIM_KV_URL"] {
            assert!(help.contains(var), "{var} documented");
        }
        // Every secret-bearing argument hides its environment's value.
        for id in ["vars", "gateway_secret", "kv_url"] {
            let arg = command.get_arguments().find(|a| a.get_id() == id).unwrap();
            assert!(arg.is_hide_env_values_set(), "{id}");
        }
        let config = parse(&[
            "--gateway-secret",
            "s3cret",
            "--var",
            "gateway_secret=other",
        ]);
        assert_eq!(
            config.variables().unwrap().get(settings::GATEWAY_SECRET),
            Some("s3cret")
        );
        assert_eq!(
            redact_password("redis://user:pw@host:6379/0"),
            "redis://user:***@host:6379/0"
        );
        assert_eq!(redact_password("redis://:pw@host/0"), "redis://:***@host/0");
        assert_eq!(
            redact_password("redis://host:6379/0"),
            "redis://host:6379/0"
        );
        let err = parse(&["--kv-url", "memcached://u:pw@host"])
            .validate()
            .unwrap_err();
        assert!(!format!("{err:#}").contains("pw@"), "{err:#}");
    }

    fn parse(args: &[&str]) -> Config {
        let argv = std::iter::once("edge-gateway").chain(args.iter().copied());
        Config::try_parse_from(argv).expect("arguments parse")
    }

    /// A Redis store, over TCP or a Unix socket, has the component count every call; any
    /// other store leaves it batching, and `--var` has the last word.
    #[test]
    fn a_redis_store_asks_the_component_for_exact_counting() {
        let exact = |args: &[&str]| {
            let vars = parse(args).variables().unwrap();
            vars.get(settings::EXACT_COUNTING).map(str::to_owned)
        };
        for url in [
            "redis://127.0.0.1:6379/0",
            "redis+unix:///run/redis.sock",
            "unix:///run/redis.sock",
        ] {
            assert_eq!(exact(&["--kv-url", url]).as_deref(), Some("true"), "{url}");
        }
        assert_eq!(exact(&["--kv-url", "sqlite:/tmp/kv.db"]), None);
        assert_eq!(exact(&[]), None);
        let told = exact(&["--kv-url", "redis://h/0", "--var", "exact_counting=false"]);
        assert_eq!(told.as_deref(), Some("false"));
    }

    #[test]
    fn the_request_body_limit_is_a_positive_number_handed_to_the_component() {
        let config = parse(&["--max-request-body-bytes", "4096"]);
        config.validate().unwrap();
        let vars = config.variables().unwrap();
        assert_eq!(vars.get(apim_http::bodies::SETTING), Some("4096"));
        assert_eq!(
            parse(&[])
                .variables()
                .unwrap()
                .get("max_request_body_bytes"),
            None
        );
        for bad in [
            &["--max-request-body-bytes", "0"][..],
            &["--var", "max_request_body_bytes=10MiB"][..],
        ] {
            let err = parse(bad).validate().unwrap_err().to_string();
            assert!(err.contains("APIM_MAX_REQUEST_BODY_BYTES"), "{err}");
        }
    }

    #[test]
    fn access_log_and_operations_listener_are_switched() {
        let config = parse(&[]);
        assert!(config.access_log, "on by default");
        assert_eq!(config.ops_addr, None, "no operations listener by default");
        for (given, on) in [("off", false), ("OFF", false), ("on", true), ("true", true)] {
            assert_eq!(parse(&["--access-log", given]).access_log, on, "{given}");
        }
        let argv = ["edge-gateway", "--access-log", "maybe"];
        assert!(Config::try_parse_from(argv).is_err());
        let config = parse(&["--ops-addr", "127.0.0.1:9090"]);
        assert_eq!(config.ops_addr.unwrap().to_string(), "127.0.0.1:9090");
    }

    #[test]
    fn defaults_are_valid() {
        let config = parse(&[]);
        config.validate().unwrap();
        assert_eq!(config.addr.to_string(), "127.0.0.1:8280");
        assert_eq!(config.instance_reuse, 4096);
        assert_eq!((config.p3_reuse, config.p3_concurrency), (128, 16));
        assert!(config.kv_url.is_empty());
        assert_eq!(config.sync_interval(), Some(Duration::from_secs(30)));
        assert_eq!(config.instance_memory_bytes(), 64 << 20);
    }

    #[test]
    fn variables_merge_with_dedicated_settings() {
        let config = parse(&[
            "--var",
            "a=1",
            "--var",
            "b=x=y,c=3",
            "--control-plane-url",
            "http://127.0.0.1:9000",
            "--var",
            "control_plane_url=ignored",
        ]);
        let vars = config.variables().unwrap();
        assert_eq!(vars.get("a"), Some("1"));
        assert_eq!(vars.get("b"), Some("x=y"));
        assert_eq!(vars.get("c"), Some("3"));
        assert_eq!(
            vars.get(settings::CONTROL_PLANE_URL),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(vars.get(settings::MANIFEST_PUBLIC_KEY), None);
    }

    #[test]
    fn duplicate_variable_is_rejected() {
        let config = parse(&["--var", "a=1", "--var", "a=2"]);
        assert!(config.validate().is_err());
    }

    #[test]
    fn malformed_variable_is_rejected_by_the_parser() {
        let argv = ["edge-gateway", "--var", "novalue"];
        assert!(Config::try_parse_from(argv).is_err());
        let argv = ["edge-gateway", "--var", "=value"];
        assert!(Config::try_parse_from(argv).is_err());
    }

    #[test]
    fn extra_components_get_listeners_of_their_own() {
        let config = parse(&[
            "--addr",
            "127.0.0.1:0",
            "--extra-component",
            "127.0.0.1:8290=facade.wasm",
            "--extra-component",
            "127.0.0.1:0=other.wasm",
        ]);
        config.validate().unwrap();
        let listeners = config.listeners();
        assert_eq!(listeners.len(), 3);
        assert_eq!(listeners[1].0.to_string(), "127.0.0.1:8290");
        assert_eq!(listeners[1].1, PathBuf::from("facade.wasm"));
        let clash = parse(&["--extra-component", "127.0.0.1:8280=facade.wasm"]);
        assert!(clash.validate().is_err());
        for bad in ["facade.wasm", "nohost=facade.wasm", "127.0.0.1:1="] {
            let argv = ["edge-gateway", "--extra-component", bad];
            assert!(Config::try_parse_from(argv).is_err(), "{bad}");
        }
    }

    /// The facade beside the gateway never sees the gateway's secret, control plane or
    /// egress list, nor the gateway the facade's SOAP credentials.
    #[test]
    fn each_component_sees_only_its_own_variables() {
        let config = parse(&[
            "--addr",
            "127.0.0.1:0",
            "--var",
            "gateway_secret=s3cret,gateway_id=edge-1",
            "--control-plane-url",
            "http://127.0.0.1:9763",
            "--manifest-public-key",
            "key",
            "--egress-allow",
            "127.0.0.1",
            "--extra-component",
            "127.0.0.1:0=facade.wasm",
            "--extra-var",
            "dev_soap_url=http://127.0.0.1:8291/ws,dev_soap_password=pandaAsthma",
        ]);
        config.validate().unwrap();
        let hosted = config.hosted().unwrap();
        assert_eq!(hosted.len(), 2);
        let (gateway, facade) = (&hosted[0].vars, &hosted[1].vars);
        assert_eq!(hosted[1].component, PathBuf::from("facade.wasm"));
        let names = |vars: &Variables| vars.iter().map(|(n, _)| n.to_owned()).collect::<Vec<_>>();
        assert_eq!(names(facade), ["dev_soap_password", "dev_soap_url"]);
        assert_eq!(
            names(gateway),
            [
                "backend_jwt",
                "backend_timeout_ms",
                "catch_up_interval_ms",
                "control_plane_url",
                "egress_allow",
                "gateway_id",
                "gateway_secret",
                "manifest_public_key",
                "trace_spans"
            ]
        );
        assert_eq!(
            gateway.get(settings::TRACE_SPANS),
            Some("host"),
            "this host makes the span"
        );
        assert_eq!(
            gateway.get(settings::CATCH_UP_MS),
            Some("0"),
            "this host's loop keeps it current"
        );
        assert_eq!(gateway.get(settings::GATEWAY_SECRET), Some("s3cret"));
        assert_eq!(facade.get(settings::GATEWAY_SECRET), None);
        let twice = parse(&["--extra-var", "a=1", "--extra-var", "a=2"]);
        assert!(twice.validate().is_err());
    }

    #[test]
    fn the_compile_cache_is_chosen_or_turned_off() {
        assert_eq!(
            parse(&["--compile-cache-dir", "OFF"]).compile_cache(),
            CompileCache::Off
        );
        assert_eq!(
            parse(&["--compile-cache-dir", "/var/cache/gw"]).compile_cache(),
            CompileCache::Dir(PathBuf::from("/var/cache/gw"))
        );
        let CompileCache::Dir(relative) = parse(&["--compile-cache-dir", "cache"]).compile_cache()
        else {
            panic!("a directory");
        };
        assert!(relative.is_absolute() && relative.ends_with("cache"));
        assert!(matches!(
            parse(&[]).compile_cache(),
            CompileCache::Default(_)
        ));
        assert!(parse(&["--compile-cache-dir", " "]).validate().is_err());
        assert_eq!(
            default_compile_cache(Some("/xdg"), Some("/home/gw")),
            Some(PathBuf::from("/xdg/apim-edge-gateway"))
        );
        assert_eq!(
            default_compile_cache(Some("relative"), Some("/home/gw")),
            Some(PathBuf::from("/home/gw/.cache/apim-edge-gateway"))
        );
        assert_eq!(default_compile_cache(None, None), None);
    }

    #[test]
    fn the_keepalive_drain_stays_within_the_shutdown_grace() {
        let config = parse(&["--shutdown-grace-secs", "1", "--drain-keepalive-ms", "5000"]);
        let connections = config.connections();
        assert_eq!(connections.keepalive_drain, Duration::from_secs(1));
        assert_eq!(
            parse(&[]).connections().keepalive_drain,
            Duration::from_millis(1_000)
        );
    }

    /// A TLS listener beside the plain one needs certificates and an address of its own;
    /// the error names the setting.
    #[test]
    fn the_tls_listener_needs_certificates_and_an_address_of_its_own() {
        let certs = ["--tls-cert", "gw.crt", "--tls-key", "gw.key"];
        let with = |more: &[&'static str]| parse(&[&certs[..], more].concat());
        let config = with(&["--tls-addr", "127.0.0.1:8243"]);
        config.validate().unwrap();
        assert_eq!(config.tls_addr, Some("127.0.0.1:8243".parse().unwrap()));
        assert_eq!(parse(&certs).tls_addr, None, "none unless asked for");
        let err = parse(&["--tls-addr", "127.0.0.1:8243"])
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("APIM_GATEWAY_TLS_ADDR"), "{err}");
        let err = with(&["--tls-addr", "127.0.0.1:8280"])
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("127.0.0.1:8280"), "{err}");
        with(&["--addr", "127.0.0.1:0", "--tls-addr", "127.0.0.1:0"])
            .validate()
            .unwrap();
        let argv = ["edge-gateway", "--tls-addr", "gw.example:8243"];
        assert!(Config::try_parse_from(argv).is_err());
    }

    /// Trusted proxies are addresses and networks; anything else is refused, named.
    #[test]
    fn trusted_proxies_are_addresses_and_networks() {
        let config = parse(&["--trusted-proxies", "10.0.0.0/8,127.0.0.2"]);
        config.validate().unwrap();
        let trusted = config.trusted_proxies().unwrap();
        assert!(trusted.trust("10.9.8.7".parse().unwrap()));
        assert!(!trusted.trust("127.0.0.1".parse().unwrap()));
        assert_eq!(
            parse(&[]).trusted_proxies().unwrap(),
            TrustedProxies::default()
        );
        for bad in ["lb.example", "10.0.0.0/40", "10.0.0.1:443", "*"] {
            let err = parse(&["--trusted-proxies", bad]).validate().unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains("APIM_TRUSTED_PROXIES") && text.contains(bad),
                "{text}"
            );
        }
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        for args in [
            &["--instance-reuse", "0"][..],
            &["--max-instances", "0"],
            &["--instance-memory-mb", "0"],
            &["--instance-memory-mb", "5000"],
            &["--request-timeout-ms", "0"],
            &["--backend-timeout-ms", "0"],
            &["--p3-reuse", "0"],
            &["--p3-concurrency", "0"],
            &["--kv-url", "memcached://127.0.0.1"],
            &["--kv-namespace", ""],
            &["--kv-url", "sqlite:"],
        ] {
            assert!(
                parse(args).validate().is_err(),
                "{args:?} should be rejected"
            );
        }
        for url in [
            "redis://127.0.0.1:6379/0",
            "sqlite:/tmp/kv.db",
            "sqlite::memory:",
        ] {
            parse(&["--kv-url", url]).validate().unwrap();
        }
        assert_eq!(
            sqlite_path("sqlite:.spin/kv.db"),
            Some(PathBuf::from(".spin/kv.db"))
        );
        assert_eq!(sqlite_path("redis://h/0"), None);
        assert_eq!(parse(&["--sync-interval-secs", "0"]).sync_interval(), None);
    }
}
