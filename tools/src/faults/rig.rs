//! The platform a fault case breaks: a control plane on a fixed loopback port (so that
//! a restarted one is the same address and token issuer), an edge gateway attached to it,
//! an echo backend, and an administrator's token; each process can be killed, stopped and
//! started again on the same data and address. The gateway's listening socket is the
//! rig's, passed to each gateway process as a supervisor would (see [`super::handover`]),
//! and its compiled component is cached in the data directory, as a deployment's would be.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::handover::{GatewayProcess, SharedSocket};
use harness::gateway_env;
use harness::stack::{Core, api_record};
use harness::steps::{Steps, TokenType};
use harness::{Backend, Client, ControlPlane, EchoBackend};

/// When a gateway replaced another (see [`Rig::hand_over_gateway`]).
#[derive(Debug, Clone, Copy)]
pub struct HandOver {
    /// The new gateway was started.
    pub started: Instant,
    /// It announced that it serves.
    pub serving: Instant,
    /// The old one got SIGTERM.
    pub signalled: Instant,
    /// The old one had exited.
    pub exited: Instant,
    /// How it exited (`None`: not within a minute).
    pub exit: Option<std::process::ExitStatus>,
}

/// Control plane, gateway and backend, each replaceable.
pub struct Rig {
    /// The control plane's database.
    pub database: Backend,
    /// Its data directory.
    pub data_dir: PathBuf,
    control_plane_env: Vec<(&'static str, String)>,
    /// The control plane, while it runs.
    pub control_plane: Option<ControlPlane>,
    /// `host:port` the gateway listens on, whichever process it is.
    pub gateway_addr: String,
    /// The gateway's listening socket, held across gateway processes.
    gateway_socket: SharedSocket,
    gateway_settings: Vec<(&'static str, String)>,
    /// The gateway, while it runs.
    pub gateway: Option<GatewayProcess>,
    /// How long the first gateway took from its start until it served (it compiled the
    /// component, into an empty cache).
    pub first_gateway_start: Duration,
    /// The backend every API points at.
    pub backend: EchoBackend,
    /// Client of the management listener.
    pub mgmt: Client,
    /// Client of the gateway.
    pub gw: Client,
    /// An administrator's token with every management scope (the control plane's own).
    pub admin: String,
}

impl Rig {
    /// Starts a control plane on `database` and a gateway with `gateway_settings`
    /// (edge-gateway's `APIM_*`), and logs in as the administrator.
    pub async fn start(database: Backend, gateway_settings: &[(&'static str, String)]) -> Self {
        let data_dir = harness::temp_dir();
        let mgmt_addr = format!("127.0.0.1:{}", harness::free_port());
        let gateway_socket = SharedSocket::bind();
        let gateway_addr = gateway_socket.addr.clone();
        let mut gateway_settings = gateway_settings.to_vec();
        let cache = data_dir.join("compile-cache").display().to_string();
        gateway_settings.push(("APIM_COMPILE_CACHE_DIR", cache));
        let control_plane_env = vec![
            ("APIM_MGMT_ADDR", mgmt_addr),
            ("APIM_GATEWAYS", format!("http://{gateway_addr}")),
        ];
        let core = Core::start(&database, data_dir, &control_plane_env).await;
        let mut rig = Rig {
            database,
            data_dir: core.data_dir,
            control_plane_env,
            control_plane: Some(core.control_plane),
            gw: Client::new(&format!("http://{gateway_addr}")),
            gateway_addr,
            gateway_socket,
            gateway_settings,
            gateway: None,
            first_gateway_start: Duration::ZERO,
            backend: core.backend,
            mgmt: core.mgmt,
            admin: core.admin,
        };
        rig.first_gateway_start = rig.start_gateway().await;
        rig
    }

    /// Starts the control plane again on the same data, database and address; how long
    /// it took to listen.
    pub async fn start_control_plane(&mut self) -> Duration {
        assert!(self.control_plane.is_none(), "the control plane runs");
        let started = Instant::now();
        let control_plane =
            harness::start_control_plane(&self.database, &self.data_dir, &self.control_plane_env)
                .await;
        self.control_plane = Some(control_plane);
        started.elapsed()
    }

    /// `kill -9` of the control plane.
    pub async fn kill_control_plane(&mut self) {
        if let Some(control_plane) = self.control_plane.take() {
            control_plane.kill().await;
        }
    }

    /// SIGTERM to the control plane; waits for it to exit.
    pub async fn stop_control_plane(&mut self) {
        if let Some(control_plane) = self.control_plane.take() {
            control_plane.terminate().await;
        }
    }

    /// Starts a gateway on the rig's socket (the control plane must run); how long it took
    /// from its start until it served.
    pub async fn start_gateway(&mut self) -> Duration {
        assert!(self.gateway.is_none(), "the gateway runs");
        let gateway = self.new_gateway().await;
        let took = gateway.start_took();
        self.gateway = Some(gateway);
        took
    }

    /// Replaces the running gateway without a gap: a new process is started on the same
    /// socket beside it, and once the new one serves the old one gets SIGTERM and drains.
    pub async fn hand_over_gateway(&mut self) -> HandOver {
        let old = self.gateway.take().expect("a gateway runs");
        let new = self.new_gateway().await;
        let (started, serving) = (new.started, new.serving);
        self.gateway = Some(new);
        let signalled = Instant::now();
        let exit = old.terminate().await;
        HandOver {
            started,
            serving,
            signalled,
            exited: Instant::now(),
            exit,
        }
    }

    async fn new_gateway(&self) -> GatewayProcess {
        let control_plane = self.control_plane.as_ref().expect("a control plane");
        let env = gateway_env(control_plane, &self.data_dir, &self.gateway_settings).await;
        GatewayProcess::start(&self.gateway_socket, &env).await
    }

    /// `kill -9` of the gateway.
    pub async fn kill_gateway(&mut self) {
        if let Some(gateway) = self.gateway.take() {
            gateway.kill().await;
        }
    }

    /// SIGTERM to the gateway; waits for it to drain and exit, and says how it exited.
    pub async fn stop_gateway(&mut self) -> Option<std::process::ExitStatus> {
        let gateway = self.gateway.take()?;
        gateway.terminate().await
    }

    /// Creates an API of the spec's shape named `name` (context `/<name lower-case>`,
    /// version v1.0.0) pointing at the backend, no backend credentials, a `maxTps` no load
    /// here reaches, with `changes`; publishes it if asked.
    pub async fn api(&self, name: &str, changes: Value, publish: bool) -> String {
        let mut record = api_record(name, &format!("{}/", self.backend.url));
        record["endpointSecurity"] = Value::Null;
        // Load is not to be throttled (the spec's record allows 1000 per second).
        record["maxTps"] = json!({"production": 1_000_000_000u64, "sandbox": 1_000_000_000u64});
        for (key, value) in changes.as_object().expect("changes") {
            record[key] = value.clone();
        }
        let steps = Steps::new(&self.mgmt, &self.admin);
        let id = steps.create_api(&record).await.unwrap();
        if publish {
            steps.lifecycle(&id, "Publish").await.unwrap();
        }
        id
    }

    /// An Unlimited application subscribed to `apis` with PRODUCTION keys; its consumer
    /// key and secret. Its tokens are JWTs, which gateways verify alone: the cases measure
    /// what the gateway does without the control plane (an opaque token unknown to a
    /// gateway needs it, see docs/gateway.md).
    pub async fn application(&self, name: &str, apis: &[&str]) -> (String, String) {
        let steps = Steps::new(&self.mgmt, &self.admin);
        let app = steps
            .subscribed_typed_application(name, "Unlimited", TokenType::Jwt, apis)
            .await;
        let keys = app.unwrap().keys;
        (keys.key, keys.secret)
    }

    /// The restart case's API (`Steady`, published, an application subscribed to it),
    /// once the gateway serves it: its path and a token for it.
    pub async fn steady_api(&mut self) -> (String, String) {
        let api = self.api("Steady", json!({}), true).await;
        let (key, secret) = self.application("steady", &[&api]).await;
        let token = self.app_token(&key, &secret).await;
        let path = "/steady/v1.0.0/devs/alice".to_string();
        self.gateway_answers(&path, &token, Duration::from_secs(15), |s| s == 200)
            .await
            .expect("the API is served");
        (path, token)
    }

    /// A client_credentials token of an application, from the control plane.
    pub async fn app_token(&self, key: &str, secret: &str) -> String {
        self.mgmt
            .token(key, secret, &[("grant_type", "client_credentials")])
            .await
            .expect(200)
            .str("access_token")
    }

    /// Waits (up to `within`) until the gateway answers `path` with `token` as `done`
    /// says; how long that took, or `None`.
    pub async fn gateway_answers(
        &self,
        path: &str,
        token: &str,
        within: Duration,
        done: impl Fn(u16) -> bool,
    ) -> Option<Duration> {
        let started = Instant::now();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("client");
        loop {
            let mut request = http.get(format!("{}{path}", self.gw.base));
            if !token.is_empty() {
                request = request.bearer_auth(token);
            }
            if let Ok(response) = request.send().await
                && done(response.status().as_u16())
            {
                return Some(started.elapsed());
            }
            if started.elapsed() > within {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The last `lines` log lines of the control plane and of the gateway (warnings and
    /// errors: they run with `RUST_LOG=warn`), for a case that did not hold.
    pub fn logs(&self, lines: usize) -> String {
        let tail = |text: String| {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        };
        format!(
            "control plane:\n{}\ngateway:\n{}",
            self.control_plane
                .as_ref()
                .map_or(String::new(), |c| tail(c.output())),
            self.gateway
                .as_ref()
                .map_or(String::new(), |g| tail(g.output()))
        )
    }

    /// Stops everything and removes the data (and the PostgreSQL database).
    pub async fn shut_down(mut self) {
        self.kill_gateway().await;
        self.kill_control_plane().await;
        self.database.cleanup().await;
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}
