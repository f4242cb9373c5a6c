//! The control-plane cases, on an empty database and at scale: publish, revocation and
//! unsubscribe propagation, token issuance, API listing, manifest size, memory, and the
//! scale database built through the public REST API.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::Options;
use super::load::{Load, Wrk};
use super::machine;
use super::platform::{self, Platform};
use super::profile::{self, Profile};
use super::propagation::{self, Propagation};
use super::stats::Latencies;
use crate::{PUBLISHER, STORE};

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
    /// Size of the signed manifest, bytes.
    pub manifest_bytes: usize,
    /// Gateway resident memory, MiB.
    pub gateway_rss_mib: f64,
    /// Control-plane resident memory, MiB.
    pub control_plane_rss_mib: f64,
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
    eprintln!("bench: control plane, {tag}: token issuance");
    let client_credentials =
        tokens(options, platform, "grant_type=client_credentials", profile).await;
    let password = format!(
        "grant_type=password&username=admin&password={}&scope=default",
        crate::ADMIN_PASSWORD
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
        manifest_bytes: manifest_bytes(platform).await,
        gateway_rss_mib: machine::rss_mib(platform.gateway_pid()),
        control_plane_rss_mib: machine::rss_mib(platform.control_plane_pid()),
    }
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

/// Size of the signed manifest the control plane serves.
async fn manifest_bytes(platform: &Platform) -> usize {
    let secret =
        std::fs::read_to_string(platform.stack.data_dir.join("gateway-secret")).unwrap_or_default();
    let reply = platform
        .stack
        .mgmt
        .get("/internal/gateway/manifest", secret.trim())
        .await
        .expect(200);
    reply.body.as_str().map(str::len).unwrap_or_default()
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
