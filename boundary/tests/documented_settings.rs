//! Every setting `docs/configuration.md` documents is read by the code of the binaries or
//! the components: named as a string in their sources (clap's `env = "…"`, a `wasi:config`
//! variable's constant), or read by the library this list names. A setting documented and
//! read by nothing fails here.

use std::collections::BTreeSet;
use std::path::Path;

/// The sources that read settings: what the binaries and components are built from.
const READERS: [&str; 9] = [
    "control-plane/src",
    "edge-gateway/src",
    "components/gateway/src",
    "components/dev-facade/src",
    "components/http/src",
    "otel/src",
    "listener-tls/src",
    "config-secrets/src",
    "metrics-exposition/src",
];

/// Settings read by a library rather than by our code, with the library.
const READ_BY_LIBRARIES: [(&str, &str); 4] = [
    ("RUST_LOG", "tracing-subscriber's EnvFilter"),
    ("LISTEN_FDS", "listenfd"),
    ("LISTEN_PID", "listenfd"),
    ("NOTIFY_SOCKET", "sd-notify"),
];

#[test]
fn every_documented_setting_is_read() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let docs = std::fs::read_to_string(workspace.join("docs/configuration.md"))
        .expect("docs/configuration.md");
    let documented = documented_settings(&docs);
    assert!(
        documented.len() > 80,
        "only {} settings read from the page: has its layout changed?",
        documented.len()
    );
    let sources: String = READERS
        .iter()
        .flat_map(|dir| boundary::read_sources(&workspace.join(dir)).into_values())
        .collect();
    let unread: Vec<&String> = documented
        .iter()
        .filter(|name| !sources.contains(&format!("\"{name}\"")))
        .filter(|name| !READ_BY_LIBRARIES.iter().any(|(n, _)| n == name))
        .collect();
    assert!(
        unread.is_empty(),
        "documented in docs/configuration.md, read by no code: {unread:?}"
    );
}

/// The settings the page documents: each name in the first column of its tables, and the
/// facade's variables, named in backticks.
fn documented_settings(docs: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_tools = false;
    for line in docs.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            in_tools = heading.starts_with("The tools");
        }
        let cell = match line.strip_prefix("| ") {
            Some(row) => row.split(" |").next().unwrap_or_default(),
            None if line.contains("`dev_") => line,
            None => continue,
        };
        if in_tools {
            continue;
        }
        names.extend(backticked(cell).filter(|name| is_setting_name(name)));
    }
    names
}

/// The texts between backticks.
fn backticked(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split('`').skip(1).step_by(2).map(str::to_string)
}

/// `APIM_GATEWAY_ADDR` or `backend_timeout_ms`: one case, letters, digits and `_`.
fn is_setting_name(name: &str) -> bool {
    let upper = name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    let lower = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    name.contains('_') && (upper || lower)
}
