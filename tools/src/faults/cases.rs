//! The fault cases: each starts what it breaks, breaks it, measures, and stops it all.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::load::{Load, MakeRequest, Samples, ms};
use super::rig::{HandOver, Rig};
use super::writes::{gateway_converges, verify, write_through_a_kill};
use super::{CaseReport, Options};
use harness::redis::Redis;
use harness::stack::api_record;
use harness::{Backend, PUBLISHER};

/// Case 1: `kill -9` of the control plane during concurrent writes, on SQLite or
/// PostgreSQL, a gateway attached; restarted on the same data.
pub async fn control_plane_kill(options: &Options, postgres: bool) -> CaseReport {
    let (name, database) = if postgres {
        ("cp-kill-postgres", Backend::fresh_postgres().await)
    } else {
        ("cp-kill-sqlite", Backend::Sqlite)
    };
    let mut report = CaseReport::new(
        name,
        format!(
            "kill -9 of the control plane ({}) during {} writes from {} concurrent clients \
             (each an API create, then its publish), restarted on the same data",
            if postgres { "PostgreSQL" } else { "SQLite" },
            options.writes,
            options.writers
        ),
    );
    let mut rig = Rig::start(database, &[]).await;
    let kill_after = options.writes * 2 / 5;
    let writes = write_through_a_kill(&mut rig, options.writes, options.writers, kill_after).await;
    let verdict = verify(&rig, &writes).await;
    let converged = gateway_converges(&rig, &verdict, Duration::from_secs(30)).await;
    let since_restart = writes
        .restarted_at
        .zip(writes.finished_at)
        .map(|(restarted, finished)| finished - restarted);

    report.row(
        "sent",
        format!(
            "{} writes ({} creates, {} publishes)",
            writes.sent,
            writes.created.len() + writes.unacknowledged_creates.len(),
            writes.published.len() + writes.unacknowledged_publishes.len()
        ),
    );
    report.row(
        "acknowledged (2xx)",
        format!(
            "{} ({} before the kill): {} creates, {} publishes",
            writes.acknowledged(),
            writes.acknowledged_before_kill,
            writes.created.len(),
            writes.published.len()
        ),
    );
    report.row("answers", outcome_counts(&writes.outcomes));
    report.row(
        "not acknowledged",
        format!(
            "{} ({} creates, {} publishes); of these, committed anyway and whole: {} creates, {} publishes",
            writes.unacknowledged(),
            writes.unacknowledged_creates.len(),
            writes.unacknowledged_publishes.len(),
            verdict.unacknowledged_present,
            verdict.unacknowledged_published
        ),
    );
    report.row(
        "lost (acknowledged, missing after the restart)",
        format!(
            "{} ({} creates, {} publishes)",
            verdict.lost(),
            verdict.lost_creates.len(),
            verdict.lost_publishes.len()
        ),
    );
    report.row(
        "half-applied (REST record incomplete, or a row without its route in the database)",
        verdict.half_applied.len().to_string(),
    );
    report.row(
        "unknown or duplicate APIs",
        (verdict.unknown.len() + verdict.duplicates.len()).to_string(),
    );
    report.row("restart: kill → listening again", ms(writes.restart_took));
    if let Some(took) = since_restart {
        report.row("restart → last write answered", ms(took));
    }
    report.row(
        "gateway converged (every PUBLISHED API routed, every CREATED one 404) after the last write",
        converged.map_or("not within 30 s".into(), ms),
    );
    report.row(
        "APIs after the restart",
        format!(
            "{} PUBLISHED, {} CREATED",
            verdict.published_contexts.len(),
            verdict.created_contexts.len()
        ),
    );
    report.expect(
        verdict.lost() == 0,
        format!(
            "{} acknowledged writes lost: {:?} {:?}",
            verdict.lost(),
            verdict.lost_creates,
            verdict.lost_publishes
        ),
    );
    report.expect(
        verdict.half_applied.is_empty(),
        format!("half-applied: {:?}", verdict.half_applied),
    );
    report.expect(
        verdict.unknown.is_empty() && verdict.duplicates.is_empty(),
        format!(
            "unknown {:?}, duplicates {:?}",
            verdict.unknown, verdict.duplicates
        ),
    );
    report.expect(
        writes.sent == options.writes,
        format!("{} of {} writes sent", writes.sent, options.writes),
    );
    report.expect(
        writes.unacknowledged() <= options.writers,
        format!(
            "{} writes failed, more than the {} that can be in flight at the kill",
            writes.unacknowledged(),
            options.writers
        ),
    );
    report.expect(
        converged.is_some(),
        "the gateway did not converge within 30 s",
    );
    rig.shut_down().await;
    report
}

/// Case 2: a gateway restarted under load, as a supervisor holding its listening socket
/// does it: a new gateway started beside the old one on the same socket, and SIGTERM to
/// the old one once the new one serves (it drains); then `kill -9` and a new gateway.
pub async fn gateway_restart(options: &Options) -> CaseReport {
    let mut report = CaseReport::new(
        "gateway-restart",
        format!(
            "a gateway restarted under load ({} keep-alive clients calling an API back to back) \
             on a listening socket the supervisor (this command) holds: a new gateway beside the \
             old one, then SIGTERM to the old one; then kill -9 and a new gateway",
            options.clients
        ),
    );
    let mut rig = Rig::start(Backend::Sqlite, &[]).await;
    let (path, token) = rig.steady_api().await;
    report.row(
        "first gateway: start → serving (compiles the component into an empty cache)",
        ms(rig.first_gateway_start),
    );

    let load = Load::start(
        options.clients,
        Duration::ZERO,
        Duration::from_secs(5),
        get(&rig.gw.base, &path, &token),
    );
    tokio::time::sleep(options.load_time()).await;
    let hand_over = rig.hand_over_gateway().await;
    tokio::time::sleep(options.load_time()).await;
    let sent = load.sent();
    let samples = load.finish().await;
    sigterm_rows(&mut report, &samples, sent, &hand_over);

    let load = Load::start(
        options.clients,
        Duration::ZERO,
        Duration::from_secs(5),
        get(&rig.gw.base, &path, &token),
    );
    tokio::time::sleep(options.load_time()).await;
    let killed = Instant::now();
    rig.kill_gateway().await;
    let start_took = rig.start_gateway().await;
    let serving = Instant::now();
    tokio::time::sleep(options.load_time()).await;
    let sent = load.sent();
    let samples = load.finish().await;
    kill_rows(
        &mut report,
        options,
        &samples,
        sent,
        (killed, serving, start_took),
    );
    rig.shut_down().await;
    report
}

/// The SIGTERM round: every request answered 2xx, whichever gateway served it.
fn sigterm_rows(report: &mut CaseReport, samples: &Samples, sent: usize, hand_over: &HandOver) {
    let HandOver {
        started,
        serving,
        signalled,
        exited,
        exit,
    } = *hand_over;
    let how = "SIGTERM";
    report.row(format!("{how}: requests sent"), sent.to_string());
    report.row(
        format!("{how}: answered 2xx"),
        format!("{} of {}", samples.ok(), samples.len()),
    );
    report.row(
        format!("{how}: new gateway, start → serving (component from the cache)"),
        ms(serving - started),
    );
    report.row(
        format!("{how}: while the new gateway started (both on the socket)"),
        samples.between(started, signalled).outcomes(),
    );
    let in_flight = samples.in_flight_at(signalled);
    report.row(
        format!("{how}: in flight at the signal"),
        format!("{}: {}", in_flight.len(), in_flight.outcomes()),
    );
    report.row(
        format!(
            "{how}: old gateway drained (signal → exit {}, {})",
            ms(exited - signalled),
            exit.map_or("did not exit".into(), |e| e.to_string())
        ),
        format!(
            "requests started meanwhile: {}",
            samples.between(signalled, exited).outcomes()
        ),
    );
    report.row(
        format!("{how}: after the old gateway exited"),
        samples.between(exited, Instant::now()).outcomes(),
    );
    report.row(format!("{how}: longest request"), ms(samples.max_took()));
    report.row(format!("{how}: failed"), describe_failures(samples));
    report.expect(
        samples.failed().is_empty(),
        format!(
            "{how}: {} requests failed across the hand-over: {}",
            samples.failed().len(),
            samples.failed().outcomes()
        ),
    );
    report.expect(
        exit.is_some_and(|e| e.success()),
        format!("{how}: the old gateway did not exit cleanly: {exit:?}"),
    );
    report.expect(
        serving - started <= Duration::from_secs(1),
        format!(
            "{how}: the new gateway served {} after its start (target: within 1 s)",
            ms(serving - started)
        ),
    );
}

/// The `kill -9` round: each client loses at most the request its connection carried at
/// the kill (in flight, or sent on it before the client saw it close); those made while no
/// gateway accepted wait in the socket's backlog and are served by the new one.
fn kill_rows(
    report: &mut CaseReport,
    options: &Options,
    samples: &Samples,
    sent: usize,
    (killed, serving, start_took): (Instant, Instant, Duration),
) {
    let how = "kill -9";
    let in_flight = samples.in_flight_at(killed);
    let waited = samples.between(killed, serving);
    let after = samples.between(serving, Instant::now());
    report.row(format!("{how}: requests sent"), sent.to_string());
    report.row(
        format!("{how}: answered 2xx"),
        format!("{} of {}", samples.ok(), samples.len()),
    );
    report.row(
        format!("{how}: failed before the kill"),
        describe_failures(&samples.ended_before(killed)),
    );
    report.row(
        format!("{how}: in flight at the kill"),
        format!("{}: {}", in_flight.len(), in_flight.outcomes()),
    );
    report.row(
        format!("{how}: new gateway, start → serving (component from the cache)"),
        ms(start_took),
    );
    report.row(
        format!(
            "{how}: started while no gateway accepted ({}; they wait in the backlog)",
            ms(serving - killed)
        ),
        format!("{}; longest {}", waited.outcomes(), ms(waited.max_took())),
    );
    report.row(
        format!("{how}: after the new gateway served"),
        after.outcomes(),
    );
    let lost = samples.failed().len();
    report.expect(
        after.failed().is_empty(),
        format!(
            "{how}: requests failed after the new gateway served: {}",
            after.failed().outcomes()
        ),
    );
    report.expect(
        lost <= options.clients,
        format!(
            "{how}: {lost} requests lost, more than the one each connection carried at the kill"
        ),
    );
    report.expect(
        start_took <= Duration::from_secs(1),
        format!(
            "{how}: the new gateway served {} after its start (target: within 1 s)",
            ms(start_took)
        ),
    );
}

/// Case 3: the control plane down for a while under a serving gateway, then back; a change
/// made right after it returns, and a revocation, timed until the gateway applies them.
pub async fn control_plane_outage(options: &Options) -> CaseReport {
    let mut report = CaseReport::new(
        "cp-outage",
        format!(
            "the control plane stopped for {} s under a serving gateway ({} clients, a request \
             every 10 ms each), then started again; a publish and a revocation made right after",
            options.outage_secs, options.clients
        ),
    );
    let mut rig = Rig::start(Backend::Sqlite, &[]).await;
    let api = rig.api("Held", json!({}), true).await;
    let (key, secret) = rig.application("held", &[&api]).await;
    let token = rig.app_token(&key, &secret).await;
    let doomed = rig.app_token(&key, &secret).await;
    let path = "/held/v1.0.0/devs/alice";
    rig.gateway_answers(path, &token, Duration::from_secs(15), |s| s == 200)
        .await
        .expect("the API is served");
    let load = Load::start(
        options.clients,
        Duration::from_millis(10),
        Duration::from_secs(5),
        get(&rig.gw.base, path, &token),
    );
    tokio::time::sleep(options.load_time()).await;
    let stopped = Instant::now();
    rig.stop_control_plane().await;
    let down = Instant::now();
    // What the gateway answers meanwhile to what needs the control plane.
    let token_relay = rig
        .gw
        .token_at(
            "/token",
            &key,
            &secret,
            &[("grant_type", "client_credentials")],
        )
        .await;
    let doomed_meanwhile = rig
        .gateway_answers(path, &doomed, Duration::ZERO, |s| s == 200)
        .await
        .is_some();
    tokio::time::sleep(Duration::from_secs(options.outage_secs)).await;
    let restarting = Instant::now();
    let start_took = rig.start_control_plane().await;
    let up = Instant::now();
    // Right after: a new API published, and the second token revoked.
    let fresh = rig.api("Returned", json!({}), true).await;
    let published = Instant::now();
    let live = rig
        .gateway_answers(
            "/returned/v1.0.0/devs/alice",
            "",
            Duration::from_secs(30),
            |s| s == 401,
        )
        .await;
    rig.mgmt
        .token_at(
            "/oauth2/revoke",
            &key,
            &secret,
            &[("token", doomed.as_str())],
        )
        .await
        .expect(200);
    let revoked = Instant::now();
    let refused = rig
        .gateway_answers(path, &doomed, Duration::from_secs(30), |s| s == 401)
        .await;
    tokio::time::sleep(options.load_time()).await;
    let samples = load.finish().await;
    let outage = samples.between(down, up);
    let before = samples.between(samples.0[0].at, stopped);
    let after = samples.between(up, Instant::now());

    report.row(
        "requests during the outage (tokens verified by the gateway alone)",
        format!(
            "{} sent, {} answered 2xx; {}",
            outage.len(),
            outage.ok(),
            describe_all(&outage)
        ),
    );
    report.row(
        "latency during the outage (p50 / p99 / max)",
        format!(
            "{} / {} / {} (before: {} / {} / {})",
            ms(outage.percentile(50.0)),
            ms(outage.percentile(99.0)),
            ms(outage.max_took()),
            ms(before.percentile(50.0)),
            ms(before.percentile(99.0)),
            ms(before.max_took())
        ),
    );
    report.row(
        "a second token (revoked later) during the outage",
        if doomed_meanwhile {
            "verified (200)"
        } else {
            "refused"
        },
    );
    report.row(
        "`/token` through the gateway during the outage",
        format!("{} {}", token_relay.status, token_relay.body),
    );
    report.row(
        "control plane down",
        format!(
            "{} (stop took {})",
            ms(restarting - down),
            ms(down - stopped)
        ),
    );
    report.row("control plane start → listening", ms(start_took));
    report.row(
        "publish made right after the return → routed by the gateway",
        live.map_or("not within 30 s".into(), |d| {
            format!(
                "{} (publish answered {} after listening)",
                ms(d),
                ms(published - up)
            )
        }),
    );
    report.row(
        "revocation made right after → refused by the gateway",
        refused.map_or("not within 30 s".into(), ms),
    );
    report.row(
        "requests after the return",
        format!("{} sent, {}", after.len(), describe_all(&after)),
    );
    report.expect(
        outage.failed().is_empty() && !outage.is_empty(),
        format!(
            "requests failed during the outage: {}",
            outage.failed().outcomes()
        ),
    );
    report.expect(
        doomed_meanwhile,
        "a valid token was refused during the outage",
    );
    report.expect(
        live.is_some_and(|d| d <= Duration::from_secs(2)),
        "the publish made after the return was not live within 2 s",
    );
    report.expect(
        refused.is_some_and(|d| d <= Duration::from_secs(2)),
        "the revocation made after the return did not apply within 2 s",
    );
    report.expect(
        after.failed().is_empty(),
        format!(
            "requests failed after the return: {}",
            after.failed().outcomes()
        ),
    );
    let _ = (fresh, revoked);
    rig.shut_down().await;
    report
}

/// Case 4: the gateway's Redis killed under load and started again.
pub async fn redis_outage(options: &Options) -> CaseReport {
    const APIS: usize = 10;
    let mut report = CaseReport::new(
        "redis-outage",
        format!(
            "edge-gateway with APIM_KV_URL to its own redis-server; Redis killed for {} s under \
             load ({} clients across {APIS} APIs, each counted against its maxTps in Redis) and \
             started again (empty)",
            options.redis_outage_secs, options.clients
        ),
    );
    let mut redis = Redis::on_free_port();
    redis.start().await;
    let rig = Rig::start(Backend::Sqlite, &[("APIM_KV_URL", redis.url())]).await;
    let gateway_pid = rig.gateway.as_ref().map(|g| g.pid()).unwrap_or_default();
    let mut ids = Vec::new();
    for n in 0..APIS {
        ids.push(rig.api(&format!("Kept{n}"), json!({}), true).await);
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (key, secret) = rig.application("kept", &refs).await;
    let token = rig.app_token(&key, &secret).await;
    let doomed = rig.app_token(&key, &secret).await;
    let paths: Vec<String> = (0..APIS)
        .map(|n| format!("/kept{n}/v1.0.0/devs/alice"))
        .collect();
    for path in &paths {
        rig.gateway_answers(path, &token, Duration::from_secs(15), |s| s == 200)
            .await
            .expect("the APIs are served");
    }
    let counted = wait_for_keys(&redis, Duration::from_secs(10)).await;
    let base = rig.gw.base.clone();
    let (load_paths, load_token) = (Arc::new(paths.clone()), token.clone());
    let make: MakeRequest = Arc::new(move |http, client, n| {
        let path = &load_paths[(client + n as usize) % load_paths.len()];
        http.get(format!("{base}{path}")).bearer_auth(&load_token)
    });
    let load = Load::start(
        options.clients,
        Duration::ZERO,
        Duration::from_secs(5),
        make,
    );
    tokio::time::sleep(options.load_time()).await;
    let killed = Instant::now();
    redis.stop().await;
    // A revocation while Redis is down: the manifest does not depend on it.
    rig.mgmt
        .token_at(
            "/oauth2/revoke",
            &key,
            &secret,
            &[("token", doomed.as_str())],
        )
        .await
        .expect(200);
    let revoked = rig
        .gateway_answers(&paths[0], &doomed, Duration::from_secs(10), |s| s == 401)
        .await;
    tokio::time::sleep(Duration::from_secs(options.redis_outage_secs)).await;
    let restarting = Instant::now();
    redis.start().await;
    let back = Instant::now();
    let reconnected = wait_for_keys(&redis, Duration::from_secs(30)).await;
    tokio::time::sleep(options.load_time()).await;
    let samples = load.finish().await;
    let end = Instant::now();
    let before = samples.between(samples.0[0].at, killed);
    let outage = samples.between(killed, back);
    let after = samples.between(back, end);
    let mut kept = 0;
    for path in &paths {
        if rig
            .gateway_answers(path, &token, Duration::from_secs(1), |s| s == 200)
            .await
            .is_some()
        {
            kept += 1;
        }
    }
    let same_process = rig.gateway.as_ref().map(|g| g.pid()) == Some(gateway_pid);

    for (label, window) in [
        ("before the kill", &before),
        ("Redis down", &outage),
        ("after Redis is back", &after),
    ] {
        report.row(
            format!("requests, {label}"),
            format!(
                "{} sent, {} 2xx; {}; p50 / p99 / max {} / {} / {}",
                window.len(),
                window.ok(),
                describe_all(window),
                ms(window.percentile(50.0)),
                ms(window.percentile(99.0)),
                ms(window.max_took())
            ),
        );
    }
    report.row("Redis down for", ms(restarting - killed));
    report.row(
        "counters in Redis before the kill",
        if counted.is_some() {
            "yes"
        } else {
            "none within 10 s"
        },
    );
    report.row(
        "counters in Redis again after its return (reconnected, same process)",
        reconnected.map_or("not within 30 s".into(), ms),
    );
    report.row(
        "revocation made while Redis was down → refused",
        revoked.map_or("not within 10 s".into(), ms),
    );
    report.row(
        "manifest after the outage",
        format!("{kept} of {APIS} APIs served; gateway process unchanged: {same_process}"),
    );
    report.expect(
        samples.failed().is_empty(),
        format!("requests failed: {}", samples.failed().outcomes()),
    );
    report.expect(counted.is_some(), "the gateway never counted in Redis");
    report.expect(
        reconnected.is_some() && same_process,
        "the gateway did not use Redis again without a restart",
    );
    report.expect(
        revoked.is_some(),
        "the revocation did not apply while Redis was down",
    );
    report.expect(kept == APIS, format!("{} APIs lost", APIS - kept));
    report.expect(
        outage.max_took() < Duration::from_secs(1),
        format!(
            "a request took {} while Redis was down",
            ms(outage.max_took())
        ),
    );
    rig.shut_down().await;
    redis.stop().await;
    report
}

/// Case 5: PostgreSQL restarted under the control plane (`--pg-restarts` times, under
/// load): every request timed through it.
pub async fn postgres_restart(options: &Options) -> CaseReport {
    let mut report = CaseReport::new(
        "postgres-restart",
        format!(
            "PostgreSQL restarted {} times (pg_ctlcluster restart) under the control plane, {} \
             clients reading (GET /apis) and writing (POST /apis) every 5 ms, a gateway serving",
            options.pg_restarts, options.clients
        ),
    );
    let database = Backend::fresh_postgres().await;
    let rig = Rig::start(database, &[]).await;
    let api = rig.api("Stays", json!({}), true).await;
    let (key, secret) = rig.application("stays", &[&api]).await;
    let token = rig.app_token(&key, &secret).await;
    let gateway_path = "/stays/v1.0.0/devs/alice";
    rig.gateway_answers(gateway_path, &token, Duration::from_secs(15), |s| s == 200)
        .await
        .expect("the API is served");
    let (base, admin) = (rig.mgmt.base.clone(), rig.admin.clone());
    let endpoint = format!("{}/", rig.backend.url);
    let make: MakeRequest = Arc::new(move |http, client, n| {
        if client % 2 == 0 {
            http.get(format!("{base}{PUBLISHER}/apis?limit=5"))
                .bearer_auth(&admin)
        } else {
            let record = api_record(&format!("Pg{client}n{n}"), &endpoint);
            http.post(format!("{base}{PUBLISHER}/apis"))
                .bearer_auth(&admin)
                .json(&record)
        }
    });
    let load = Load::start(
        options.clients,
        Duration::from_millis(5),
        Duration::from_secs(30),
        make,
    );
    // The gateway, which holds its manifest, serves throughout.
    let gateway_load = Load::start(
        1,
        Duration::from_millis(20),
        Duration::from_secs(5),
        get(&rig.gw.base, gateway_path, &token),
    );
    tokio::time::sleep(options.load_time()).await;
    let mut restarts = Vec::new();
    let mut version = String::new();
    for _ in 0..options.pg_restarts {
        let restarting = Instant::now();
        version = restart_postgres().await;
        restarts.push((restarting, Instant::now()));
        tokio::time::sleep(options.load_time()).await;
    }
    let samples = load.finish().await;
    let gateway = gateway_load.finish().await;
    let end = Instant::now();
    let before = samples.ended_before(restarts[0].0);
    report.row("PostgreSQL", version);
    report.row(
        "requests before the first restart",
        format!("{} sent; {}", before.len(), describe_all(&before)),
    );
    let mut troubled = Samples::default();
    let mut unrecovered = 0;
    for (n, (restarting, restarted)) in restarts.iter().enumerate() {
        let next = restarts.get(n + 1).map_or(end, |r| r.0);
        let recovered = samples
            .0
            .iter()
            .filter(|s| s.at >= *restarted && s.at < next && s.outcome.ok())
            .map(|s| s.at + s.took)
            .min();
        if recovered.is_none() {
            unrecovered += 1;
        }
        let window = samples.between(*restarting, recovered.unwrap_or(next));
        let in_flight = samples.in_flight_at(*restarting);
        report.row(
            format!("restart {}", n + 1),
            format!(
                "command {}; requests from its start to the first 2xx after it: {} ({}), \
                 longest {}; command end → first 2xx {}",
                ms(*restarted - *restarting),
                window.len(),
                describe_all(&Samples(
                    window.0.iter().chain(&in_flight.0).cloned().collect()
                )),
                ms(window.max_took().max(in_flight.max_took())),
                recovered.map_or("never".into(), |r| ms(
                    r.saturating_duration_since(*restarted)
                ))
            ),
        );
        troubled.0.extend(window.0);
        troubled.0.extend(in_flight.0);
    }
    let failed = troubled.failed();
    let server_errors = failed
        .0
        .iter()
        .filter(|s| matches!(s.outcome, super::load::Outcome::Status(500..=502)))
        .count();
    let unavailable: Vec<_> = failed
        .0
        .iter()
        .filter(|s| matches!(s.outcome, super::load::Outcome::Status(503)))
        .collect();
    let unavailable_with_retry = unavailable.iter().filter(|s| s.retry_after).count();
    let after = samples.between(restarts[restarts.len() - 1].1 + Duration::from_secs(1), end);
    report.row(
        "all requests around the restarts",
        format!(
            "{} sent; {}; 503s with Retry-After: {unavailable_with_retry} of {}",
            troubled.len(),
            describe_all(&troubled),
            unavailable.len()
        ),
    );
    if let Some(detail) = failed.details(1).first() {
        report.row("a failed request's answer", detail.clone());
    }
    report.row(
        "requests after (from 1 s after the last restart)",
        format!("{} sent; {}", after.len(), describe_all(&after)),
    );
    report.row(
        "the gateway meanwhile",
        format!("{} sent; {}", gateway.len(), describe_all(&gateway)),
    );
    report.expect(
        unrecovered == 0,
        format!("the control plane did not answer 2xx again after {unrecovered} restarts"),
    );
    report.expect(
        server_errors == 0,
        format!("{server_errors} requests answered 500-502 instead of 503"),
    );
    report.expect(
        unavailable_with_retry == unavailable.len(),
        "503s without Retry-After",
    );
    report.expect(
        troubled.max_took() <= Duration::from_secs(5),
        format!(
            "a request hung for {} during a restart",
            ms(troubled.max_took())
        ),
    );
    report.expect(
        failed
            .0
            .iter()
            .all(|s| matches!(s.outcome, super::load::Outcome::Status(_))),
        format!("requests without an answer: {}", failed.outcomes()),
    );
    report.expect(
        after.failed().is_empty(),
        format!(
            "requests failed after recovery: {}",
            after.failed().outcomes()
        ),
    );
    report.expect(
        gateway.failed().is_empty(),
        format!(
            "gateway requests failed: {} {:?}",
            gateway.failed().outcomes(),
            gateway.details(3)
        ),
    );
    if !report.problems.is_empty() {
        eprintln!("{}", rig.logs(40));
    }
    rig.shut_down().await;
    report
}

/// `pg_ctlcluster --skip-systemctl-redirect <version> main restart`; what it said.
async fn restart_postgres() -> String {
    let version = std::fs::read_dir("/etc/postgresql")
        .expect("/etc/postgresql (a Debian PostgreSQL cluster)")
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .max_by_key(|v| v.parse::<u32>().unwrap_or(0))
        .expect("a PostgreSQL version");
    let out = tokio::process::Command::new("pg_ctlcluster")
        .args(["--skip-systemctl-redirect", &version, "main", "restart"])
        .output()
        .await
        .expect("run pg_ctlcluster");
    assert!(
        out.status.success(),
        "pg_ctlcluster restart failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!(
        "{version}, cluster main, pg_ctlcluster --skip-systemctl-redirect {version} main restart"
    )
}

/// Waits until Redis holds keys (the gateway's counters); how long that took.
async fn wait_for_keys(redis: &Redis, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    loop {
        if !redis.keys().await.is_empty() {
            return Some(started.elapsed());
        }
        if started.elapsed() > within {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// GETs of `path` with a bearer token.
fn get(base: &str, path: &str, token: &str) -> MakeRequest {
    let (url, token) = (format!("{base}{path}"), token.to_string());
    Arc::new(move |http, _, _| http.get(&url).bearer_auth(&token))
}

/// `201 × 512, connection refused × 3`.
fn outcome_counts(outcomes: &std::collections::BTreeMap<String, usize>) -> String {
    outcomes
        .iter()
        .map(|(outcome, n)| format!("{outcome} × {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Failures of a window, or "none".
fn describe_failures(samples: &Samples) -> String {
    let failed = samples.failed();
    if failed.is_empty() {
        "none".into()
    } else {
        failed.outcomes()
    }
}

/// Every outcome of a window.
fn describe_all(samples: &Samples) -> String {
    samples.outcomes()
}
