//! The platform under test (control plane, edge-gateway on CPU 1) and the benchmark's
//! API and application.

use std::sync::Arc;

use serde_json::{Value, json};

use super::propagation;
use harness::Client;
use harness::machine;
use harness::stack::{Launch, Stack};
use harness::steps::{Keys, TokenType, client_credentials_token};

/// `/<context>/<version>` of the benchmark's API, on the gateway and on the proxies.
pub const BASE: &str = "/bench/v1.0.0";
/// Its authenticated resource (cases 1 to 4).
pub const SECURED: &str = "/echo";
/// Its `x-auth-type: None` resource (case 5).
pub const OPEN: &str = "/open";
/// Requests per second allowed to the benchmark API, as many as Envoy's rate-limit bucket
/// (`tools/fixtures/bench/envoy.yaml`) holds: counted, never reached.
pub const RATE_CAP: u64 = 1_000_000_000;

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

/// The component variables of case 6 that Spin's manifest (`spin.toml`) sets and
/// edge-gateway otherwise sets for itself: requests catch up with the control plane, the
/// component writes the access log and makes its own trace span.
const SPIN_VARS: &[&str] = &[
    "catch_up_interval_ms=1000",
    "access_log=on",
    "trace_spans=component",
];

/// The running platform and the benchmark application's credentials.
pub struct Platform {
    /// Control plane, gateway and an echo backend (for the APIs the scale cases create).
    pub stack: Arc<Stack>,
    /// Case 6: a second edge-gateway on CPU 1 hosting the component as Spin does
    /// ([`harness::stack::spin_like`]), on the same control plane.
    pub spin_like: Option<harness::ServerProcess>,
    /// Case 4j: a third edge-gateway on CPU 1, as the first but sending the backend JWT
    /// (`APIM_BACKEND_JWT=on`; the super tenant's switch is on).
    pub backend_jwt: Option<harness::ServerProcess>,
    /// The benchmark API's id.
    pub api: String,
    /// The benchmark application's consumer key.
    pub key: String,
    /// Its consumer secret.
    pub secret: String,
    /// Its id.
    pub application: String,
    /// A client_credentials token of it (a JWT: its tokenType is JWT, which Envoy's
    /// jwt_authn needs too), subscribed to the benchmark API (Unlimited).
    pub token: String,
    /// A client_credentials token of a second application, of WSO2's default tokenType
    /// (OAUTH): an opaque token, subscribed likewise.
    pub opaque_token: String,
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
        Self::launch(backend, false).await
    }

    /// The same with both planes serving TLS (the certificates of a
    /// [`harness::tls::Listening`]), without case 6's gateway.
    pub async fn start_tls(backend: &str) -> Self {
        Self::launch(backend, true).await
    }

    async fn launch(backend: &str, tls: bool) -> Self {
        let stack = Launch {
            control_plane: &[
                // Compile and delivery events, timed (see propagation.rs).
                ("APIM_LOG_JSON", "true".into()),
                ("RUST_LOG", "warn,control_plane::fleet::hub=info".into()),
                // Its /metrics, for what the gateways ask of it.
                ("APIM_OPS_ADDR", "127.0.0.1:0".into()),
            ],
            // The perf map lets the profile name the component's functions.
            gateway: &[("APIM_PERF_MAP", "true".to_string())],
            gateway_cpus: Some("1"),
            tls,
            ..Launch::default()
        }
        .start()
        .await;
        machine::pin_thread("0");
        Self::with_bench_api(Arc::new(stack), backend, !tls).await
    }

    async fn with_bench_api(stack: Arc<Stack>, backend: &str, more_gateways: bool) -> Self {
        let changes = json!({
            "apiDefinition": swagger().to_string(),
            "endpointConfig": json!({
                "production_endpoints": {"url": backend, "config": null},
                "sandbox_endpoints": {"url": backend, "config": null},
                "endpoint_type": "http"
            }).to_string(),
            // The cap of Envoy's local rate limit: every request is counted (a per-second
            // window in the shared store), none is refused. No backend credentials.
            "maxTps": {"production": RATE_CAP, "sandbox": RATE_CAP},
            "endpointSecurity": null,
        });
        let api = stack.api("Bench", changes, &["Publish"]).await;
        let bench_app = stack
            .steps()
            .subscribed_typed_application("BenchApp", "Unlimited", TokenType::Jwt, &[&api])
            .await
            .unwrap();
        let (application, Keys { key, secret }) = (bench_app.id, bench_app.keys);
        let token = client_token(&stack.mgmt, &key, &secret).await;
        let (_, opaque_key, opaque_secret, _) = stack
            .application("BenchOpaqueApp", "Unlimited", &[&api])
            .await;
        let opaque_token = client_token(&stack.mgmt, &opaque_key, &opaque_secret).await;
        let jwks = stack.mgmt.get("/oauth2/jwks", "").await.expect(200).body;
        let (spin_like, backend_jwt) = if more_gateways {
            switch_backend_jwt_on(&stack).await;
            let spin_like = start_spin_like(&stack).await;
            (
                Some(spin_like),
                Some(start_backend_jwt_gateway(&stack).await),
            )
        } else {
            (None, None)
        };
        let platform = Platform {
            spin_like,
            backend_jwt,
            issuer: harness::jwt_claims(&token)["iss"]
                .as_str()
                .unwrap_or_default()
                .into(),
            jwks: jwks.to_string(),
            dir: harness::temp_dir(),
            manifest_log: Default::default(),
            stack,
            api,
            key,
            secret,
            application,
            token,
            opaque_token,
        };
        let path = format!("{BASE}{SECURED}");
        for token in [&platform.token, &platform.opaque_token] {
            propagation::poll(&platform.stack.gw, &path, token, |r| r.status == 200).await;
            if platform.spin_like.is_some() {
                let spin_like = Client::new(&platform.spin_like_url());
                propagation::poll(&spin_like, &path, token, |r| r.status == 200).await;
                let backend_jwt = Client::new(&platform.backend_jwt_url());
                propagation::poll(&backend_jwt, &path, token, |r| r.status == 200).await;
            }
        }
        platform
    }

    /// Case 6's gateway's base URL.
    pub fn spin_like_url(&self) -> String {
        self.spin_like
            .as_ref()
            .map(|g| g.url.clone())
            .unwrap_or_default()
    }

    /// Case 6's gateway's process id.
    pub fn spin_like_pid(&self) -> u32 {
        self.spin_like.as_ref().map(|g| g.pid()).unwrap_or_default()
    }

    /// Case 4j's gateway's base URL.
    pub fn backend_jwt_url(&self) -> String {
        self.backend_jwt
            .as_ref()
            .map(|g| g.url.clone())
            .unwrap_or_default()
    }

    /// Case 4j's gateway's process id.
    pub fn backend_jwt_pid(&self) -> u32 {
        self.backend_jwt
            .as_ref()
            .map(|g| g.pid())
            .unwrap_or_default()
    }

    /// The base URL of the control plane's operations listener (`/metrics`).
    pub fn control_plane_ops(&self) -> String {
        self.stack
            .control_plane
            .as_ref()
            .and_then(|c| c.announced("Serving operations"))
            .expect("the control plane announces its operations listener")
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
        for gateway in [self.spin_like, self.backend_jwt].into_iter().flatten() {
            gateway.stop().await;
        }
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

/// The super tenant's backend JWT switch on: gateways whose own switch is on (case 4j's
/// alone) send it.
async fn switch_backend_jwt_on(stack: &Stack) {
    stack
        .mgmt
        .basic(
            reqwest::Method::PUT,
            "/api/am/admin/v0.14/backend-jwt",
            ("admin", harness::ADMIN_PASSWORD),
            Some(&json!({"enabled": true})),
        )
        .await
        .expect(200);
}

/// Starts case 4j's gateway on CPU 1, as the first one is but sending the backend JWT.
async fn start_backend_jwt_gateway(stack: &Stack) -> harness::ServerProcess {
    let control_plane = stack.control_plane.as_ref().expect("control plane");
    let addr = format!("127.0.0.1:{}", harness::free_port());
    let settings = [
        ("APIM_PERF_MAP", "true".to_string()),
        ("APIM_BACKEND_JWT", "on".to_string()),
    ];
    machine::pin_thread("1");
    let gateway =
        harness::start_edge_gateway_with(control_plane, &stack.data_dir, &addr, &[], &settings)
            .await;
    machine::pin_thread("0");
    gateway
}

/// Starts case 6's gateway on CPU 1 (its runtime then has one worker, as the other's),
/// its SQLite store in the control plane's data directory; it takes the manifest on its
/// first request and catches up with the control plane as requests come.
async fn start_spin_like(stack: &Stack) -> harness::ServerProcess {
    let control_plane = stack.control_plane.as_ref().expect("control plane");
    let addr = format!("127.0.0.1:{}", harness::free_port());
    let mut settings = harness::stack::spin_like(&stack.data_dir);
    settings.extend([
        ("APIM_PERF_MAP", "true".to_string()),
        // Spin has neither: the component writes the access log (SPIN_VARS).
        ("APIM_ACCESS_LOG", "off".to_string()),
        ("APIM_ANALYTICS_REPORT_MS", "0".to_string()),
    ]);
    machine::pin_thread("1");
    let gateway = harness::start_edge_gateway_with(
        control_plane,
        &stack.data_dir,
        &addr,
        SPIN_VARS,
        &settings,
    )
    .await;
    machine::pin_thread("0");
    gateway
}

/// The benchmark API's Swagger 2.0 definition, from [`RESOURCES`].
pub fn swagger() -> Value {
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
    let keys = Keys {
        key: key.into(),
        secret: secret.into(),
    };
    client_credentials_token(mgmt, "/oauth2/token", &keys)
        .await
        .unwrap()
}

/// Subscribes `application` to `api` on Unlimited; the subscription id.
pub async fn subscribe(stack: &Stack, application: &str, api: &str) -> String {
    stack
        .steps()
        .subscribe(application, api, "Unlimited")
        .await
        .unwrap()
}

/// Starts another edge-gateway on the platform's control plane, on CPU 1 (so its runtime
/// has one worker), with `settings`, and waits until it serves the benchmark API.
pub async fn start_pinned_gateway(
    platform: &Platform,
    settings: &[(&'static str, String)],
) -> harness::ServerProcess {
    let stack = &platform.stack;
    let control_plane = stack.control_plane.as_ref().expect("control plane");
    // The gateway inherits the starting thread's CPUs.
    machine::pin_thread("1");
    let gateway = harness::start_edge_gateway_with(
        control_plane,
        &stack.data_dir,
        "127.0.0.1:0",
        &[],
        settings,
    )
    .await;
    machine::pin_thread("0");
    let path = format!("{BASE}{SECURED}");
    propagation::poll(&Client::new(&gateway.url), &path, &platform.token, |r| {
        r.status == 200
    })
    .await
    .unwrap_or_else(|| {
        panic!(
            "the edge-gateway of {} serves the benchmark API",
            gateway.url
        )
    });
    gateway
}

/// A fresh opaque token (WSO2's default tokenType) of an application subscribed to the
/// benchmark API: one no gateway has seen.
pub async fn fresh_opaque_token(platform: &Platform) -> String {
    let name = format!("Opaque{}", uuid::Uuid::new_v4().simple());
    let (_, key, secret, _) = platform
        .stack
        .application(&name, "Unlimited", &[&platform.api])
        .await;
    client_token(&platform.stack.mgmt, &key, &secret).await
}

/// A fresh client_credentials token of the benchmark application.
pub async fn fresh_token(platform: &Platform) -> String {
    client_token(&platform.stack.mgmt, &platform.key, &platform.secret).await
}
