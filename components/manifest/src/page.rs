//! Pages: how entries travel. A page carries the entries changed after one version up to
//! a later one; a gateway applies it only on top of the version it names, so pages land
//! in order and none is applied twice. Pages are signed (a compact EdDSA JWS) by the
//! control plane and verified by the gateway.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// One entry's new value, or its removal (`value` null).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Change {
    /// Entry key (see [`key`](crate::key)).
    pub key: String,
    /// Its JSON value; `None` when the entry is gone.
    pub value: Option<Box<RawValue>>,
}

/// The entries changed after version `after`, up to and including `upto`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Page {
    /// The version the receiver must hold (in a snapshot: have reached) to apply it.
    pub after: u64,
    /// The version the receiver holds once it is applied.
    pub upto: u64,
    /// The control plane's newest version when it read the page.
    pub latest: u64,
    /// Part of a snapshot: a rebuild from nothing, which the receiver keeps apart until
    /// its last page (the one reaching `latest`) and then takes in place of what it held.
    pub snapshot: bool,
    /// When it was read, Unix seconds.
    pub issued_at: i64,
    /// The changes, oldest version first.
    pub changes: Vec<Change>,
}

impl Page {
    /// Whether nothing comes after this page (for now).
    pub fn is_last(&self) -> bool {
        self.upto >= self.latest
    }
}

/// What a gateway holds: the version it serves and, while it takes a snapshot, how far
/// the snapshot has got. Gateways answer pushes and status requests with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    /// The version served (0: nothing yet).
    pub version: u64,
    /// The version a snapshot in progress has reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<u64>,
}

impl Position {
    /// Where the next page starts: after the snapshot's progress, if one is under way.
    pub fn next_after(&self) -> (u64, bool) {
        match self.snapshot {
            Some(reached) => (reached, true),
            None => (self.version, false),
        }
    }
}

/// What a gateway tells the control plane of a page it pulled and could not take (too
/// large to read, unparsable, or not signed by the key it knows), so that the refusal is
/// seen where it can be fixed rather than only in the gateway's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageReport {
    /// The version the page was to follow (the pull's `after`).
    pub after: u64,
    /// Whether the page was part of a snapshot.
    pub snapshot: bool,
    /// Why it was not taken.
    pub reason: String,
    /// The reporting gateway's `gateway_environment`, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}
