//! The manifest's entries as the database keeps them (`manifest_entries`), each with the
//! version that last changed it. A compile records what changed under new versions; a
//! gateway at version `v` is sent the rows changed after `v`, in pages.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apim_manifest::bounds::{MAX_ENTRY_BYTES, MAX_PAGE_JSON_BYTES};
use sqlx::AnyPool;

use crate::db::now;

/// Most entries one version carries, so that any page can hold a whole version.
const VERSION_ENTRIES: usize = 500;
/// Most bytes one version carries (a version over it holds a single larger entry).
const VERSION_BYTES: usize = 512 * 1024;
/// Bytes of entries a page carries at most (unless one version alone is larger).
pub(super) const PAGE_BYTES: usize = 1024 * 1024;
/// Bytes of a page's JSON besides its changes: the versions, flags and brackets.
const PAGE_FIELDS_BYTES: usize = 256;
/// Bytes of changes no page ever goes past, whatever its versions hold, so that it signs
/// within what a gateway takes ([`MAX_PAGE_JSON_BYTES`]). Versions the log records stay
/// far below it; only rows written into the database by other means could reach it.
pub(super) const MAX_PAGE_CHANGES_BYTES: usize = MAX_PAGE_JSON_BYTES - PAGE_FIELDS_BYTES;
/// Rows read per query while filling a page (several versions' worth).
pub(super) const PAGE_ROWS: usize = 4 * VERSION_ENTRIES;
/// Rows per INSERT statement.
const INSERT_ROWS: usize = 200;
/// How long a tombstone is kept: a gateway away for longer takes a snapshot.
const TOMBSTONE_SECS: i64 = 24 * 3600;
/// How often old tombstones are looked for.
const GARBAGE_EVERY: Duration = Duration::from_secs(3600);

/// An entry's new value, or its removal.
pub type EntryChange = (String, Option<Arc<str>>);
/// A stored row: key, value (`None`: a tombstone) and version.
pub(super) type Row = (String, Option<String>, i64);
/// The rows of one version: keys and values.
pub(super) type VersionRows = (u64, Vec<(String, Option<String>)>);

/// The part of the entries a compile recomputed: these keys, and every key under these
/// prefixes. Recorded entries within it that the compile did not produce are removed.
#[derive(Debug, Default)]
pub struct Scope {
    /// Whole keys.
    pub keys: BTreeSet<String>,
    /// Key prefixes.
    pub prefixes: BTreeSet<String>,
}

/// The live entries as recorded, mirrored in memory to tell what a compile changed.
#[derive(Default)]
pub struct EntryLog {
    entries: BTreeMap<String, Arc<str>>,
    version: u64,
    last_garbage: Option<Instant>,
}

impl EntryLog {
    /// The newest version recorded.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Live entries.
    pub fn live(&self) -> usize {
        self.entries.len()
    }

    /// Takes in what the database holds beyond what this log has seen: everything at
    /// start, and what other control planes sharing the database recorded since. Whether
    /// there was anything to take in.
    pub async fn catch_up(&mut self, db: &AnyPool) -> sqlx::Result<bool> {
        let mut everything = false;
        loop {
            let (version, horizon) = state(db).await?;
            if version == self.version {
                return Ok(false);
            }
            everything |= self.version < horizon || version < self.version;
            let rows: Vec<(String, Option<String>)> = if everything {
                // language=SQL
                sqlx::query_as("SELECT key, value FROM manifest_entries WHERE value IS NOT NULL")
                    .fetch_all(db)
                    .await?
            } else {
                // language=SQL
                sqlx::query_as("SELECT key, value FROM manifest_entries WHERE version > $1")
                    .bind(self.version as i64)
                    .fetch_all(db)
                    .await?
            };
            // Tombstones dropped meanwhile are missing from the rows: read everything.
            if !everything && state(db).await?.1 > self.version {
                everything = true;
                continue;
            }
            if everything {
                self.entries.clear();
            }
            for (key, value) in rows {
                self.mirror(key, value.map(Arc::from));
            }
            self.version = version;
            return Ok(true);
        }
    }

    /// What turns the recorded entries into `desired`, in key order.
    pub fn changes(&self, desired: &BTreeMap<String, Arc<str>>) -> Vec<EntryChange> {
        let removed = self
            .entries
            .keys()
            .filter(|key| !desired.contains_key(*key));
        self.changes_and_removals(desired, removed)
    }

    /// The same within `scope`: `desired` holds every entry the scope should have.
    pub fn changes_within<'a>(
        &'a self,
        scope: &'a Scope,
        desired: &BTreeMap<String, Arc<str>>,
    ) -> Vec<EntryChange> {
        let entries = &self.entries;
        let under = |prefix: &'a String| {
            entries
                .range::<String, _>(prefix..)
                .map(|(key, _)| key)
                .take_while(move |key| key.starts_with(prefix.as_str()))
        };
        let candidates = scope
            .keys
            .iter()
            .filter(|key| entries.contains_key(*key))
            .chain(scope.prefixes.iter().flat_map(under));
        let removed = candidates.filter(|key| !desired.contains_key(*key));
        self.changes_and_removals(desired, removed)
    }

    fn changes_and_removals<'a>(
        &self,
        desired: &BTreeMap<String, Arc<str>>,
        removed: impl Iterator<Item = &'a String>,
    ) -> Vec<EntryChange> {
        let mut changes = Vec::new();
        for (key, value) in desired {
            if value.len() > MAX_ENTRY_BYTES {
                // The compiler leaves oversized APIs out already; anything else past the
                // bound is not recorded either (removed, if it was), so that it cannot
                // make a page gateways refuse.
                tracing::error!(
                    key,
                    bytes = value.len(),
                    limit = MAX_ENTRY_BYTES,
                    "manifest entry larger than gateways take; not recorded"
                );
                if self.entries.contains_key(key) {
                    changes.push((key.clone(), None));
                }
            } else if self.entries.get(key) != Some(value) {
                changes.push((key.clone(), Some(value.clone())));
            }
        }
        changes.extend(removed.map(|key| (key.clone(), None)));
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        changes.dedup_by(|a, b| a.0 == b.0);
        changes
    }

    /// Records `changes` under the next versions (several, for many changes) in one
    /// transaction; the newest version, or `None` when another control plane recorded
    /// first (catch up and compile again).
    pub async fn record(
        &mut self,
        db: &AnyPool,
        changes: Vec<EntryChange>,
    ) -> sqlx::Result<Option<u64>> {
        let versions = split_into_versions(&changes);
        let mut tx = db.begin().await?;
        // language=SQL
        let bumped = sqlx::query(
            "UPDATE manifest_state SET version = version + $1 WHERE id = 1 AND version = $2",
        )
        .bind(versions.len() as i64)
        .bind(self.version as i64)
        .execute(&mut *tx)
        .await?;
        if bumped.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(None);
        }
        let changed_at = now();
        for (offset, range) in versions.iter().enumerate() {
            let version = self.version + 1 + offset as u64;
            for rows in changes[range.clone()].chunks(INSERT_ROWS) {
                upsert(&mut tx, rows, version, changed_at).await?;
            }
        }
        tx.commit().await?;
        for (key, value) in changes {
            self.mirror(key, value);
        }
        self.version += versions.len() as u64;
        Ok(Some(self.version))
    }

    /// Mirrors a recorded entry (`None`: removed).
    fn mirror(&mut self, key: String, value: Option<Arc<str>>) {
        match value {
            Some(value) => self.entries.insert(key, value),
            None => self.entries.remove(&key),
        };
    }

    /// Drops tombstones older than [`TOMBSTONE_SECS`], at most once every
    /// [`GARBAGE_EVERY`], and moves the horizon past them.
    pub async fn collect_garbage(&mut self, db: &AnyPool) -> sqlx::Result<()> {
        if self
            .last_garbage
            .is_some_and(|last| last.elapsed() < GARBAGE_EVERY)
        {
            return Ok(());
        }
        self.last_garbage = Some(Instant::now());
        // language=SQL
        let (newest,): (Option<i64>,) = sqlx::query_as(
            "SELECT MAX(version) FROM manifest_entries WHERE value IS NULL AND changed_at < $1",
        )
        .bind(now() - TOMBSTONE_SECS)
        .fetch_one(db)
        .await?;
        let Some(horizon) = newest else {
            return Ok(());
        };
        let mut tx = db.begin().await?;
        // language=SQL
        sqlx::query("DELETE FROM manifest_entries WHERE value IS NULL AND version <= $1")
            .bind(horizon)
            .execute(&mut *tx)
            .await?;
        // language=SQL
        sqlx::query("UPDATE manifest_state SET horizon = $1 WHERE id = 1 AND horizon < $1")
            .bind(horizon)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        tracing::info!(horizon, "old manifest tombstones dropped");
        Ok(())
    }
}

/// The newest version of the manifest log.
pub async fn latest_version(db: &AnyPool) -> sqlx::Result<u64> {
    Ok(state(db).await?.0)
}

/// The newest version and the tombstone horizon.
pub(super) async fn state(db: &AnyPool) -> sqlx::Result<(u64, u64)> {
    // language=SQL
    let (version, horizon): (i64, i64) =
        sqlx::query_as("SELECT version, horizon FROM manifest_state WHERE id = 1")
            .fetch_one(db)
            .await?;
    Ok((version.max(0) as u64, horizon.max(0) as u64))
}

/// Bytes of a change in a page's JSON, `{"key":..,"value":..}` and the comma after it:
/// what it counts for against [`VERSION_BYTES`], [`PAGE_BYTES`] and
/// [`MAX_PAGE_CHANGES_BYTES`]. Values are stored as the compact JSON they are sent as.
pub(super) fn change_bytes(key: &str, value: Option<&str>) -> usize {
    const SYNTAX: usize = r#"{"key":,"value":},"#.len();
    SYNTAX + json_string_bytes(key) + value.map_or("null".len(), str::len)
}

/// Bytes of `text` as a JSON string, quotes included: serde_json escapes only quotes,
/// backslashes and control characters.
fn json_string_bytes(text: &str) -> usize {
    let escaped: usize = text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum();
    escaped + 2
}

/// Consecutive runs of changes, each small enough to be one version.
fn split_into_versions(changes: &[EntryChange]) -> Vec<Range<usize>> {
    let mut versions = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (key, value)) in changes.iter().enumerate() {
        let size = change_bytes(key, value.as_deref());
        if i > start && (i - start >= VERSION_ENTRIES || bytes + size > VERSION_BYTES) {
            versions.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < changes.len() {
        versions.push(start..changes.len());
    }
    versions
}

async fn upsert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    rows: &[EntryChange],
    version: u64,
    changed_at: i64,
) -> sqlx::Result<()> {
    let placeholders: Vec<String> = (0..rows.len())
        .map(|i| {
            let n = i * 4;
            format!("(${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4)
        })
        .collect();
    // language=SQL
    let sql = format!(
        "INSERT INTO manifest_entries (key, value, version, changed_at) VALUES {}
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = excluded.version,
         changed_at = excluded.changed_at",
        placeholders.join(", ")
    );
    let mut query = sqlx::query(&sql);
    for (key, value) in rows {
        query = query
            .bind(key.as_str())
            .bind(value.as_deref())
            .bind(version as i64)
            .bind(changed_at);
    }
    query.execute(&mut **tx).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use apim_manifest::Change;
    use serde_json::value::RawValue;

    use crate::manifest::pages::{group_by_version, read_page};

    #[test]
    fn many_changes_become_several_versions() {
        let change =
            |i: usize, size: usize| (format!("k{i:05}"), Some(Arc::from("x".repeat(size))));
        let small: Vec<EntryChange> = (0..1_234).map(|i| change(i, 10)).collect();
        let ranges = split_into_versions(&small);
        assert_eq!(ranges, vec![0..500, 500..1000, 1000..1234]);
        let large: Vec<EntryChange> = (0..3).map(|i| change(i, 400 * 1024)).collect();
        assert_eq!(split_into_versions(&large), vec![0..1, 1..2, 2..3]);
        assert!(split_into_versions(&[]).is_empty());
    }

    #[test]
    fn changes_within_a_scope_leave_the_rest_alone() {
        let mut log = EntryLog::default();
        for key in ["app:a", "sub:a:1", "sub:a:2", "sub:b:1", "meta"] {
            log.entries.insert(key.to_string(), Arc::from("{}"));
        }
        let scope = Scope {
            keys: BTreeSet::from(["app:a".to_string(), "meta".to_string()]),
            prefixes: BTreeSet::from(["sub:a:".to_string()]),
        };
        let desired = BTreeMap::from([
            ("app:a".to_string(), Arc::from("{\"tier\":\"Gold\"}")),
            ("sub:a:1".to_string(), Arc::from("{}")),
            ("meta".to_string(), Arc::from("{}")),
        ]);
        let changes = log.changes_within(&scope, &desired);
        let changes: Vec<(&str, bool)> = changes
            .iter()
            .map(|(key, value)| (key.as_str(), value.is_some()))
            .collect();
        assert_eq!(changes, vec![("app:a", true), ("sub:a:2", false)]);
    }

    /// Pages read from a database the log recorded into: whole versions, in order, about
    /// a mebibyte each, removals included, up to the newest version.
    #[tokio::test]
    async fn pages_carry_whole_versions_in_order() {
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        let mut log = EntryLog::default();
        log.catch_up(&db).await.unwrap();
        let large = |n: usize| Some(Arc::from(format!("\"{}\"", "x".repeat(n))));
        // Four large entries (400 KiB each) become four versions; then one small change
        // and one removal in a fifth.
        let first: Vec<EntryChange> = (0..4)
            .map(|i| (format!("api:{i}"), large(400 * 1024)))
            .collect();
        assert_eq!(log.record(&db, first).await.unwrap(), Some(4));
        let second = vec![
            ("api:1".to_string(), None),
            ("app:a".to_string(), Some(Arc::from("{}"))),
        ];
        assert_eq!(log.record(&db, second).await.unwrap(), Some(5));

        let mut pages = Vec::new();
        let (mut after, mut snapshot) = (0, false);
        loop {
            let page = read_page(&db, after, snapshot).await.unwrap().unwrap();
            assert!(page.snapshot, "a gateway with nothing takes a snapshot");
            assert_eq!((page.after, page.latest), (after, 5));
            let keys: Vec<(String, bool)> = page
                .changes
                .iter()
                .map(|c| (c.key.clone(), c.value.is_some()))
                .collect();
            pages.push((page.upto, keys));
            if page.is_last() {
                break;
            }
            (after, snapshot) = (page.upto, true);
        }
        // api:1 moved to version 5 as a removal, so version 2 has nothing left; two large
        // entries fill a page.
        let expected = vec![
            (
                3,
                vec![("api:0".to_string(), true), ("api:2".to_string(), true)],
            ),
            (
                5,
                vec![
                    ("api:3".to_string(), true),
                    ("api:1".to_string(), false),
                    ("app:a".to_string(), true),
                ],
            ),
        ];
        assert_eq!(pages, expected);

        // A gateway at version 4 gets only what changed after it, not as a snapshot; one at
        // the newest version gets an empty last page.
        let delta = read_page(&db, 4, false).await.unwrap().unwrap();
        assert!(!delta.snapshot && delta.is_last());
        assert_eq!(delta.changes.len(), 2);
        let empty = read_page(&db, 5, false).await.unwrap().unwrap();
        assert!(empty.changes.is_empty() && empty.is_last());
        // A gateway ahead of the database (restored, or another one): the versions move
        // past it and it takes everything, which it accepts as newer than what it holds.
        let ahead = read_page(&db, 9, false).await.unwrap().unwrap();
        assert!(ahead.snapshot && ahead.after == 0 && ahead.latest == 9);
        assert_eq!(state(&db).await.unwrap().0, 9);
        // The compiler takes the move in as someone else's change.
        assert!(log.catch_up(&db).await.unwrap());
        assert_eq!(log.version(), 9);
    }

    #[test]
    fn rows_group_by_version() {
        let row = |k: &str, v: i64| (k.to_string(), Some("1".to_string()), v);
        let groups = group_by_version(vec![row("a", 1), row("b", 1), row("a", 2)]);
        let versions: Vec<(u64, usize)> = groups.iter().map(|(v, rows)| (*v, rows.len())).collect();
        assert_eq!(versions, vec![(1, 2), (2, 1)]);
    }

    #[test]
    fn change_bytes_are_the_json_a_page_carries() {
        for key in ["api:a", "route:/t/acme.com/pets/v1", "k\"\\\n\u{1}\u{7f}é"] {
            for value in [None, Some("{\"tier\":\"Gold\"}")] {
                let change = Change {
                    key: key.to_string(),
                    value: value.map(|v| RawValue::from_string(v.to_string()).unwrap()),
                };
                let json = serde_json::to_string(&change).unwrap();
                assert_eq!(change_bytes(key, value), json.len() + ",".len(), "{json}");
            }
        }
    }

    #[test]
    fn entries_past_the_bound_are_not_recorded() {
        let mut log = EntryLog::default();
        log.entries.insert("route:/big/v1".into(), Arc::from("[]"));
        let oversized: Arc<str> = Arc::from(format!("\"{}\"", "x".repeat(MAX_ENTRY_BYTES)));
        let desired = BTreeMap::from([
            ("api:big".to_string(), oversized.clone()),
            ("route:/big/v1".to_string(), oversized),
            ("app:a".to_string(), Arc::from("{}")),
        ]);
        let changes = log.changes(&desired);
        let changes: Vec<(&str, bool)> = changes
            .iter()
            .map(|(key, value)| (key.as_str(), value.is_some()))
            .collect();
        // The one recorded before is removed; the new one never recorded.
        assert_eq!(changes, vec![("app:a", true), ("route:/big/v1", false)]);
    }

    /// Whatever the database holds (an entry past the bound stored before it existed, a
    /// version larger than any the log records, written straight into the table), no page
    /// signs larger than a gateway takes, and the pages still reach the newest version.
    #[tokio::test]
    async fn no_signed_page_passes_what_gateways_take() {
        use apim_manifest::bounds::{MAX_PAGE_BYTES, signed_page_bytes};
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        let string = |n: usize| format!("\"{}\"", "x".repeat(n));
        let insert = |key: String, value: String, version: i64| {
            let db = db.clone();
            async move {
                // language=SQL
                sqlx::query("INSERT INTO manifest_entries (key, value, version, changed_at) VALUES ($1, $2, $3, 0)")
                    .bind(key)
                    .bind(value)
                    .bind(version)
                    .execute(&db)
                    .await
                    .unwrap();
            }
        };
        // Version 1: one 11 MiB entry. Version 2: 30 entries of 400 KiB (12 MB).
        insert("api:huge".into(), string(11 * 1024 * 1024), 1).await;
        for i in 0..30 {
            insert(format!("api:{i:02}"), string(400 * 1024), 2).await;
        }
        // language=SQL
        sqlx::query("UPDATE manifest_state SET version = 2 WHERE id = 1")
            .execute(&db)
            .await
            .unwrap();
        // Then versions the log records: as large as entries may be.
        let mut log = EntryLog::default();
        log.catch_up(&db).await.unwrap();
        let largest: Vec<EntryChange> = (0..5)
            .map(|i| {
                let value = string(MAX_ENTRY_BYTES - 2);
                (format!("api:max{i}"), Some(Arc::from(value)))
            })
            .collect();
        assert_eq!(log.record(&db, largest).await.unwrap(), Some(7));

        let keys = crate::signing::KeyRing::load_or_create(
            &std::env::temp_dir().join(format!("apim-log-{}", uuid::Uuid::new_v4())),
        )
        .unwrap();
        let (mut after, mut snapshot, mut uptos) = (0, false, Vec::new());
        loop {
            let page = read_page(&db, after, snapshot).await.unwrap().unwrap();
            let json = serde_json::to_string(&page).unwrap();
            let jws = crate::manifest::sign(&keys, &page).unwrap();
            assert!(jws.len() <= signed_page_bytes(json.len()));
            assert!(
                jws.len() <= MAX_PAGE_BYTES,
                "page {after}: {} bytes",
                jws.len()
            );
            let sent = page.changes.iter().filter(|c| c.value.is_some()).count();
            match page.upto {
                1 => assert_eq!(sent, 0, "the oversized entry is sent as a removal"),
                // What fits of the oversized version goes with values, the rest as removals.
                2 => assert!(sent > 10 && sent < 30 && page.changes.len() == 30),
                _ => assert_eq!(sent, 1),
            }
            uptos.push(page.upto);
            if page.is_last() {
                break;
            }
            (after, snapshot) = (page.upto, true);
        }
        assert_eq!(uptos, [1, 2, 3, 4, 5, 6, 7]);
    }
}
