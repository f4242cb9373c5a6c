//! A Redis server of a test's (or the fault command's) own, on a port of its own, so that
//! it can be stopped and started again under a serving gateway.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// `redis-server` on loopback, no persistence; killed when dropped.
pub struct Redis {
    port: u16,
    child: Option<Child>,
}

impl Redis {
    /// One on a port that was free a moment ago (not started yet).
    pub fn on_free_port() -> Self {
        Self {
            port: crate::free_port(),
            child: None,
        }
    }

    /// `redis://127.0.0.1:<port>/0`, edge-gateway's `APIM_KV_URL`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts it and waits until it accepts connections.
    pub async fn start(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server (Debian's redis-server; run-tests installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "redis-server did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills it (its keys are gone: no persistence).
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.expect("kill redis-server");
        }
    }

    /// The keys it holds.
    pub async fn keys(&self) -> Vec<String> {
        let client = redis::Client::open(self.url()).expect("redis URL");
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect to redis-server");
        redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut conn)
            .await
            .expect("KEYS")
    }
}
