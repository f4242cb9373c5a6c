//! The platform under test (control plane, edge-gateway on CPU 1), the benchmark's API,
//! and the control-plane cases: propagation, token issuance, listing, memory, scale.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Options;
use super::load::{Load, Wrk};
use super::machine;
use super::profile::{self, Profile};
use super::propagation::{self, Propagation};
use super::stats::Latencies;
use crate::stack::{ALL_SCOPES, Stack};
use crate::{Backend, Client, EchoBackend, PUBLISHER, STORE};

/// `/<context>/<version>` of the benchmark's API, on the gateway and on the proxies.
pub const BASE: &str = "/bench/v1.0.0";
/// Its authenticated resource (cases 1 to 4).
pub const SECURED: &str = "/echo";
/// Its `x-auth-type: None` resource (case 5).
pub const OPEN: &str = "/open";

/// A resource of the benchmark's API.
pub struct Resource {
    /// HTTP method.
    pub method: &'static str,
    /// Swagger path template.
    pub template: &'static str,
    /// Needs a token (else `x-auth-type: None`).
    pub authenticated: bool,
}

/// The API's resources: Envoy gets a route (and a token rule) for each, like the gateway.
pub const RESOURCES: &[Resource] = &[
    Resource {
        method: "GET",
        template: SECURED,
        authenticated: true,
    },
    Resource {
        method: "GET",
        template: OPEN,
        authenticated: false,
    },
    Resource {
        method: "GET",
        template: "/items/{id}",
        authenticated: true,
    },
    Resource {
        method: "POST",
        template: "/items",
        authenticated: true,
    },
];

/// The running platform and the benchmark application's credentials.
pub struct Platform {
    /// Control plane, gateway and an echo backend (for the APIs the scale cases create).
    pub stack: Arc<Stack>,
    /// The benchmark application's consumer key.
    pub key: String,
    /// Its consumer secret.
    pub secret: String,
    /// Its id.
    pub application: String,
    /// A client_credentials token of it, subscribed to the benchmark API (Unlimited).
    pub token: String,
    /// `iss` of the control plane's tokens.
    pub issuer: String,
    /// The control plane's token keys (`GET /oauth2/jwks`).
    pub jwks: String,
    /// Scratch space: proxy configurations, wrk scripts, profiles.
    pub dir: std::path::PathBuf,
    /// Compile and delivery events from the control plane's log.
    pub manifest_log: propagation::ManifestLog,
}

impl Platform {
    /// Starts the control plane (both CPUs) and edge-gateway (CPU 1, so its runtime has
    /// one worker), and publishes the benchmark API over `backend`.
    pub async fn start(backend: &str) -> Self {
        let data_dir = crate::temp_dir();
        let gateway_addr = format!("127.0.0.1:{}", crate::free_port());
        let control_plane = crate::start_control_plane(
            &Backend::Sqlite,
            &data_dir,
            &[
                ("APIM_GATEWAYS", format!("http://{gateway_addr}")),
                // Compile and delivery events, timed (see propagation.rs).
                ("APIM_LOG_JSON", "true".into()),
                ("RUST_LOG", "warn,control_plane::gateways=info".into()),
            ],
        )
        .await;
        machine::pin_thread("1");
        let gateway =
            crate::start_edge_gateway(&control_plane, &data_dir, &gateway_addr, &[]).await;
        machine::pin_thread("0");
        let mgmt = Client::new(&control_plane.url);
        let admin = mgmt.login("admin", crate::ADMIN_PASSWORD, ALL_SCOPES).await;
        let stack = Stack {
            data_dir,
            control_plane: Some(control_plane),
            gw: Client::new(&gateway.url),
            gateway,
            backend: EchoBackend::start().await,
            mgmt,
            admin,
        };
        Self::with_bench_api(Arc::new(stack), backend).await
    }

    async fn with_bench_api(stack: Arc<Stack>, backend: &str) -> Self {
        let changes = json!({
            "apiDefinition": swagger().to_string(),
            "endpointConfig": json!({
                "production_endpoints": {"url": backend, "config": null},
                "sandbox_endpoints": {"url": backend, "config": null},
                "endpoint_type": "http"
            }).to_string(),
            // Nothing the proxies do not do either: no rate cap, no backend credentials.
            "maxTps": null,
            "endpointSecurity": null,
        });
        let api = stack.api("Bench", changes, &["Publish"]).await;
        let (application, key, secret, _) =
            stack.application("BenchApp", "Unlimited", &[&api]).await;
        let token = client_token(&stack.mgmt, &key, &secret).await;
        let jwks = stack.mgmt.get("/oauth2/jwks", "").await.expect(200).body;
        let platform = Platform {
            issuer: crate::jwt_claims(&token)["iss"]
                .as_str()
                .unwrap_or_default()
                .into(),
            jwks: jwks.to_string(),
            dir: crate::temp_dir(),
            manifest_log: Default::default(),
            stack,
            key,
            secret,
            application,
            token,
        };
        let path = format!("{BASE}{SECURED}");
        propagation::poll(&platform.stack.gw, &path, &platform.token, |r| {
            r.status == 200
        })
        .await;
        platform
    }

    /// The control plane's process id.
    pub fn control_plane_pid(&self) -> u32 {
        self.stack
            .control_plane
            .as_ref()
            .map(|c| c.pid())
            .unwrap_or_default()
    }

    /// The gateway's process id.
    pub fn gateway_pid(&self) -> u32 {
        self.stack.gateway.pid()
    }

    /// `Authorization: Bearer …` of the benchmark application.
    pub fn bearer(&self) -> String {
        format!("Authorization: Bearer {}", self.token)
    }

    /// Stops the gateway and the control plane and removes their files.
    pub async fn stop(self) {
        let Ok(stack) = Arc::try_unwrap(self.stack) else {
            return;
        };
        stack.gateway.stop().await;
        if let Some(control_plane) = stack.control_plane {
            control_plane.stop().await;
        }
        let _ = std::fs::remove_dir_all(&stack.data_dir);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The benchmark API's Swagger 2.0 definition, from [`RESOURCES`].
fn swagger() -> Value {
    let mut paths = serde_json::Map::new();
    for resource in RESOURCES {
        let auth = if resource.authenticated {
            "Application & Application User"
        } else {
            "None"
        };
        let operation = json!({"x-auth-type": auth, "x-throttling-tier": "Unlimited",
            "responses": {"200": {"description": "OK"}}});
        let item = paths.entry(resource.template).or_insert_with(|| json!({}));
        item[resource.method.to_lowercase()] = operation;
    }
    json!({"swagger": "2.0", "info": {"title": "Bench", "version": "v1.0.0"}, "paths": paths})
}

/// A client_credentials token for a consumer key, from the control plane.
async fn client_token(mgmt: &Client, key: &str, secret: &str) -> String {
    mgmt.token(key, secret, &[("grant_type", "client_credentials")])
        .await
        .expect(200)
        .str("access_token")
}

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
                subscribe(&stack, &applications[i % applications.len()], &api).await;
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

/// Subscribes `application` to `api` on Unlimited; the subscription id.
pub async fn subscribe(stack: &Stack, application: &str, api: &str) -> String {
    let body = json!({"tier": "Unlimited", "apiIdentifier": api, "applicationId": application});
    stack
        .mgmt
        .post_json(&format!("{STORE}/subscriptions"), &stack.admin, &body)
        .await
        .expect(201)
        .str("subscriptionId")
}

/// A fresh client_credentials token of the benchmark application.
pub async fn fresh_token(platform: &Platform) -> String {
    client_token(&platform.stack.mgmt, &platform.key, &platform.secret).await
}
