//! The one launcher of the platform, shared by the tests (`tests/`) and the tools
//! (`tools/`: benchmark, fault command, local stack): runs the real `control-plane` and
//! `edge-gateway` binaries on ephemeral ports against a fresh SQLite file or PostgreSQL
//! database, talks to them over HTTP, and takes the domain steps (publish, subscribe,
//! keys, token) the way a WSO2 client would.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub mod browser;
pub mod contract;
pub mod databases;
pub mod held;
pub mod machine;
pub mod mcp;
pub mod openapi;
pub mod redis;
pub mod services;
pub mod signin;
pub mod stack;
pub mod steps;
pub mod tls;
pub mod websocket;

/// PostgreSQL server the tests create their databases on.
pub fn postgres_admin_url() -> String {
    std::env::var("APIM_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// Where a test's control plane keeps its data.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The embedded SQLite file in the data directory.
    Sqlite,
    /// A database of its own on the PostgreSQL server.
    Postgres {
        /// `postgres://` URL of the test database.
        url: String,
        /// Its name, to drop it afterwards.
        name: String,
    },
}

impl Backend {
    /// A PostgreSQL database made for one test (see [`databases`]).
    pub async fn fresh_postgres() -> Self {
        let name = databases::fresh().await;
        Backend::Postgres {
            url: databases::url_of(&name),
            name,
        }
    }

    /// Hands the test database back, if any, to be dropped without waiting.
    pub async fn cleanup(&self) {
        if let Backend::Postgres { name, .. } = self {
            databases::hand_back(name.clone());
        }
    }

    /// The control plane's `APIM_DATABASE_URL` (empty: SQLite in the data directory).
    pub fn database_url(&self) -> &str {
        match self {
            Backend::Sqlite => "",
            Backend::Postgres { url, .. } => url,
        }
    }
}

/// The target directory this executable runs from (`target/debug` for binaries and, one
/// level up from `deps`, for tests; `target/release` likewise).
fn binary_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("executable path");
    let mut dir = exe.parent().expect("target directory").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

/// A binary of the workspace, built in the same profile as this executable.
pub fn binary(name: &str) -> PathBuf {
    let path = binary_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

/// Password of the administrator every test control plane starts with.
pub const ADMIN_PASSWORD: &str = "admin-secret";

/// Most bytes of a process's output kept (its standard output past its announcement).
const MAX_KEPT_STDOUT: usize = 16 << 20;

/// A running server binary of ours, stopped (killed) when dropped.
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    output: Arc<Mutex<String>>,
}

impl ServerProcess {
    /// Starts `binary` with exactly `env` (plus PATH) and waits for its
    /// "Serving HTTP on ..." line ("Serving HTTPS on ..." with TLS).
    pub async fn start(binary: &Path, env: &[(&str, String)]) -> Self {
        Self::start_echoing(binary, env, None).await
    }

    /// Like [`ServerProcess::start`], also echoing its log lines to stderr behind `label`.
    pub async fn start_echoing(
        binary: &Path,
        env: &[(&str, String)],
        label: Option<&'static str>,
    ) -> Self {
        Self::spawn(
            Command::new(binary),
            &binary.display().to_string(),
            env,
            label,
        )
        .await
    }

    /// Like [`ServerProcess::start_echoing`], for a `command` prepared otherwise (e.g. one
    /// handing the process a listening socket); `name` says what it is in a failure.
    pub async fn spawn(
        mut command: Command,
        name: &str,
        env: &[(&str, String)],
        label: Option<&'static str>,
    ) -> Self {
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", if label.is_some() { "info" } else { "warn" })
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let output = Arc::new(Mutex::new(String::new()));
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let stderr = collect(child.stderr.take().expect("stderr"), output.clone(), label);
        let url = tokio::time::timeout(Duration::from_secs(120), async {
            while let Ok(Some(line)) = stdout.next_line().await {
                output.lock().unwrap().push_str(&format!("{line}\n"));
                let announced = line
                    .strip_prefix("Serving HTTP on ")
                    .or_else(|| line.strip_prefix("Serving HTTPS on "));
                if let Some(rest) = announced {
                    return Some(rest.trim_end_matches('/').to_string());
                }
            }
            None
        })
        .await
        .ok()
        .flatten();
        let Some(url) = url else {
            // Its last words say why: wait for them before telling.
            let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            let _ = tokio::time::timeout(Duration::from_secs(5), stderr).await;
            let printed = output.lock().unwrap().clone();
            panic!("{name} did not start (exit: {status:?}):\n{printed}");
        };
        // Kept with the rest (the gateway's access log comes this way), up to a bound: a
        // benchmark's millions of lines are read and dropped.
        let later = output.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                let mut output = later.lock().unwrap();
                if output.len() < MAX_KEPT_STDOUT {
                    output.push_str(&line);
                    output.push('\n');
                }
            }
        });
        ServerProcess { child, url, output }
    }

    /// Sends it SIGTERM, which starts its graceful shutdown, without waiting; whether the
    /// signal was sent.
    pub fn begin_stopping(&self) -> bool {
        self.child.id().is_some_and(|pid| {
            std::process::Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .status()
                .is_ok_and(|status| status.success())
        })
    }

    /// Stops it gracefully (SIGTERM) and waits for a clean exit.
    pub async fn stop(mut self) {
        self.begin_stopping();
        let exited = tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await;
        assert!(
            matches!(exited, Ok(Ok(status)) if status.success()),
            "server did not shut down cleanly: {exited:?}\n{}",
            self.output.lock().unwrap()
        );
    }

    /// Kills it (SIGKILL, as `kill -9` does) and waits until it is gone.
    pub async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// Stops it with SIGTERM and waits for it to exit, whatever its exit status.
    pub async fn terminate(mut self) -> Option<std::process::ExitStatus> {
        self.begin_stopping();
        match tokio::time::timeout(Duration::from_secs(60), self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => None,
        }
    }

    /// The URL a `<what> on http://ADDR/` line announced (e.g. `Serving operations`).
    pub fn announced(&self, what: &str) -> Option<String> {
        let prefix = format!("{what} on ");
        self.output().lines().find_map(|line| {
            let url = line.strip_prefix(&prefix)?;
            Some(url.trim_end_matches('/').to_string())
        })
    }

    /// Everything it printed so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or_default()
    }
}

/// A running control plane.
pub type ControlPlane = ServerProcess;

/// Starts a control plane on a free port.
pub async fn start_control_plane(
    backend: &Backend,
    data_dir: &Path,
    extra: &[(&str, String)],
) -> ControlPlane {
    let mut env = vec![
        ("APIM_MGMT_ADDR", "127.0.0.1:0".to_string()),
        ("APIM_DATA_DIR", data_dir.display().to_string()),
        ("APIM_DATABASE_URL", backend.database_url().to_string()),
        ("APIM_DATABASE_MAX_CONNECTIONS", TEST_POOL_SIZE.to_string()),
        ("APIM_ADMIN_PASSWORD", ADMIN_PASSWORD.to_string()),
        ("APIM_EGRESS_ALLOW", TEST_EGRESS_ALLOW.to_string()),
    ];
    env.extend(extra.iter().cloned());
    ServerProcess::start(&binary("control-plane"), &env).await
}

/// A control plane in this process on `backend`, with its data in `data_dir`, set as
/// [`start_control_plane`] sets a spawned one; a client that answers through its router.
/// Its compile loop and the tasks behind it run on the caller's runtime.
pub async fn in_process_control_plane(backend: &Backend, data_dir: &Path) -> Client {
    use clap::Parser as _;
    let mut config = control_plane::config::Config::parse_from(["control-plane"]);
    config.mgmt_addr = "127.0.0.1:9763".parse().expect("an address");
    config.data_dir = data_dir.to_path_buf();
    config.database_url = backend.database_url().to_string();
    config.database_max_connections = TEST_POOL_SIZE;
    config.admin_password = Some(ADMIN_PASSWORD.to_string());
    config.egress_allow = TEST_EGRESS_ALLOW.to_string();
    // Rules, not argon2's cost, are under test here; the binaries keep the standard cost.
    config.password_cost = control_plane::config::PasswordCost::Minimal;
    let app = control_plane::server::in_process(config)
        .await
        .expect("the control plane starts in process");
    Client::in_process(app)
}

/// Connections each test control plane holds to PostgreSQL: tests run side by side and
/// some start several control planes, all on one server whose stock limit is 100
/// connections; a test's load needs few.
pub const TEST_POOL_SIZE: u32 = 4;

/// Where the tests' (and the local stack's) APIs may point and their gateways may go:
/// their backends, all on 127.0.0.1 (other loopback addresses, link-local ones and the
/// names of this machine stay refused; so do the control plane's and the gateway's own
/// listeners, whatever the list says).
pub const TEST_EGRESS_ALLOW: &str = "127.0.0.1";

/// Starts an edge gateway for a control plane, on `addr` (e.g. `127.0.0.1:0`), with extra
/// component variables (`name=value`).
pub async fn start_edge_gateway(
    control_plane: &ControlPlane,
    data_dir: &Path,
    addr: &str,
    vars: &[&str],
) -> ServerProcess {
    start_edge_gateway_echoing(control_plane, data_dir, addr, vars, None).await
}

/// Like [`start_edge_gateway`], also echoing its log lines to stderr behind `label`.
pub async fn start_edge_gateway_echoing(
    control_plane: &ControlPlane,
    data_dir: &Path,
    addr: &str,
    vars: &[&str],
    label: Option<&'static str>,
) -> ServerProcess {
    edge_gateway(control_plane, data_dir, addr, vars, None, label, &[]).await
}

/// Like [`start_edge_gateway`], with more of edge-gateway's settings (`APIM_*`).
pub async fn start_edge_gateway_with(
    control_plane: &ControlPlane,
    data_dir: &Path,
    addr: &str,
    vars: &[&str],
    settings: &[(&'static str, String)],
) -> ServerProcess {
    edge_gateway(control_plane, data_dir, addr, vars, None, None, settings).await
}

/// edge-gateway settings that host the gateway's WASIp3 artefact (`wasi:http/handler@0.3.0`,
/// instances reused as on Spin 4.1), forwarding through `wasi:http` as it must: the
/// artefact has no `apim:gateway/policy` export.
pub fn p3_settings() -> Vec<(&'static str, String)> {
    vec![
        (
            "APIM_GATEWAY_COMPONENT",
            gateway_p3_component().display().to_string(),
        ),
        ("APIM_HOST_FORWARDING", "false".to_string()),
    ]
}

/// Where the developer-management facade listens and which SOAP service it fronts.
#[derive(Debug, Clone)]
pub struct FacadeSetup {
    /// Listener of the facade, `host:port`.
    pub addr: String,
    /// The SOAP endpoint, e.g. `http://127.0.0.1:8291/ws`.
    pub soap_url: String,
    /// Basic credentials for it.
    pub soap_user: String,
    /// Basic password.
    pub soap_password: String,
}

/// Starts an edge gateway that also hosts the developer-management facade.
pub async fn start_edge_gateway_with_facade(
    control_plane: &ControlPlane,
    data_dir: &Path,
    addr: &str,
    facade: &FacadeSetup,
    label: Option<&'static str>,
) -> ServerProcess {
    start_edge_gateway_with_facade_and(control_plane, data_dir, addr, facade, label, &[]).await
}

/// Like [`start_edge_gateway_with_facade`], with more of edge-gateway's settings.
pub async fn start_edge_gateway_with_facade_and(
    control_plane: &ControlPlane,
    data_dir: &Path,
    addr: &str,
    facade: &FacadeSetup,
    label: Option<&'static str>,
    settings: &[(&'static str, String)],
) -> ServerProcess {
    edge_gateway(
        control_plane,
        data_dir,
        addr,
        &[],
        Some(facade),
        label,
        settings,
    )
    .await
}

/// Like [`start_edge_gateway_with_facade`], hosting both components' WASIp3 artefacts
/// ([`p3_settings`]).
pub async fn start_edge_gateway_with_p3_facade(
    control_plane: &ControlPlane,
    data_dir: &Path,
    addr: &str,
    facade: &FacadeSetup,
) -> ServerProcess {
    let mut settings = p3_settings();
    let component = dev_facade_p3_component().display().to_string();
    settings.push((
        "APIM_EXTRA_COMPONENTS",
        format!("{}={component}", facade.addr),
    ));
    edge_gateway(
        control_plane,
        data_dir,
        addr,
        &[],
        Some(facade),
        None,
        &settings,
    )
    .await
}

async fn edge_gateway(
    control_plane: &ControlPlane,
    data_dir: &Path,
    addr: &str,
    vars: &[&str],
    facade: Option<&FacadeSetup>,
    label: Option<&'static str>,
    extra_env: &[(&'static str, String)],
) -> ServerProcess {
    let all_vars: Vec<String> = vars.iter().map(|v| v.to_string()).collect();
    let settings = [
        ("APIM_GATEWAY_ADDR", addr.to_string()),
        // Every gateway of the run but the first starts without compiling the components.
        (
            "APIM_COMPILE_CACHE_DIR",
            binary_dir().join("compile-cache").display().to_string(),
        ),
    ];
    let mut env = gateway_env(control_plane, data_dir, &settings).await;
    if let Some(facade) = facade {
        // The facade's own variables: it sees none of the gateway's, nor they its.
        let facade_vars = [
            format!("dev_soap_url={}", facade.soap_url),
            format!("dev_soap_user={}", facade.soap_user),
            format!("dev_soap_password={}", facade.soap_password),
        ];
        env.push(("APIM_EXTRA_VARS", facade_vars.join(",")));
        let component = dev_facade_component().display().to_string();
        env.push((
            "APIM_EXTRA_COMPONENTS",
            format!("{}={component}", facade.addr),
        ));
    }
    if !all_vars.is_empty() {
        env.push(("APIM_VARS", all_vars.join(",")));
    }
    env.extend(extra_env.iter().cloned());
    let gateway = ServerProcess::start_echoing(&binary("edge-gateway"), &env, label).await;
    if let Some(facade) = facade {
        wait_for_listener(&facade.addr).await;
    }
    gateway
}

/// What an edge-gateway needs to attach to `control_plane` (its component, the control
/// plane's address, manifest key and gateway secret, the tests' egress allowance), then
/// `settings`.
pub async fn gateway_env(
    control_plane: &ControlPlane,
    data_dir: &Path,
    settings: &[(&'static str, String)],
) -> Vec<(&'static str, String)> {
    let key = Client::new(&control_plane.url)
        .get("/internal/gateway/manifest-key", "")
        .await
        .expect(200);
    let x = key.body["keys"][0]["x"]
        .as_str()
        .expect("manifest key")
        .to_string();
    let secret = gateway_secret(data_dir);
    let mut env = vec![
        (
            "APIM_GATEWAY_COMPONENT",
            gateway_component().display().to_string(),
        ),
        ("APIM_CONTROL_PLANE_URL", control_plane.url.clone()),
        ("APIM_MANIFEST_PUBLIC_KEY", x),
        ("APIM_GATEWAY_SECRET", secret),
        // The tests' backends listen on loopback, which the default policy refuses.
        ("APIM_EGRESS_ALLOW", TEST_EGRESS_ALLOW.to_string()),
    ];
    env.extend(settings.iter().cloned());
    env
}

/// Extra listeners come up right after the main one has been announced.
async fn wait_for_listener(addr: &str) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("nothing listens on {addr}");
}

/// Calls until `done` holds (pushes are asynchronous), failing after 15 s.
pub async fn eventually(
    gw: &Client,
    method: reqwest::Method,
    path: &str,
    token: &str,
    done: impl Fn(&Reply) -> bool,
) -> Reply {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let reply = gw.send(gw.request(method.clone(), path, token)).await;
        if done(&reply) {
            return reply;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up on {method} {path}: {} {}",
            reply.status,
            reply.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `check` holds, asking every 50 ms, and fails naming `what` after `within`.
pub async fn wait_until(what: &str, within: Duration, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Lowest port [`free_port`] hands out.
const FREE_PORTS_FROM: u16 = 10_000;

/// A port that was free a moment ago (for servers that must know each other's address
/// before they listen), never the same twice in this process. It lies below the kernel's
/// ephemeral range where there is room: ports bound as `:0` and the local ports of
/// outgoing connections come from that range, so one picked there could be taken by
/// another test's server or connection before its own server binds it.
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let span = u32::from(ephemeral_ports_from().saturating_sub(FREE_PORTS_FROM));
    // Where to start looking, apart for each process running tests at once.
    let start = (uuid::Uuid::new_v4().as_u128() % u128::from(span.max(1))) as u32;
    let mut handed_out = HANDED_OUT.lock().unwrap();
    let free = (0..span)
        .map(|step| FREE_PORTS_FROM + ((start + step) % span) as u16)
        .find(|port| {
            !handed_out.contains(port) && std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok()
        })
        .unwrap_or_else(any_free_port);
    handed_out.push(free);
    free
}

/// A port the kernel hands out as free (from its ephemeral range).
fn any_free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// The first port of the kernel's ephemeral range (Linux's default when it cannot be read).
fn ephemeral_ports_from() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The built gateway component; builds the components (and the host binaries, in the
/// profile this executable was built with) once per process.
pub fn gateway_component() -> PathBuf {
    built_components().join("gateway.wasm")
}

/// The built developer-management facade component (see [`gateway_component`]).
pub fn dev_facade_component() -> PathBuf {
    built_components().join("dev_facade.wasm")
}

/// The built WASIp3 artefact of the gateway (`wasi:http/handler@0.3.0`); builds both
/// components' WASIp3 artefacts once per process, after the WASI 0.2 ones.
pub fn gateway_p3_component() -> PathBuf {
    built_p3_components().join("gateway.wasm")
}

/// The built WASIp3 artefact of the facade (see [`gateway_p3_component`]).
pub fn dev_facade_p3_component() -> PathBuf {
    built_p3_components().join("dev_facade.wasm")
}

/// Builds the WASIp3 artefacts once: the same build as the WASI 0.2 components' with the
/// feature `p3`, into a target directory of their own (`<target>/p3`) so that they do not
/// replace the WASI 0.2 ones; the directory of their `.wasm` files.
fn built_p3_components() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            built_components();
            let dir = target_dir().join("p3");
            let dir_arg = dir.display().to_string();
            let mut args = COMPONENTS_BUILD.to_vec();
            args.extend([
                "--features",
                "gateway/p3,dev-facade/p3",
                "--target-dir",
                &dir_arg,
            ]);
            run_cargo(&args);
            dir.join("wasm32-wasip2/release")
        })
        .clone()
}

/// The manifest that deploys Spin's floor for the benchmark (`tools/spin-floor`: a WASIp3
/// component that only forwards), once it is built beside the WASIp3 artefacts.
pub fn spin_floor_manifest() -> PathBuf {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        ensure_wasm_target();
        let dir = target_dir().join("p3").display().to_string();
        run_cargo(&[
            "build",
            "-p",
            "spin-floor",
            "--target",
            "wasm32-wasip2",
            "--release",
            "--target-dir",
            &dir,
        ]);
    });
    workspace_root().join("tools/spin-floor/spin.toml")
}

/// A tenant's policy component built from `policies/<name>` (`add-header`, `hostile`,
/// `outbound`); builds them all once per process.
pub fn policy_component(name: &str) -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        ensure_wasm_target();
        run_cargo(&POLICIES_BUILD);
        target_dir().join("wasm32-wasip2/release")
    });
    dir.join(format!("{}_policy.wasm", name.replace('-', "_")))
}

/// The build of the policies under `policies/` for `wasm32-wasip2`.
const POLICIES_BUILD: [&str; 10] = [
    "build",
    "-p",
    "add-header-policy",
    "-p",
    "hostile-policy",
    "-p",
    "outbound-policy",
    "--target",
    "wasm32-wasip2",
    "--release",
];

/// The build of both components for `wasm32-wasip2` (the alias in `.cargo/config.toml`).
const COMPONENTS_BUILD: [&str; 1] = ["build-components"];

/// Builds both components and the host binaries once; the directory of the `.wasm` files.
fn built_components() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            ensure_wasm_target();
            run_cargo(&COMPONENTS_BUILD);
            if binary_dir().ends_with("release") {
                // The workspace's feature set, which `cargo build --release --workspace`
                // resolved too: the binaries and `legacy-soap` in one build.
                run_cargo(&["build", "--release", "--workspace"]);
            } else {
                // The same feature set `cargo test --workspace` resolved: nothing rebuilds.
                run_cargo(&["build", "--workspace", "--all-targets"]);
            }
            target_dir().join("wasm32-wasip2/release")
        })
        .clone()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` where set (a worktree sharing a build),
/// else the workspace's `target`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    }
}

fn run_cargo(args: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(&cargo)
        .args(args)
        .current_dir(workspace_root())
        .status()
        .expect("run cargo");
    assert!(status.success(), "cargo {} failed", args.join(" "));
}

/// Reads `stream` into `into` line by line until it closes (the task then ends).
fn collect(
    stream: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    into: Arc<Mutex<String>>,
    echo: Option<&'static str>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(label) = echo {
                eprintln!("[{label}] {line}");
            }
            into.lock().unwrap().push_str(&format!("{line}\n"));
        }
    })
}

/// A response: status and body (JSON when it parses, else a string; Null when empty).
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body.
    pub body: Value,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The HTTP version it came in.
    pub version: reqwest::Version,
}

/// The code of a WSO2 fault body (`<ams:code>900908</ams:code>`, any prefix); empty
/// when the body is not one.
pub fn fault_code(body: &str) -> &str {
    body.split(":code>")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or_default()
}

impl Reply {
    /// The reply of `text`: JSON when it parses, else the text; `null` when empty.
    fn read(
        status: u16,
        headers: reqwest::header::HeaderMap,
        version: reqwest::Version,
        text: String,
    ) -> Self {
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply {
            status,
            body,
            headers,
            version,
        }
    }

    /// The code of the WSO2 fault the body holds (see [`fault_code`]).
    pub fn fault_code(&self) -> &str {
        fault_code(self.body.as_str().unwrap_or_default())
    }

    /// A response header's first value, if it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// A string member of the body.
    pub fn str(&self, key: &str) -> String {
        self.body[key]
            .as_str()
            .unwrap_or_else(|| panic!("no string '{key}' in {}", self.body))
            .to_string()
    }

    /// Asserts the status, showing the body when it differs.
    #[track_caller]
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.body
        );
        self
    }

    /// Asserts a WSO2 error body with this status and a description containing `text`.
    #[track_caller]
    pub fn expect_error(self, status: u16, text: &str) -> Self {
        let reply = self.expect(status);
        assert_eq!(reply.body["code"], status, "error code in {}", reply.body);
        for member in ["message", "description", "moreInfo"] {
            assert!(
                reply.body[member].is_string(),
                "{member} missing in {}",
                reply.body
            );
        }
        assert!(
            reply.body["error"].is_array(),
            "error list missing in {}",
            reply.body
        );
        let all = reply.body.to_string();
        assert!(all.contains(text), "expected '{text}' in {all}");
        reply
    }

    /// Asserts an OAuth error (RFC 6749 §5.2) with this status and code.
    #[track_caller]
    pub fn expect_oauth_error(self, status: u16, error: &str) -> Self {
        let reply = self.expect(status);
        assert_eq!(reply.body["error"], error, "in {}", reply.body);
        assert!(reply.body["error_description"].is_string());
        reply
    }
}

/// An HTTP client for one control plane.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// Base URL.
    pub base: String,
    /// The control plane's router when it runs in this process ([`Client::in_process`]).
    app: Option<axum::Router>,
}

/// The base URL of [`Client::in_process`]: never dialled, only split off again.
const IN_PROCESS_BASE: &str = "http://in-process";

/// `request` answered by `app` in this process, its body streamed as the listener would.
async fn exchange_in_process(app: &axum::Router, request: reqwest::Request) -> Reply {
    let answer = answer_in_process(app, request).await;
    let text = String::from_utf8_lossy(&answer.bytes).into_owned();
    Reply::read(answer.status, answer.headers, answer.version, text)
}

/// An answer as it came, its body as bytes (a download), redirects not followed.
#[derive(Debug)]
pub struct Download {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub version: reqwest::Version,
    pub bytes: Vec<u8>,
}

impl Download {
    /// A header's value, empty when absent.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

async fn answer_in_process(app: &axum::Router, mut request: reqwest::Request) -> Download {
    use tower::ServiceExt as _;
    let url = request.url();
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    let body = request
        .body_mut()
        .take()
        .map_or_else(axum::body::Body::empty, axum::body::Body::new);
    let mut built = axum::http::Request::builder()
        .method(request.method().clone())
        .uri(target)
        .body(body)
        .expect("request converts");
    *built.headers_mut() = request.headers().clone();
    let response = app
        .clone()
        .oneshot(built)
        .await
        .expect("the router answers");
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("response body");
    Download {
        status: parts.status.as_u16(),
        headers: parts.headers,
        version: parts.version,
        bytes: bytes.to_vec(),
    }
}

/// A reqwest client that trusts the tests' listener authority besides the Mozilla roots
/// ([`tls::Listening`]), for calls outside [`Client`].
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .add_root_certificate(tls::listener_root())
        .build()
        .expect("HTTP client")
}

/// Publisher base path.
pub const PUBLISHER: &str = "/api/am/publisher/v0.14";
/// Store base path.
pub const STORE: &str = "/api/am/store/v0.14";

impl Client {
    /// A client for this base URL; of an `https://` one, trusting the tests' listener
    /// authority ([`tls::Listening`]), HTTP/2 or HTTP/1.1 as ALPN chooses.
    pub fn new(base: &str) -> Self {
        Self::with(base, reqwest::Client::builder())
    }

    /// A client for this base URL built from `builder` (e.g. `.http1_only()`, or
    /// `.http2_prior_knowledge()` for h2c), trusting the tests' listener authority.
    pub fn with(base: &str, builder: reqwest::ClientBuilder) -> Self {
        let builder = if base.starts_with("https://") {
            builder.add_root_certificate(tls::listener_root())
        } else {
            builder
        };
        Client {
            http: builder.build().expect("HTTP client"),
            base: base.to_string(),
            app: None,
        }
    }

    /// A client of a control plane in this process: each request goes to `app` as the
    /// listener would hand it over (tower's `oneshot`), without a socket.
    pub fn in_process(app: axum::Router) -> Self {
        Client {
            http: reqwest::Client::new(),
            base: IN_PROCESS_BASE.to_string(),
            app: Some(app),
        }
    }

    /// Sends a request and reads the reply.
    /// Panics when the answer is not what WSO2's contract documents ([`contract::check`]),
    /// or not what the control plane's own OpenAPI document describes ([`openapi::check`]).
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        let request = request.build().expect("request builds");
        let (method, path) = (request.method().clone(), request.url().path().to_string());
        let reply = self.exchange(request).await;
        if let Err(mismatch) = contract::check(method.as_str(), &path, reply.status, &reply.body) {
            panic!("{mismatch}");
        }
        let content_type = reply
            .headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        if let Err(mismatch) = openapi::check(
            method.as_str(),
            &path,
            reply.status,
            content_type,
            &reply.body,
        ) {
            panic!("{mismatch}");
        }
        reply
    }

    async fn exchange(&self, request: reqwest::Request) -> Reply {
        if let Some(app) = &self.app {
            return exchange_in_process(app, request).await;
        }
        let response = self.http.execute(request).await.expect("request failed");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let version = response.version();
        let text = response.text().await.expect("response body");
        Reply::read(status, headers, version, text)
    }

    /// The URL of `path` on this client's base.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// GET `path` (with a bearer token unless empty) as a download: the body's bytes and
    /// the headers as they came, a redirect answered rather than followed. Not checked
    /// against the contracts (a file is no JSON).
    pub async fn download(&self, path: &str, token: &str) -> Download {
        let mut request = reqwest::Client::new().get(self.url(path));
        if !token.is_empty() {
            request = request.bearer_auth(token);
        }
        self.download_request(request).await
    }

    /// The answer to `request` as bytes, redirects not followed (built with
    /// [`Client::request`] or any client: it is sent as built).
    pub async fn download_request(&self, request: reqwest::RequestBuilder) -> Download {
        let request = request.build().expect("request builds");
        if let Some(app) = &self.app {
            return answer_in_process(app, request).await;
        }
        let direct = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("HTTP client");
        let response = direct.execute(request).await.expect("request failed");
        Download {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            version: response.version(),
            bytes: response.bytes().await.expect("response body").to_vec(),
        }
    }

    /// A request with a bearer token (none when `token` is empty).
    pub fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
    ) -> reqwest::RequestBuilder {
        let request = self.http.request(method, self.url(path));
        if token.is_empty() {
            request
        } else {
            request.bearer_auth(token)
        }
    }

    /// GET with a bearer token.
    pub async fn get(&self, path: &str, token: &str) -> Reply {
        self.send(self.request(reqwest::Method::GET, path, token))
            .await
    }

    /// POST of a JSON body with a bearer token.
    pub async fn post_json(&self, path: &str, token: &str, body: &Value) -> Reply {
        self.send(self.request(reqwest::Method::POST, path, token).json(body))
            .await
    }

    /// PUT of a JSON body with a bearer token.
    pub async fn put_json(&self, path: &str, token: &str, body: &Value) -> Reply {
        self.send(self.request(reqwest::Method::PUT, path, token).json(body))
            .await
    }

    /// POST without a body.
    pub async fn post_empty(&self, path: &str, token: &str) -> Reply {
        self.send(self.request(reqwest::Method::POST, path, token))
            .await
    }

    /// DELETE with a bearer token.
    pub async fn delete(&self, path: &str, token: &str) -> Reply {
        self.send(self.request(reqwest::Method::DELETE, path, token))
            .await
    }

    /// Dynamic client registration with HTTP Basic.
    pub async fn register(&self, user: &str, password: &str, client_name: &str) -> Reply {
        let body = serde_json::json!({
            "callbackUrl": "www.google.lk",
            "clientName": client_name,
            "owner": user,
            "grantType": "password refresh_token",
            "saasApp": true,
        });
        self.send(
            self.http
                .post(self.url("/client-registration/v0.14/register"))
                .basic_auth(user, Some(password))
                .json(&body),
        )
        .await
    }

    /// A token request with client credentials by HTTP Basic.
    pub async fn token(
        &self,
        client_id: &str,
        client_secret: &str,
        form: &[(&str, &str)],
    ) -> Reply {
        self.token_at("/oauth2/token", client_id, client_secret, form)
            .await
    }

    /// A token request at `path` (`/token` on a gateway).
    pub async fn token_at(
        &self,
        path: &str,
        client_id: &str,
        client_secret: &str,
        form: &[(&str, &str)],
    ) -> Reply {
        self.send(
            self.http
                .post(self.url(path))
                .basic_auth(client_id, Some(client_secret))
                .form(form),
        )
        .await
    }

    /// Introspects `token` (RFC 7662) as a gateway does, with the gateway secret
    /// `gateway_secret` (see [`gateway_secret`]).
    pub async fn introspect(&self, gateway_secret: &str, token: &str) -> Reply {
        self.send(
            self.http
                .post(self.url("/oauth2/introspect"))
                .bearer_auth(gateway_secret)
                .form(&[("token", token)]),
        )
        .await
    }

    /// A password grant for `user` through a registered client (a registration reply).
    pub async fn password_token(
        &self,
        client: &Reply,
        user: &str,
        password: &str,
        scope: &str,
    ) -> Reply {
        self.token(
            &client.str("clientId"),
            &client.str("clientSecret"),
            &[
                ("grant_type", "password"),
                ("username", user),
                ("password", password),
                ("scope", scope),
            ],
        )
        .await
    }

    /// Registers a client for `user` and returns a password-grant access token with `scope`.
    pub async fn login(&self, user: &str, password: &str, scope: &str) -> String {
        let client = self
            .register(user, password, "e2e_client")
            .await
            .expect(200);
        self.password_token(&client, user, password, scope)
            .await
            .expect(200)
            .str("access_token")
    }

    /// Adds a user through the admin API.
    pub async fn add_user(&self, username: &str, password: &str, roles: &[&str]) {
        let user = serde_json::json!({"username": username, "password": password, "roles": roles});
        self.basic(
            reqwest::Method::POST,
            "/api/am/admin/v0.14/users",
            ("admin", ADMIN_PASSWORD),
            Some(&user),
        )
        .await
        .expect(201);
    }

    /// A request with HTTP Basic credentials and an optional JSON body.
    pub async fn basic(
        &self,
        method: reqwest::Method,
        path: &str,
        (user, password): (&str, &str),
        body: Option<&Value>,
    ) -> Reply {
        let request = self
            .http
            .request(method, self.url(path))
            .basic_auth(user, Some(password));
        let request = match body {
            Some(body) => request.json(body),
            None => request,
        };
        self.send(request).await
    }
}

/// The gateway secret of the control plane whose data directory is `data_dir`.
pub fn gateway_secret(data_dir: &Path) -> String {
    std::fs::read_to_string(data_dir.join("gateway-secret"))
        .expect("gateway secret")
        .trim()
        .to_string()
}

/// The claims of an access token the control plane issued, a JWT (read without verifying
/// it) or an opaque token (introspected with the gateway secret of `data_dir`).
pub async fn token_claims(api: &Client, data_dir: &Path, token: &str) -> Value {
    if token.contains('.') {
        return jwt_claims(token);
    }
    let answer = api
        .introspect(&gateway_secret(data_dir), token)
        .await
        .expect(200);
    assert_eq!(
        answer.body["active"], true,
        "inactive token: {}",
        answer.body
    );
    answer.body
}

/// The claims of a JWT, read without verifying it.
pub fn jwt_claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("JWT payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url payload");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

/// The header of a JWT.
pub fn jwt_header(token: &str) -> Value {
    let header = token.split('.').next().expect("JWT header");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .expect("base64url header");
    serde_json::from_slice(&bytes).expect("JSON header")
}

/// The API record of spec 2.3 (harness/fixtures/api.json).
pub fn spec_api_record() -> Value {
    serde_json::from_str(include_str!("../fixtures/api.json")).expect("fixture api.json")
}

/// Installs the `wasm32-wasip2` target when the toolchain lacks it: with the machine's
/// bundled copy (`../shared/toolchain/ensure-wasm32-wasip2`) where there is one, else rustup.
fn ensure_wasm_target() {
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if Path::new(&sysroot)
        .join("lib/rustlib/wasm32-wasip2/lib")
        .exists()
    {
        return;
    }
    let bundled = workspace_root().join("../shared/toolchain/ensure-wasm32-wasip2");
    let status = if bundled.exists() {
        std::process::Command::new("bash").arg(&bundled).status()
    } else {
        std::process::Command::new("rustup")
            .args(["target", "add", "wasm32-wasip2"])
            .status()
    };
    assert!(
        status.is_ok_and(|s| s.success()),
        "the wasm32-wasip2 target is missing and could not be installed"
    );
}

/// A fresh temporary directory.
pub fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("apim-e2e-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// POSTs a JSON body announced as `length` bytes, over a raw connection, without sending
/// it all: a server that refuses it by its Content-Length answers before reading it.
/// Returns the status and the response body.
pub async fn oversized_post(base: &str, path: &str, token: &str, length: usize) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n{{\"description\":\""
    );
    stream.write_all(head.as_bytes()).await.expect("send head");
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (status, body)
}

/// A real HTTP backend on a free port that echoes each request as JSON
/// (`method`, `path`, `query`, `headers`, `body`, and `hit`, its count of requests so
/// far); paths under `/slow` answer after 3 s. A request's `x-echo-vary` and
/// `x-echo-cache-control` come back as the answer's `Vary` and `Cache-Control`.
pub struct EchoBackend {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Requests it has served.
    pub hits: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl EchoBackend {
    /// Starts it.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind backend");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let app = echo_app(hits.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        EchoBackend { url, hits, task }
    }

    /// Starts it behind TLS, `https://127.0.0.1:<port>`, with a certificate for
    /// 127.0.0.1 from `authority`.
    pub async fn start_tls(authority: &tls::Authority) -> Self {
        Self::serving_tls(authority.server_config()).await
    }

    /// The same, speaking TLS 1.2 only.
    pub async fn start_tls12(authority: &tls::Authority) -> Self {
        Self::serving_tls(authority.tls12_server_config()).await
    }

    async fn serving_tls(
        config: (
            Arc<rustls::ServerConfig>,
            Arc<std::sync::atomic::AtomicUsize>,
        ),
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind backend");
        let url = format!("https://{}", listener.local_addr().expect("addr"));
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let app = echo_app(hits.clone());
        let task = tokio::spawn(tls::serve(listener, config, app));
        EchoBackend { url, hits, task }
    }
}

/// The echo backend's routes, counting into `hits`.
fn echo_app(hits: Arc<std::sync::atomic::AtomicUsize>) -> axum::Router {
    axum::Router::new().fallback(move |request: axum::extract::Request| {
        let counter = hits.clone();
        async move { echo(request, &counter).await }
    })
}

impl Drop for EchoBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn echo(
    request: axum::extract::Request,
    hits: &std::sync::atomic::AtomicUsize,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let hit = hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    let (parts, body) = request.into_parts();
    if parts.uri.path().starts_with("/slow") {
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let headers: serde_json::Map<String, Value> = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                Value::String(v.to_str().unwrap_or_default().to_string()),
            )
        })
        .collect();
    let mut response = axum::Json(serde_json::json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query().unwrap_or_default(),
        "headers": headers,
        "body": String::from_utf8_lossy(&body),
        "hit": hit,
    }))
    .into_response();
    for (asked, answered) in [
        ("x-echo-vary", axum::http::header::VARY),
        ("x-echo-cache-control", axum::http::header::CACHE_CONTROL),
    ] {
        if let Some(value) = parts.headers.get(asked) {
            response.headers_mut().insert(answered, value.clone());
        }
    }
    response
}

/// An answer read off a raw connection.
#[derive(Debug)]
pub struct RawReply {
    /// Status code (0 when none could be read).
    pub status: u16,
    /// Header names (lower-case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: String,
}

impl RawReply {
    /// The code of the WSO2 fault the body holds (see [`fault_code`]).
    pub fn fault_code(&self) -> &str {
        fault_code(&self.body)
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// Sends `method target` with `headers` and `body` as written, byte for byte, over a
/// fresh connection (clients normalise paths; attackers do not), with `Connection: close`.
pub async fn raw_request(
    base: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> RawReply {
    let host = base.trim_start_matches("http://");
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut message = head.into_bytes();
    message.extend_from_slice(body);
    raw_exchange(base, &message).await
}

/// Sends `message`, a whole request as written by hand (head and body, framed as its head
/// says, `Connection: close`), in one write, and reads the answer until the connection
/// closes. A server that answers before it has read everything (a refusal from the head)
/// may break off the write: the answer is read all the same.
pub async fn raw_exchange(base: &str, message: &[u8]) -> RawReply {
    exchange(base, message, false).await
}

/// As [`raw_exchange`], but the client shuts its side of the connection once the request
/// is written (as `nc -N` does), and then reads the answer.
pub async fn raw_exchange_half_closed(base: &str, message: &[u8]) -> RawReply {
    exchange(base, message, true).await
}

async fn exchange(base: &str, message: &[u8], half_close: bool) -> RawReply {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let _ = stream.write_all(message).await;
    if half_close {
        stream.shutdown().await.expect("shut the client's side");
    }
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut response)).await;
    parse_raw_reply(&response)
}

fn parse_raw_reply(bytes: &[u8]) -> RawReply {
    let text = String::from_utf8_lossy(bytes);
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    RawReply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size =
            usize::from_str_radix(size.split(';').next().unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_below_the_ephemeral_range() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        let from = ephemeral_ports_from();
        if from > FREE_PORTS_FROM {
            assert!(
                ports.iter().all(|p| (FREE_PORTS_FROM..from).contains(p)),
                "{ports:?}"
            );
        }
    }
}
