//! The binary's command line: every setting is documented with its environment variable,
//! and production start-up refuses to run without an administrator password.

use std::process::Command;

fn control_plane() -> Command {
    Command::new(env!("CARGO_BIN_EXE_control-plane"))
}

#[test]
fn help_documents_every_environment_variable() {
    let output = control_plane().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    for var in [
        "APIM_MGMT_ADDR",
        "APIM_DATA_DIR",
        "APIM_DATABASE_URL",
        "APIM_ADMIN_USER",
        "APIM_ADMIN_PASSWORD",
        "APIM_DEV_MODE",
        "APIM_SCOPE_PREFIX",
        "APIM_DATA_KEY_FILE",
    ] {
        assert!(help.contains(var), "--help does not mention {var}:\n{help}");
    }
}

#[test]
fn refuses_to_start_without_an_administrator() {
    let dir = std::env::temp_dir().join(format!("cp-cli-{}", std::process::id()));
    let output = control_plane()
        .env_clear()
        .env("APIM_DATA_DIR", &dir)
        .env("APIM_MGMT_ADDR", "127.0.0.1:0")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("APIM_ADMIN_PASSWORD"));
}
