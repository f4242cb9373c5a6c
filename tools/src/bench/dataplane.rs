//! Cases 1 to 6: the same keep-alive GET (1 KiB answer) straight at the backend, through
//! nginx, Envoy and edge-gateway (case 4 with a JWT, 4j the same sending the backend JWT,
//! 4b with an opaque token; case 6 with the component hosted as Spin hosts it), interleaved round by round so that every case
//! sees the same machine; medians of the rounds are reported.

use super::Options;
use super::backend::{self, BODY_BYTES, FastBackend};
use super::load::{Load, Wrk, median_cpu_us, median_rate};
use super::platform::{BASE, OPEN, Platform, SECURED};
use super::proxies;
use super::stats::median;
use harness::machine;

/// The cases, in the order `BENCHMARKS.md` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// 1. The backend directly.
    Backend,
    /// 2. nginx, plain reverse proxy.
    Nginx,
    /// 3. Envoy with our policy.
    Envoy,
    /// 4. edge-gateway, full policy, with a JWT.
    Gateway,
    /// 4j. Case 4 on a gateway that sends the backend JWT (`X-JWT-Assertion`).
    GatewayBackendJwt,
    /// 4b. edge-gateway, full policy, with an opaque token (introspected once).
    GatewayOpaque,
    /// 5. edge-gateway, `x-auth-type: None`.
    GatewayOpen,
    /// Case 6: edge-gateway hosting the component as Spin does (a fresh instance per
    /// request, the `wasi:http` path, a SQLite store as Spin's default); full policy, JWT.
    SpinLike,
}

impl Case {
    /// Every case.
    pub const ALL: [Case; 8] = [
        Case::Backend,
        Case::Nginx,
        Case::Envoy,
        Case::Gateway,
        Case::GatewayBackendJwt,
        Case::GatewayOpaque,
        Case::GatewayOpen,
        Case::SpinLike,
    ];

    /// Its row label.
    pub fn label(self) -> &'static str {
        match self {
            Case::Backend => "1. backend directly",
            Case::Nginx => "2. nginx, reverse proxy",
            Case::Envoy => "3. Envoy, jwt_authn (cached) + local rate limit",
            Case::Gateway => "4. edge-gateway, full policy, JWT",
            Case::GatewayBackendJwt => "4j. edge-gateway, full policy, JWT, backend JWT sent",
            Case::GatewayOpaque => "4b. edge-gateway, full policy, opaque token",
            Case::GatewayOpen => "5. edge-gateway, x-auth-type None",
            Case::SpinLike => {
                "6. Spin-like: fresh instance per request, wasi:http path, SQLite store; full policy, JWT"
            }
        }
    }
}

/// Every run of one case.
#[derive(Debug, Clone)]
pub struct CaseRuns {
    /// Which case.
    pub case: Case,
    /// At `--connections`, one per round.
    pub loaded: Vec<Load>,
    /// At concurrency 1, one per round.
    pub single: Vec<Load>,
}

impl CaseRuns {
    /// Median requests/s at `--connections`.
    pub fn rate(&self) -> f64 {
        median_rate(&self.loaded)
    }

    /// Median CPU µs per request at `--connections`, where measured.
    pub fn cpu_us(&self) -> Option<f64> {
        median_cpu_us(&self.loaded)
    }

    /// Median of a figure over the rounds.
    pub fn median(runs: &[Load], figure: fn(&Load) -> f64) -> f64 {
        median(runs.iter().map(figure))
    }

    /// Errors or non-2xx answers over all runs.
    pub fn errors(&self) -> u64 {
        self.loaded
            .iter()
            .chain(&self.single)
            .map(|l| l.errors)
            .sum()
    }
}

/// Data-plane results.
#[derive(Debug, Clone)]
pub struct DataPlane {
    /// One entry per case, in [`Case::ALL`] order.
    pub cases: Vec<CaseRuns>,
    /// Measured runs that had to wait for a compiler to finish first.
    pub waited: usize,
}

impl DataPlane {
    /// The runs of `case`.
    pub fn runs(&self, case: Case) -> &CaseRuns {
        self.cases.iter().find(|c| c.case == case).expect("case")
    }
}

struct Target {
    case: Case,
    url: String,
    /// The bearer token sent, if any.
    token: Option<String>,
    headers: Vec<String>,
    /// The server under test, whose CPU time is counted (none for the backend itself).
    pids: Vec<u32>,
}

/// nginx and Envoy running, and where each case sends its load.
struct Cases {
    nginx: proxies::Proxy,
    envoy: proxies::Proxy,
    targets: [Target; 8],
}

impl Cases {
    /// Starts nginx and Envoy, and checks that every case answers as it should.
    async fn start(backend: &FastBackend, platform: &Platform) -> Self {
        let dir = &platform.dir;
        let nginx = proxies::nginx(dir, &backend.url, None).await;
        let (issuer, jwks) = (&platform.issuer, &platform.jwks);
        let envoy = proxies::envoy(dir, &backend.url, issuer, jwks, None).await;
        let jwt = Some(platform.token.clone());
        let gateway = &platform.stack.gw.base;
        let gateway_pid = platform.gateway_pid();
        let targets = Case::ALL.map(|case| {
            let (url, token, pids) = match case {
                Case::Backend => (format!("{}{SECURED}", backend.url), jwt.clone(), vec![]),
                Case::Nginx => (
                    format!("{}{BASE}{SECURED}", nginx.url),
                    jwt.clone(),
                    vec![nginx.pid()],
                ),
                Case::Envoy => (
                    format!("{}{BASE}{SECURED}", envoy.url),
                    jwt.clone(),
                    vec![envoy.pid()],
                ),
                Case::Gateway => (
                    format!("{gateway}{BASE}{SECURED}"),
                    jwt.clone(),
                    vec![gateway_pid],
                ),
                Case::GatewayBackendJwt => (
                    format!("{}{BASE}{SECURED}", platform.backend_jwt_url()),
                    jwt.clone(),
                    vec![platform.backend_jwt_pid()],
                ),
                Case::GatewayOpaque => (
                    format!("{gateway}{BASE}{SECURED}"),
                    Some(platform.opaque_token.clone()),
                    vec![gateway_pid],
                ),
                Case::GatewayOpen => (format!("{gateway}{BASE}{OPEN}"), None, vec![gateway_pid]),
                Case::SpinLike => (
                    format!("{}{BASE}{SECURED}", platform.spin_like_url()),
                    jwt.clone(),
                    vec![platform.spin_like_pid()],
                ),
            };
            let headers = token
                .iter()
                .map(|token| format!("Authorization: Bearer {token}"))
                .collect();
            Target {
                case,
                url,
                token,
                headers,
                pids,
            }
        });
        check(&targets).await;
        Cases {
            nginx,
            envoy,
            targets,
        }
    }

    async fn stop(self) {
        self.nginx.stop().await;
        self.envoy.stop().await;
    }
}

/// `--hold`: starts every case, prints a wrk command for each and waits for Ctrl-C.
pub async fn hold(backend: &FastBackend, platform: &Platform) {
    let cases = Cases::start(backend, platform).await;
    println!("gateway pid {}", platform.gateway_pid());
    for target in &cases.targets {
        let command = super::load::wrk_command(&target.url, &target.headers);
        println!("{}:\n  {command}", target.case.label());
    }
    let _ = tokio::signal::ctrl_c().await;
    cases.stop().await;
}

/// Runs the rounds: in each, every case at `--connections` and at concurrency 1.
pub async fn measure(options: &Options, backend: &FastBackend, platform: &Platform) -> DataPlane {
    let cases = Cases::start(backend, platform).await;
    // The control plane idles on CPU 0 meanwhile, off the proxies' CPU.
    machine::pin_process(platform.control_plane_pid(), "0");
    let mut results: Vec<CaseRuns> = Case::ALL
        .map(|case| CaseRuns {
            case,
            loaded: vec![],
            single: vec![],
        })
        .into();
    let mut waited = 0;
    for round in 1..=options.rounds {
        for (target, runs) in cases.targets.iter().zip(&mut results) {
            eprintln!(
                "bench: round {round}/{}: {}",
                options.rounds,
                target.case.label()
            );
            waited += usize::from(machine::wait_for_quiet_cpu().await);
            wrk(target, options.connections, options.warmup).await;
            runs.loaded
                .push(counted_wrk(target, options.connections, options.seconds).await);
            runs.single.push(wrk(target, 1, options.seconds).await);
        }
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    cases.stop().await;
    DataPlane {
        cases: results,
        waited,
    }
}

/// A wrk run with the CPU time the server under test spent per request.
async fn counted_wrk(target: &Target, connections: usize, seconds: u64) -> Load {
    let before = machine::cpu_us(&target.pids);
    let mut load = wrk(target, connections, seconds).await;
    let spent = machine::cpu_us(&target.pids) - before;
    let requests = load.rate * seconds as f64;
    if !target.pids.is_empty() && requests > 0.0 {
        load.cpu_us = Some(spent / requests);
    }
    load
}

async fn wrk(target: &Target, connections: usize, seconds: u64) -> Load {
    Wrk {
        url: &target.url,
        connections,
        duration: std::time::Duration::from_secs(seconds),
        headers: &target.headers,
        script: None,
    }
    .run()
    .await
}

/// Every case answers 200 with the backend's body, and the policy is in force where it
/// should be: Envoy and the gateway refuse the secured resource without a token.
async fn check(targets: &[Target]) {
    let client = reqwest::Client::new();
    for target in targets {
        let mut request = client.get(&target.url);
        if let Some(token) = &target.token {
            request = request.bearer_auth(token);
        }
        let asserted = backend::asserted();
        let response = request.send().await.expect("check request");
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        assert!(
            status == 200 && body.len() == BODY_BYTES,
            "{}: {status}, {} bytes at {}",
            target.case.label(),
            body.len(),
            target.url
        );
        assert_eq!(
            backend::asserted() > asserted,
            target.case == Case::GatewayBackendJwt,
            "{}: the backend JWT is sent in case 4j alone",
            target.case.label()
        );
        if matches!(
            target.case,
            Case::Envoy
                | Case::Gateway
                | Case::GatewayBackendJwt
                | Case::GatewayOpaque
                | Case::SpinLike
        ) {
            let anonymous = client.get(&target.url).send().await.expect("check request");
            assert_eq!(
                anonymous.status(),
                401,
                "{} without a token",
                target.case.label()
            );
        }
    }
}
