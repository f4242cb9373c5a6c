//! The host/component boundary, checked from the sources: no import cycle between the
//! files of `edge-gateway/src`, and no host file named like one of the components'
//! (`components/gateway`, `components/dev-facade`), so that a name says which side a
//! file is on.

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
