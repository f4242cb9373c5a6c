//! Throttling accuracy at full scale (`--only throttling`): three edge-gateway nodes
//! sharing one Redis (a server and a namespace of the benchmark's own), under a paced load
//! spread over them at `--overload` times each limit, and what each window of the clock
//! admitted:
//!
//! - the API's `maxTps` (`--max-tps` per second), for `--seconds` seconds;
//! - the largest built-in application tier, `50PerMin`, and the largest subscription
//!   tier, `Gold` (5,000 a minute), both at once for `--throttle-minutes` minutes.
//!
//! Windows slide (`components/gateway/src/throttle.rs`): a call counts in its window of
//! the clock and the previous window weighs in by the share of it the last window's length
//! still covers, so a window of the clock right after a full one admits a little under
//! the limit. Beside that, the CPU one node spends per request with its counter in Redis
//! (counted in grants, `edge-gateway/src/counters.rs`) and in memory, under wrk.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;
use tokio::task::JoinSet;

use super::Options;
use super::backend::FastBackend;
use super::load::{Load, Wrk};
use super::redis_server::RedisServer;
use super::stats::{Latencies, median};
use harness::machine;
use harness::stack::{Core, Stack};
use harness::steps::keys_request;
use harness::{Backend, Client, ServerProcess};

/// Nodes sharing Redis.
pub const NODES: usize = 3;
/// The largest application tier (`control-plane/src/tiers.rs`), a minute.
pub const APP_TIER: (&str, u64) = ("50PerMin", 50);
/// The largest subscription tier, a minute.
pub const SUB_TIER: (&str, u64) = ("Gold", 5000);
/// `maxTps` of the API the CPU comparison counts against: never reached.
const NEVER_REACHED: u64 = 1_000_000_000;

/// One call of the paced load.
#[derive(Debug, Clone, Copy)]
struct Call {
    /// Unix time, ms, halfway between sending and the answer (the gateway decides in
    /// between, within about a millisecond).
    at_ms: f64,
    /// Sending → the whole answer, ms.
    latency_ms: f64,
    /// HTTP status; 0 when the call failed.
    status: u16,
}

/// One window of the clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    /// Calls in it.
    pub offered: usize,
    /// 200s.
    pub admitted: usize,
    /// The limit's refusals (503 for `maxTps`, 429 for tiers).
    pub refused: usize,
    /// Anything else: other statuses, failed calls.
    pub other: usize,
    /// Calls the backend received in the window, by its own clock (the gateway forwards an
    /// admitted call right after deciding).
    pub received: usize,
}

/// What one limit admitted, window by window.
#[derive(Debug, Clone, Default)]
pub struct Windows {
    /// What was limited, e.g. "maxTps 1,000/s".
    pub label: String,
    /// The limit per window.
    pub limit: u64,
    /// Window length, ms.
    pub length_ms: u64,
    /// Calls offered a second, as paced.
    pub offered_rate: f64,
    /// Every window of the run, in order.
    pub rows: Vec<Window>,
    /// Most calls the backend received within any span of one window's length (not only
    /// the clock's windows).
    pub max_in_any_span: usize,
    /// Latency of every call.
    pub latency: Latencies,
}

impl Windows {
    /// Admitted calls in all windows but the first (which no earlier window weighs on).
    pub fn after_first(&self) -> impl Iterator<Item = usize> + '_ {
        self.rows.iter().skip(1).map(|w| w.admitted)
    }
}

/// CPU per request of one node under wrk, medians of the rounds.
#[derive(Debug, Clone, Default)]
pub struct CpuRun {
    /// Where its counters live.
    pub store: String,
    /// What wrk measured, one per round.
    pub loads: Vec<Load>,
    /// The node's user + system time per request, µs, one per round.
    pub gateway_us: Vec<f64>,
    /// Redis's, µs per request (when it counted), one per round.
    pub redis_us: Vec<f64>,
    /// Commands Redis processed per request (when it counted), one per round.
    pub redis_commands: Vec<f64>,
}

impl CpuRun {
    /// Median of a figure of the wrk runs.
    pub fn load(&self, figure: fn(&Load) -> f64) -> f64 {
        median(self.loads.iter().map(figure))
    }

    /// Median node CPU per request, µs.
    pub fn gateway(&self) -> f64 {
        median(self.gateway_us.iter().copied())
    }

    /// Median Redis CPU per request, µs (None without Redis).
    pub fn redis(&self) -> Option<f64> {
        (!self.redis_us.is_empty()).then(|| median(self.redis_us.iter().copied()))
    }

    /// Median Redis commands per request (None without Redis).
    pub fn redis_commands(&self) -> Option<f64> {
        (!self.redis_commands.is_empty()).then(|| median(self.redis_commands.iter().copied()))
    }
}

/// What the throttling case measured.
#[derive(Debug, Clone, Default)]
pub struct ThrottlingResults {
    /// `maxTps`, per second.
    pub tps: Windows,
    /// The application tier, per minute.
    pub app_tier: Windows,
    /// The subscription tier, per minute.
    pub sub_tier: Windows,
    /// One node counting in memory, then in Redis.
    pub cpu: Vec<CpuRun>,
    /// Keys the nodes left in their Redis namespace.
    pub redis_keys: usize,
    /// Whether it had to wait for a quiet machine first.
    pub waited: bool,
}

/// The nodes, their APIs and the applications' tokens.
struct Setup {
    stack: Stack,
    others: Vec<ServerProcess>,
    /// A node like the others, counting in its own memory (for the CPU comparison).
    memory: ServerProcess,
    redis: RedisServer,
    namespace: String,
    /// Base URLs of the three nodes.
    nodes: Vec<String>,
    tps_token: String,
    app_token: String,
    sub_token: String,
    counted_token: String,
}

const TPS_PATH: &str = "/paced/v1.0.0/devs/alice";
const APP_PATH: &str = "/metered/v1.0.0/devs/alice";
const SUB_PATH: &str = "/golden/v1.0.0/devs/alice";
const COUNTED_PATH: &str = "/counted/v1.0.0/devs/alice";

/// Runs the throttling case.
pub async fn measure(options: &Options) -> ThrottlingResults {
    machine::pin_thread("0,1");
    let backend = FastBackend::start();
    let recorder = Recorder::start().await;
    let setup = Setup::start(options, &backend.url, &recorder.url).await;
    let waited = machine::wait_for_quiet_cpu().await;
    let overload = options.overload.max(1.0);

    // maxTps: windows of a second, from the next second on.
    let limit = options.max_tps;
    eprintln!(
        "bench: throttling: maxTps {limit}/s, {} s at {overload} × over {NODES} nodes",
        options.seconds
    );
    let tps = paced_windows(
        &setup.nodes,
        &[(TPS_PATH, &setup.tps_token, limit as f64 * overload)],
        1000,
        options.seconds as usize,
    )
    .await
    .remove(0);
    let tps = windows(
        format!("maxTps {limit}/s"),
        limit,
        1000,
        options.seconds as usize,
        tps,
        &recorder.arrivals("/paced/"),
    );

    let cpu = setup.cpu_comparison(options).await;

    // The tiers: windows of a minute, both at once, from the next minute on.
    let minutes = options.throttle_minutes.max(1);
    eprintln!(
        "bench: throttling: {minutes} minutes of {} and {}",
        APP_TIER.0, SUB_TIER.0
    );
    let per_second = |limit: u64| limit as f64 * overload / 60.0;
    let mut tiers = paced_windows(
        &setup.nodes,
        &[
            (APP_PATH, &setup.app_token, per_second(APP_TIER.1)),
            (SUB_PATH, &setup.sub_token, per_second(SUB_TIER.1)),
        ],
        60_000,
        minutes,
    )
    .await;
    let sub_calls = tiers.remove(1);
    let app_calls = tiers.remove(0);
    let app_tier = windows(
        format!("application tier {} ({}/min)", APP_TIER.0, APP_TIER.1),
        APP_TIER.1,
        60_000,
        minutes,
        app_calls,
        &recorder.arrivals("/metered/"),
    );
    let sub_tier = windows(
        format!("subscription tier {} ({}/min)", SUB_TIER.0, SUB_TIER.1),
        SUB_TIER.1,
        60_000,
        minutes,
        sub_calls,
        &recorder.arrivals("/golden/"),
    );
    let redis_keys = setup.redis.keys(&setup.namespace).await;
    setup.stop().await;
    ThrottlingResults {
        tps,
        app_tier,
        sub_tier,
        cpu,
        redis_keys,
        waited,
    }
}

impl Setup {
    /// `backend` answers the API the CPU comparison loads; `recorder` the limited ones,
    /// each under a path of its own.
    async fn start(options: &Options, backend: &str, recorder: &str) -> Self {
        let redis = RedisServer::start().await;
        let namespace = format!("apim-bench-throttling-{}", uuid::Uuid::new_v4().simple());
        let data_dir = harness::temp_dir();
        let core = Core::start(&Backend::Sqlite, data_dir, &[]).await;
        let (control_plane, data_dir) = (&core.control_plane, &core.data_dir);
        let shared = [
            ("APIM_KV_URL", redis.url()),
            ("APIM_KV_NAMESPACE", namespace.clone()),
            ("APIM_WORKER_THREADS", "1".to_string()),
        ];
        let mut nodes = Vec::new();
        for k in 1..=NODES {
            let id = format!("gateway_id=throttle-{k}");
            let node = harness::start_edge_gateway_with(
                control_plane,
                data_dir,
                "127.0.0.1:0",
                &[&id],
                &shared,
            )
            .await;
            nodes.push(node);
        }
        let memory = harness::start_edge_gateway_with(
            control_plane,
            data_dir,
            "127.0.0.1:0",
            &["gateway_id=throttle-memory"],
            &[("APIM_WORKER_THREADS", "1".to_string())],
        )
        .await;
        let urls: Vec<String> = nodes.iter().map(|n| n.url.clone()).collect();
        let stack = core.with_gateway(nodes.remove(0));
        let endpoint = |url: String| {
            json!({
                "production_endpoints": {"url": url, "config": null},
                "sandbox_endpoints": {"url": url, "config": null},
                "endpoint_type": "http"
            })
            .to_string()
        };
        let api = |name: &'static str, max_tps: Option<u64>, tiers: &[&str]| {
            let url = if name == "Counted" {
                backend.to_string()
            } else {
                format!("{recorder}/{}", name.to_lowercase())
            };
            let changes = json!({
                "endpointConfig": endpoint(url),
                "endpointSecurity": null,
                "maxTps": max_tps.map(|t| json!({"production": t, "sandbox": t})),
                "tiers": tiers,
            });
            let stack = &stack;
            async move { stack.api(name, changes, &["Publish"]).await }
        };
        let tps_api = api("Paced", Some(options.max_tps), &["Unlimited"]).await;
        let app_api = api("Metered", None, &["Unlimited"]).await;
        let sub_api = api("Golden", None, &[SUB_TIER.0, "Unlimited"]).await;
        let counted_api = api("Counted", Some(NEVER_REACHED), &["Unlimited"]).await;
        let token = async |name: &str, app_tier: &str, subscriptions: &[(&str, &str)]| {
            let app = application(&stack, name, app_tier, subscriptions).await;
            client_token(&stack.mgmt, &app).await
        };
        let tps_token = token("PacedApp", "Unlimited", &[(&tps_api, "Unlimited")]).await;
        let app_token = token("MeteredApp", APP_TIER.0, &[(&app_api, "Unlimited")]).await;
        let sub_token = token("GoldenApp", "Unlimited", &[(&sub_api, SUB_TIER.0)]).await;
        // Made last: a node that admits it knows every subscription made before it.
        let all = [
            (tps_api.as_str(), "Unlimited"),
            (&app_api, "Unlimited"),
            (&sub_api, "Unlimited"),
            (&counted_api, "Unlimited"),
        ];
        let counted_token = token("CountedApp", "Unlimited", &all).await;
        let setup = Setup {
            stack,
            others: nodes,
            memory,
            redis,
            namespace,
            nodes: urls,
            tps_token,
            app_token,
            sub_token,
            counted_token,
        };
        setup.warm_up().await;
        setup
    }

    /// Every node (the in-memory one too) serves every API, and the three count in Redis
    /// (a node connects to it in the background: until then it would count alone).
    async fn warm_up(&self) {
        let mut urls = self.nodes.clone();
        urls.push(self.memory.url.clone());
        for url in &urls {
            let node = Client::new(url);
            for path in [TPS_PATH, APP_PATH, SUB_PATH, COUNTED_PATH] {
                harness::eventually(
                    &node,
                    reqwest::Method::GET,
                    path,
                    &self.counted_token,
                    |r| r.status == 200,
                )
                .await;
            }
        }
        for url in &self.nodes {
            let node = Client::new(url);
            let deadline = Instant::now() + Duration::from_secs(15);
            loop {
                let before = self.redis.increments().await;
                node.get(COUNTED_PATH, &self.counted_token)
                    .await
                    .expect(200);
                if self.redis.increments().await > before {
                    break;
                }
                assert!(Instant::now() < deadline, "{url} does not count in Redis");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        // Nothing of the warm-up weighs on the measured windows of a second.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }

    /// wrk against one node counting in its own memory, then against one counting in
    /// Redis, `--rounds` times: the node on CPU 1, wrk and the backend on CPU 0.
    async fn cpu_comparison(&self, options: &Options) -> Vec<CpuRun> {
        let headers = [format!("Authorization: Bearer {}", self.counted_token)];
        let cases = [
            (
                "in memory",
                self.memory.pid(),
                self.memory.url.clone(),
                None,
            ),
            (
                "Redis",
                self.stack.gateway.pid(),
                self.nodes[0].clone(),
                Some(self.redis.pid()),
            ),
        ];
        let mut runs: Vec<CpuRun> = cases
            .iter()
            .map(|(store, ..)| CpuRun {
                store: store.to_string(),
                ..CpuRun::default()
            })
            .collect();
        for round in 1..=options.rounds.max(1) {
            for ((store, pid, url, redis), run) in cases.iter().zip(&mut runs) {
                eprintln!(
                    "bench: throttling: round {round}/{}: CPU per request, counters {store}",
                    options.rounds
                );
                machine::pin_process(*pid, "1");
                machine::wait_for_quiet_cpu().await;
                let url = format!("{url}{COUNTED_PATH}");
                let wrk = |seconds: u64| Wrk {
                    url: &url,
                    connections: options.connections,
                    duration: Duration::from_secs(seconds),
                    headers: &headers,
                    script: None,
                };
                wrk(options.warmup).run().await;
                let (node_before, redis_before) = (machine::cpu_us(&[*pid]), redis.map(cpu_of));
                let commands_before = self.redis.commands().await;
                let load = wrk(options.seconds).run().await;
                let requests = (load.rate * options.seconds as f64).max(1.0);
                run.gateway_us
                    .push((machine::cpu_us(&[*pid]) - node_before) / requests);
                if let (Some(pid), Some(before)) = (redis, redis_before) {
                    run.redis_us.push((cpu_of(*pid) - before) / requests);
                    // Less the INFO command this count sends itself.
                    let commands = self.redis.commands().await - commands_before - 1;
                    run.redis_commands.push(commands as f64 / requests);
                }
                run.loads.push(load);
                machine::pin_process(*pid, "0,1");
            }
        }
        runs
    }

    async fn stop(self) {
        for node in self.others {
            node.stop().await;
        }
        self.memory.stop().await;
        self.stack.gateway.stop().await;
        if let Some(control_plane) = self.stack.control_plane {
            control_plane.stop().await;
        }
        self.redis.stop().await;
        let _ = std::fs::remove_dir_all(&self.stack.data_dir);
    }
}

/// An application of `tier` subscribed to each `(api, subscription tier)`, with
/// PRODUCTION keys: (consumer key, consumer secret).
async fn application(
    stack: &Stack,
    name: &str,
    tier: &str,
    subscriptions: &[(&str, &str)],
) -> (String, String) {
    let steps = stack.steps();
    let app = steps.create_application(name, tier).await.unwrap();
    for (api, tier) in subscriptions {
        steps.subscribe(&app, api, tier).await.unwrap();
    }
    let keys = steps.generate_keys(&app, &keys_request()).await.unwrap();
    (keys.key, keys.secret)
}

async fn client_token(mgmt: &Client, (key, secret): &(String, String)) -> String {
    mgmt.token(key, secret, &[("grant_type", "client_credentials")])
        .await
        .expect(200)
        .str("access_token")
}

/// The limited APIs' backend: answers 200 to anything and notes when each call arrived.
struct Recorder {
    url: String,
    arrivals: std::sync::Arc<std::sync::Mutex<Vec<(String, f64)>>>,
}

impl Recorder {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind recorder");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let arrivals = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let noted = arrivals.clone();
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let at = now_ms();
            noted
                .lock()
                .expect("arrivals")
                .push((uri.path().to_string(), at));
            async { "{}" }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Recorder { url, arrivals }
    }

    /// When calls under `prefix` arrived, unix ms.
    fn arrivals(&self, prefix: &str) -> Vec<f64> {
        self.arrivals
            .lock()
            .expect("arrivals")
            .iter()
            .filter(|(path, _)| path.starts_with(prefix))
            .map(|(_, at)| *at)
            .collect()
    }
}

/// CPU time of one process, µs.
fn cpu_of(pid: u32) -> f64 {
    machine::cpu_us(&[pid])
}

/// Unix time, ms.
fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1e3
}

/// Paces each `(path, token, calls a second)` stream over `nodes` in turn for `count`
/// windows of `length_ms`, starting at the next window of the clock; each stream's calls.
async fn paced_windows(
    nodes: &[String],
    streams: &[(&str, &str, f64)],
    length_ms: u64,
    count: usize,
) -> Vec<(f64, Vec<Call>)> {
    let now = now_ms();
    let length = length_ms as f64;
    let first_window = (now / length).floor() + 1.0;
    let begin_ms = first_window * length;
    let start = Instant::now() + Duration::from_secs_f64((begin_ms - now) / 1e3);
    let duration = Duration::from_millis(length_ms * count as u64);
    let mut runs = JoinSet::new();
    for (i, (path, token, rate)) in streams.iter().enumerate() {
        let (nodes, path, token, rate) =
            (nodes.to_vec(), path.to_string(), token.to_string(), *rate);
        runs.spawn(async move { (i, paced(nodes, path, token, rate, start, duration).await) });
    }
    let mut calls = vec![Vec::new(); streams.len()];
    while let Some(joined) = runs.join_next().await {
        let (i, stream) = joined.expect("paced load");
        calls[i] = stream;
    }
    calls.into_iter().map(|c| (begin_ms, c)).collect()
}

/// `rate` calls a second from `start` for `duration`, evenly spaced, over connections of
/// their own spread over `nodes` in turn (each at most every 10 ms, at least one a node).
async fn paced(
    nodes: Vec<String>,
    path: String,
    token: String,
    rate: f64,
    start: Instant,
    duration: Duration,
) -> Vec<Call> {
    let connections = ((rate / 100.0).ceil() as usize).clamp(nodes.len(), 64);
    let period = Duration::from_secs_f64(connections as f64 / rate);
    let mut tasks = JoinSet::new();
    for k in 0..connections {
        let url = format!("{}{path}", nodes[k % nodes.len()]);
        let token = token.clone();
        let first = start + Duration::from_secs_f64(k as f64 / rate);
        tasks.spawn(async move {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .expect("client");
            let mut calls = Vec::new();
            let mut next = first;
            while next < start + duration {
                tokio::time::sleep_until(next.into()).await;
                let sent = now_ms();
                let status = match client.get(&url).bearer_auth(&token).send().await {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        match response.bytes().await {
                            Ok(_) => status,
                            Err(_) => 0,
                        }
                    }
                    Err(_) => 0,
                };
                let done = now_ms();
                calls.push(Call {
                    at_ms: (sent + done) / 2.0,
                    latency_ms: done - sent,
                    status,
                });
                next += period;
            }
            calls
        });
    }
    let mut calls = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        calls.extend(joined.expect("paced connection"));
    }
    calls
}

/// Sorts `calls` into `count` windows of the clock from `begin_ms` (a call sent at the very
/// end whose midpoint falls after them is left out).
fn windows(
    label: String,
    limit: u64,
    length_ms: u64,
    count: usize,
    (begin_ms, calls): (f64, Vec<Call>),
    received: &[f64],
) -> Windows {
    let length = length_ms as f64;
    let end_ms = begin_ms + length * count as f64;
    let calls: Vec<Call> = calls
        .into_iter()
        .filter(|c| c.at_ms >= begin_ms && c.at_ms < end_ms)
        .collect();
    let mut rows = vec![Window::default(); count];
    let refusal = if length_ms == 1000 { 503 } else { 429 };
    for call in &calls {
        let index = ((call.at_ms - begin_ms) / length).floor();
        let Some(row) = (index >= 0.0)
            .then(|| rows.get_mut(index as usize))
            .flatten()
        else {
            continue;
        };
        row.offered += 1;
        match call.status {
            200 => row.admitted += 1,
            s if s == refusal => row.refused += 1,
            _ => row.other += 1,
        }
    }
    let mut received: Vec<f64> = received
        .iter()
        .copied()
        .filter(|at| *at >= begin_ms && *at < end_ms)
        .collect();
    received.sort_by(f64::total_cmp);
    for at in &received {
        rows[((at - begin_ms) / length) as usize].received += 1;
    }
    let latencies: Vec<Duration> = calls
        .iter()
        .map(|c| Duration::from_secs_f64(c.latency_ms.max(0.0) / 1e3))
        .collect();
    let seconds = count as f64 * length / 1e3;
    Windows {
        label,
        limit,
        length_ms,
        offered_rate: calls.len() as f64 / seconds,
        rows,
        max_in_any_span: max_in_span(&received, length),
        latency: Latencies::of(&latencies),
    }
}

/// Most of the sorted times `at` within any half-open span of `length`.
fn max_in_span(at: &[f64], length: f64) -> usize {
    let mut best = 0;
    let mut from = 0;
    for (to, t) in at.iter().enumerate() {
        while at[from] <= t - length {
            from += 1;
        }
        best = best.max(to - from + 1);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(at_ms: f64, status: u16) -> Call {
        Call {
            at_ms,
            latency_ms: 1.0,
            status,
        }
    }

    #[test]
    fn sorts_calls_into_windows_of_the_clock() {
        let calls = vec![
            call(1000.0, 200),
            call(1999.0, 200),
            call(2000.5, 503),
            call(2500.0, 200),
            call(2600.0, 0),
            call(3000.5, 200),
        ];
        let received = [1000.2, 1999.2, 2500.2, 3000.7];
        let w = windows("t".into(), 2, 1000, 2, (1000.0, calls), &received);
        assert_eq!(w.rows.len(), 2);
        assert_eq!((w.rows[0].offered, w.rows[0].admitted), (2, 2));
        let second = w.rows[1];
        assert_eq!((second.admitted, second.refused, second.other), (1, 1, 1));
        assert_eq!((w.rows[0].received, second.received), (2, 1));
        // 1999.2 and 2500.2 are within one second of each other; 1000.2 is not.
        assert_eq!(w.max_in_any_span, 2);
    }

    #[test]
    fn finds_the_busiest_span() {
        assert_eq!(max_in_span(&[0.0, 10.0, 999.0, 1000.0, 1500.0], 1000.0), 3);
        assert_eq!(max_in_span(&[], 1000.0), 0);
    }
}
