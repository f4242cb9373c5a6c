//! A tool call beside the same REST call: the benchmark API served as MCP by its
//! provider's switch, its `GET /echo` called as the tool `get_echo` (a 2026-07-28
//! `tools/call`, with its routing headers, as the official SDK sends it) and as itself,
//! interleaved round by round, on edge-gateway (case 4, full policy) and in the Spin-like
//! case (case 6, a fresh instance per request).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::Options;
use super::backend::FastBackend;
use super::load::{Load, Wrk, counted, cpu_cell, median_cpu_us, median_rate, script};
use super::platform::{BASE, Platform, SECURED};
use super::profile::{self, Profile};
use super::stats::median;
use harness::machine;

/// The tool the benchmark resource becomes.
const TOOL: &str = "get_echo";

/// Each gateway's runs, one per round.
#[derive(Debug, Clone, Default)]
pub struct McpRuns {
    pub rest: Vec<Load>,
    pub tool: Vec<Load>,
    pub spin_like_rest: Vec<Load>,
    pub spin_like_tool: Vec<Load>,
    /// Where edge-gateway's time goes under the tool call.
    pub profile: Option<Profile>,
}

/// Switches the benchmark API's MCP server on, then runs the rounds.
pub async fn measure(options: &Options) -> McpRuns {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let stack = &platform.stack;
    stack
        .mgmt
        .put_json(
            &format!("/api/am/publisher/v0.14/apis/{}/mcp", platform.api),
            &stack.admin,
            &json!({"enabled": true}),
        )
        .await
        .expect(200);
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": TOOL, "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut headers = vec![
        platform.bearer(),
        "Content-Type: application/json".to_string(),
        "Accept: application/json, text/event-stream".to_string(),
        "Mcp-Protocol-Version: 2026-07-28".to_string(),
        "Mcp-Method: tools/call".to_string(),
    ];
    headers.push(format!("Mcp-Name: {TOOL}"));
    let lua = script(
        &platform.dir,
        "mcp-tools-call",
        "POST",
        &message.replace('"', "\\\""),
        &headers,
    );
    let rest_headers = vec![platform.bearer()];
    let targets = [
        (stack.gw.base.clone(), platform.gateway_pid()),
        (platform.spin_like_url(), platform.spin_like_pid()),
    ];
    for (base, _) in &targets {
        answers_the_tool_call(&format!("{base}{BASE}/mcp"), &headers, &message).await;
    }
    machine::pin_process(platform.control_plane_pid(), "0");
    let mut runs = McpRuns::default();
    for round in 1..=options.rounds {
        eprintln!(
            "bench: round {round}/{}: REST and MCP calls",
            options.rounds
        );
        if !options.busy_ok {
            machine::wait_for_quiet_cpu().await;
        }
        for (index, (base, pid)) in targets.iter().enumerate() {
            let rest_url = format!("{base}{BASE}{SECURED}");
            let tool_url = format!("{base}{BASE}/mcp");
            let rest = counted(options, &rest_url, &rest_headers, None, *pid).await;
            let tool = counted(options, &tool_url, &[], Some(&lua), *pid).await;
            let (rest_runs, tool_runs) = if index == 0 {
                (&mut runs.rest, &mut runs.tool)
            } else {
                (&mut runs.spin_like_rest, &mut runs.spin_like_tool)
            };
            rest_runs.push(rest);
            tool_runs.push(tool);
        }
    }
    if !options.no_profile {
        runs.profile = profile_tool_call(options, &platform, &lua).await;
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    for (base, _) in &targets {
        answers_the_tool_call(&format!("{base}{BASE}/mcp"), &headers, &message).await;
    }
    platform.stop().await;
    runs
}

/// `perf` on edge-gateway while the tool call is the load.
async fn profile_tool_call(options: &Options, platform: &Platform, lua: &Path) -> Option<Profile> {
    eprintln!("bench: profiling edge-gateway under the tool call");
    machine::wait_for_quiet_cpu().await;
    let url = format!("{}{BASE}/mcp", platform.stack.gw.base);
    let load = Wrk {
        url: &url,
        connections: options.connections,
        duration: Duration::default(),
        headers: &[],
        script: Some(lua),
    };
    profile::record(platform, platform.gateway_pid(), "edge-gateway", load).await
}

/// Waits until the tool call answers the backend's answer (its change has reached the
/// gateway), and panics if it answers anything else then: a run of errors measures nothing.
async fn answers_the_tool_call(url: &str, headers: &[String], message: &str) {
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut request = client.post(url).body(message.to_string());
        for header in headers {
            let (name, value) = header.split_once(": ").expect("Name: value");
            request = request.header(name, value);
        }
        let answer = request.send().await.expect("the gateway answers");
        let status = answer.status().as_u16();
        let body: serde_json::Value = answer.json().await.unwrap_or_default();
        if status == 200 && body["result"]["isError"] == false {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tool call is not answered: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The report's table.
pub fn section(options: &Options, runs: &McpRuns) -> String {
    let c = options.connections;
    let mut md = format!(
        "{}The benchmark API's `GET /echo` (1 KiB backend, full policy) called as itself and \
         as the MCP tool `{TOOL}` (`POST .../mcp`, a 2026-07-28 `tools/call` with its routing \
         headers, as the official SDK sends it; the answer is the backend's body wrapped in \
         a JSON-RPC result), interleaved round by round. CPU: the gateway process's user + \
         system time per request. Medians of {} rounds; errors: non-2xx answers and socket \
         errors over all measured runs.\n\n| gateway | call | req/s at {c} | CPU µs/req at \
         {c} | p99 µs at {c} | tool call's CPU / REST call's | errors |\n\
         |---|---|--:|--:|--:|--:|--:|\n",
        super::report::section_head(
            "MCP tool calls beside REST calls",
            &format!(
                "--only mcp --rounds {} --seconds {} --connections {c}",
                options.rounds, options.seconds
            ),
        ),
        options.rounds
    );
    for (gateway, rest, tool) in [
        ("edge-gateway (case 4)", &runs.rest, &runs.tool),
        (
            "Spin-like (case 6)",
            &runs.spin_like_rest,
            &runs.spin_like_tool,
        ),
    ] {
        let ratio = match (median_cpu_us(tool), median_cpu_us(rest)) {
            (Some(tool), Some(rest)) if rest > 0.0 => format!("{:.2}×", tool / rest),
            _ => "–".into(),
        };
        for (call, loads, shown) in [("REST", rest, "".to_string()), ("MCP tool", tool, ratio)] {
            let errors: u64 = loads.iter().map(|l| l.errors).sum();
            let _ = writeln!(
                md,
                "| {gateway} | {call} | {:.0} | {} | {:.0} | {shown} | {errors} |",
                median_rate(loads),
                cpu_cell(loads),
                median(loads.iter().map(|l| l.p99_us)),
            );
        }
    }
    md.push('\n');
    md.push_str(&super::report::profile(
        "a tool call's",
        "edge-gateway under the tool call",
        runs.profile.as_ref(),
    ));
    md
}
