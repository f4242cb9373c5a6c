//! A Redis server of the benchmark's own (`redis-server` on a free loopback port, no
//! persistence), for the throttling case's nodes to share.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// The running server; killed when dropped.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl RedisServer {
    /// Starts one and waits until it answers PING.
    pub async fn start() -> Self {
        let port = harness::free_port();
        let dir = harness::temp_dir();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server is needed for the throttling case (Debian's redis-server)");
        let server = RedisServer { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut conn) = server.connection().await {
                let pong: Result<String, _> = ::redis::cmd("PING").query_async(&mut conn).await;
                if pong.is_ok() {
                    return server;
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `redis://127.0.0.1:<port>/0`, the nodes' `APIM_KV_URL`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or_default()
    }

    /// A connection to it.
    pub async fn connection(
        &self,
    ) -> Result<::redis::aio::MultiplexedConnection, ::redis::RedisError> {
        ::redis::Client::open(self.url())?
            .get_multiplexed_async_connection()
            .await
    }

    /// Increments it has counted so far (`INCR` and `INCRBY` calls, `INFO commandstats`).
    pub async fn increments(&self) -> u64 {
        let Ok(mut conn) = self.connection().await else {
            return 0;
        };
        let info: String = ::redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .unwrap_or_default();
        increments_in(&info)
    }

    /// Commands the server has processed since it started.
    pub async fn commands(&self) -> u64 {
        let Ok(mut conn) = self.connection().await else {
            return 0;
        };
        let info: String = ::redis::cmd("INFO")
            .arg("stats")
            .query_async(&mut conn)
            .await
            .unwrap_or_default();
        info.lines()
            .find_map(|line| line.strip_prefix("total_commands_processed:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Keys under `namespace:`.
    pub async fn keys(&self, namespace: &str) -> usize {
        let Ok(mut conn) = self.connection().await else {
            return 0;
        };
        let keys: Vec<String> = ::redis::cmd("KEYS")
            .arg(format!("{namespace}:*"))
            .query_async(&mut conn)
            .await
            .unwrap_or_default();
        keys.len()
    }

    /// Stops it and removes its directory.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `cmdstat_incr:calls=N,...` plus `cmdstat_incrby:calls=M,...`.
fn increments_in(info: &str) -> u64 {
    info.lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("cmdstat_incrby:calls=")
                .or_else(|| line.strip_prefix("cmdstat_incr:calls="))?;
            rest.split(',').next()?.parse::<u64>().ok()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_increments() {
        let info = "# Commandstats\r\ncmdstat_get:calls=7,usec=1\r\ncmdstat_incrby:calls=40,usec=9\r\ncmdstat_incr:calls=2,usec=1\r\n";
        assert_eq!(super::increments_in(info), 42);
    }
}
