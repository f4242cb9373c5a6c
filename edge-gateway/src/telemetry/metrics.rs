//! The gateway's Prometheus metrics.
//!
//! Label sets (bounded: no token, user or client address is ever a label):
//! - `apim_gateway_requests_total{api, version, resource, application, method, class}`:
//!   every request; `resource` is the matched URL template, `application` the caller's
//!   application id, `class` the status class (`2xx`...); each empty where the request
//!   did not get that far (no API matched, an open resource). Past [`MAX_SERIES`] label
//!   sets, new ones count under `api="_other"` with the other labels empty.
//! - `apim_gateway_request_duration_seconds` and `apim_gateway_backend_duration_seconds`
//!   `{api, version}`: until the response head is ready, and the backend's share of it.
//! - `apim_gateway_cache_hits_total{api, version}`.
//! - `apim_gateway_refusals_total{status, code}`: answers with a WSO2 fault code.
//! - `apim_gateway_throttled_total{limit}`: `api_tps`, `resource_tier`,
//!   `subscription_tier`, `application_tier`.
//! - `apim_gateway_backend_errors_total{kind}`: `timeout`, `unreachable`.
//! - `apim_gateway_policy_calls_total{policy, outcome}`, `apim_gateway_policy_fuel_total`
//!   and `apim_gateway_policy_seconds_total{policy}`: tenants' WebAssembly policies, by
//!   the first 12 hex digits of their digest; `outcome` is `proceeded`, `answered`,
//!   `trapped`, `cpu_budget`, `memory_budget`, `time_budget`, `unavailable` or
//!   `suspended`. Past
//!   [`MAX_POLICY_SERIES`] policies, new ones count under `policy="_other"`.
//! - `apim_gateway_instances_in_use`, `apim_gateway_instantiations_total`,
//!   `apim_gateway_manifest_version`, `apim_gateway_manifest_lag` (versions behind the
//!   newest the control plane announced), `apim_gateway_manifest_synced_timestamp_seconds`
//!   (the last sync that brought the gateway up to date).
//!
//! Counting costs a hash of the label strings, a read-locked map look-up of the handles
//! resolved for that label set, and atomic increments (the histograms take an
//! uncontended lock each): no allocation once a label set has been seen.

use apim_metrics_exposition::Format;

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher as _, BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, RwLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tokio::sync::Semaphore;

use crate::failure::BackendFailure;
use crate::telemetry::called::Called;
use crate::wit_host::bindings::exports::apim::gateway::policy::LimitKind;

/// Most label sets of `apim_gateway_requests_total` kept apart.
pub const MAX_SERIES: usize = 10_000;
/// Most policies the policy metrics keep apart.
pub const MAX_POLICY_SERIES: usize = 1_000;

/// Latency bucket bounds, seconds: from a refusal answered in tens of microseconds to a
/// backend taking the longest timeout.
const LATENCY_BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Instances made, counted where they are made ([`crate::wit_host::instances`]).
static INSTANTIATIONS: LazyLock<Counter> = LazyLock::new(Counter::default);

/// An instance was made.
pub fn instantiated() {
    INSTANTIATIONS.inc();
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    api: String,
    version: String,
    resource: String,
    application: String,
    method: &'static str,
    class: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabels {
    api: String,
    version: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    status: u16,
    code: u32,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PolicyLabels {
    policy: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PolicyCallLabels {
    policy: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendErrorLabels {
    kind: &'static str,
}

/// How a request ended, beyond its status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The WSO2 fault code of the answer (0: none).
    pub fault_code: u32,
    /// The limit that refused it.
    pub throttled: Option<LimitKind>,
    /// The backend's share of the latency, when it was called.
    pub backend: Option<Duration>,
    /// How the backend failed the call, if it did.
    pub backend_failed: Option<BackendFailure>,
    /// When its parts ran, for its spans.
    pub timeline: super::spans::Timeline,
}

/// The handles of one label set, resolved once.
struct Series {
    /// The labels, to tell hash collisions apart.
    api: String,
    version: String,
    resource: String,
    application: String,
    method: &'static str,
    /// Per status class (1xx..5xx), made when first counted.
    requests: [OnceLock<Counter>; 5],
    duration: Histogram,
    backend: Histogram,
    cache_hits: Counter,
}

impl Series {
    fn is(&self, method: &str, call: &Called<'_>) -> bool {
        self.method == method
            && self.api == call.api
            && self.version == call.version
            && self.resource == call.resource
            && self.application == call.application
    }
}

/// The map's keys are already hashes.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type SeriesMap = HashMap<u64, Arc<Series>, BuildHasherDefault<Prehashed>>;

/// Every metric of the gateway host.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    duration: Family<ApiLabels, Histogram>,
    backend: Family<ApiLabels, Histogram>,
    cache_hits: Family<ApiLabels, Counter>,
    refusals: Family<FaultLabels, Counter>,
    throttled: [Counter; 4],
    backend_timeouts: Counter,
    backend_unreachable: Counter,
    instances_in_use: Gauge,
    manifest_version: Gauge,
    manifest_lag: Gauge,
    synced_at: Gauge,
    policy_calls: Family<PolicyCallLabels, Counter>,
    policy_fuel: Family<PolicyLabels, Counter>,
    policy_seconds: Family<PolicyLabels, Counter<f64, AtomicU64>>,
    /// The policies counted apart so far.
    policies_seen: Mutex<HashSet<String>>,
    series: RwLock<SeriesMap>,
    /// The instance permits of each hosted component, and how many each has.
    pools: Mutex<Vec<(Arc<Semaphore>, usize)>>,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("apim_gateway");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests answered, by API, version, resource template, application, method and \
             status class",
            requests.clone(),
        );
        let duration = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        registry.register_with_unit(
            "request_duration",
            "Time from the request head to the response head, by API and version",
            Unit::Seconds,
            duration.clone(),
        );
        let backend = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        registry.register_with_unit(
            "backend_duration",
            "Time the backend took to answer with its response head, by API and version",
            Unit::Seconds,
            backend.clone(),
        );
        let cache_hits = Family::<ApiLabels, Counter>::default();
        registry.register(
            "cache_hits",
            "Answers from the response cache, by API and version",
            cache_hits.clone(),
        );
        let refusals = Family::<FaultLabels, Counter>::default();
        registry.register(
            "refusals",
            "Answers carrying a WSO2 fault, by status and fault code",
            refusals.clone(),
        );
        let throttled_family = Family::<LimitLabels, Counter>::default();
        registry.register(
            "throttled",
            "Requests refused by a limit, by the limit",
            throttled_family.clone(),
        );
        let throttled = [
            "api_tps",
            "resource_tier",
            "subscription_tier",
            "application_tier",
        ]
        .map(|limit| throttled_family.get_or_create_owned(&LimitLabels { limit }));
        let backend_errors = Family::<BackendErrorLabels, Counter>::default();
        registry.register(
            "backend_errors",
            "Forwarded requests the backend did not answer, by what happened",
            backend_errors.clone(),
        );
        let backend_timeouts =
            backend_errors.get_or_create_owned(&BackendErrorLabels { kind: "timeout" });
        let backend_unreachable = backend_errors.get_or_create_owned(&BackendErrorLabels {
            kind: "unreachable",
        });
        let instances_in_use = Gauge::default();
        registry.register(
            "instances_in_use",
            "Component instances busy with a request",
            instances_in_use.clone(),
        );
        registry.register(
            "instantiations",
            "Component instances made",
            INSTANTIATIONS.clone(),
        );
        let manifest_version = Gauge::default();
        manifest_version.set(-1);
        registry.register(
            "manifest_version",
            "Version of the route manifest the gateway holds (-1: none yet)",
            manifest_version.clone(),
        );
        let manifest_lag = Gauge::default();
        registry.register(
            "manifest_lag",
            "Versions the manifest held is behind the newest the control plane announced",
            manifest_lag.clone(),
        );
        let synced_at = Gauge::default();
        registry.register_with_unit(
            "manifest_synced_timestamp",
            "When a sync last brought the gateway up to date, Unix time (0: never)",
            Unit::Seconds,
            synced_at.clone(),
        );
        let policy_calls = Family::<PolicyCallLabels, Counter>::default();
        registry.register(
            "policy_calls",
            "Calls of tenants' WebAssembly policies, by policy and outcome",
            policy_calls.clone(),
        );
        let policy_fuel = Family::<PolicyLabels, Counter>::default();
        registry.register(
            "policy_fuel",
            "Fuel (about one per WebAssembly instruction) tenants' policies burnt, by policy",
            policy_fuel.clone(),
        );
        let policy_seconds = Family::<PolicyLabels, Counter<f64, AtomicU64>>::default();
        registry.register_with_unit(
            "policy",
            "Time spent in tenants' policies, loading included, by policy",
            Unit::Seconds,
            policy_seconds.clone(),
        );
        Self {
            registry,
            requests,
            policy_calls,
            policy_fuel,
            policy_seconds,
            policies_seen: Mutex::new(HashSet::new()),
            duration,
            backend,
            cache_hits,
            refusals,
            throttled,
            backend_timeouts,
            backend_unreachable,
            instances_in_use,
            manifest_version,
            manifest_lag,
            synced_at,
            series: RwLock::new(SeriesMap::default()),
            pools: Mutex::new(Vec::new()),
        }
    }

    /// Counts `permits` (of `size`) as instances in use when taken.
    pub fn watch_instances(&self, permits: Arc<Semaphore>, size: usize) {
        self.pools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((permits, size));
    }

    /// Counts one call of the policy `digest`.
    pub fn policy_call(&self, digest: &str, outcome: &'static str, fuel: u64, elapsed: Duration) {
        let short = digest.get(..12).unwrap_or(digest);
        let policy = {
            let mut seen = self.policies_seen.lock().unwrap_or_else(|p| p.into_inner());
            if seen.contains(short) || seen.len() < MAX_POLICY_SERIES {
                seen.insert(short.to_string());
                short.to_string()
            } else {
                "_other".to_string()
            }
        };
        self.policy_calls
            .get_or_create(&PolicyCallLabels {
                policy: policy.clone(),
                outcome,
            })
            .inc();
        let labels = PolicyLabels { policy };
        self.policy_fuel.get_or_create(&labels).inc_by(fuel);
        self.policy_seconds
            .get_or_create(&labels)
            .inc_by(elapsed.as_secs_f64());
    }

    /// The manifest version held.
    pub fn manifest_version(&self, version: i64) {
        self.manifest_version.set(version);
    }

    /// Versions behind the newest the control plane announced.
    pub fn manifest_lag(&self, versions: i64) {
        self.manifest_lag.set(versions);
    }

    /// A sync brought the gateway up to date at `unix_secs`.
    pub fn synced(&self, unix_secs: i64) {
        self.synced_at.set(unix_secs);
    }

    /// Counts one answered request.
    pub fn record(
        &self,
        method: &str,
        call: &Called<'_>,
        status: u16,
        elapsed: Duration,
        outcome: &Outcome,
    ) {
        let series = self.series(method, call);
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        series.requests[class]
            .get_or_init(|| {
                self.requests.get_or_create_owned(&RequestLabels {
                    api: series.api.clone(),
                    version: series.version.clone(),
                    resource: series.resource.clone(),
                    application: series.application.clone(),
                    method: series.method,
                    class: ["1xx", "2xx", "3xx", "4xx", "5xx"][class],
                })
            })
            .inc();
        series.duration.observe(elapsed.as_secs_f64());
        if let Some(backend) = outcome.backend {
            series.backend.observe(backend.as_secs_f64());
        }
        if call.cached {
            series.cache_hits.inc();
        }
        if outcome.fault_code != 0 {
            self.refusals
                .get_or_create(&FaultLabels {
                    status,
                    code: outcome.fault_code,
                })
                .inc();
        }
        if let Some(kind) = outcome.throttled {
            self.throttled[limit_index(kind)].inc();
        }
        match outcome.backend_failed {
            Some(BackendFailure::TimedOut) => self.backend_timeouts.inc(),
            Some(BackendFailure::Unreachable) => self.backend_unreachable.inc(),
            None => 0,
        };
    }

    /// The handles for this label set: looked up, or resolved once.
    fn series(&self, method: &str, call: &Called<'_>) -> Arc<Series> {
        let method = method_label(method);
        let key = series_hash(method, call);
        let seen = self.series.read().unwrap_or_else(|p| p.into_inner());
        if let Some(series) = seen.get(&key).filter(|series| series.is(method, call)) {
            return series.clone();
        }
        let full = seen.len() >= MAX_SERIES;
        let overflow;
        let (call, key) = if full {
            overflow = Called {
                api: "_other",
                ..Called::default()
            };
            let key = series_hash(method, &overflow);
            if let Some(series) = seen.get(&key).filter(|series| series.is(method, &overflow)) {
                return series.clone();
            }
            (&overflow, key)
        } else {
            (call, key)
        };
        drop(seen);
        let mut seen = self.series.write().unwrap_or_else(|p| p.into_inner());
        if let Some(series) = seen.get(&key).filter(|series| series.is(method, call)) {
            return series.clone();
        }
        let series = Arc::new(self.resolve(method, call));
        // A colliding label set (64-bit hashes: never in practice) replaces the other's
        // handles in the map; both keep counting in their own series.
        seen.insert(key, series.clone());
        series
    }

    fn resolve(&self, method: &'static str, call: &Called<'_>) -> Series {
        let api = ApiLabels {
            api: call.api.to_string(),
            version: call.version.to_string(),
        };
        Series {
            api: call.api.to_string(),
            version: call.version.to_string(),
            resource: call.resource.to_string(),
            application: call.application.to_string(),
            method,
            requests: Default::default(),
            duration: self.duration.get_or_create_owned(&api),
            backend: self.backend.get_or_create_owned(&api),
            cache_hits: self.cache_hits.get_or_create_owned(&api),
        }
    }

    /// The text exposition in `format`, with the instances in use as they are now.
    pub fn encode(&self, format: Format) -> String {
        let in_use: usize = self
            .pools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(permits, size)| size.saturating_sub(permits.available_permits()))
            .sum();
        self.instances_in_use
            .set(i64::try_from(in_use).unwrap_or(i64::MAX));
        apim_metrics_exposition::encode(&self.registry, format).unwrap_or_else(|err| {
            tracing::error!("could not encode the metrics: {err}");
            String::new()
        })
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn limit_index(kind: LimitKind) -> usize {
    match kind {
        LimitKind::ApiTps => 0,
        LimitKind::ResourceTier => 1,
        LimitKind::SubscriptionTier => 2,
        LimitKind::ApplicationTier => 3,
    }
}

/// A method as a bounded label.
fn method_label(method: &str) -> &'static str {
    match method {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "PATCH" => "PATCH",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    }
}

/// The label set's hash (a fixed seed: the same in every process; the series it finds are
/// still compared whole, and bounded).
fn series_hash(method: &str, call: &Called<'_>) -> u64 {
    let mut hasher = foldhash::fast::FixedState::default().build_hasher();
    method.hash(&mut hasher);
    call.api.hash(&mut hasher);
    call.version.hash(&mut hasher);
    call.resource.hash(&mut hasher);
    call.application.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(api: &'a str, application: &'a str) -> Called<'a> {
        Called {
            api,
            api_id: "pets-id",
            version: "1.0.0",
            resource: "/pets/{id}",
            application,
            key_type: "PRODUCTION",
            user: "alice",
            cached: false,
        }
    }

    #[test]
    fn counts_by_label_set_and_class_and_fault() {
        let metrics = Metrics::new();
        let ok = Outcome {
            backend: Some(Duration::from_millis(2)),
            ..Outcome::default()
        };
        for _ in 0..3 {
            metrics.record(
                "GET",
                &call("Pets", "app-1"),
                200,
                Duration::from_millis(3),
                &ok,
            );
        }
        let refused = Outcome {
            fault_code: 900803,
            throttled: Some(LimitKind::ApplicationTier),
            ..Outcome::default()
        };
        metrics.record("GET", &call("Pets", "app-1"), 429, Duration::ZERO, &refused);
        metrics.record(
            "BREW",
            &Called::default(),
            404,
            Duration::ZERO,
            &Outcome::default(),
        );
        let text = metrics.encode(Format::OpenMetrics);
        let has = |line: &str| assert!(text.contains(line), "{line} not in\n{text}");
        has(
            r#"apim_gateway_requests_total{api="Pets",version="1.0.0",resource="/pets/{id}",application="app-1",method="GET",class="2xx"} 3"#,
        );
        has(
            r#"apim_gateway_requests_total{api="Pets",version="1.0.0",resource="/pets/{id}",application="app-1",method="GET",class="4xx"} 1"#,
        );
        has(r#"method="other",class="4xx"} 1"#);
        has(r#"apim_gateway_refusals_total{status="429",code="900803"} 1"#);
        has(r#"apim_gateway_throttled_total{limit="application_tier"} 1"#);
        has(r#"apim_gateway_backend_duration_seconds_count{api="Pets",version="1.0.0"} 3"#);
        assert!(!text.contains("alice"), "users are never labels");
    }

    #[test]
    fn backend_failures_count_by_kind() {
        let metrics = Metrics::new();
        let failed = |how| Outcome {
            backend_failed: Some(how),
            ..Outcome::default()
        };
        let pets = call("Pets", "app-1");
        metrics.record(
            "GET",
            &pets,
            504,
            Duration::ZERO,
            &failed(BackendFailure::TimedOut),
        );
        for _ in 0..2 {
            let unreachable = failed(BackendFailure::Unreachable);
            metrics.record("GET", &pets, 502, Duration::ZERO, &unreachable);
        }
        let text = metrics.encode(Format::OpenMetrics);
        let has = |line: &str| assert!(text.contains(line), "{line} not in\n{text}");
        has(r#"apim_gateway_backend_errors_total{kind="timeout"} 1"#);
        has(r#"apim_gateway_backend_errors_total{kind="unreachable"} 2"#);
    }

    #[test]
    fn hostile_names_cannot_forge_series() {
        let metrics = Metrics::new();
        let forged = "Pets\"} 1\napim_gateway_manifest_version 999\n#";
        let outcome = Outcome::default();
        metrics.record("GET", &call(forged, "app"), 200, Duration::ZERO, &outcome);
        let text = metrics.encode(Format::OpenMetrics);
        assert!(
            text.lines()
                .all(|line| !line.starts_with("apim_gateway_manifest_version 999")),
            "{text}"
        );
        assert!(
            text.contains(r#"api="Pets\"} 1\napim_gateway_manifest_version 999\n#""#),
            "{text}"
        );
    }

    #[test]
    fn label_sets_past_the_bound_count_together() {
        let metrics = Metrics::new();
        for n in 0..MAX_SERIES + 5 {
            let app = format!("app-{n}");
            metrics.record(
                "GET",
                &call("Pets", &app),
                200,
                Duration::ZERO,
                &Outcome::default(),
            );
        }
        assert!(metrics.series.read().unwrap().len() <= MAX_SERIES + 1);
        let text = metrics.encode(Format::OpenMetrics);
        assert!(
            text.contains(
                r#"api="_other",version="",resource="",application="",method="GET",class="2xx"} 5"#
            ),
            "{text}"
        );
    }
}
