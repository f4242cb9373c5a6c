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
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

use harness::ServerProcess;

/// Moves the socket on stdin to fd 3, says so in the environment, and becomes `$0`.
const SOCKET_ACTIVATION: &str = r#"export LISTEN_FDS=1 LISTEN_PID=$$; exec "$0" 3<&0 0</dev/null"#;

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

/// An edge-gateway serving a [`SharedSocket`]; killed when dropped.
pub struct GatewayProcess {
    server: ServerProcess,
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
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(SOCKET_ACTIVATION)
            .arg(harness::binary("edge-gateway"))
            .stdin(socket.for_child());
        let server =
            ServerProcess::spawn(command, "edge-gateway on the shared socket", env, None).await;
        GatewayProcess {
            server,
            started,
            serving: Instant::now(),
        }
    }

    /// From its start until it served.
    pub fn start_took(&self) -> Duration {
        self.serving - self.started
    }

    /// Kills it (SIGKILL, as `kill -9` does) and waits until it is gone.
    pub async fn kill(self) {
        self.server.kill().await
    }

    /// SIGTERM, then waits for it to exit, whatever its exit status.
    pub async fn terminate(self) -> Option<std::process::ExitStatus> {
        self.server.terminate().await
    }

    /// Everything it printed so far.
    pub fn output(&self) -> String {
        self.server.output()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }
}
