//! Gateways on a listening socket the harness holds, as a supervisor (systemd socket
//! activation) does: each edge-gateway inherits it as fd 3 with `LISTEN_FDS=1` and its own
//! `LISTEN_PID`, so a new gateway can start beside the old one, and connections made
//! while none accepts wait in the socket's backlog instead of being refused.
//!
//! The socket reaches the child as its stdin (std passes that without `unsafe`); a
//! `/bin/sh` moves it to fd 3 and `exec`s the gateway, which keeps the shell's pid: the
//! pid `LISTEN_PID` names.

use std::net::TcpListener;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::{Client, ControlPlane, TEST_EGRESS_ALLOW};

/// Moves the socket on stdin to fd 3, says so in the environment, and becomes `$0`.
const SOCKET_ACTIVATION: &str = r#"export LISTEN_FDS=1 LISTEN_PID=$$; exec "$0" 3<&0 0</dev/null"#;

/// Longest a gateway may take to announce that it serves.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Longest a SIGTERMed gateway may take to drain and exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A listening socket on 127.0.0.1 that outlives the gateways serving it.
pub struct SharedSocket {
    listener: TcpListener,
    /// `host:port`.
    pub addr: String,
}

impl SharedSocket {
    /// Binds a free port on 127.0.0.1.
    pub fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the gateway's socket");
        let addr = listener.local_addr().expect("bound address").to_string();
        SharedSocket { listener, addr }
    }

    /// A descriptor of the same socket for a child's stdin.
    fn for_child(&self) -> Stdio {
        let copy = self.listener.try_clone().expect("duplicate the socket");
        Stdio::from(OwnedFd::from(copy))
    }
}

/// What an edge-gateway needs to attach to a control plane, besides its own settings.
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
    let secret = std::fs::read_to_string(data_dir.join("gateway-secret")).expect("gateway secret");
    let mut env = vec![
        (
            "APIM_GATEWAY_COMPONENT",
            crate::gateway_component().display().to_string(),
        ),
        ("APIM_CONTROL_PLANE_URL", control_plane.url.clone()),
        ("APIM_MANIFEST_PUBLIC_KEY", x),
        ("APIM_GATEWAY_SECRET", secret.trim().to_string()),
        ("APIM_EGRESS_ALLOW", TEST_EGRESS_ALLOW.to_string()),
    ];
    env.extend(settings.iter().cloned());
    env
}

/// An edge-gateway serving a [`SharedSocket`]; killed when dropped.
pub struct GatewayProcess {
    child: Child,
    output: Arc<Mutex<String>>,
    /// When it was started.
    pub started: Instant,
    /// When it announced that it serves (`Serving HTTP on ...`).
    pub serving: Instant,
}

impl GatewayProcess {
    /// Starts edge-gateway on `socket` with exactly `env` (plus PATH) and waits until it
    /// announces that it serves.
    pub async fn start(socket: &SharedSocket, env: &[(&'static str, String)]) -> Self {
        let started = Instant::now();
        let binary = crate::binary("edge-gateway");
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(SOCKET_ACTIVATION)
            .arg(&binary)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "warn")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(socket.for_child())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", binary.display()));
        let output = Arc::new(Mutex::new(String::new()));
        collect(child.stderr.take().expect("stderr"), output.clone());
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let announced = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = stdout.next_line().await {
                output.lock().unwrap().push_str(&format!("{line}\n"));
                if line.starts_with("Serving HTTP on ") {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false);
        if !announced {
            let status = child.try_wait().ok().flatten();
            panic!(
                "edge-gateway did not start on the shared socket (exit: {status:?}):\n{}",
                output.lock().unwrap()
            );
        }
        let serving = Instant::now();
        tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
        GatewayProcess {
            child,
            output,
            started,
            serving,
        }
    }

    /// From its start until it served.
    pub fn start_took(&self) -> Duration {
        self.serving - self.started
    }

    /// Kills it (SIGKILL, as `kill -9` does) and waits until it is gone.
    pub async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// SIGTERM, then waits for it to exit, whatever its exit status.
    pub async fn terminate(mut self) -> Option<std::process::ExitStatus> {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .status();
        }
        match tokio::time::timeout(EXIT_TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => None,
        }
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

/// Appends the lines of `stream` to `into` as they come.
fn collect(stream: impl tokio::io::AsyncRead + Unpin + Send + 'static, into: Arc<Mutex<String>>) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            into.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
}
