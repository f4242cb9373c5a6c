//! The control plane's Prometheus metrics, served at the operations listener's `/metrics`
//! in the OpenMetrics text format.
//!
//! Label sets are bounded: `route` is the matched route template (never the raw path;
//! `unmatched` for the rest), `method` one of the methods the API serves (else `other`),
//! `status` the status code, `grant` one of the three grants, `active` `true` or `false`,
//! `scope` `user` or `address`, `gateway` a configured gateway's URL (or `pull`) for
//! refused pages, and a gateway's id and environment for the fleet (at most
//! [`MAX_FLEET_SERIES`] gateways, those that present the gateway secret). No user, client
//! or token is ever a label.

use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use apim_metrics_exposition::Format;
use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use sqlx::AnyPool;

/// Upper bounds of the management latency buckets, seconds: from a cached read (about a
/// millisecond) to an argon2 check under a queue (seconds).
const REQUEST_BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Upper bounds of the compile-time buckets, seconds: one touched API (milliseconds) to a
/// full compile of 10,000 APIs (seconds).
const COMPILE_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Gateways the fleet's gauges name at most (the ones seen last are left out).
pub const MAX_FLEET_SERIES: usize = 1_000;

/// A management request's labels.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

/// A management request's latency labels.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: String,
}

/// A token grant.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GrantLabels {
    grant: &'static str,
}

/// What an introspection answered.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IntrospectionLabels {
    active: &'static str,
}

/// Who refused a manifest page: a configured gateway's URL, or `pull`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusedLabels {
    gateway: String,
}

/// A gateway of the fleet.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FleetLabels {
    gateway: String,
    environment: String,
}

/// What a lock-out locks.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LockoutLabels {
    scope: &'static str,
}

/// Every metric of the control plane, and the registry that encodes them.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Family<RouteLabels, Histogram>,
    tokens: Family<GrantLabels, Counter>,
    introspections: Family<IntrospectionLabels, Counter>,
    login_failures: Counter,
    lockouts: Family<LockoutLabels, Counter>,
    compile_seconds: Histogram,
    manifest_entries: Gauge,
    manifest_version: Gauge,
    pool_connections: Gauge,
    pool_idle: Gauge,
    pages_refused: Family<RefusedLabels, Counter>,
    fleet_lag: Family<FleetLabels, Gauge>,
    fleet_silent: Family<FleetLabels, Gauge>,
    /// Held while the fleet's gauges are redrawn, so two scrapes do not mix them.
    fleet_redraw: Mutex<()>,
}

/// The process's metrics (one control plane per process).
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("apim");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "mgmt_requests",
            "Management requests answered, by method, route template and status",
            requests.clone(),
        );
        let request_seconds =
            Family::<RouteLabels, Histogram>::new_with_constructor(request_histogram as fn() -> _);
        registry.register_with_unit(
            "mgmt_request_duration",
            "Time to answer a management request, by method and route template",
            Unit::Seconds,
            request_seconds.clone(),
        );
        let tokens = Family::<GrantLabels, Counter>::default();
        registry.register("tokens_issued", "Tokens issued, by grant", tokens.clone());
        let introspections = Family::<IntrospectionLabels, Counter>::default();
        registry.register(
            "token_introspections",
            "Tokens introspected for gateways, by whether they were active",
            introspections.clone(),
        );
        let login_failures = Counter::default();
        registry.register(
            "login_failures",
            "Password logins refused for a wrong password, an unknown, disabled or locked user",
            login_failures.clone(),
        );
        let lockouts = Family::<LockoutLabels, Counter>::default();
        registry.register(
            "login_lockouts",
            "Lock-outs begun after repeated failed logins, of a user name or a client address",
            lockouts.clone(),
        );
        let compile_seconds = Histogram::new(COMPILE_BUCKETS);
        registry.register_with_unit(
            "manifest_compile_duration",
            "Time to compile the route manifest (whole or the touched rows)",
            Unit::Seconds,
            compile_seconds.clone(),
        );
        let manifest_entries = Gauge::default();
        registry.register(
            "manifest_entries",
            "Entries of the compiled route manifest",
            manifest_entries.clone(),
        );
        let manifest_version = Gauge::default();
        registry.register(
            "manifest_version",
            "Version of the newest compiled route manifest",
            manifest_version.clone(),
        );
        let pool_connections = Gauge::default();
        registry.register(
            "db_pool_connections",
            "Database connections open in the pool",
            pool_connections.clone(),
        );
        let pool_idle = Gauge::default();
        registry.register(
            "db_pool_idle_connections",
            "Database connections idle in the pool",
            pool_idle.clone(),
        );
        let pages_refused = Family::<RefusedLabels, Counter>::default();
        registry.register(
            "manifest_pages_refused",
            "Manifest pages a gateway could not take, by the gateway pushed to (or pull)",
            pages_refused.clone(),
        );
        let fleet_lag = Family::<FleetLabels, Gauge>::default();
        registry.register(
            "fleet_lag_versions",
            "Versions a gateway that checks in is behind the newest, as it last asked",
            fleet_lag.clone(),
        );
        let fleet_silent = Family::<FleetLabels, Gauge>::default();
        registry.register_with_unit(
            "fleet_silent",
            "Time since a gateway last asked for changes",
            Unit::Seconds,
            fleet_silent.clone(),
        );
        Self {
            registry,
            requests,
            request_seconds,
            tokens,
            introspections,
            login_failures,
            lockouts,
            compile_seconds,
            manifest_entries,
            manifest_version,
            pool_connections,
            pool_idle,
            pages_refused,
            fleet_lag,
            fleet_silent,
            fleet_redraw: Mutex::new(()),
        }
    }

    /// A gateway (a configured URL, or `pull`) could not take a manifest page.
    pub fn page_refused(&self, gateway: &str) {
        self.pages_refused
            .get_or_create(&RefusedLabels {
                gateway: gateway.to_string(),
            })
            .inc();
    }

    /// The fleet as the database has it, replacing what was drawn before.
    pub fn fleet(&self, gateways: &[FleetGauge]) {
        let _redraw = self.fleet_redraw.lock().unwrap_or_else(|p| p.into_inner());
        self.fleet_lag.clear();
        self.fleet_silent.clear();
        for gateway in gateways.iter().take(MAX_FLEET_SERIES) {
            let labels = FleetLabels {
                gateway: gateway.gateway.clone(),
                environment: gateway.environment.clone(),
            };
            self.fleet_lag.get_or_create(&labels).set(gateway.lag);
            self.fleet_silent
                .get_or_create(&labels)
                .set(gateway.silent_for);
        }
    }

    /// A token issued by `grant` (`password`, `client_credentials`, `refresh_token`).
    pub fn token_issued(&self, grant: &str) {
        let grant = match grant {
            "password" => "password",
            "client_credentials" => "client_credentials",
            "refresh_token" => "refresh_token",
            _ => "other",
        };
        self.tokens.get_or_create(&GrantLabels { grant }).inc();
    }

    /// A token introspected for a gateway.
    pub fn token_introspected(&self, active: bool) {
        let active = if active { "true" } else { "false" };
        self.introspections
            .get_or_create(&IntrospectionLabels { active })
            .inc();
    }

    /// A password login refused.
    pub fn login_failed(&self) {
        self.login_failures.inc();
    }

    /// A user name locked out.
    pub fn user_locked_out(&self) {
        self.lockouts
            .get_or_create(&LockoutLabels { scope: "user" })
            .inc();
    }

    /// A client address locked out.
    pub fn address_locked_out(&self) {
        self.lockouts
            .get_or_create(&LockoutLabels { scope: "address" })
            .inc();
    }

    /// A compile of the route manifest (whole or of touched rows) that took `seconds`.
    pub fn compile_took(&self, seconds: f64) {
        self.compile_seconds.observe(seconds);
    }

    /// The compiled manifest as it stands: its entries and version.
    pub fn manifest_state(&self, entries: usize, version: u64) {
        self.manifest_entries
            .set(i64::try_from(entries).unwrap_or(i64::MAX));
        self.manifest_version
            .set(i64::try_from(version).unwrap_or(i64::MAX));
    }

    /// The text exposition in `format`, with the pool's figures as they are now.
    pub fn encode(&self, db: &AnyPool, format: Format) -> String {
        self.pool_connections.set(i64::from(db.size()));
        self.pool_idle
            .set(i64::try_from(db.num_idle()).unwrap_or(i64::MAX));
        apim_metrics_exposition::encode(&self.registry, format).unwrap_or_else(|err| {
            tracing::error!("could not encode the metrics: {err}");
            String::new()
        })
    }

    fn request_answered(
        &self,
        method: &Method,
        route: Option<&str>,
        status: StatusCode,
        seconds: f64,
    ) {
        let method = method_label(method);
        let route = route.unwrap_or("unmatched").to_string();
        self.request_seconds
            .get_or_create(&RouteLabels {
                method,
                route: route.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels {
                method,
                route,
                status: status.as_u16(),
            })
            .inc();
    }
}

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS)
}

/// A method as a bounded label.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// Middleware counting every management request by its route template and status, and
/// timing it.
pub async fn count_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|matched| matched.as_str().to_string());
    let response = next.run(request).await;
    metrics().request_answered(
        &method,
        route.as_deref(),
        response.status(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// One gateway as the fleet's gauges show it.
#[derive(Debug, Clone)]
pub struct FleetGauge {
    /// Its id.
    pub gateway: String,
    /// Its environment; empty when it serves every API.
    pub environment: String,
    /// Manifest versions it is behind.
    pub lag: i64,
    /// Seconds since it last asked.
    pub silent_for: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_bounded() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
        let metrics = Metrics::new();
        metrics.token_issued("urn:made-up");
        metrics.request_answered(&Method::GET, None, StatusCode::NOT_FOUND, 0.001);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &metrics.registry).unwrap();
        assert!(
            text.contains(r#"apim_tokens_issued_total{grant="other"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"apim_mgmt_requests_total{method="GET",route="unmatched",status="404"} 1"#
            ),
            "{text}"
        );
    }
}
