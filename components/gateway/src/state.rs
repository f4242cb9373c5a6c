//! The manifest a gateway serves, entry by entry in the shared key-value store, and how
//! signed pages change it. The store holds:
//!
//! - `apim:m:head`: `<generation> <version> <caught-up ms>`, the entries served, their
//!   version, and when requests last caught up with the control plane (Spin, see
//!   [`crate::sync::catch_up_if_due`]; written as a page is applied);
//! - `apim:m:<generation>:<entry key>`: the entries (see [`apim_manifest::key`]);
//! - `apim:m:snapshot`: `<generation> <version>`, a snapshot being taken into a fresh
//!   generation, and how far it has got; the head moves to it once it is complete;
//! - `apim:m:lock`: a lease, so that pages are applied one at a time whoever applies them
//!   (a push and a pull, several instances sharing one store).
//!
//! Every instance, and every Spin request with its fresh instance, reads the same store;
//! instances read entries as requests need them ([`crate::view`]).

use apim_manifest::{Change, Page, Position};

use crate::host::Host;

use apim_manifest::stored::PREFIX;
pub use apim_manifest::stored::{HEAD_KEY, Head, entry_key};

/// Key of a snapshot in progress.
const SNAPSHOT_KEY: &str = "apim:m:snapshot";
/// Key of the lease on applying pages.
const LOCK_KEY: &str = "apim:m:lock";
/// Keys of the single-document manifests of earlier releases, dropped with a snapshot.
const LEGACY_KEYS: [&str; 2] = ["apim:manifest", "apim:manifest-version"];
/// How long a lease lasts if its holder never gives it back (a trapped instance).
const LEASE_MS: i64 = 10_000;

/// The head, if the store holds a manifest (an unreadable head is none).
pub fn read_head(host: &dyn Host) -> Result<Option<Head>, String> {
    Ok(read_head_as_stored(host)?.map(|(head, _)| head))
}

/// The head and the bytes it was read from (for a later compare-and-swap), if the store
/// holds a manifest.
pub fn read_head_as_stored(host: &dyn Host) -> Result<Option<(Head, Vec<u8>)>, String> {
    Ok(host
        .kv_get(HEAD_KEY)?
        .and_then(|bytes| Some((Head::decode(&bytes)?, bytes))))
}

fn read_snapshot(host: &dyn Host) -> Option<Head> {
    Head::decode(&host.kv_get(SNAPSHOT_KEY).ok()??)
}

/// What the store holds.
pub fn position(host: &dyn Host) -> Position {
    Position {
        version: read_head(host).ok().flatten().map_or(0, |h| h.version),
        snapshot: read_snapshot(host).map(|s| s.version),
    }
}

/// Why a page was not applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Another page is being applied; try again shortly.
    Busy,
    /// The page does not start where the store is (or would take it back in time).
    OutOfOrder(Position),
    /// The store failed.
    Store(String),
}

impl From<String> for Refusal {
    fn from(err: String) -> Self {
        Refusal::Store(err)
    }
}

/// Applies a verified page on top of what the store holds; the position afterwards.
pub fn apply(host: &dyn Host, page: &Page, now_ms: i64) -> Result<Position, Refusal> {
    let lease = Lease::take(host, now_ms)?;
    let head = read_head(host)?;
    if !page.snapshot {
        return apply_delta(host, head, page, now_ms);
    }
    let (position, switched) = apply_snapshot(host, head, page, now_ms)?;
    // The cleaning up scans the whole store: outside the lease, which others may want.
    drop(lease);
    if let Some(switched) = switched {
        drop_old_generations(host, switched);
    }
    Ok(position)
}

/// The generations a snapshot switched between: from `previous` to `current`.
#[derive(Debug, Clone, Copy)]
struct Switched {
    previous: Option<u64>,
    current: u64,
}

/// A page of changes, applied in place: the head's version must be the page's start.
fn apply_delta(
    host: &dyn Host,
    head: Option<Head>,
    page: &Page,
    now_ms: i64,
) -> Result<Position, Refusal> {
    let Some(head) = head.filter(|h| h.version == page.after) else {
        return Err(Refusal::OutOfOrder(position(host)));
    };
    write_changes(host, head.generation, &page.changes)?;
    let head = Head {
        version: page.upto,
        ..head
    };
    host.kv_set(HEAD_KEY, head.encode_caught_up(now_ms).as_bytes())?;
    Ok(position(host))
}

/// A page of a snapshot, written into a fresh generation; the last one moves the head
/// there (and says so, for the older generations to be dropped).
fn apply_snapshot(
    host: &dyn Host,
    head: Option<Head>,
    page: &Page,
    now_ms: i64,
) -> Result<(Position, Option<Switched>), Refusal> {
    let served = head.map_or(0, |h| h.version);
    let in_progress = read_snapshot(host);
    let mut snapshot = match in_progress {
        // Never go back to an older manifest (a replayed snapshot).
        _ if page.latest < served => return Err(Refusal::OutOfOrder(position(host))),
        _ if page.after == 0 => Head {
            generation: head
                .map_or(0, |h| h.generation)
                .max(in_progress.map_or(0, |s| s.generation))
                + 1,
            version: 0,
        },
        Some(snapshot) if snapshot.version == page.after => snapshot,
        _ => return Err(Refusal::OutOfOrder(position(host))),
    };
    write_changes(host, snapshot.generation, &page.changes)?;
    snapshot.version = page.upto;
    if !page.is_last() {
        host.kv_set(SNAPSHOT_KEY, snapshot.encode().as_bytes())?;
        let position = Position {
            version: served,
            snapshot: Some(snapshot.version),
        };
        return Ok((position, None));
    }
    host.kv_set(HEAD_KEY, snapshot.encode_caught_up(now_ms).as_bytes())?;
    host.kv_delete(SNAPSHOT_KEY)?;
    let position = Position {
        version: snapshot.version,
        snapshot: None,
    };
    let switched = Switched {
        previous: head.map(|h| h.generation),
        current: snapshot.generation,
    };
    Ok((position, Some(switched)))
}

fn write_changes(host: &dyn Host, generation: u64, changes: &[Change]) -> Result<(), String> {
    for change in changes {
        let key = entry_key(generation, &change.key);
        match &change.value {
            Some(value) => host.kv_set(&key, value.get().as_bytes())?,
            None => host.kv_delete(&key)?,
        }
    }
    Ok(())
}

/// Removes the entries of every generation but the current one and the one it replaced
/// (which instances still reading it may finish with; the next snapshot drops it), and
/// earlier releases' manifests. Best effort: what is left behind is never read.
fn drop_old_generations(host: &dyn Host, switched: Switched) {
    let kept =
        |generation: u64| generation == switched.current || Some(generation) == switched.previous;
    let mut cursor: Option<String> = None;
    loop {
        let Ok((keys, next)) = host.kv_list_keys(cursor.as_deref()) else {
            return;
        };
        for key in keys {
            let stale = key
                .strip_prefix(PREFIX)
                .and_then(|rest| rest.split_once(':'))
                .and_then(|(generation, _)| generation.parse::<u64>().ok())
                .is_some_and(|generation| !kept(generation));
            if stale || LEGACY_KEYS.contains(&key.as_str()) {
                let _ = host.kv_delete(&key);
            }
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return,
        }
    }
}

/// The right to apply pages, until dropped or [`LEASE_MS`] have passed.
struct Lease<'a> {
    host: &'a dyn Host,
    /// What the lock holds while this lease does.
    until: String,
}

impl<'a> Lease<'a> {
    fn take(host: &'a dyn Host, now_ms: i64) -> Result<Self, Refusal> {
        let held = host.kv_get(LOCK_KEY)?;
        let until = held
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok()?.trim().parse::<i64>().ok());
        if until.is_some_and(|until| until > now_ms) {
            return Err(Refusal::Busy);
        }
        let until = (now_ms + LEASE_MS).to_string();
        if host.kv_compare_and_swap(LOCK_KEY, held.as_deref(), until.as_bytes())? {
            Ok(Lease { host, until })
        } else {
            Err(Refusal::Busy)
        }
    }
}

impl Drop for Lease<'_> {
    /// Gives the lease back, unless it ran out and someone else holds the lock now.
    fn drop(&mut self) {
        let _ = self
            .host
            .kv_compare_and_swap(LOCK_KEY, Some(self.until.as_bytes()), b"0");
    }
}
