//! The control plane's layers, checked from its sources: no import cycle between its
//! files, and what every room uses (errors, the HTTP layer, the state) imports no room,
//! so that a room can change without the shared layer moving under the others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use boundary::{find_cycle, imports, read_sources};

/// The files below every room: they may import each other and nothing else.
const SHARED: [&str; 9] = [
    "config.rs",
    "db.rs",
    "error.rs",
    "scopes.rs",
    "secrets/keys.rs",
    "secrets/mod.rs",
    "signing/mod.rs",
    "state.rs",
    "xml.rs",
];

fn sources() -> BTreeMap<String, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources = read_sources(&dir);
    assert!(
        sources.len() > 100,
        "control-plane/src read: {}",
        sources.len()
    );
    sources
}

fn is_shared(file: &str) -> bool {
    SHARED.contains(&file) || file.starts_with("http/")
}

/// Each import of a shared file that reaches into a room, as `from -> to`.
fn shared_imports_of_rooms(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    graph
        .iter()
        .filter(|(file, _)| is_shared(file))
        .flat_map(|(file, targets)| {
            targets
                .iter()
                .filter(|target| !is_shared(target))
                .map(move |target| format!("{file} -> {target}"))
        })
        .collect()
}

#[test]
fn control_plane_files_import_one_another_without_a_cycle() {
    if let Some(cycle) = find_cycle(&imports(&sources())) {
        panic!(
            "import cycle between the control plane's files: {}",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn what_every_room_uses_imports_no_room() {
    let upward = shared_imports_of_rooms(&imports(&sources()));
    assert!(
        upward.is_empty(),
        "shared files importing rooms: {upward:?}"
    );
}

#[test]
fn a_shared_file_naming_a_room_is_caught_twice() {
    let mut sources = sources();
    let error = sources.get_mut("error.rs").expect("error.rs");
    error.push_str("\nfn room() -> crate::apis::ApiRecord { todo!() }\n");
    let graph = imports(&sources);
    let cycle = find_cycle(&graph).expect("error.rs -> apis -> error.rs is a cycle");
    assert!(cycle.contains(&"error.rs".to_string()), "{cycle:?}");
    assert_eq!(
        shared_imports_of_rooms(&graph),
        vec!["error.rs -> apis/mod.rs".to_string()]
    );
}
