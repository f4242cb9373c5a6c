//! `edge-gateway`: a native wasmtime host for the gateway WebAssembly component, and for
//! other components beside it (the developer-management facade), each on its own listener.
//!
//! The components are WASI 0.2 `wasi:http` proxies, or WASIp3 `wasi:http` services
//! ([`p3_service`]), that may also import `wasi:keyvalue` (draft2) and `wasi:config`,
//! exactly what Spin provides; this crate provides the same imports so the same `.wasm`
//! runs here. See
//! [`config::Config`] for the settings and [`run`] for the start-up sequence.
#![deny(missing_docs)]

pub mod backend_pool;
pub mod backend_tls;
pub mod config;
pub mod counters;
pub mod dispatch;
pub mod endpoint_trust;
pub mod failure;
pub mod kv;
pub mod manifest_watch;
pub mod outbound;
pub mod proxy;
pub mod responses;
pub mod scheme;
pub mod server;
pub mod telemetry;
pub mod tenant_policies;
pub mod websocket;
pub mod wit_host;

use std::sync::Arc;
use std::time::Duration;

use apim_http::contract::{self, settings};
use tokio::sync::watch;

use crate::config::{Config, Hosted};
use crate::dispatch::Gateway;
use crate::kv::KvStore;
use crate::outbound::{EgressGuard, OutboundClient};
use crate::telemetry::Telemetry;
use crate::wit_host::engine::EpochTicker;
use crate::wit_host::instance_state::{Limits, Shared};
use crate::wit_host::instances::Runtime;

/// Validates `config`, listens (on the sockets in `inherited`, passed by a supervisor,
/// or on sockets of its own), compiles the components (or reads them from the compilation
/// cache), pulls the gateway's manifest, announces the listeners, and serves until SIGTERM
/// or Ctrl-C (a signal received during start-up is honoured as soon as the listeners are
/// up). Connections arriving before the announcement wait in the backlog. The main
/// component (the gateway) gets the periodic sync requests; every component shares the
/// key-value store and the outbound client, and each reads only its own variables
/// ([`Config::hosted`]).
pub async fn run(config: Config, mut inherited: server::Inherited) -> anyhow::Result<()> {
    config.validate()?;
    let signal = server::ShutdownSignal::install()?;
    let listeners = config.hosted()?;
    let configured = listeners.len() + usize::from(config.tls_addr.is_some());
    anyhow::ensure!(
        inherited.len() <= configured,
        "LISTEN_FDS passes {} sockets for {configured} configured listeners (the gateway's, \
         then one per --extra-component, then the gateway's --tls-addr)",
        inherited.len(),
    );
    // Before anything listens: a certificate file that is missing or wrong stops the start.
    let tls = apim_tls::Tls::load(config.tls_pairs()?)?;
    let trusted = Arc::new(config.trusted_proxies()?);
    let mut sockets = Vec::new();
    for (index, listener) in listeners.iter().enumerate() {
        sockets.push(server::listen(listener.addr, inherited.take(index)).await?);
    }
    let tls_socket = match config.tls_addr {
        Some(addr) => Some(server::listen(addr, inherited.take(listeners.len())).await?),
        None => None,
    };
    // Up before the components are compiled, so that an orchestrator sees the gateway
    // alive and not ready meanwhile.
    let telemetry = if config.access_log {
        Telemetry::with_access_log()?
    } else {
        Telemetry::default()
    };
    let tracing = telemetry::Tracing::from_env(tokio::runtime::Handle::current())?;
    let telemetry = telemetry.with_tracing(tracing);
    let watch = watch_of(&config.variables()?);
    let reporting = config.analytics_interval().zip(watch.clone());
    let telemetry = Arc::new(if reporting.is_some() {
        telemetry.with_analytics()
    } else {
        telemetry
    });
    if let Some(ops_addr) = config.ops_addr {
        let ops = server::listen(ops_addr, None).await?;
        telemetry::ops::spawn(ops, telemetry.clone())?;
    }
    let components = u32::try_from(listeners.len()).unwrap_or(u32::MAX);
    let mut p3 = Vec::new();
    for listener in &listeners {
        p3.push(wit_host::p3_service::serves_p3(&listener.component)?);
    }
    let engine = wit_host::engine::engine(
        &limits(&config),
        components,
        config.perf_map,
        &config.compile_cache(),
        p3.contains(&true),
    )?;
    let _ticker = EpochTicker::start(engine.clone())?;
    let guard = Arc::new(egress_guard(&config)?);
    let roots = backend_tls::roots(config.backend_ca_file.as_deref())?;
    let to_control_plane = backend_tls::control_plane_connector(roots.clone())?;
    let shared = shared(&config, guard.clone(), roots).await?;
    let policies = Arc::new(policies(&config, watch.as_ref(), &to_control_plane)?);
    let _policy_ticker = EpochTicker::start(policies.engine().clone())?;
    let mut hosted = Vec::new();
    for ((listener, socket), p3) in listeners.iter().zip(sockets).zip(p3) {
        let gateway = host(&config, &engine, listener, p3, &shared)?
            .with_telemetry(telemetry.clone())
            .with_policies(policies.clone());
        hosted.push((socket, Arc::new(gateway)));
    }
    telemetry.compiled();
    let gateways: Vec<Arc<Gateway>> = hosted.iter().map(|(_, g)| g.clone()).collect();
    let (main_listener, main) = &hosted[0];
    let main_addr = main_listener.local_addr()?;
    // The gateway never forwards to itself, whatever a manifest says.
    let own = tls_socket.as_ref().map(|s| s.local_addr()).transpose()?;
    guard.refuse_listeners(&[&[main_addr][..], own.as_slice()].concat());
    let sync_interval = config.sync_interval();
    let first_sync_timeout = Duration::from_millis(config.first_sync_timeout_ms);
    telemetry.needs_manifest(sync_interval.is_some() && watch.is_some());
    if sync_interval.is_some() && watch.is_some() && !first_sync_timeout.is_zero() {
        first_sync(main, main_addr, first_sync_timeout).await;
    }
    if let Some(tls) = &tls {
        apim_tls::reload::spawn(tls.clone())?;
    }
    let main = main.clone();
    let listening = listening(hosted, tls_socket, tls.is_some());
    for served in &listening {
        server::announce(&served.socket, served.tls)?;
    }
    server::tell_supervisor(server::Supervised::Ready);
    let reporter = reporter_of(&telemetry, reporting.as_ref(), &to_control_plane);
    let sync = sync_interval.map(|interval| {
        manifest_watch::spawn(main.clone(), main_addr, interval, watch, to_control_plane)
    });
    let reports = reporter
        .clone()
        .zip(reporting.as_ref())
        .map(|(reporter, (interval, _))| reporter.spawn(*interval));
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(async move {
        signal.recv().await;
        server::tell_supervisor(server::Supervised::Stopping);
        if let Some(sync) = sync {
            sync.abort();
        }
        if let Some(reports) = reports {
            reports.abort();
        }
        let _ = stop.send(true);
    });
    let transport = server::Transport {
        tls: tls.as_ref().map(|tls| tls.acceptor()),
        trusted,
    };
    let served = serve_all(listening, stopped, config.connections(), transport).await;
    for gateway in gateways {
        gateway.begin_shutdown();
    }
    if let Some(reporter) = reporter {
        // What the last interval counted, unless the control plane is away.
        let _ = tokio::time::timeout(LAST_REPORT_TIMEOUT, reporter.report()).await;
    }
    telemetry.flush();
    telemetry.tracing.shutdown().await;
    served
}

/// Longest the last analytics report may hold up the exit.
const LAST_REPORT_TIMEOUT: Duration = Duration::from_secs(2);

/// The reporter of the analytics `telemetry` counts, when they are reported.
fn reporter_of(
    telemetry: &Telemetry,
    reporting: Option<&(Duration, manifest_watch::Watch)>,
    connector: &backend_tls::ControlPlaneConnector,
) -> Option<telemetry::reporter::Reporter> {
    let (_, watch) = reporting?;
    let analytics = telemetry.analytics.clone()?;
    Some(telemetry::reporter::Reporter::new(
        analytics,
        watch.clone(),
        connector.clone(),
    ))
}

/// Pulls the manifest before the gateway serves, so that a gateway replacing another
/// answers its first requests as the one before did (not 404 for want of routes);
/// bounded by `within` (`APIM_FIRST_SYNC_TIMEOUT_MS`; the sync loop goes on trying).
async fn first_sync(gateway: &Gateway, local: std::net::SocketAddr, within: Duration) {
    let started = std::time::Instant::now();
    match tokio::time::timeout(within, gateway.sync(local)).await {
        Ok(Some(version)) => tracing::info!(
            version,
            elapsed_ms = started.elapsed().as_millis(),
            "manifest pulled before serving"
        ),
        Ok(None) => tracing::warn!("no manifest before serving: the control plane did not answer"),
        Err(_) => {
            tracing::warn!("no manifest before serving within {within:?}; serving, still trying")
        }
    }
}

/// A listener, the component behind it, and whether it speaks TLS.
struct Listening {
    socket: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    tls: bool,
}

/// Every listener with what it speaks: with certificates, each speaks TLS, except the
/// gateway's own when it has a TLS listener of its own (`tls_socket`, the last), beside
/// which it stays plain.
fn listening(
    hosted: Vec<(tokio::net::TcpListener, Arc<Gateway>)>,
    tls_socket: Option<tokio::net::TcpListener>,
    certificates: bool,
) -> Vec<Listening> {
    let main = hosted[0].1.clone();
    let beside = tls_socket.is_some();
    let mut listening: Vec<Listening> = hosted
        .into_iter()
        .enumerate()
        .map(|(index, (socket, gateway))| Listening {
            socket,
            gateway,
            tls: certificates && !(index == 0 && beside),
        })
        .collect();
    listening.extend(tls_socket.map(|socket| Listening {
        socket,
        gateway: main,
        tls: true,
    }));
    listening
}

/// Serves every listener (those that speak TLS through `transport`'s) until the stop
/// flag is raised; the first error, if any.
async fn serve_all(
    listening: Vec<Listening>,
    stopped: watch::Receiver<bool>,
    connections: server::Connections,
    transport: server::Transport,
) -> anyhow::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for served in listening {
        let mut stopped = stopped.clone();
        let shutdown = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        let transport = server::Transport {
            tls: transport.tls.clone().filter(|_| served.tls),
            ..transport.clone()
        };
        tasks.spawn(server::serve(
            served.socket,
            served.gateway,
            shutdown,
            connections,
            transport,
        ));
    }
    let mut result = Ok(());
    while let Some(joined) = tasks.join_next().await {
        let served = joined.map_err(anyhow::Error::from).and_then(|r| r);
        if result.is_ok() {
            result = served;
        }
    }
    result
}

/// Instance limits from the configuration.
fn limits(config: &Config) -> Limits {
    Limits {
        reuse: config.instance_reuse,
        max_instances: config.max_instances,
        memory_bytes: config.instance_memory_bytes(),
        request_timeout: config.request_timeout(),
        p3_reuse: config.p3_reuse,
        p3_concurrency: config.p3_concurrency,
    }
}

/// The egress policy outbound connections follow.
fn egress_guard(config: &Config) -> anyhow::Result<EgressGuard> {
    let policy = apim_http::egress::EgressPolicy::parse(&config.egress_allow)
        .map_err(|err| anyhow::anyhow!("APIM_EGRESS_ALLOW: {err}"))?;
    let vars = config.variables()?;
    Ok(EgressGuard::new(
        policy,
        vars.get(settings::CONTROL_PLANE_URL),
    ))
}

/// What every hosted component shares: the key-value backend and the outbound client
/// trusting `roots` (with the main component's variables; [`host`] gives each component
/// its own).
async fn shared(
    config: &Config,
    guard: Arc<EgressGuard>,
    roots: rustls::RootCertStore,
) -> anyhow::Result<Shared> {
    let kv = match config::sqlite_path(&config.kv_url) {
        Some(path) => KvStore::sqlite(&path)
            .map_err(|err| anyhow::anyhow!("APIM_KV_URL: cannot open {path:?}: {err:?}"))?,
        None => KvStore::connect(&config.kv_url, &config.kv_namespace).await,
    };
    let vars = config.variables()?;
    let open_files = server::raise_file_limit();
    tracing::info!(
        kv = kv.describe(),
        open_files,
        variables = vars.len(),
        extra_variables = config.extra_vars.len(),
        reuse = config.instance_reuse,
        max_instances = config.max_instances,
        memory_mb = config.instance_memory_mb,
        "gateway host configured"
    );
    let outbound = OutboundClient::new(config.backend_timeout(), guard, roots, kv.clone())?;
    Ok(Shared {
        kv,
        vars: Arc::new(vars),
        outbound,
    })
}

/// Tenants' WebAssembly policies, run within the configured budgets and fetched from the
/// control plane the gateway watches (none: calls naming a policy fail as unavailable).
fn policies(
    config: &Config,
    watch: Option<&manifest_watch::Watch>,
    connector: &backend_tls::ControlPlaneConnector,
) -> anyhow::Result<tenant_policies::Policies> {
    let source = watch.map(|watch| {
        tenant_policies::Source::new(
            watch.control_plane.clone(),
            watch.authorization.clone(),
            connector.clone(),
        )
    });
    let budgets = tenant_policies::Budgets {
        fuel: config.policy_fuel.max(1),
        memory_bytes: usize::try_from(config.policy_memory_mb.saturating_mul(1024 * 1024))
            .unwrap_or(usize::MAX),
        time: Duration::from_millis(config.policy_timeout_ms.max(1)),
        epoch_tick: wit_host::engine::EPOCH_TICK,
    };
    tenant_policies::Policies::new(budgets, source)
}

/// Where the gateway asks the control plane for changes: its URL and the gateway secret
/// from the variables; `None` without both.
fn watch_of(vars: &wit_host::config_store::Variables) -> Option<manifest_watch::Watch> {
    let control_plane = vars.get(settings::CONTROL_PLANE_URL)?.trim_end_matches('/');
    let secret = vars.get(settings::GATEWAY_SECRET)?;
    let mut authorization = http::HeaderValue::from_str(&format!("Bearer {secret}")).ok()?;
    authorization.set_sensitive(true);
    Some(manifest_watch::Watch {
        control_plane: control_plane.to_string(),
        authorization,
        gateway_id: vars
            .get(settings::GATEWAY_ID)
            .unwrap_or(contract::DEFAULT_GATEWAY_ID)
            .to_string(),
        environment: vars
            .get(settings::GATEWAY_ENVIRONMENT)
            .unwrap_or_default()
            .to_string(),
    })
}

/// Compiles the hosted component (a WASIp3 one with `p3`) and puts it behind its own
/// instance pool, reading its own variables.
fn host(
    config: &Config,
    engine: &wasmtime::Engine,
    hosted: &Hosted,
    p3: bool,
    shared: &Shared,
) -> anyhow::Result<Gateway> {
    let pre = wit_host::instances::prepare(engine, &hosted.component, p3)?;
    let shared = Shared {
        vars: hosted.vars.clone(),
        ..shared.clone()
    };
    let secret = shared
        .vars
        .get(settings::GATEWAY_SECRET)
        .map(str::to_string);
    let body_limit = apim_http::bodies::configured(shared.vars.get(apim_http::bodies::SETTING));
    let runtime = Runtime::new(engine.clone(), pre, shared, limits(config));
    Ok(Gateway::new(runtime, config.host_forwarding)
        .with_sync_secret(secret.as_deref())
        .with_body_limit(body_limit)
        .with_websocket(config.websocket()))
}
