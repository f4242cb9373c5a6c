//! What an API's mediation costs: the benchmark API's `GET /echo` beside a copy of it
//! (version `v2.0.0`) whose `in` sequence sets a header, as WSO2's documentation adds one,
//! interleaved round by round, on edge-gateway (case 4, full policy) and in the Spin-like
//! case (case 6).

use std::fmt::Write as _;

use serde_json::json;

use super::Options;
use super::backend::FastBackend;
use super::load::{Load, counted, cpu_cell, median_cpu_us, median_rate};
use super::platform::{BASE, Platform, SECURED};
use super::propagation;
use super::stats::median;
use harness::{Client, machine};

const PUBLISHER: &str = "/api/am/publisher/v0.14";
/// The copy's base path.
const MEDIATED: &str = "/bench/v2.0.0";
/// The copy's `in` sequence: one header set.
const SEQUENCE: &str = r#"<sequence xmlns="http://ws.apache.org/ns/synapse" name="add_header">
    <header name="X-Bench" scope="transport" value="mediated"/>
</sequence>"#;

/// Each gateway's runs, one per round.
#[derive(Debug, Clone, Default)]
pub struct MediationRuns {
    pub plain: Vec<Load>,
    pub mediated: Vec<Load>,
    pub spin_like_plain: Vec<Load>,
    pub spin_like_mediated: Vec<Load>,
}

/// Publishes the mediated copy, then runs the rounds.
pub async fn measure(options: &Options) -> MediationRuns {
    let backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    publish_mediated_copy(&platform).await;
    let headers = vec![platform.bearer()];
    let targets = [
        (platform.stack.gw.base.clone(), platform.gateway_pid()),
        (platform.spin_like_url(), platform.spin_like_pid()),
    ];
    machine::pin_process(platform.control_plane_pid(), "0");
    let mut runs = MediationRuns::default();
    for round in 1..=options.rounds {
        eprintln!(
            "bench: round {round}/{}: with and without a header sequence",
            options.rounds
        );
        if !options.busy_ok {
            machine::wait_for_quiet_cpu().await;
        }
        for (index, (base, pid)) in targets.iter().enumerate() {
            let plain_url = format!("{base}{BASE}{SECURED}");
            let mediated_url = format!("{base}{MEDIATED}{SECURED}");
            let plain = counted(options, &plain_url, &headers, None, *pid).await;
            let mediated = counted(options, &mediated_url, &headers, None, *pid).await;
            let (plain_runs, mediated_runs) = if index == 0 {
                (&mut runs.plain, &mut runs.mediated)
            } else {
                (&mut runs.spin_like_plain, &mut runs.spin_like_mediated)
            };
            plain_runs.push(plain);
            mediated_runs.push(mediated);
        }
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    platform.stop().await;
    runs
}

/// A copy of the benchmark API whose `in` sequence sets a header, published; once both
/// gateways serve it to the benchmark application.
async fn publish_mediated_copy(platform: &Platform) {
    let stack = &platform.stack;
    let (mgmt, admin) = (&stack.mgmt, stack.admin.as_str());
    let copy = format!(
        "{PUBLISHER}/apis/copy-api?apiId={}&newVersion=v2.0.0",
        platform.api
    );
    let id = mgmt
        .post_json(&copy, admin, &json!({}))
        .await
        .expect(201)
        .str("id");
    let policy = json!({"name": "add_header", "type": "in", "config": SEQUENCE});
    mgmt.post_json(
        &format!("{PUBLISHER}/apis/{id}/policies/mediation"),
        admin,
        &policy,
    )
    .await
    .expect(200);
    let path = format!("{PUBLISHER}/apis/{id}");
    let mut record = mgmt.get(&path, admin).await.expect(200).body;
    record["sequences"] = json!([{"name": "add_header", "type": "in"}]);
    mgmt.put_json(&path, admin, &record).await.expect(200);
    // Publishing the copy carries the first version's subscriptions over (WSO2's
    // checklist default), the benchmark application's among them.
    stack.lifecycle(&id, "Publish").await;
    let mediated = format!("{MEDIATED}{SECURED}");
    for base in [stack.gw.base.clone(), platform.spin_like_url()] {
        let gateway = Client::new(&base);
        propagation::poll(&gateway, &mediated, &platform.token, |r| r.status == 200).await;
    }
}

/// The report's table.
pub fn section(options: &Options, runs: &MediationRuns) -> String {
    let c = options.connections;
    let mut md = format!(
        "{}The benchmark API's `GET /echo` (1 KiB backend, full policy, JWT) beside a copy \
         of it whose `in` sequence sets one header (`<header name=\"X-Bench\" \
         scope=\"transport\" value=\"mediated\"/>`, compiled into the manifest), interleaved \
         round by round. CPU: the gateway process's user + system time per request. Medians \
         of {} rounds; errors: non-2xx answers and socket errors over all measured runs.\n\n\
         | gateway | API | req/s at {c} | CPU µs/req at {c} | p99 µs at {c} | CPU added by \
         the sequence | errors |\n|---|---|--:|--:|--:|--:|--:|\n",
        super::report::section_head(
            "A header-setting sequence beside the same call without one",
            &format!(
                "--only mediation --rounds {} --seconds {} --connections {c}",
                options.rounds, options.seconds
            ),
        ),
        options.rounds
    );
    for (gateway, plain, mediated) in [
        ("edge-gateway (case 4)", &runs.plain, &runs.mediated),
        (
            "Spin-like (case 6)",
            &runs.spin_like_plain,
            &runs.spin_like_mediated,
        ),
    ] {
        let added = match (median_cpu_us(mediated), median_cpu_us(plain)) {
            (Some(mediated), Some(plain)) => format!("{:+.1} µs", mediated - plain),
            _ => "–".into(),
        };
        for (api, loads, shown) in [
            ("without", plain, String::new()),
            ("with the sequence", mediated, added),
        ] {
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
    md
}
