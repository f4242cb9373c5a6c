//! What an API's mediation costs: the benchmark API's `GET /echo` beside a copy of it
//! (version `v2.0.0`) whose `in` sequence sets a header, as WSO2's documentation adds one,
//! and, on a 10 KiB JSON answer, beside a copy (`v3.0.0`) whose `out` sequence is WSO2's
//! `json_to_xml_out_message`; interleaved round by round, on edge-gateway (case 4, full
//! policy) and in the Spin-like case (case 6). On edge-gateway, which alone runs tenants'
//! WebAssembly policies, also beside copies whose `in` policy is a WebAssembly component
//! that does nothing (`v4.0.0`, `policies/hostile` asked nothing) and the example that
//! sets headers (`v5.0.0`, `policies/add-header`); and the plain call again while another
//! client keeps calling a copy (`v6.0.0`) whose policy it asks to loop forever (each such
//! call runs out of fuel, until the policy is suspended).

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

use super::Options;
use super::backend::{FastBackend, LARGE_HEADER, large_body};
use super::load::{Load, Wrk, counted, cpu_cell, median_cpu_us, median_rate};
use super::platform::{BASE, Platform, SECURED};
use super::propagation;
use super::stats::median;
use harness::{Client, machine};

const PUBLISHER: &str = "/api/am/publisher/v0.14";
/// The header-setting copy's base path.
const MEDIATED: &str = "/bench/v2.0.0";
/// The converting copy's base path.
const CONVERTED: &str = "/bench/v3.0.0";
/// The copy whose `in` policy is the no-op WebAssembly policy.
const WASM_NOOP: &str = "/bench/v4.0.0";
/// The copy whose `in` policy is the header-setting example.
const WASM_HEADERS: &str = "/bench/v5.0.0";
/// The copy whose policy the hostile client asks to loop: the no-op policy's component
/// with a custom section of its own, so another policy (suspensions are per policy).
const WASM_HOSTILE: &str = "/bench/v6.0.0";
/// Connections of the client that keeps asking the no-op copy's policy to loop.
const HOSTILE_CONNECTIONS: usize = 4;
/// The copy's `in` sequence: one header set.
const SEQUENCE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="add_header">
    <header name="X-Bench" scope="transport" value="mediated"/>
</sequence>"#;

/// One gateway's runs, one per round of each.
#[derive(Debug, Clone, Default)]
pub struct GatewayRuns {
    /// The 1 KiB answer, no sequence.
    pub plain: Vec<Load>,
    /// The same, with the header-setting `in` sequence.
    pub header: Vec<Load>,
    /// The 10 KiB answer, no sequence.
    pub large: Vec<Load>,
    /// The same, converted to XML by the `out` sequence.
    pub converted: Vec<Load>,
    /// The 1 KiB answer, through a no-op WebAssembly policy (edge-gateway only).
    pub wasm_noop: Vec<Load>,
    /// The same, through the header-setting example policy.
    pub wasm_headers: Vec<Load>,
    /// The plain call while another client asks the no-op copy's policy to loop.
    pub beside_hostile: Vec<Load>,
    /// That client's runs.
    pub hostile: Vec<Load>,
}

/// Each gateway's runs.
#[derive(Debug, Clone, Default)]
pub struct MediationRuns {
    pub edge: GatewayRuns,
    pub spin_like: GatewayRuns,
}

/// Publishes the mediated copies, then runs the rounds.
pub async fn measure(options: &Options) -> MediationRuns {
    // Built before the platform starts: a build's minute would idle its connections.
    let noop = std::fs::read(harness::policy_component("hostile")).expect("no-op policy");
    let example = std::fs::read(harness::policy_component("add-header")).expect("example");
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let header = Policy::Sequence(SEQUENCE);
    publish_copy(&platform, "v2.0.0", header, "in", "add_header").await;
    let out = "json_to_xml_out_message";
    publish_copy(&platform, "v3.0.0", Policy::Global, "out", out).await;
    let looping = with_custom_section(noop.clone(), "apim-bench", b"hostile");
    publish_copy(&platform, "v4.0.0", Policy::Wasm(noop), "in", "noop").await;
    publish_copy(&platform, "v6.0.0", Policy::Wasm(looping), "in", "hostile").await;
    publish_copy(
        &platform,
        "v5.0.0",
        Policy::Wasm(example),
        "in",
        "add-header",
    )
    .await;
    let hostile = vec![platform.bearer(), "x-hostile: loop".to_string()];
    let headers = vec![platform.bearer()];
    let large = vec![platform.bearer(), format!("{LARGE_HEADER}: 10k")];
    let targets = [
        (platform.stack.gw.base.clone(), platform.gateway_pid()),
        (platform.spin_like_url(), platform.spin_like_pid()),
    ];
    machine::pin_process(platform.control_plane_pid(), "0");
    let mut runs = MediationRuns::default();
    for round in 1..=options.rounds {
        eprintln!(
            "bench: round {round}/{}: with and without a header sequence, a 10 KiB answer as it is and as XML",
            options.rounds
        );
        if !options.busy_ok {
            machine::wait_for_quiet_cpu().await;
        }
        for (index, (base, pid)) in targets.iter().enumerate() {
            let url = |base_path: &str| format!("{base}{base_path}{SECURED}");
            let gateway = if index == 0 {
                &mut runs.edge
            } else {
                &mut runs.spin_like
            };
            for (base_path, headers, into) in [
                (BASE, &headers, &mut gateway.plain),
                (MEDIATED, &headers, &mut gateway.header),
                (BASE, &large, &mut gateway.large),
                (CONVERTED, &large, &mut gateway.converted),
            ] {
                into.push(counted(options, &url(base_path), headers, None, *pid).await);
            }
            if index == 0 {
                for (base_path, into) in [
                    (WASM_NOOP, &mut gateway.wasm_noop),
                    (WASM_HEADERS, &mut gateway.wasm_headers),
                ] {
                    into.push(counted(options, &url(base_path), &headers, None, *pid).await);
                }
                let (beside, flood) = beside_a_hostile_policy(
                    options,
                    &url(BASE),
                    &url(WASM_HOSTILE),
                    &headers,
                    &hostile,
                    *pid,
                )
                .await;
                gateway.beside_hostile.push(beside);
                gateway.hostile.push(flood);
            }
        }
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    platform.stop().await;
    runs
}

/// The plain call measured while a second wrk keeps calling the no-op copy asking its
/// policy to loop: the plain call's run, and the hostile client's.
async fn beside_a_hostile_policy(
    options: &Options,
    plain: &str,
    hostile_url: &str,
    headers: &[String],
    hostile: &[String],
    pid: u32,
) -> (Load, Load) {
    let seconds = Duration::from_secs(options.warmup + options.seconds);
    let flood = Wrk {
        url: hostile_url,
        connections: HOSTILE_CONNECTIONS,
        duration: seconds,
        headers: hostile,
        script: None,
    };
    let measured = counted(options, plain, headers, None, pid);
    let (measured, flood) = tokio::join!(measured, flood.run());
    (measured, flood)
}

/// `component` with a custom section `name` holding `payload` appended: the same
/// behaviour, another digest.
fn with_custom_section(mut component: Vec<u8>, name: &str, payload: &[u8]) -> Vec<u8> {
    let mut section = leb128(name.len());
    section.extend_from_slice(name.as_bytes());
    section.extend_from_slice(payload);
    component.push(0);
    component.extend(leb128(section.len()));
    component.extend(section);
    component
}

/// `n` as unsigned LEB128.
fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// What a copy's policy is.
enum Policy {
    /// A Synapse sequence of its own.
    Sequence(&'static str),
    /// A global policy, by name.
    Global,
    /// A WebAssembly component of its own.
    Wasm(Vec<u8>),
}

/// A copy of the benchmark API as `version` whose `flow` sequence is `name` (`policy`),
/// published; once the gateways that can run it serve it to the benchmark application.
async fn publish_copy(platform: &Platform, version: &str, policy: Policy, flow: &str, name: &str) {
    let stack = &platform.stack;
    let (mgmt, admin) = (&stack.mgmt, stack.admin.as_str());
    let copy = format!(
        "{PUBLISHER}/apis/copy-api?apiId={}&newVersion={version}",
        platform.api
    );
    let id = mgmt
        .post_json(&copy, admin, &json!({}))
        .await
        .expect(201)
        .str("id");
    let policies = format!("{PUBLISHER}/apis/{id}/policies/mediation");
    let wasm = matches!(policy, Policy::Wasm(_));
    match policy {
        Policy::Sequence(config) => {
            let policy = json!({"name": name, "type": flow, "config": config});
            mgmt.post_json(&policies, admin, &policy).await.expect(200);
        }
        Policy::Global => {}
        Policy::Wasm(bytes) => {
            let url = format!("{policies}?name={name}&type={flow}");
            let upload = mgmt
                .request(reqwest::Method::POST, &url, admin)
                .header("content-type", "application/wasm")
                .body(bytes);
            mgmt.send(upload).await.expect(200);
        }
    }
    let path = format!("{PUBLISHER}/apis/{id}");
    let mut record = mgmt.get(&path, admin).await.expect(200).body;
    record["sequences"] = json!([{"name": name, "type": flow}]);
    mgmt.put_json(&path, admin, &record).await.expect(200);
    // Publishing the copy carries the first version's subscriptions over (WSO2's
    // checklist default), the benchmark application's among them.
    stack.lifecycle(&id, "Publish").await;
    let served = format!("/bench/{version}{SECURED}");
    // Only edge-gateway's host forwarding runs WebAssembly policies.
    let gateways = if wasm {
        vec![stack.gw.base.clone()]
    } else {
        vec![stack.gw.base.clone(), platform.spin_like_url()]
    };
    for base in gateways {
        let gateway = Client::new(&base);
        propagation::poll(&gateway, &served, &platform.token, |r| r.status == 200).await;
    }
}

/// The report's table.
pub fn section(options: &Options, runs: &MediationRuns) -> String {
    let c = options.connections;
    let mut md = format!(
        "{}The benchmark API's `GET /echo` (1 KiB backend, full policy, JWT) beside a copy \
         of it whose `in` sequence sets one header (`<header name=\"X-Bench\" \
         scope=\"transport\" value=\"mediated\"/>`, compiled into the manifest); and, the \
         backend answering {} bytes of JSON (120 records), the same call beside a copy whose \
         `out` sequence is WSO2's `json_to_xml_out_message` (the answer read whole and \
         converted to XML). Interleaved round by round. CPU: the gateway process's user + \
         system time per request. Medians of {} rounds; errors: non-2xx answers and socket \
         errors over all measured runs.\n\n\
         | gateway | API | req/s at {c} | CPU µs/req at {c} | p99 µs at {c} | CPU added by \
         the sequence | errors |\n|---|---|--:|--:|--:|--:|--:|\n",
        super::report::section_head(
            "A header-setting sequence, WebAssembly policies, and a 10 KiB answer converted to XML, beside the same calls without them",
            &format!(
                "--only mediation --rounds {} --seconds {} --connections {c}",
                options.rounds, options.seconds
            ),
        ),
        large_body().len(),
        options.rounds
    );
    for (gateway, runs) in [
        ("edge-gateway (case 4)", &runs.edge),
        ("Spin-like (case 6)", &runs.spin_like),
    ] {
        for (without, with, plain, mediated) in [
            (
                "1 KiB, without",
                "1 KiB, header sequence",
                &runs.plain,
                &runs.header,
            ),
            (
                "10 KiB, without",
                "10 KiB, as XML",
                &runs.large,
                &runs.converted,
            ),
        ] {
            let added = match (median_cpu_us(mediated), median_cpu_us(plain)) {
                (Some(mediated), Some(plain)) => format!("{:+.1} µs", mediated - plain),
                _ => "–".into(),
            };
            for (api, loads, shown) in [(without, plain, String::new()), (with, mediated, added)] {
                let errors: u64 = loads.iter().map(|l| l.errors).sum();
                let _ = writeln!(
                    md,
                    "| {gateway} | {api} | {:.0} | {} | {:.0} | {shown} | {errors} |",
                    median_rate(loads),
                    cpu_cell(loads),
                    median(loads.iter().map(|l| l.p99_us)),
                );
            }
        }
    }
    let edge = &runs.edge;
    for (api, loads) in [
        ("1 KiB, no-op Wasm policy", &edge.wasm_noop),
        ("1 KiB, header-setting Wasm policy", &edge.wasm_headers),
    ] {
        let added = match (median_cpu_us(loads), median_cpu_us(&edge.plain)) {
            (Some(with), Some(plain)) => format!("{:+.1} µs", with - plain),
            _ => "–".into(),
        };
        let errors: u64 = loads.iter().map(|l| l.errors).sum();
        let _ = writeln!(
            md,
            "| edge-gateway (case 4) | {api} | {:.0} | {} | {:.0} | {added} | {errors} |",
            median_rate(loads),
            cpu_cell(loads),
            median(loads.iter().map(|l| l.p99_us)),
        );
    }
    md.push_str(&containment(runs));
    md
}

/// The plain call quiet, and beside a client that keeps asking another API's policy to
/// loop.
fn containment(runs: &MediationRuns) -> String {
    let edge = &runs.edge;
    let p99 = |loads: &[Load]| median(loads.iter().map(|l| l.p99_us));
    let (quiet, beside) = (p99(&edge.plain), p99(&edge.beside_hostile));
    let errors: u64 = edge.beside_hostile.iter().map(|l| l.errors).sum();
    format!(
        "\nContainment on edge-gateway: the plain call as above, and again while a second wrk \
         ({HOSTILE_CONNECTIONS} connections) keeps calling another copy, whose policy is the \
         same component under another digest, with `x-hostile: loop`, which makes it spin \
         until its fuel runs out (10 million, \
         `APIM_POLICY_FUEL`); three such calls in a row suspend the policy (503 at once) for \
         1 s, then 2 s, 4 s, ... up to 60 s.\n\n\
         | the plain call | req/s | p99 µs | p99 beside / quiet | errors |\n\
         |---|--:|--:|--:|--:|\n\
         | quiet | {:.0} | {quiet:.0} | | |\n\
         | beside the looping policy | {:.0} | {beside:.0} | {:.2}× | {errors} |\n\n\
         The looping client was answered {:.0} times a second (every answer a fault).\n",
        median_rate(&edge.plain),
        median_rate(&edge.beside_hostile),
        beside / quiet,
        median_rate(&edge.hostile),
    )
}
