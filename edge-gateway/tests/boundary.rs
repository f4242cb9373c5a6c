//! The host/component boundary, checked from the sources: no import cycle between the
//! files of `edge-gateway/src`, the key-value store (`src/kv/`) apart from the WIT face,
//! and no host file named like one of the components' (`components/gateway`,
//! `components/dev-facade`), so that a name says which side a file is on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use boundary::{file_names, find_cycle, imports, read_sources};

#[test]
fn edge_gateway_files_import_one_another_without_a_cycle() {
    let sources = read_sources(&crate_dir().join("src"));
    assert!(sources.len() > 10, "edge-gateway/src read: {sources:?}");
    let graph = imports(&sources);
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "import cycle between edge-gateway's files: {}",
            cycle.join(" -> ")
        );
    }
}

/// The stores serve the host's counters and cache as well as the component's buckets, so
/// they are written against no WIT type: `wit_host/` translates to them, never the reverse.
#[test]
fn the_key_value_store_reaches_nothing_of_the_wit_face() {
    let graph = imports(&read_sources(&crate_dir().join("src")));
    let stores: Vec<&String> = graph
        .keys()
        .filter(|file| file.starts_with("kv/"))
        .collect();
    assert!(stores.len() > 3, "edge-gateway/src/kv read: {stores:?}");
    for store in stores {
        let reached = reachable(&graph, store);
        let face: Vec<_> = reached
            .iter()
            .filter(|file| file.starts_with("wit_host/"))
            .collect();
        assert!(face.is_empty(), "{store} reaches {face:?}");
    }
}

#[test]
fn no_host_file_shares_a_name_with_a_component_file() {
    let host = file_names(&crate_dir().join("src"));
    let components = crate_dir().join("../components");
    for component in ["gateway", "dev-facade"] {
        let theirs = file_names(&components.join(component).join("src"));
        assert!(!theirs.is_empty(), "components/{component}/src read");
        let shared: Vec<_> = host.intersection(&theirs).collect();
        assert!(
            shared.is_empty(),
            "edge-gateway/src and components/{component}/src both have {shared:?}"
        );
    }
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file `file` imports, directly or through others.
fn reachable(graph: &BTreeMap<String, BTreeSet<String>>, file: &String) -> BTreeSet<String> {
    let mut reached = BTreeSet::new();
    let mut next = vec![file];
    while let Some(at) = next.pop() {
        for imported in graph.get(at).into_iter().flatten() {
            if reached.insert(imported.clone()) {
                next.push(imported);
            }
        }
    }
    reached
}
