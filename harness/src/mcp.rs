//! MCP clients as agents run them: the official Python SDK's releases, each in a virtual
//! environment of its own under `target/mcp/` (made, from the pinned requirements in
//! `tests/mcp/`, the first time a test asks for it), driven by `tests/mcp/client.py`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// A release of the official Python SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// 2.3: the stateless revision, 2026-07-28.
    Stateless,
    /// 1.30: the handshake revision, 2025-11-25.
    Handshake,
}

impl Sdk {
    fn name(self) -> &'static str {
        match self {
            Sdk::Stateless => "stateless",
            Sdk::Handshake => "handshake",
        }
    }
}

/// What the client saw: the revision it spoke, the tools listed, and the call's result
/// (`structured`, `isError`, `texts`); or why it failed.
pub async fn call_tool(
    sdk: Sdk,
    url: &str,
    token: &str,
    tool: &str,
    arguments: &Value,
) -> Result<Value, String> {
    let python = python(sdk)?;
    let script = crate::workspace_root().join("tests/mcp/client.py");
    let output = tokio::process::Command::new(python)
        .arg(script)
        .args([url, tool, &arguments.to_string()])
        .env("MCP_BEARER_TOKEN", token)
        .output()
        .await
        .map_err(|err| format!("could not run the MCP client: {err}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "the MCP client failed ({}): {}{}",
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_str(stdout.trim())
        .map_err(|err| format!("the MCP client printed no JSON ({err}): {stdout}"))
}

/// The Python of `sdk`'s environment, made once per process.
fn python(sdk: Sdk) -> Result<PathBuf, String> {
    static STATELESS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static HANDSHAKE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let cell = match sdk {
        Sdk::Stateless => &STATELESS,
        Sdk::Handshake => &HANDSHAKE,
    };
    cell.get_or_init(|| environment(sdk)).clone()
}

/// `target/mcp/<sdk>`, with the SDK its requirements pin installed.
fn environment(sdk: Sdk) -> Result<PathBuf, String> {
    let root = crate::workspace_root();
    let requirements = root.join(format!("tests/mcp/requirements-{}.txt", sdk.name()));
    let dir = root.join("target/mcp").join(sdk.name());
    let python = dir.join("bin/python");
    let stamp = dir.join("installed.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .map_err(|err| format!("{}: {err}", requirements.display()))?;
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    run(Command::new("python3").args(["-m", "venv"]).arg(&dir))?;
    run(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "-r"])
        .arg(&requirements))?;
    std::fs::write(&stamp, wanted).map_err(|err| format!("{}: {err}", stamp.display()))?;
    Ok(python)
}

fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let output = command
        .output()
        .map_err(|err| format!("{shown}: {err} (python3 and its venv module are needed)"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
