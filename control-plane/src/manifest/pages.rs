//! Pages of the manifest's entry log: what a gateway at version `v` is sent, the entries
//! changed after `v`, whole versions only, within the bounds gateways take.

use apim_manifest::bounds::MAX_ENTRY_BYTES;
use apim_manifest::{Change, Page};
use serde_json::value::RawValue;
use sqlx::AnyPool;

use super::log::{
    MAX_PAGE_CHANGES_BYTES, PAGE_BYTES, PAGE_ROWS, Row, VersionRows, change_bytes, state,
};
use crate::db::now;

/// The page after version `after` (of a snapshot under way when `snapshot`): the entries
/// changed since, whole versions only, up to about [`PAGE_BYTES`] and never so many that
/// the signed page passes what gateways take (`MAX_PAGE_BYTES`). A gateway with
/// nothing, or one older than the horizon, starts a snapshot from version 0. So does one
/// ahead of this database (restored from a backup, or another database): the versions
/// move past it first, since a gateway never takes a snapshot older than what it holds.
/// `None` before the first compile.
pub async fn read_page(db: &AnyPool, after: u64, snapshot: bool) -> sqlx::Result<Option<Page>> {
    let (latest, _) = state(db).await?;
    if latest == 0 {
        return Ok(None);
    }
    let mut start = (after, snapshot);
    if after > latest {
        if after - latest > MAX_FAST_FORWARD {
            tracing::error!(
                after,
                latest,
                "a gateway claims a version far ahead of the database; not following it"
            );
        } else {
            fast_forward(db, after).await?;
        }
        start = (0, true);
    }
    loop {
        let page = read_page_from(db, start.0, start.1).await?;
        // Tombstones dropped while the page was read are missing from it: start over.
        if page.after == 0 || state(db).await?.1 <= page.after {
            return Ok(Some(page));
        }
        start = (0, true);
    }
}

/// Versions a database moves forward at most to meet a gateway ahead of it.
const MAX_FAST_FORWARD: u64 = 1 << 40;

/// Moves the newest version to at least `version` (no entry changes).
async fn fast_forward(db: &AnyPool, version: u64) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("UPDATE manifest_state SET version = $1 WHERE id = 1 AND version < $1")
        .bind(version as i64)
        .execute(db)
        .await?;
    tracing::warn!(
        version,
        "manifest versions moved forward to meet a gateway ahead of the database"
    );
    Ok(())
}

/// [`read_page`] once the start is settled.
async fn read_page_from(db: &AnyPool, after: u64, snapshot: bool) -> sqlx::Result<Page> {
    let (latest, horizon) = state(db).await?;
    let restart = after == 0 || after < horizon || after > latest;
    let (after, snapshot) = if restart {
        (0, true)
    } else {
        (after, snapshot)
    };
    let mut page = Page {
        after,
        upto: after,
        latest,
        snapshot,
        issued_at: now(),
        changes: Vec::new(),
    };
    let mut bytes = 0;
    loop {
        // language=SQL
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT key, value, version FROM manifest_entries WHERE version > $1 AND version <= $2
             ORDER BY version, key LIMIT $3",
        )
        .bind(page.upto as i64)
        .bind(latest as i64)
        .bind(PAGE_ROWS as i64)
        .fetch_all(db)
        .await?;
        let read_all = rows.len() < PAGE_ROWS;
        let mut versions = group_by_version(rows);
        if !read_all && versions.len() == 1 {
            // One version fills the read: read the whole of it.
            let version = versions[0].0;
            versions = group_by_version(rows_of_version(db, version).await?);
        } else if !read_all {
            // The last version may go on past the rows read.
            versions.pop();
        }
        for (version, rows) in versions {
            let changes: Vec<Change> = rows
                .into_iter()
                .map(|row| to_change(row, version))
                .collect();
            let size: usize = changes.iter().map(bytes_of).sum();
            if !page.changes.is_empty() && bytes + size > PAGE_BYTES {
                return Ok(page);
            }
            let changes = fit(
                version,
                changes,
                MAX_PAGE_CHANGES_BYTES.saturating_sub(bytes),
            );
            bytes += changes.iter().map(bytes_of).sum::<usize>();
            page.changes.extend(changes);
            page.upto = version;
        }
        if read_all {
            page.upto = latest;
            return Ok(page);
        }
    }
}

async fn rows_of_version(db: &AnyPool, version: u64) -> sqlx::Result<Vec<Row>> {
    // language=SQL
    sqlx::query_as(
        "SELECT key, value, version FROM manifest_entries WHERE version = $1 ORDER BY key",
    )
    .bind(version as i64)
    .fetch_all(db)
    .await
}

/// Rows in version order, grouped by version.
pub(super) fn group_by_version(rows: Vec<Row>) -> Vec<VersionRows> {
    let mut versions: Vec<VersionRows> = Vec::new();
    for (key, value, version) in rows {
        let version = version.max(0) as u64;
        match versions.last_mut() {
            Some((v, rows)) if *v == version => rows.push((key, value)),
            _ => versions.push((version, vec![(key, value)])),
        }
    }
    versions
}

/// A stored row as sent. Stored values were serialized by the compiler; one that no
/// longer parses, or is larger than gateways take (written before the bound, or into the
/// database by other means), is sent as a removal rather than break the page.
fn to_change((key, value): (String, Option<String>), version: u64) -> Change {
    let value = value.filter(|v| {
        let fits = v.len() <= MAX_ENTRY_BYTES;
        if !fits {
            tracing::error!(
                key,
                version,
                bytes = v.len(),
                limit = MAX_ENTRY_BYTES,
                "stored manifest entry larger than gateways take; sent as a removal"
            );
        }
        fits
    });
    Change {
        value: value.and_then(|v| RawValue::from_string(v).ok()),
        key,
    }
}

/// [`change_bytes`] of a change as sent.
fn bytes_of(change: &Change) -> usize {
    change_bytes(&change.key, change.value.as_deref().map(RawValue::get))
}

/// The changes of one version within `budget` bytes. Versions the log records always fit
/// (see [`MAX_PAGE_CHANGES_BYTES`]); past it, values are sent as removals, and removals
/// past it are left out, so that even such a version cannot stop every page after it.
fn fit(version: u64, changes: Vec<Change>, budget: usize) -> Vec<Change> {
    let total: usize = changes.iter().map(bytes_of).sum();
    if total <= budget {
        return changes;
    }
    tracing::error!(
        version,
        bytes = total,
        budget,
        "a manifest version is larger than a page gateways take; entries past it sent as removals"
    );
    let mut used = 0;
    let mut fitted = Vec::with_capacity(changes.len());
    for mut change in changes {
        if used + bytes_of(&change) > budget {
            change.value = None;
        }
        let size = bytes_of(&change);
        if used + size <= budget {
            used += size;
            fitted.push(change);
        }
    }
    fitted
}
