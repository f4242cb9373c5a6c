//! The `analytics_minutes` table: gateways' reports stored (a row's counts only ever
//! grow), an API's totals per slot of time and application, and the retention.

use std::sync::LazyLock;

use apim_manifest::analytics::{AnalyticsReport, BUCKETS};
use sqlx::AnyPool;

use super::records::SlotTotals;

/// `bucket_0, ..., bucket_16`.
fn bucket_columns(each: impl Fn(usize) -> String) -> String {
    (0..BUCKETS).map(each).collect::<Vec<_>>().join(", ")
}

/// A report's row: its counts replace the stored ones only when none is smaller, so a
/// report sent twice, or an older one arriving late, changes nothing.
static UPSERT: LazyLock<String> = LazyLock::new(|| {
    let placeholders = bucket_columns(|b| format!("${}", b + 10));
    let updates = bucket_columns(|b| format!("bucket_{b} = excluded.bucket_{b}"));
    // language=SQL
    format!(
        "INSERT INTO analytics_minutes (gateway, boot, minute, api_id, application_id, \
             requests, client_errors, server_errors, latency_sum_us, {columns})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {placeholders})
         ON CONFLICT (gateway, boot, minute, api_id, application_id) DO UPDATE SET
             requests = excluded.requests, client_errors = excluded.client_errors,
             server_errors = excluded.server_errors, latency_sum_us = excluded.latency_sum_us,
             {updates}
         WHERE excluded.requests >= analytics_minutes.requests
             AND excluded.client_errors >= analytics_minutes.client_errors
             AND excluded.server_errors >= analytics_minutes.server_errors
             AND excluded.latency_sum_us >= analytics_minutes.latency_sum_us",
        columns = bucket_columns(|b| format!("bucket_{b}")),
    )
});

/// Stores a report (checked by the caller), in one transaction.
pub async fn store_report(db: &AnyPool, report: &AnalyticsReport) -> sqlx::Result<()> {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let mut tx = db.begin().await?;
    for row in &report.rows {
        let mut query = sqlx::query(&UPSERT)
            .bind(&report.gateway)
            .bind(&report.boot)
            .bind(row.minute)
            .bind(&row.api_id)
            .bind(&row.application_id)
            .bind(count(row.requests))
            .bind(count(row.client_errors))
            .bind(count(row.server_errors))
            .bind(count(row.latency_sum_us));
        for bucket in &row.latency_buckets {
            query = query.bind(count(*bucket));
        }
        query.execute(&mut *tx).await?;
    }
    tx.commit().await
}

/// Which of an API's analytics to add up.
#[derive(Debug, Clone)]
pub struct Selection<'a> {
    pub api_id: &'a str,
    /// One application's only.
    pub application_id: Option<&'a str>,
    /// First Unix minute.
    pub from: i64,
    /// The Unix minute after the last.
    pub to: i64,
    /// Minutes per slot; slots start at multiples of it.
    pub slot_minutes: i64,
}

/// The columns every total adds up.
fn sums() -> String {
    let sum = |column: String| format!("CAST(SUM({column}) AS BIGINT) AS {column}");
    let mut columns: Vec<String> = [
        "requests",
        "client_errors",
        "server_errors",
        "latency_sum_us",
    ]
    .iter()
    .map(|c| sum(c.to_string()))
    .collect();
    columns.push(bucket_columns(|b| sum(format!("bucket_{b}"))));
    columns.join(", ")
}

/// The API's totals per slot and application, over every gateway and process.
pub async fn totals(db: &AnyPool, selection: &Selection<'_>) -> sqlx::Result<Vec<SlotTotals>> {
    let one_application = if selection.application_id.is_some() {
        "AND application_id = $5"
    } else {
        ""
    };
    // language=SQL
    let select = format!(
        "SELECT (minute / $2) * $2 AS slot, application_id AS grouped, {sums}
         FROM analytics_minutes
         WHERE api_id = $1 AND minute >= $3 AND minute < $4 {one_application}
         GROUP BY slot, application_id
         ORDER BY slot, application_id",
        sums = sums(),
    );
    let mut query = sqlx::query_as(&select)
        .bind(selection.api_id)
        .bind(selection.slot_minutes)
        .bind(selection.from)
        .bind(selection.to);
    if let Some(application) = selection.application_id {
        query = query.bind(application);
    }
    query.fetch_all(db).await
}

/// An application's totals per slot and API, over every gateway and process, from the
/// Unix minute `from` to before `to`.
pub async fn application_totals(
    db: &AnyPool,
    application_id: &str,
    (from, to, slot_minutes): (i64, i64, i64),
) -> sqlx::Result<Vec<SlotTotals>> {
    // language=SQL
    let select = format!(
        "SELECT (minute / $2) * $2 AS slot, api_id AS grouped, {sums}
         FROM analytics_minutes
         WHERE application_id = $1 AND minute >= $3 AND minute < $4
         GROUP BY slot, api_id
         ORDER BY slot, api_id",
        sums = sums(),
    );
    sqlx::query_as(&select)
        .bind(application_id)
        .bind(slot_minutes)
        .bind(from)
        .bind(to)
        .fetch_all(db)
        .await
}

/// Deletes what was counted before the Unix minute `before`; how many rows.
pub async fn forget_before(db: &AnyPool, before: i64) -> sqlx::Result<u64> {
    // language=SQL
    let deleted = sqlx::query("DELETE FROM analytics_minutes WHERE minute < $1")
        .bind(before)
        .execute(db)
        .await?;
    Ok(deleted.rows_affected())
}
