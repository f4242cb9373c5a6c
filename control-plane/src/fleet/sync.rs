//! The gateways that keep themselves current: each asks for changes after the version
//! it holds (a long poll, [`wait_for_version_after`]) and is recorded as it asks, so an
//! operator sees who is behind (`GET /api/am/admin/v0.14/gateways`).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use sqlx::AnyPool;
use tokio::sync::watch;

use super::hub::ManifestHub;
use crate::manifest;

/// Longest a gateway's request for changes is held open.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// How often the database is read for versions another control plane sharing it
/// compiled (they are not announced here).
const DATABASE_CHECK_EVERY: Duration = Duration::from_millis(500);
/// Longest gateway id and environment kept.
const MAX_NAME_CHARS: usize = 200;

/// A gateway as it last asked.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct GatewayRecord {
    /// Its id (`gateway_id`).
    pub id: String,
    /// Its environment; empty when it serves every API.
    pub environment: String,
    /// The manifest version it holds.
    pub version: i64,
    /// When it last asked, Unix seconds.
    pub last_seen: i64,
}

impl GatewayRecord {
    /// Versions it is behind `latest`.
    pub fn lag(&self, latest: i64) -> i64 {
        latest.saturating_sub(self.version).max(0)
    }

    /// Seconds since it last asked, at `now` (Unix seconds).
    pub fn silent_for(&self, now: i64) -> i64 {
        now.saturating_sub(self.last_seen).max(0)
    }
}

/// What a gateway's request for changes says of it.
#[derive(Debug)]
pub struct Checkin<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its environment.
    pub environment: &'a str,
    /// The version it holds.
    pub version: u64,
}

/// Records a gateway's check-in (names cut to a bounded length).
pub async fn record(db: &AnyPool, checkin: &Checkin<'_>) -> sqlx::Result<()> {
    let cut = |s: &str| s.chars().take(MAX_NAME_CHARS).collect::<String>();
    // language=SQL
    sqlx::query(
        "INSERT INTO gateways (id, environment, version, last_seen) VALUES ($1, $2, $3, $4)
         ON CONFLICT (id) DO UPDATE SET environment = excluded.environment,
             version = excluded.version, last_seen = excluded.last_seen",
    )
    .bind(cut(checkin.id))
    .bind(cut(checkin.environment))
    .bind(i64::try_from(checkin.version).unwrap_or(i64::MAX))
    .bind(crate::db::now())
    .execute(db)
    .await?;
    Ok(())
}

/// Every gateway that has checked in, by id.
pub async fn list(db: &AnyPool) -> sqlx::Result<Vec<GatewayRecord>> {
    // language=SQL
    sqlx::query_as("SELECT id, environment, version, last_seen FROM gateways ORDER BY id")
        .fetch_all(db)
        .await
}

/// Follows the versions other control planes sharing the database record: reads the
/// newest every [`DATABASE_CHECK_EVERY`] and tells the hub, so that long polls (and
/// pushes) learn of them with one query per interval, however many gateways wait.
pub fn follow_database(db: AnyPool, hub: Arc<ManifestHub>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match manifest::latest_version(&db).await {
                Ok(version) => hub.observe(version),
                Err(err) => tracing::debug!("could not read the manifest version: {err}"),
            }
            tokio::time::sleep(DATABASE_CHECK_EVERY).await;
        }
    })
}

/// The newest version once it is past `after`, or the newest known when `wait` runs out
/// first, or the control plane is `closing`: at once for a version this control plane
/// compiles, within [`DATABASE_CHECK_EVERY`] for one another control plane wrote
/// ([`follow_database`]).
pub async fn wait_for_version_after(
    mut known: watch::Receiver<u64>,
    mut closing: watch::Receiver<bool>,
    after: u64,
    wait: Duration,
) -> u64 {
    let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
    let moved_or_closing = async {
        tokio::select! {
            _ = known.wait_for(|latest| *latest > after) => {}
            _ = closing.wait_for(|closing| *closing) => {}
        }
    };
    let _ = tokio::time::timeout_at(deadline, moved_or_closing).await;
    *known.borrow()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_long_poll_answers_when_the_version_moves_past_the_gateways() {
        let (versions, known) = watch::channel(5u64);
        let (close, closing) = watch::channel(false);
        let wait =
            |after, wait| wait_for_version_after(known.clone(), closing.clone(), after, wait);
        // Already past: at once.
        assert_eq!(wait(4, MAX_WAIT).await, 5);
        // Moves while waiting: as it moves.
        let later = tokio::spawn(wait(5, MAX_WAIT));
        tokio::time::sleep(Duration::from_millis(20)).await;
        versions.send(6).unwrap();
        assert_eq!(later.await.unwrap(), 6);
        // Nothing newer: the newest known once the wait runs out.
        assert_eq!(wait(6, Duration::from_millis(30)).await, 6);
        // The control plane stops: at once, with what it knows.
        let held = tokio::spawn(wait(6, MAX_WAIT));
        tokio::time::sleep(Duration::from_millis(20)).await;
        close.send(true).unwrap();
        let answered = tokio::time::timeout(Duration::from_secs(1), held).await;
        assert_eq!(answered.expect("answered on closing").unwrap(), 6);
    }
}
