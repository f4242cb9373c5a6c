//! How long analytics are kept (`APIM_ANALYTICS_RETENTION_DAYS`): the first minute still
//! kept, and the hourly deletion of what is older.

use time::OffsetDateTime;

use super::queries;
use super::rules::minute_of;
use crate::state::AppState;

/// The first minute still kept, at `now`.
pub(super) fn retained_from(state: &AppState, now: OffsetDateTime) -> i64 {
    let days = i64::try_from(state.config.analytics_retention_days).unwrap_or(i64::MAX / 1_440);
    minute_of(now) - days * 1_440
}

/// Deletes analytics past the retention, every hour (on every control plane sharing the
/// database: deleting twice deletes nothing more).
pub fn spawn_retention(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(3_600));
        loop {
            every.tick().await;
            let before = retained_from(&state, OffsetDateTime::now_utc());
            match queries::forget_before(&state.db, before).await {
                Ok(0) => {}
                Ok(rows) => tracing::info!(rows, "analytics past the retention deleted"),
                Err(err) => tracing::warn!("could not delete old analytics: {err}"),
            }
        }
    })
}
