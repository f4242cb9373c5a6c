//! What an API's mediation costs: the benchmark API's `GET /echo` beside a copy of it
//! (version `v2.0.0`) whose `in` sequence sets a header, as WSO2's documentation adds one,
//! and, on a 10 KiB JSON answer, beside a copy (`v3.0.0`) whose `out` sequence is WSO2's
//! `json_to_xml_out_message`; interleaved round by round, on edge-gateway (case 4, full
//! policy) and in the Spin-like case (case 6).

use std::fmt::Write as _;

use serde_json::json;

use super::Options;
use super::backend::{FastBackend, LARGE_HEADER, large_body};
use super::load::{Load, counted, cpu_cell, median_cpu_us, median_rate};
use super::platform::{BASE, Platform, SECURED};
use super::propagation;
use super::stats::median;
use harness::{Client, machine};

const PUBLISHER: &str = "/api/am/publisher/v0.14";
/// The header-setting copy's base path.
const MEDIATED: &str = "/bench/v2.0.0";
/// The converting copy's base path.
const CONVERTED: &str = "/bench/v3.0.0";
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
}

/// Each gateway's runs.
#[derive(Debug, Clone, Default)]
pub struct MediationRuns {
    pub edge: GatewayRuns,
    pub spin_like: GatewayRuns,
}

/// Publishes the mediated copies, then runs the rounds.
pub async fn measure(options: &Options) -> MediationRuns {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    publish_copy(&platform, "v2.0.0", Some(SEQUENCE), "in", "add_header").await;
    let out = "json_to_xml_out_message";
    publish_copy(&platform, "v3.0.0", None, "out", out).await;
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
        }
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    platform.stop().await;
    runs
}

/// A copy of the benchmark API as `version` whose `flow` sequence is `name` (its own
/// policy of `config`, or a global one), published; once both gateways serve it to the
/// benchmark application.
async fn publish_copy(
    platform: &Platform,
    version: &str,
    config: Option<&str>,
    flow: &str,
    name: &str,
) {
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
    if let Some(config) = config {
        let policy = json!({"name": name, "type": flow, "config": config});
        mgmt.post_json(
            &format!("{PUBLISHER}/apis/{id}/policies/mediation"),
            admin,
            &policy,
        )
        .await
        .expect(200);
    }
    let path = format!("{PUBLISHER}/apis/{id}");
    let mut record = mgmt.get(&path, admin).await.expect(200).body;
    record["sequences"] = json!([{"name": name, "type": flow}]);
    mgmt.put_json(&path, admin, &record).await.expect(200);
    // Publishing the copy carries the first version's subscriptions over (WSO2's
    // checklist default), the benchmark application's among them.
    stack.lifecycle(&id, "Publish").await;
    let served = format!("/bench/{version}{SECURED}");
    for base in [stack.gw.base.clone(), platform.spin_like_url()] {
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
            "A header-setting sequence, and a 10 KiB answer converted to XML, beside the same calls without them",
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
    md
}
