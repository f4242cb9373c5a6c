//! The control-plane cases, on an empty database and at scale: publish, revocation and
//! unsubscribe propagation, token issuance, API listing, manifest size, memory, and the
//! scale database built through the public REST API.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::Options;
use super::load::{Load, Wrk};
use super::platform::{self, BASE, Platform, SECURED};
use super::profile::{self, Profile};
use super::propagation::{self, Propagation};
use super::stats::Latencies;
use harness::machine;
use harness::{PUBLISHER, STORE};

/// Control-plane figures on an empty database and, unless skipped, at scale.
#[derive(Debug, Default)]
pub struct ControlResults {
    /// With only the benchmark API.
    pub empty: Phase,
    /// How the scale database was built.
    pub setup: Option<Setup>,
    /// With `--apis` more APIs.
    pub scale: Option<Phase>,
}

/// Figures at one database size.
#[derive(Debug, Default)]
pub struct Phase {
    /// APIs published.
    pub apis: usize,
    /// Publish (then subscribe) → first 200 through the gateway.
    pub publish: Propagation,
    /// Revocation → 401.
    pub revoke: Propagation,
    /// Unsubscribe → 403 900908.
    pub unsubscribe: Propagation,
    /// client_credentials tokens.
    pub client_credentials: Load,
    /// Password-grant tokens.
    pub password: Load,
    /// Manifests compiled during the client_credentials run (the profile's run excluded).
    pub manifests_during_tokens: usize,
    /// The control plane's profile while issuing client_credentials tokens.
    pub token_profile: Option<Profile>,
    /// A page of the publisher's API list.
    pub list: Latencies,
    /// The whole manifest: as a snapshot, compiled from scratch, taken by a fresh gateway.
    pub full: FullManifest,
    /// Gateway resident memory, MiB.
    pub gateway_rss_mib: f64,
    /// Control-plane resident memory, MiB.
    pub control_plane_rss_mib: f64,
}

/// What the whole manifest costs, now that changes travel alone: a gateway with nothing
/// takes a snapshot, and a control plane that starts compiles every API once.
#[derive(Debug, Default)]
pub struct FullManifest {
    /// Entries.
    pub entries: usize,
    /// Signed pages of a snapshot.
    pub pages: usize,
    /// Their bytes.
    pub bytes: usize,
    /// Reading and signing every page, one request after the other, ms.
    pub read_ms: f64,
    /// The first compile of a second control plane on the same database (every API
    /// compiled, every entry compared), ms.
    pub compile_ms: Option<f64>,
    /// A gateway started with an empty store, from its start until its first request is
    /// answered 200 (it pulls and applies the whole snapshot before it serves), ms.
    pub fresh_gateway_ms: Option<f64>,
    /// That gateway's resident memory afterwards, MiB.
    pub fresh_gateway_rss_mib: f64,
}

/// Building the scale database through the public REST API.
#[derive(Debug, Default)]
pub struct Setup {
    /// APIs created, published and subscribed.
    pub apis: usize,
    /// How long it took.
    pub elapsed: Duration,
    /// Manifests compiled meanwhile.
    pub manifests: usize,
}

/// Runs the control-plane cases on the current database, then at scale.
pub async fn measure(options: &Options, platform: &Platform) -> ControlResults {
    let mut results = ControlResults {
        empty: phase(options, platform, "e", !options.no_profile).await,
        ..Default::default()
    };
    if !options.skip_scale {
        results.setup = Some(populate(platform, options.apis).await);
        let mut scale = phase(options, platform, "s", false).await;
        scale.apis = options.apis;
        results.scale = Some(scale);
    }
    results
}

/// The cases at the current database size; `profile`: also profile the control plane
/// issuing client_credentials tokens.
async fn phase(options: &Options, platform: &Platform, tag: &str, profile: bool) -> Phase {
    machine::wait_for_quiet_cpu().await;
    eprintln!("bench: control plane, {tag}: publishes, unsubscribes, revocations");
    let (publish, subscriptions) = propagation::publishes(platform, tag, options.changes).await;
    let unsubscribe = propagation::unsubscribes(platform, &subscriptions).await;
    let revoke = propagation::revocations(platform, options.changes).await;
    let list = list_latency(platform).await;
    eprintln!("bench: control plane, {tag}: the whole manifest");
    let full = full_manifest(platform).await;
    eprintln!("bench: control plane, {tag}: token issuance");
    let client_credentials =
        tokens(options, platform, "grant_type=client_credentials", profile).await;
    let password = format!(
        "grant_type=password&username=admin&password={}&scope=default",
        harness::ADMIN_PASSWORD
    );
    let password = tokens(options, platform, &password, false).await;
    propagation::settle(platform).await;
    Phase {
        apis: 0,
        publish,
        revoke,
        unsubscribe,
        manifests_during_tokens: client_credentials.manifests,
        token_profile: client_credentials.profile,
        client_credentials: client_credentials.load,
        password: password.load,
        list,
        full,
        gateway_rss_mib: settled_rss_mib(platform.gateway_pid()).await,
        control_plane_rss_mib: settled_rss_mib(platform.control_plane_pid()).await,
    }
}

/// The median of three readings of a process's resident memory a second apart: both
/// binaries' allocator (mimalloc) gives freed memory back lazily, so one reading moves
/// by about 15 MiB.
async fn settled_rss_mib(pid: u32) -> f64 {
    let mut readings = Vec::with_capacity(3);
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        readings.push(machine::rss_mib(pid));
    }
    super::stats::median(readings)
}

/// A token-issuance run.
struct TokenRun {
    load: Load,
    /// Manifests compiled meanwhile.
    manifests: usize,
    profile: Option<Profile>,
}

/// Tokens per second at the control plane's token endpoint, the control plane on CPU 1
/// and wrk on CPU 0 like the proxies; with `profile`, a profile of a second run.
async fn tokens(options: &Options, platform: &Platform, form: &str, profile: bool) -> TokenRun {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", platform.key, platform.secret));
    let headers = [format!("Authorization: Basic {basic}")];
    let grant = form.split('&').next().unwrap_or_default().replace('=', "-");
    let script = super::load::script(&platform.dir, &grant, "POST", form, &headers);
    let url = format!("{}/oauth2/token", platform.stack.mgmt.base);
    let wrk = || Wrk {
        url: &url,
        connections: options.connections,
        duration: options.run_time(),
        headers: &[],
        script: Some(&script),
    };
    let pid = platform.control_plane_pid();
    machine::wait_for_quiet_cpu().await;
    machine::pin_process(pid, "1");
    let before = propagation::compiled_count(platform);
    let load = wrk().run().await;
    let manifests = propagation::compiled_count(platform) - before;
    let profile = if profile {
        propagation::settle(platform).await;
        eprintln!("bench: profiling the control plane issuing tokens");
        profile::record(platform, pid, "control-plane", wrk()).await
    } else {
        None
    };
    machine::pin_process(pid, "0,1");
    TokenRun {
        load,
        manifests,
        profile,
    }
}

/// Pages of 25 across the whole list, one after another.
async fn list_latency(platform: &Platform) -> Latencies {
    let stack = &platform.stack;
    let path = |offset: usize| format!("{PUBLISHER}/apis?limit=25&offset={offset}");
    let total = stack
        .mgmt
        .get(&path(0), &stack.admin)
        .await
        .expect(200)
        .body["pagination"]["total"]
        .as_u64()
        .unwrap_or(1) as usize;
    let mut samples = Vec::new();
    for i in 0..100 {
        let offset = (total * i / 100) / 25 * 25;
        let started = Instant::now();
        stack
            .mgmt
            .get(&path(offset), &stack.admin)
            .await
            .expect(200);
        samples.push(started.elapsed());
    }
    Latencies::of(&samples)
}

/// The whole manifest: its snapshot pulled page by page, a second control plane's first
/// compile, and a fresh gateway taking it.
async fn full_manifest(platform: &Platform) -> FullManifest {
    let mut full = snapshot(platform).await;
    full.compile_ms = full_compile(platform).await;
    let Some(control_plane) = platform.stack.control_plane.as_ref() else {
        return full;
    };
    // From the start of the process: it announces its listener only once it holds the
    // manifest, so the pull is inside this span (with the start, the component from the
    // compilation cache).
    let started = Instant::now();
    let gateway =
        harness::start_edge_gateway(control_plane, &platform.stack.data_dir, "127.0.0.1:0", &[])
            .await;
    let first = harness::Client::new(&gateway.url)
        .get(&format!("{BASE}{SECURED}"), &platform.token)
        .await;
    if first.status == 200 {
        full.fresh_gateway_ms = Some(started.elapsed().as_secs_f64() * 1e3);
    } else {
        eprintln!("bench: a fresh gateway answered {} first", first.status);
    }
    full.fresh_gateway_rss_mib = machine::rss_mib(gateway.pid());
    gateway.stop().await;
    full
}

/// Pulls a snapshot from the control plane as a gateway with nothing would.
async fn snapshot(platform: &Platform) -> FullManifest {
    use base64::Engine;
    let secret =
        std::fs::read_to_string(platform.stack.data_dir.join("gateway-secret")).unwrap_or_default();
    let mut full = FullManifest::default();
    let (mut after, mut snapshot) = (0, false);
    let started = Instant::now();
    loop {
        let path = format!("/internal/gateway/manifest?after={after}&snapshot={snapshot}");
        let reply = platform
            .stack
            .mgmt
            .get(&path, secret.trim())
            .await
            .expect(200);
        let jws = reply.body.as_str().unwrap_or_default().to_string();
        let payload = jws.split('.').nth(1).unwrap_or_default();
        let page: serde_json::Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        full.pages += 1;
        full.bytes += jws.len();
        full.entries += page["changes"].as_array().map_or(0, Vec::len);
        let (upto, latest) = (page["upto"].as_u64(), page["latest"].as_u64());
        match (upto, latest) {
            (Some(upto), Some(latest)) if upto < latest => (after, snapshot) = (upto, true),
            _ => break,
        }
    }
    full.read_ms = started.elapsed().as_secs_f64() * 1e3;
    full
}

/// Starts a second control plane on the same database, reads how long its first compile
/// (every API) took from its log, and stops it.
async fn full_compile(platform: &Platform) -> Option<f64> {
    let second = harness::start_control_plane(
        &harness::Backend::Sqlite,
        &platform.stack.data_dir,
        &[
            ("APIM_LOG_JSON", "true".into()),
            ("RUST_LOG", "warn,control_plane::fleet::hub=info".into()),
        ],
    )
    .await;
    let started = Instant::now();
    let mut elapsed = None;
    while elapsed.is_none() && started.elapsed() < Duration::from_secs(120) {
        elapsed = second.output().lines().find_map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).ok()?;
            let fields = &entry["fields"];
            (fields["message"] == "route manifest loaded").then(|| fields["elapsed_ms"].as_f64())?
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    second.stop().await;
    elapsed
}

/// Creates, publishes and subscribes `count` APIs (one subscription each, spread over
/// applications of 100) through the public REST API, 16 at a time.
async fn populate(platform: &Platform, count: usize) -> Setup {
    const WORKERS: usize = 16;
    eprintln!("bench: creating, publishing and subscribing {count} APIs");
    let stack = &platform.stack;
    let mut applications = Vec::new();
    for i in 0..count.div_ceil(100) {
        let body = json!({"name": format!("ScaleApp{i}"), "throttlingTier": "Unlimited"});
        let path = format!("{STORE}/applications");
        let reply = stack.mgmt.post_json(&path, &stack.admin, &body).await;
        applications.push(reply.expect(201).str("applicationId"));
    }
    let applications = Arc::new(applications);
    let next = Arc::new(AtomicUsize::new(0));
    let before = propagation::compiled_count(platform);
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..WORKERS {
        let (stack, applications, next) = (stack.clone(), applications.clone(), next.clone());
        workers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return;
                }
                let api = stack
                    .api(&format!("Scale{i}"), json!({}), &["Publish"])
                    .await;
                platform::subscribe(&stack, &applications[i % applications.len()], &api).await;
                if (i + 1) % 1000 == 0 {
                    eprintln!("bench: {} APIs after {:.0?}", i + 1, started.elapsed());
                }
            }
        });
    }
    workers.join_all().await;
    let elapsed = started.elapsed();
    propagation::settle(platform).await;
    Setup {
        apis: count,
        elapsed,
        manifests: propagation::compiled_count(platform) - before,
    }
}
