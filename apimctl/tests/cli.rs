//! The command line alone, without a control plane: environments kept, refused as they
//! should be, and what a pipeline reads (`--output json`, exit codes).

use std::process::Command;

fn apimctl(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_apimctl"))
        .args(args)
        .env("APIMCTL_CONFIG_DIR", config)
        .env_remove("APIMCTL_PASSWORD")
        .output()
        .expect("apimctl runs")
}

fn folder(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("apimctl-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn environments_are_kept_and_listed() {
    let config = folder("envs");
    let added = apimctl(
        &config,
        &["env", "add", "prod", "--url", "https://apim.example/"],
    );
    assert!(added.status.success(), "{added:?}");
    let listed = apimctl(&config, &["--output", "json", "env", "list"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed,
        serde_json::json!([{"name": "prod", "url": "https://apim.example"}])
    );
    let removed = apimctl(&config, &["env", "remove", "prod"]);
    assert!(removed.status.success());
    let _ = std::fs::remove_dir_all(&config);
}

#[test]
fn bad_input_is_refused_with_exit_code_1() {
    let config = folder("refusals");
    for args in [
        &["env", "add", "x", "--url", "ftp://apim.example"][..],
        &["env", "add", "x", "--url", "not a url"],
        &["env", "remove", "nowhere"],
        &["plan", "--env", "nowhere", "."],
        &["login", "nowhere", "-u", "admin"],
    ] {
        let refused = apimctl(&config, args);
        assert_eq!(refused.status.code(), Some(1), "{args:?}: {refused:?}");
        assert!(String::from_utf8_lossy(&refused.stderr).starts_with("error: "));
    }
    let json = apimctl(&config, &["--output", "json", "env", "remove", "nowhere"]);
    let said: serde_json::Value = serde_json::from_slice(&json.stderr).unwrap();
    assert!(said["error"].as_str().unwrap().contains("nowhere"));
    let _ = std::fs::remove_dir_all(&config);
}

#[test]
fn completions_are_written_for_each_shell() {
    let config = folder("completions");
    for shell in ["bash", "zsh", "fish"] {
        let written = apimctl(&config, &["completions", shell]);
        assert!(written.status.success());
        assert!(String::from_utf8_lossy(&written.stdout).contains("apimctl"));
    }
}
