//! Real Spin (`--only spin`): the project's own `spin.toml` (the WASI 0.2 components, a
//! fresh instance per request) and `spin-p3.toml` (the WASIp3 artefacts, instances
//! reused), run unmodified by a `spin` binary ([`spin_binary`]: `SPIN_BIN`, else the first
//! `spin` on `PATH`), beside nginx, Envoy, edge-gateway (case 4) and the Spin-like case 6
//! in one run, every server under test on CPU 1, the order of the targets reversed every
//! other round. Each Spin starts as a user starts it (`spin up -f <manifest> --listen …`,
//! its variables from the environment), its state (Spin's default SQLite key-value store,
//! the components' logs) in a directory of its own; then `perf` on the WASIp3 one.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::Options;
use super::backend::FastBackend;
use super::https::{counted, wrk};
use super::load::{Load, Wrk, cpu_cell};
use super::machine::{Writes, filesystem_of};
use super::platform::{BASE, Platform, SECURED};
use super::profile::{self, Profile};
use super::proxies;
use super::report::{int, section_head};
use super::spin_like::{PUBLISHED, load_average, publish_as_users_do};
use super::stats::median;
use harness::machine;

/// Where the `spin` binary is: `SPIN_BIN` when set, else the first `spin` on `PATH`.
pub fn spin_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SPIN_BIN") {
        return Some(PathBuf::from(path));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join("spin"))
        .find(|candidate| candidate.is_file())
}

/// One target of the run and its measured runs, one per round.
#[derive(Debug, Clone)]
pub struct TargetRuns {
    /// The row's label.
    pub label: String,
    /// At `--connections`.
    pub loaded: Vec<Load>,
    /// What the server wrote to storage per request (Spin's rows).
    pub writes: Vec<Writes>,
}

/// The run's results.
#[derive(Debug, Clone, Default)]
pub struct RealSpinRuns {
    /// `spin --version`.
    pub version: String,
    /// One entry per target, in the report's order.
    pub targets: Vec<TargetRuns>,
    /// The filesystem of Spin's state directories.
    pub filesystem: String,
    /// The load average before each round.
    pub load_averages: Vec<String>,
    /// The WASIp3 Spin under the API as users publish it.
    pub profile: Option<Profile>,
}

/// A `spin up` of one of the project's manifests.
struct SpinApp {
    child: tokio::process::Child,
    url: String,
    /// The process serving: `spin up` runs its trigger (`spin trigger http`) as a child.
    trigger: u32,
}

/// What a Spin gateway needs from the platform, as `SPIN_VARIABLE_*`: the control plane's
/// address, manifest key and gateway secret, the benchmark's backends on loopback opened,
/// and a SOAP address for the facade beside it (never called here).
async fn spin_variables(platform: &Platform) -> Vec<(String, String)> {
    let stack = &platform.stack;
    let control_plane = stack.control_plane.as_ref().expect("control plane");
    let env = harness::gateway_env(control_plane, &stack.data_dir, &[]).await;
    let value = |name: &str| {
        env.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_else(|| panic!("{name} in the gateway's settings"))
    };
    [
        ("CONTROL_PLANE_URL", value("APIM_CONTROL_PLANE_URL")),
        ("MANIFEST_PUBLIC_KEY", value("APIM_MANIFEST_PUBLIC_KEY")),
        ("GATEWAY_SECRET", value("APIM_GATEWAY_SECRET")),
        ("EGRESS_ALLOW", value("APIM_EGRESS_ALLOW")),
        ("DEV_SOAP_URL", "http://127.0.0.1:9/ws".to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (format!("SPIN_VARIABLE_{name}"), value))
    .collect()
}

impl SpinApp {
    /// Starts `spin up -f manifest` on CPU 1 with `variables`, its state and output in
    /// `dir`, and waits until it listens.
    async fn start(
        spin: &Path,
        manifest: &Path,
        variables: &[(String, String)],
        dir: &Path,
    ) -> Self {
        std::fs::create_dir_all(dir).expect("Spin's state directory");
        let addr = format!("127.0.0.1:{}", harness::free_port());
        let output =
            |name: &str| std::fs::File::create(dir.join(name)).expect("a file for Spin's output");
        let child = tokio::process::Command::new("taskset")
            .args(["-c", "1"])
            .arg(spin)
            .arg("up")
            .arg("-f")
            .arg(manifest)
            .args(["--listen", &addr, "--state-dir"])
            .arg(dir.join("state"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", std::env::var("HOME").unwrap_or_default())
            .envs(variables.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::from(output("spin.stdout")))
            .stderr(Stdio::from(output("spin.stderr")))
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", spin.display()));
        let mut app = SpinApp {
            child,
            url: format!("http://{addr}"),
            trigger: 0,
        };
        app.wait_until_listening(&addr, dir).await;
        let pid = app.child.id().unwrap_or_default();
        app.trigger = machine::children_of(&[pid]).first().copied().unwrap_or(pid);
        app
    }

    /// Spin compiles the components before it listens: a minute at most.
    async fn wait_until_listening(&mut self, addr: &str, dir: &Path) {
        for _ in 0..1200 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let said = std::fs::read_to_string(dir.join("spin.stderr")).unwrap_or_default();
                panic!("spin up exited ({status}) before listening on {addr}:\n{said}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("spin up did not listen on {addr} within a minute");
    }

    /// Stops the trigger first: killed, `spin up` would leave it running.
    async fn stop(mut self) {
        if self.trigger != self.child.id().unwrap_or_default() {
            let _ = std::process::Command::new("kill")
                .arg(self.trigger.to_string())
                .status();
        }
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// Where one target sends its load and whose CPU time counts.
struct Target {
    label: String,
    url: String,
    headers: Vec<String>,
    pid: u32,
    /// Whether its writes to storage are reported.
    writes: bool,
}

/// Starts everything, runs the rounds, profiles the WASIp3 Spin, and stops it all; panics
/// when no `spin` binary is found (the part was asked for by name).
pub async fn measure(options: &Options) -> RealSpinRuns {
    let spin = spin_binary()
        .expect("no spin binary: set SPIN_BIN or put spin on PATH to measure real Spin");
    let version = harness::machine::output(&spin.display().to_string(), &["--version"]);
    // Both artefacts, as the manifests name them.
    harness::gateway_p3_component();
    let backend = FastBackend::start();
    let second_backend = FastBackend::start();
    let platform = Platform::start(&backend.url).await;
    let dir = &platform.dir;
    let nginx = proxies::nginx(dir, &backend.url, None).await;
    let envoy = proxies::envoy(dir, &backend.url, &platform.issuer, &platform.jwks, None).await;
    let variables = spin_variables(&platform).await;
    let root = harness::workspace_root();
    let spin_02 = SpinApp::start(
        &spin,
        &root.join("spin.toml"),
        &variables,
        &dir.join("spin"),
    )
    .await;
    let spin_p3 = SpinApp::start(
        &spin,
        &root.join("spin-p3.toml"),
        &variables,
        &dir.join("spin-p3"),
    )
    .await;
    let floor = SpinApp::start(
        &spin,
        &harness::spin_floor_manifest(),
        &[],
        &dir.join("spin-floor"),
    )
    .await;
    let serving = [
        platform.spin_like_url(),
        spin_02.url.clone(),
        spin_p3.url.clone(),
    ];
    let published =
        publish_as_users_do(&platform, [&backend.url, &second_backend.url], &serving).await;
    let bearer = vec![platform.bearer()];
    let to_backend = vec![format!(
        "x-backend: {}",
        backend.url.trim_start_matches("http://")
    )];
    let as_published = vec![published];
    let target = |label: &str, base: &str, path: &str, headers: &Vec<String>, pid, writes| Target {
        label: label.to_string(),
        url: format!("{base}{path}"),
        headers: headers.clone(),
        pid,
        writes,
    };
    let bench_api = format!("{BASE}{SECURED}");
    let users_api = format!("{PUBLISHED}{SECURED}");
    let targets = [
        target(
            "2. nginx, reverse proxy",
            &nginx.url,
            &bench_api,
            &bearer,
            nginx.pid(),
            false,
        ),
        target(
            "3. Envoy, jwt_authn (cached) + local rate limit",
            &envoy.url,
            &bench_api,
            &bearer,
            envoy.pid(),
            false,
        ),
        target(
            "4. edge-gateway, full policy, JWT",
            &platform.stack.gw.base,
            &bench_api,
            &bearer,
            platform.gateway_pid(),
            false,
        ),
        target(
            "6. Spin-like (edge-gateway), as users publish",
            &platform.spin_like_url(),
            &users_api,
            &as_published,
            platform.spin_like_pid(),
            true,
        ),
        target(
            "Spin, a WASIp3 component that only forwards (Spin's floor)",
            &floor.url,
            &bench_api,
            &to_backend,
            floor.trigger,
            true,
        ),
        target(
            "Spin, `spin.toml` (WASI 0.2), the benchmark's API",
            &spin_02.url,
            &bench_api,
            &bearer,
            spin_02.trigger,
            true,
        ),
        target(
            "Spin, `spin.toml` (WASI 0.2), as users publish",
            &spin_02.url,
            &users_api,
            &as_published,
            spin_02.trigger,
            true,
        ),
        target(
            "Spin, `spin-p3.toml` (WASIp3), the benchmark's API",
            &spin_p3.url,
            &bench_api,
            &bearer,
            spin_p3.trigger,
            true,
        ),
        target(
            "Spin, `spin-p3.toml` (WASIp3), as users publish",
            &spin_p3.url,
            &users_api,
            &as_published,
            spin_p3.trigger,
            true,
        ),
    ];
    for target in &targets {
        check(target).await;
    }
    let mut runs = RealSpinRuns {
        version,
        filesystem: filesystem_of(dir),
        targets: targets
            .iter()
            .map(|t| TargetRuns {
                label: t.label.clone(),
                loaded: vec![],
                writes: vec![],
            })
            .collect(),
        ..RealSpinRuns::default()
    };
    machine::pin_process(platform.control_plane_pid(), "0");
    if options.hold {
        hold(&targets).await;
    } else {
        run_rounds(options, &targets, &mut runs).await;
        if !options.no_profile {
            runs.profile = profile_last(options, &platform, &targets).await;
        }
    }
    machine::pin_process(platform.control_plane_pid(), "0,1");
    spin_02.stop().await;
    spin_p3.stop().await;
    floor.stop().await;
    nginx.stop().await;
    envoy.stop().await;
    platform.stop().await;
    runs
}

/// Every target in every round, the order reversed every other round.
async fn run_rounds(options: &Options, targets: &[Target], runs: &mut RealSpinRuns) {
    for round in 1..=options.rounds {
        if !options.busy_ok {
            machine::wait_for_quiet_cpu().await;
        }
        runs.load_averages.push(load_average());
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if round % 2 == 0 {
            order.reverse();
        }
        for index in order {
            let target = &targets[index];
            eprintln!("bench: round {round}/{}: {}", options.rounds, target.label);
            wrk(options, &target.url, &target.headers, options.warmup).await;
            let before = Writes::of(target.pid);
            let load = counted(options, &target.url, &target.headers, target.pid).await;
            let requests = load.rate * options.seconds as f64;
            let results = &mut runs.targets[index];
            if target.writes {
                results
                    .writes
                    .push(Writes::of(target.pid).per_request_since(before, requests));
            }
            results.loaded.push(load);
        }
    }
}

/// `perf` on the last target's server (the WASIp3 Spin as users publish) under load.
async fn profile_last(
    options: &Options,
    platform: &Platform,
    targets: &[Target],
) -> Option<Profile> {
    let profiled = targets.last()?;
    eprintln!("bench: profiling {}", profiled.label);
    let load = Wrk {
        url: &profiled.url,
        connections: options.connections,
        duration: options.run_time(),
        headers: &profiled.headers,
        script: None,
    };
    profile::record(platform, profiled.pid, "spin", load).await
}

/// `--hold`: prints a wrk command for each target (and the process it counts), and waits
/// for Ctrl-C.
async fn hold(targets: &[Target]) {
    for target in targets {
        let command = super::load::wrk_command(&target.url, &target.headers);
        println!("{} (pid {}):\n  {command}", target.label, target.pid);
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The target answers its token with the backend's 200.
async fn check(target: &Target) {
    let mut request = reqwest::Client::new().get(&target.url);
    for header in &target.headers {
        if let Some((name, value)) = header.split_once(": ") {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.expect("check request");
    assert_eq!(
        response.status(),
        200,
        "{} at {}: {:?}",
        target.label,
        target.url,
        response.text().await
    );
}

/// The section of the report.
pub fn section(options: &Options, runs: &RealSpinRuns) -> String {
    let c = options.connections;
    let command = format!(
        "--only spin --rounds {} --seconds {}",
        options.rounds, options.seconds
    );
    let mut md = section_head("Real Spin beside nginx, Envoy and edge-gateway", &command);
    let _ = write!(
        md,
        "`{version}`, built from Spin's public sources for this measurement (not part of \
         the project). The project's `spin.toml` (the WASI 0.2 components: a fresh instance \
         per request) and `spin-p3.toml` (the WASIp3 artefacts: an instance for up to 128 \
         requests, 16 at once), with the release components, and Spin's floor, a WASIp3 \
         component that only forwards each request (`tools/spin-floor`), each `spin up` on CPU 1 \
         with its variables from the environment and Spin's defaults otherwise (its \
         SQLite key-value store and the components' logs in its state directory, on \
         {fs}); nginx, Envoy and edge-gateway on CPU 1 as in the data-plane cases; wrk \
         on CPU 0, {c} connections, 1 KiB backend. Two APIs: the benchmark's (`maxTps` \
         never reached, tiers Unlimited) and one as users publish it (the seed's `maxTps` \
         for sandbox keys, its tokens', 5,000/s, a subscription tier of 1,000,000 a minute, a two-endpoint \
         `load_balance` list). Every target in every round, the order reversed every \
         other round; medians of {} rounds of {} s after {} s of warm-up; load average \
         before each round: {}. CPU µs: the server's user + system time over the requests \
         answered; written: bytes sent to storage and write calls per request.\n\n\
         | target | req/s | CPU µs/req | p50 / p99 µs | written per request | non-2xx |\n\
         |---|--:|--:|--:|--:|--:|\n",
        options.rounds,
        options.seconds,
        options.warmup,
        runs.load_averages.join("; "),
        version = runs.version,
        fs = runs.filesystem,
    );
    for target in &runs.targets {
        md.push_str(&row(target));
    }
    let rate = |label: &str| {
        runs.targets
            .iter()
            .find(|t| t.label.starts_with(label))
            .map(|t| median(t.loaded.iter().map(|l| l.rate)))
    };
    if let (Some(spin_like), Some(real)) = (
        rate("6. Spin-like"),
        rate("Spin, `spin.toml` (WASI 0.2), as users"),
    ) && real > 0.0
    {
        let _ = writeln!(
            md,
            "\nCase 6 (edge-gateway modelling Spin's hosting) against real Spin's WASI 0.2 \
             row on the same API: {:.2}×.",
            spin_like / real
        );
    }
    if let (Some(floor), Some(ours)) = (
        rate("Spin, a WASIp3 component that only forwards"),
        rate("Spin, `spin-p3.toml` (WASIp3), as users"),
    ) && ours > 0.0
    {
        let _ = writeln!(
            md,
            "\nSpin's floor against the WASIp3 gateway as users publish: {:.1}× its \
             requests per second.",
            floor / ours
        );
    }
    md.push('\n');
    md.push_str(&super::report::profile(
        "the WASIp3 Spin's",
        "spin up -f spin-p3.toml, the API as users publish it",
        runs.profile.as_ref(),
    ));
    md
}

/// One row of the table: medians of the rounds.
fn row(target: &TargetRuns) -> String {
    let m = |f: fn(&Load) -> f64| median(target.loaded.iter().map(f));
    let written = if target.writes.is_empty() {
        "–".to_string()
    } else {
        format!(
            "{:.0} B, {:.1} calls",
            median(target.writes.iter().map(|w| w.bytes)),
            median(target.writes.iter().map(|w| w.calls))
        )
    };
    let errors: u64 = target.loaded.iter().map(|l| l.errors).sum();
    format!(
        "| {} | {} | {} | {:.0} / {:.0} | {written} | {errors} |\n",
        target.label,
        int(m(|l| l.rate)),
        cpu_cell(&target.loaded),
        m(|l| l.p50_us),
        m(|l| l.p99_us),
    )
}
