//! The components stay within what every Spin host from 3.0 on provides, so the same
//! `.wasm` files run on Spin 3.x, 4.x and edge-gateway; their WASIp3 artefacts within what
//! Spin 4.1 provides (the final WASI 0.3.0); and spin.toml (spin-p3.toml) deploys them.

use wasmparser::{Parser, Payload};

/// Interfaces the component may import: WASI 0.2 HTTP, the key-value and config drafts
/// Spin 3+ implements, and what Rust's std pulls in.
const ALLOWED_IMPORTS: &[&str] = &[
    "wasi:http/types@0.2.",
    "wasi:http/outgoing-handler@0.2.",
    "wasi:keyvalue/store@0.2.0-draft2",
    "wasi:keyvalue/atomics@0.2.0-draft2",
    "wasi:config/store@0.2.0-draft-2024-09-27",
    "wasi:cli/environment@0.2.",
    "wasi:cli/exit@0.2.",
    "wasi:cli/stdin@0.2.",
    "wasi:cli/stdout@0.2.",
    "wasi:cli/stderr@0.2.",
    "wasi:cli/terminal-input@0.2.",
    "wasi:cli/terminal-output@0.2.",
    "wasi:cli/terminal-stdin@0.2.",
    "wasi:cli/terminal-stdout@0.2.",
    "wasi:cli/terminal-stderr@0.2.",
    "wasi:clocks/wall-clock@0.2.",
    "wasi:clocks/monotonic-clock@0.2.",
    "wasi:random/random@0.2.",
    "wasi:random/insecure@0.2.",
    "wasi:random/insecure-seed@0.2.",
    "wasi:io/error@0.2.",
    "wasi:io/poll@0.2.",
    "wasi:io/streams@0.2.",
];

/// What a WASIp3 artefact may import besides [`ALLOWED_IMPORTS`] (which Rust's std, built
/// for WASI 0.2, still pulls in): WASI 0.3.0 exactly, which Spin 4.1 serves (4.0.x takes
/// only a release candidate).
const ALLOWED_P3_IMPORTS: &[&str] = &[
    "wasi:http/types@0.3.0",
    "wasi:http/client@0.3.0",
    "wasi:cli/types@0.3.0",
    "wasi:cli/stdout@0.3.0",
    "wasi:cli/stderr@0.3.0",
    "wasi:cli/stdin@0.3.0",
    "wasi:clocks/types@0.3.0",
    "wasi:clocks/monotonic-clock@0.3.0",
    "wasi:clocks/system-clock@0.3.0",
    "wasi:random/random@0.3.0",
    "wasi:random/insecure@0.3.0",
    "wasi:random/insecure-seed@0.3.0",
];

/// The Spin world a component must stay within: what it may import, and the handler
/// Spin calls.
struct SpinWorld {
    allowed: &'static [&'static [&'static str]],
    handler: &'static str,
}

/// WASI 0.2's proxy world, as every Spin from 3.0 serves it.
const SPIN_3: SpinWorld = SpinWorld {
    allowed: &[ALLOWED_IMPORTS],
    handler: "wasi:http/incoming-handler@0.2.",
};

/// WASI 0.3.0's `wasi:http/service`, as Spin 4.1 serves it.
const SPIN_4_1_P3: SpinWorld = SpinWorld {
    allowed: &[ALLOWED_IMPORTS, ALLOWED_P3_IMPORTS],
    handler: "wasi:http/handler@0.3.0",
};

/// The component's top-level imports and exports.
fn interfaces(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.expect("a valid component") {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    imports.push(import.expect("import").name.0.to_string());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    exports.push(export.expect("export").name.0.to_string());
                }
            }
            _ => {}
        }
    }
    (imports, exports)
}

/// Checks that `wasm` imports nothing beyond what `world` allows, imports each of
/// `needed`, and exports the world's handler (which Spin calls) and `extra` exports
/// (which Spin leaves alone).
fn assert_spin_compatible(
    world: &SpinWorld,
    wasm: &std::path::Path,
    needed: &[&str],
    extra: &[&str],
) {
    let bytes = std::fs::read(wasm).unwrap_or_else(|e| panic!("{}: {e}", wasm.display()));
    let (imports, exports) = interfaces(&bytes);
    let allowed = |import: &String| {
        world
            .allowed
            .iter()
            .flat_map(|list| list.iter())
            .any(|allowed| import.starts_with(allowed))
    };
    let unexpected: Vec<&String> = imports.iter().filter(|i| !allowed(i)).collect();
    assert!(
        unexpected.is_empty(),
        "unexpected imports {unexpected:?}; all: {imports:#?}"
    );
    for needed in needed {
        assert!(
            imports.iter().any(|i| i.starts_with(needed)),
            "{needed} not imported: {imports:#?}"
        );
    }
    assert_eq!(exports.len(), 1 + extra.len(), "exports: {exports:?}");
    assert!(
        exports.iter().any(|e| e.starts_with(world.handler)),
        "exports: {exports:?}"
    );
    for extra in extra {
        assert!(
            exports.iter().any(|e| e.starts_with(extra)),
            "{extra} not exported: {exports:?}"
        );
    }
}

#[test]
fn gateway_component_imports_only_what_spin_provides() {
    assert_spin_compatible(
        &SPIN_3,
        &harness::gateway_component(),
        &[
            "wasi:http/outgoing-handler@0.2.",
            "wasi:keyvalue/store@0.2.0-draft2",
            "wasi:config/store@",
        ],
        &["apim:gateway/policy@0.1.0", "apim:gateway/sync@0.1.0"],
    );
}

#[test]
fn dev_facade_component_imports_only_what_spin_provides() {
    assert_spin_compatible(
        &SPIN_3,
        &harness::dev_facade_component(),
        &["wasi:http/outgoing-handler@0.2.", "wasi:config/store@"],
        &[],
    );
}

#[test]
fn gateway_p3_artefact_imports_only_what_spin_4_1_provides() {
    assert_spin_compatible(
        &SPIN_4_1_P3,
        &harness::gateway_p3_component(),
        &[
            "wasi:http/client@0.3.0",
            "wasi:keyvalue/store@0.2.0-draft2",
            "wasi:config/store@",
        ],
        &[],
    );
}

#[test]
fn dev_facade_p3_artefact_imports_only_what_spin_4_1_provides() {
    assert_spin_compatible(
        &SPIN_4_1_P3,
        &harness::dev_facade_p3_component(),
        &["wasi:http/client@0.3.0", "wasi:config/store@"],
        &[],
    );
}

/// The HTTP triggers of spin.toml that name `component`.
fn triggers_of<'a>(manifest: &'a toml::Table, component: &str) -> Vec<&'a toml::Value> {
    manifest["trigger"]["http"]
        .as_array()
        .expect("http trigger")
        .iter()
        .filter(|t| t["component"].as_str() == Some(component))
        .collect()
}

/// The component `name` of spin.toml: deploys `built`, with each of `settings` bound to
/// the application variable of the same name and the `fixed` ones set to their template,
/// and no other variable.
fn assert_deployed(
    manifest: &toml::Table,
    name: &str,
    built: &std::path::Path,
    settings: &[&str],
    fixed: &[(&str, &str)],
) -> toml::Table {
    let component = manifest["component"][name]
        .as_table()
        .unwrap_or_else(|| panic!("component {name} missing"))
        .clone();
    let source = harness::workspace_root().join(component["source"].as_str().expect("source"));
    assert_eq!(source, built, "spin.toml must point at the built {name}");
    assert!(source.exists());
    let variables = component["variables"].as_table().expect("variables");
    for setting in settings {
        assert!(
            manifest["variables"].get(*setting).is_some(),
            "application variable {setting} missing"
        );
        let value = variables[*setting].as_str().unwrap_or_default();
        assert_eq!(
            value,
            format!("{{{{ {setting} }}}}"),
            "{name} variable {setting}"
        );
    }
    for (setting, value) in fixed {
        assert_eq!(variables[*setting].as_str(), Some(*value), "{setting}");
    }
    let mut expected: Vec<&str> = settings.to_vec();
    expected.extend(fixed.iter().map(|(setting, _)| *setting));
    expected.sort_unstable();
    let mut given: Vec<&str> = variables.keys().map(String::as_str).collect();
    given.sort_unstable();
    assert_eq!(given, expected, "{name} sees exactly its own variables");
    component
}

/// The Spin manifest `file` of the workspace, parsed.
fn spin_manifest(file: &str) -> toml::Table {
    let root = harness::workspace_root();
    let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.parse()
        .unwrap_or_else(|e| panic!("{file} parses: {e}"))
}

#[test]
fn spin_manifest_deploys_the_built_components_with_every_setting() {
    assert_deploys_with_every_setting(
        &spin_manifest("spin.toml"),
        &harness::gateway_component(),
        &harness::dev_facade_component(),
    );
}

#[test]
fn spin_p3_manifest_deploys_the_built_p3_artefacts_with_every_setting() {
    assert_deploys_with_every_setting(
        &spin_manifest("spin-p3.toml"),
        &harness::gateway_p3_component(),
        &harness::dev_facade_p3_component(),
    );
}

/// `manifest` deploys the `gateway` and `dev_facade` built, with every setting.
fn assert_deploys_with_every_setting(
    manifest: &toml::Table,
    gateway: &std::path::Path,
    dev_facade: &std::path::Path,
) {
    use dev_facade::backend::settings as facade;
    use gateway::sync::settings;
    assert_eq!(manifest["spin_manifest_version"].as_integer(), Some(2));
    let gateway = assert_deployed(
        manifest,
        "gateway",
        gateway,
        &[
            settings::CONTROL_PLANE_URL,
            settings::MANIFEST_PUBLIC_KEY,
            settings::GATEWAY_SECRET,
            settings::BACKEND_TIMEOUT_MS,
            settings::EXACT_COUNTING,
            settings::GATEWAY_ENVIRONMENT,
            settings::GATEWAY_ID,
            settings::CATCH_UP_MS,
            settings::ACCESS_LOG,
            settings::MAX_REQUEST_BODY_BYTES,
            settings::BACKEND_JWT,
        ],
        &[(
            settings::EGRESS_ALLOW,
            "dev-facade.spin.internal,{{ egress_allow }}",
        )],
    );
    let routes: Vec<_> = triggers_of(manifest, "gateway")
        .iter()
        .map(|t| t["route"].clone())
        .collect();
    assert_eq!(routes, [toml::Value::from("/...")]);
    let stores = gateway["key_value_stores"]
        .as_array()
        .expect("key_value_stores");
    assert!(stores.iter().any(|s| s.as_str() == Some("default")));
    assert_deployed(
        manifest,
        "dev-facade",
        dev_facade,
        &[
            facade::SOAP_URL,
            facade::SOAP_USER,
            facade::SOAP_PASSWORD,
            facade::SOAP_TIMEOUT_MS,
        ],
        &[],
    );
}

/// Spin serves the facade only to the application's components (a private route, no
/// public one), and the gateway may reach it: Spin's outbound list names it (the
/// wildcards do not cover `*.spin.internal`) and so does the gateway's egress policy.
#[test]
fn spin_manifests_keep_the_facade_private_behind_the_gateway() {
    for file in ["spin.toml", "spin-p3.toml"] {
        assert_facade_private(&spin_manifest(file));
    }
}

/// `manifest` serves the facade only through the gateway.
fn assert_facade_private(manifest: &toml::Table) {
    let facade_routes: Vec<&toml::Value> = triggers_of(manifest, "dev-facade")
        .iter()
        .map(|t| &t["route"])
        .collect();
    let private: toml::Value = toml::toml! { private = true }.into();
    assert_eq!(
        facade_routes,
        [&private],
        "the facade's only route is private"
    );
    let public: Vec<&toml::Value> = manifest["trigger"]["http"]
        .as_array()
        .expect("http trigger")
        .iter()
        .filter(|t| t["route"].is_str())
        .collect();
    assert!(
        public
            .iter()
            .all(|t| t["component"].as_str() == Some("gateway")),
        "only the gateway has public routes: {public:?}"
    );

    let facade_url = "http://dev-facade.spin.internal";
    let outbound = |component: &str| -> Vec<String> {
        manifest["component"][component]["allowed_outbound_hosts"]
            .as_array()
            .expect("allowed_outbound_hosts")
            .iter()
            .map(|h| h.as_str().expect("a host").to_string())
            .collect()
    };
    assert!(outbound("gateway").iter().any(|h| h == facade_url));
    assert!(
        !outbound("dev-facade")
            .iter()
            .any(|h| h.contains("spin.internal")),
        "the facade calls no other component"
    );
    let egress = manifest["component"]["gateway"]["variables"]["egress_allow"]
        .as_str()
        .expect("egress_allow")
        .replace("{{ egress_allow }}", "");
    let policy = apim_http::egress::EgressPolicy::parse(&egress).expect("egress_allow parses");
    assert_eq!(
        policy.check_url(&format!("{facade_url}/devs/alice")),
        Ok(())
    );
    assert!(policy.check_url("http://gateway.spin.internal/").is_err());
}
