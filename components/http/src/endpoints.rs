//! Endpoint types as WSO2's `endpointConfig` defines them, and the one decision about
//! them both forwarding paths take (edge-gateway's host forwarding and the component's
//! `wasi:http` path): which endpoint of a list a request goes to (`load_balance`: round
//! robin; `failover`: the primary, then each failover in order), what a failure does to
//! an endpoint (WSO2's suspension: `suspendDuration` growing by `factor` up to
//! `suspendMaxDuration`; `retryErroCode` failures tolerated `retryTimeOut` times first),
//! and when a failed call goes on to the next endpoint.
//!
//! The state (round-robin turns, endpoint health) lives in a [`HealthBook`]; where it is
//! kept, and so who shares it, is the host's choice.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most endpoints of one list (production or sandbox, failovers included).
pub const MAX_ENDPOINTS_PER_LIST: usize = 16;

/// WSO2's default `suspendDuration` (Synapse's `DEFAULT_ENDPOINT_SUSPEND_TIME`).
pub const DEFAULT_SUSPEND_MS: u64 = 30_000;

/// Longest duration a configuration may give (a day): larger values are taken as this.
const MAX_DURATION_MS: u64 = 86_400_000;

/// Most error codes one list of a configuration names.
const MAX_CODES: usize = 32;

/// Most `retryTimeOut` failures tolerated before suspension.
const MAX_RETRIES: u32 = 16;

/// WSO2's transport error codes, as faults carry them and configurations list them.
pub mod codes {
    /// The connection failed.
    pub const CONNECTION_FAILED: u32 = 101_503;
    /// The backend did not answer in time.
    pub const TIMED_OUT: u32 = 101_504;
}

/// How a list of endpoints is used (`endpoint_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Balance {
    /// One endpoint (`http`): the first of the list.
    #[default]
    Single,
    /// Round robin across the list (`load_balance`).
    LoadBalance,
    /// The first, then each next in order (`failover`).
    Failover,
}

/// Whether calls to a list need a [`HealthBook`]: round robin and failover keep turns in
/// it, and an endpoint that may be suspended its state. A lone endpoint that is never
/// suspended (most APIs) needs none, and its calls name no list or endpoint key.
pub fn needs_book(balance: Balance, suspend_ms: impl IntoIterator<Item = u64>) -> bool {
    balance != Balance::Single || suspend_ms.into_iter().any(|ms| ms > 0)
}

/// An API's endpoints, per environment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Endpoints {
    /// How the lists are used.
    pub balance: Balance,
    /// Production endpoints (for `failover`: the primary, then the failovers).
    pub production: Vec<Endpoint>,
    /// Sandbox endpoints, likewise.
    pub sandbox: Vec<Endpoint>,
}

/// One endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Its URL.
    pub url: String,
    /// Its timeout and suspension settings.
    #[serde(default)]
    pub config: EndpointConfig,
}

/// An endpoint's `config`, with WSO2's defaults for what it leaves out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EndpointConfig {
    /// `actionDuration`: the timeout; the gateway's own when `None`.
    pub timeout_ms: Option<u64>,
    /// `actionSelect` `discard`: a timed-out call is dropped (answered without a fault)
    /// and not sent on to another endpoint; `fault` otherwise.
    pub discard_on_timeout: bool,
    /// `suspendErrorCode`: failures that suspend the endpoint; every failure when empty.
    pub suspend_codes: Vec<u32>,
    /// `suspendDuration`: the first suspension; none when 0.
    pub suspend_ms: u64,
    /// `suspendMaxDuration`: the longest suspension.
    pub suspend_max_ms: u64,
    /// `factor`: how much each consecutive suspension grows.
    pub factor: f64,
    /// `retryErroCode`: failures tolerated `retries` times before they suspend.
    pub retry_codes: Vec<u32>,
    /// `retryTimeOut`: how many.
    pub retries: u32,
    /// `retryDelay`: how long an endpoint that failed with a `retry_codes` code (and is
    /// not suspended for it yet) is left out before it is tried again.
    pub retry_delay_ms: u64,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        Self {
            timeout_ms: None,
            discard_on_timeout: false,
            suspend_codes: Vec::new(),
            suspend_ms: DEFAULT_SUSPEND_MS,
            suspend_max_ms: MAX_DURATION_MS,
            factor: 1.0,
            retry_codes: Vec::new(),
            retries: 0,
            retry_delay_ms: 0,
        }
    }
}

impl EndpointConfig {
    /// The settings of a lone `http` endpoint without a `config`: never suspended, as
    /// this gateway has always treated one (a lone backend that restarts is reached
    /// again at once).
    pub fn never_suspended() -> Self {
        Self {
            suspend_ms: 0,
            ..Self::default()
        }
    }

    /// The settings of a WSO2 `config` object (`null` or absent: WSO2's defaults).
    pub fn from_wso2(config: &Value) -> Result<Self, String> {
        let mut settings = Self::default();
        let Some(object) = config.as_object() else {
            return match config {
                Value::Null => Ok(settings),
                _ => Err("an endpoint's config must be an object".into()),
            };
        };
        let duration = |name: &str| -> Result<Option<u64>, String> {
            Ok(number(object.get(name), name)?.map(|ms| ms.min(MAX_DURATION_MS)))
        };
        settings.timeout_ms = duration("actionDuration")?.filter(|ms| *ms > 0);
        settings.discard_on_timeout = match object.get("actionSelect").and_then(Value::as_str) {
            None | Some("") | Some("fault") => false,
            Some("discard") => true,
            Some(other) => return Err(format!("actionSelect '{other}' is not fault or discard")),
        };
        settings.suspend_codes = error_codes(object.get("suspendErrorCode"), "suspendErrorCode")?;
        if let Some(ms) = duration("suspendDuration")? {
            settings.suspend_ms = ms;
        }
        if let Some(ms) = duration("suspendMaxDuration")? {
            settings.suspend_max_ms = ms;
        }
        if let Some(factor) = decimal(object.get("factor"), "factor")? {
            settings.factor = factor;
        }
        settings.retry_codes = error_codes(object.get("retryErroCode"), "retryErroCode")?;
        if let Some(retries) = number(object.get("retryTimeOut"), "retryTimeOut")? {
            settings.retries = retries.min(u64::from(MAX_RETRIES)) as u32;
        }
        if let Some(ms) = duration("retryDelay")? {
            settings.retry_delay_ms = ms;
        }
        Ok(settings)
    }
}

/// A non-negative whole number, as WSO2's clients send them (a number or its text; an
/// empty text is absent).
fn number(value: Option<&Value>, name: &str) -> Result<Option<u64>, String> {
    let invalid = || format!("{name} must be a non-negative whole number");
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(invalid),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| invalid()),
        Some(_) => Err(invalid()),
    }
}

/// A growth factor between 1 and 100.
fn decimal(value: Option<&Value>, name: &str) -> Result<Option<f64>, String> {
    let invalid = || format!("{name} must be a number from 1 to 100");
    let factor = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(_) => None,
    };
    match factor {
        Some(f) if (1.0..=100.0).contains(&f) => Ok(Some(f)),
        _ => Err(invalid()),
    }
}

/// A list of WSO2 error codes: an array of codes, or their text separated by commas.
fn error_codes(value: Option<&Value>, name: &str) -> Result<Vec<u32>, String> {
    let invalid = || format!("{name} must list error codes such as 101503");
    let texts: Vec<String> = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => s.split(',').map(|c| c.trim().to_string()).collect(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|code| match code {
                Value::String(s) => Ok(s.trim().to_string()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(invalid()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid()),
    };
    let codes: Vec<u32> = texts
        .iter()
        .filter(|code| !code.is_empty())
        .map(|code| code.parse().map_err(|_| invalid()))
        .collect::<Result<_, _>>()?;
    if codes.len() > MAX_CODES {
        return Err(format!("{name} lists more than {MAX_CODES} codes"));
    }
    Ok(codes)
}

impl Endpoints {
    /// The endpoints of a WSO2 `endpointConfig` document: every endpoint of every list,
    /// each with its settings; refused past [`MAX_ENDPOINTS_PER_LIST`] or with settings
    /// that do not read.
    pub fn from_wso2(config: &Value) -> Result<Self, String> {
        let balance = match config["endpoint_type"].as_str() {
            Some("load_balance") => Balance::LoadBalance,
            Some("failover") => Balance::Failover,
            _ => Balance::Single,
        };
        let list = |main: &str, failovers: &str| -> Result<Vec<Endpoint>, String> {
            let mut values = listed(&config[main]);
            if balance == Balance::Failover {
                values.extend(listed(&config[failovers]));
            }
            if values.len() > MAX_ENDPOINTS_PER_LIST {
                return Err(format!(
                    "endpointConfig lists {} {main} endpoints (failovers included); at most {MAX_ENDPOINTS_PER_LIST} are allowed",
                    values.len()
                ));
            }
            values
                .into_iter()
                .map(|value| endpoint(value, balance))
                .collect()
        };
        Ok(Self {
            balance,
            production: list("production_endpoints", "production_failovers")?,
            sandbox: list("sandbox_endpoints", "sandbox_failovers")?,
        })
    }

    /// Every endpoint URL of every list.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        self.production
            .iter()
            .chain(&self.sandbox)
            .map(|e| e.url.as_str())
    }
}

/// The endpoints of one list: `{url, config}` or an array of them.
fn listed(value: &Value) -> Vec<&Value> {
    match value {
        Value::Null => Vec::new(),
        Value::Array(list) => list.iter().collect(),
        one => vec![one],
    }
}

fn endpoint(value: &Value, balance: Balance) -> Result<Endpoint, String> {
    let url = value["url"]
        .as_str()
        .ok_or("every endpoint in endpointConfig must have a \"url\"")?;
    let config = match (&value["config"], balance) {
        (Value::Null, Balance::Single) => EndpointConfig::never_suspended(),
        (config, _) => EndpointConfig::from_wso2(config)
            .map_err(|why| format!("endpoint '{url}' in endpointConfig: {why}"))?,
    };
    Ok(Endpoint {
        url: url.to_string(),
        config,
    })
}

/// An endpoint's health as one gateway node knows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Health {
    /// `retryErroCode` failures since the last success or suspension.
    pub failures: u32,
    /// Suspended until then (milliseconds since the Unix epoch).
    pub suspended_until_ms: u64,
    /// The last suspension's length, while failures follow each other (0 after a success).
    pub last_suspension_ms: u64,
}

impl Health {
    /// Whether the endpoint is suspended at `now_ms`.
    pub fn suspended(&self, now_ms: u64) -> bool {
        now_ms < self.suspended_until_ms
    }

    /// The health after a failure with WSO2's error `code` at `now_ms`.
    pub fn failed(self, config: &EndpointConfig, code: u32, now_ms: u64) -> Self {
        let retried = config.retry_codes.contains(&code);
        if retried && self.failures < config.retries {
            // Synapse's "timeout" state: tolerated, but left out for `retryDelay`.
            return Self {
                failures: self.failures + 1,
                suspended_until_ms: now_ms.saturating_add(config.retry_delay_ms),
                ..self
            };
        }
        let suspends =
            retried || config.suspend_codes.is_empty() || config.suspend_codes.contains(&code);
        if !suspends || config.suspend_ms == 0 {
            return self;
        }
        let length = if self.last_suspension_ms == 0 {
            config.suspend_ms
        } else {
            (self.last_suspension_ms as f64 * config.factor) as u64
        }
        .min(config.suspend_max_ms)
        .max(1);
        Self {
            failures: 0,
            suspended_until_ms: now_ms.saturating_add(length),
            last_suspension_ms: length,
        }
    }
}

/// The order in which to try the `count` endpoints of a list, suspended ones left out
/// (empty when every one is): `load_balance` from this request's `turn` on, `failover`
/// from the first, `Single` the first only.
pub fn order(
    balance: Balance,
    count: usize,
    turn: u64,
    suspended: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let start = match balance {
        Balance::LoadBalance if count > 0 => (turn % count as u64) as usize,
        _ => 0,
    };
    let tried = if balance == Balance::Single {
        count.min(1)
    } else {
        count
    };
    (0..tried)
        .map(|i| (start + i) % count)
        .filter(|i| !suspended(*i))
        .collect()
}

/// Whether a call that failed with `code` goes on to the next endpoint of the order.
pub fn goes_on(balance: Balance, config: &EndpointConfig, code: u32) -> bool {
    balance != Balance::Single && !(code == codes::TIMED_OUT && config.discard_on_timeout)
}

/// Where a gateway node keeps its endpoints' state: round-robin turns per list and
/// health per endpoint, each under a key the caller names.
pub trait HealthBook {
    /// This request's turn in a list's round robin (each call takes the next).
    fn turn(&self, list: &str) -> u64;
    /// An endpoint's health.
    fn health(&self, endpoint: &str) -> Health;
    /// Records an endpoint's health.
    fn set_health(&self, endpoint: &str, health: Health);

    /// The order to try a list's endpoints in ([`order`]), as the book says now.
    fn plan(&self, balance: Balance, list: &str, endpoints: &[&str], now_ms: u64) -> Vec<usize> {
        let turn = match balance {
            Balance::LoadBalance => self.turn(list),
            _ => 0,
        };
        order(balance, endpoints.len(), turn, |i| {
            self.health(endpoints[i]).suspended(now_ms)
        })
    }

    /// Records a call to an endpoint that got an answer: its failures are forgotten.
    fn succeeded(&self, endpoint: &str) {
        if self.health(endpoint) != Health::default() {
            self.set_health(endpoint, Health::default());
        }
    }

    /// Records a call to an endpoint that failed with `code`.
    fn failed(&self, endpoint: &str, config: &EndpointConfig, code: u32, now_ms: u64) {
        let health = self.health(endpoint).failed(config, code, now_ms);
        self.set_health(endpoint, health);
    }
}

/// Most entries a [`MemoryBook`] keeps (each list's turn and each endpoint's health):
/// past it, the book starts afresh rather than grow.
const MAX_BOOK_ENTRIES: usize = 65_536;

/// A [`HealthBook`] in memory, shared by whoever shares the value.
#[derive(Debug, Default)]
pub struct MemoryBook {
    turns: Mutex<HashMap<String, u64>>,
    health: Mutex<HashMap<String, Health>>,
}

impl HealthBook for MemoryBook {
    fn turn(&self, list: &str) -> u64 {
        let mut turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(turn) = turns.get_mut(list) {
            *turn = turn.wrapping_add(1);
            return *turn;
        }
        if turns.len() >= MAX_BOOK_ENTRIES {
            turns.clear();
        }
        turns.insert(list.to_string(), 0);
        0
    }

    fn health(&self, endpoint: &str) -> Health {
        let health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        health.get(endpoint).copied().unwrap_or_default()
    }

    fn set_health(&self, endpoint: &str, state: Health) {
        let mut health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        if state == Health::default() {
            health.remove(endpoint);
            return;
        }
        if health.len() >= MAX_BOOK_ENTRIES {
            health.clear();
        }
        health.insert(endpoint.to_string(), state);
    }
}

/// The endpoint's path followed by the resource path and query (after the API's context
/// and version): `/` when both are empty, and `/` between a path and a bare query.
pub fn join_path(base: &str, resource_with_query: &str) -> String {
    let base = base.trim_end_matches('/');
    match resource_with_query {
        "" => {
            if base.is_empty() {
                "/".to_string()
            } else {
                base.to_string()
            }
        }
        r if r.starts_with('?') => crate::joined([base, "/", r]),
        r => crate::joined([base, r]),
    }
}

/// The endpoint's path of a target path [`join_path`] made of it and
/// `resource_with_query` (its trailing `/` gone); `None` when it was not so made.
pub fn endpoint_base<'p>(path_with_query: &'p str, resource_with_query: &str) -> Option<&'p str> {
    match resource_with_query {
        "" => Some(if path_with_query == "/" {
            ""
        } else {
            path_with_query
        }),
        r if r.starts_with('?') => path_with_query.strip_suffix(r)?.strip_suffix('/'),
        r => path_with_query.strip_suffix(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_list_is_read_with_its_settings_and_bounded() {
        let config = json!({"endpoint_type": "failover",
            "production_endpoints": {"url": "http://a", "config": null},
            "production_failovers": [{"url": "http://b", "config": {"actionDuration": "2000",
                "actionSelect": "discard", "suspendErrorCode": ["101503", "101504"],
                "suspendDuration": 1000, "suspendMaxDuration": "4000", "factor": "2",
                "retryErroCode": "101504", "retryTimeOut": "2", "retryDelay": ""}}],
            "sandbox_endpoints": [{"url": "http://s"}]});
        let endpoints = Endpoints::from_wso2(&config).unwrap();
        assert_eq!(endpoints.balance, Balance::Failover);
        let urls: Vec<&str> = endpoints.urls().collect();
        assert_eq!(urls, ["http://a", "http://b", "http://s"]);
        assert_eq!(endpoints.production[0].config, EndpointConfig::default());
        let b = &endpoints.production[1].config;
        assert_eq!(b.timeout_ms, Some(2000));
        assert!(b.discard_on_timeout);
        assert_eq!(b.suspend_codes, [101_503, 101_504]);
        assert_eq!(
            (b.suspend_ms, b.suspend_max_ms, b.factor),
            (1000, 4000, 2.0)
        );
        assert_eq!((b.retry_codes.as_slice(), b.retries), (&[101_504][..], 2));

        let single = json!({"endpoint_type": "http", "production_endpoints": {"url": "http://a"}});
        let single = Endpoints::from_wso2(&single).unwrap();
        assert_eq!(single.production[0].config.suspend_ms, 0);

        let list = |n: usize| -> Value {
            (0..n)
                .map(|i| json!({"url": format!("http://b{i}")}))
                .collect()
        };
        let at_bound = json!({"endpoint_type": "load_balance", "production_endpoints": list(16)});
        assert_eq!(
            Endpoints::from_wso2(&at_bound).unwrap().production.len(),
            16
        );
        let past = json!({"endpoint_type": "load_balance", "production_endpoints": list(17)});
        assert!(
            Endpoints::from_wso2(&past)
                .unwrap_err()
                .contains("at most 16")
        );
        let past = json!({"endpoint_type": "failover", "sandbox_endpoints": list(1),
                          "sandbox_failovers": list(16)});
        assert!(Endpoints::from_wso2(&past).is_err());

        for bad in [
            json!({"factor": 0}),
            json!({"factor": "x"}),
            json!({"actionDuration": -1}),
            json!({"actionSelect": "never"}),
            json!({"suspendErrorCode": ["abc"]}),
            json!({"retryErroCode": {}}),
            json!("fast"),
        ] {
            assert!(EndpointConfig::from_wso2(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_are_tried_round_robin_or_in_order_without_the_suspended() {
        let none = |_| false;
        assert_eq!(order(Balance::LoadBalance, 3, 0, none), [0, 1, 2]);
        assert_eq!(order(Balance::LoadBalance, 3, 4, none), [1, 2, 0]);
        assert_eq!(order(Balance::LoadBalance, 3, 4, |i| i == 2), [1, 0]);
        assert_eq!(order(Balance::Failover, 3, 9, |i| i == 0), [1, 2]);
        assert_eq!(order(Balance::Single, 3, 9, none), [0]);
        assert!(order(Balance::Failover, 2, 0, |_| true).is_empty());
        assert!(order(Balance::LoadBalance, 0, 5, none).is_empty());
    }

    #[test]
    fn suspension_grows_by_factor_up_to_the_maximum_and_ends_with_a_success() {
        let config = EndpointConfig {
            suspend_ms: 1000,
            suspend_max_ms: 2500,
            factor: 2.0,
            ..EndpointConfig::default()
        };
        let book = MemoryBook::default();
        book.failed("a", &config, codes::CONNECTION_FAILED, 0);
        assert_eq!(book.health("a").suspended_until_ms, 1000);
        assert!(book.health("a").suspended(999) && !book.health("a").suspended(1000));
        book.failed("a", &config, codes::CONNECTION_FAILED, 1000);
        assert_eq!(book.health("a").suspended_until_ms, 3000);
        book.failed("a", &config, codes::CONNECTION_FAILED, 3000);
        assert_eq!(book.health("a").suspended_until_ms, 5500);
        book.succeeded("a");
        assert_eq!(book.health("a"), Health::default());

        // Only the listed codes suspend; retried codes after their retries.
        let listed = EndpointConfig {
            suspend_codes: vec![codes::TIMED_OUT],
            retry_codes: vec![codes::CONNECTION_FAILED],
            retries: 1,
            ..config.clone()
        };
        let health = Health::default().failed(&listed, 101_505, 0);
        assert_eq!(health, Health::default());
        let health = Health::default().failed(&listed, codes::CONNECTION_FAILED, 0);
        assert!(!health.suspended(0) && health.failures == 1);
        let delayed = EndpointConfig {
            retry_delay_ms: 200,
            ..listed.clone()
        };
        let health = Health::default().failed(&delayed, codes::CONNECTION_FAILED, 0);
        assert!(health.suspended(199) && !health.suspended(200));
        assert_eq!(
            health.last_suspension_ms, 0,
            "a retry delay is no suspension"
        );
        assert!(
            health
                .failed(&listed, codes::CONNECTION_FAILED, 0)
                .suspended(0)
        );
        let never = EndpointConfig::never_suspended();
        assert!(!Health::default().failed(&never, 101_503, 0).suspended(0));
    }

    #[test]
    fn turns_go_round_and_plans_skip_the_suspended() {
        let book = MemoryBook::default();
        let urls = ["a", "b", "c"];
        let firsts: Vec<usize> = (0..6)
            .map(|_| book.plan(Balance::LoadBalance, "l", &urls, 0)[0])
            .collect();
        assert_eq!(firsts, [0, 1, 2, 0, 1, 2]);
        book.failed("b", &EndpointConfig::default(), codes::TIMED_OUT, 0);
        assert_eq!(book.plan(Balance::Failover, "f", &urls, 10), [0, 2]);
        assert!(goes_on(
            Balance::Failover,
            &EndpointConfig::default(),
            codes::TIMED_OUT
        ));
        let discard = EndpointConfig {
            discard_on_timeout: true,
            ..EndpointConfig::default()
        };
        assert!(!goes_on(Balance::Failover, &discard, codes::TIMED_OUT));
        assert!(goes_on(
            Balance::Failover,
            &discard,
            codes::CONNECTION_FAILED
        ));
        assert!(!goes_on(
            Balance::Single,
            &discard,
            codes::CONNECTION_FAILED
        ));
    }

    #[test]
    fn an_endpoints_path_comes_back_from_a_target_path() {
        for (base, resource, joined) in [
            ("/api/", "/pets/1?x=1", "/api/pets/1?x=1"),
            ("/api", "", "/api"),
            ("/", "", "/"),
            ("", "?q=1", "/?q=1"),
            ("/api", "?q=1", "/api/?q=1"),
        ] {
            assert_eq!(join_path(base, resource), joined);
            let back = endpoint_base(joined, resource).unwrap();
            assert_eq!(back, base.trim_end_matches('/'), "{joined}");
            assert_eq!(join_path(back, resource), joined);
        }
        assert_eq!(endpoint_base("/api/pets", "/dogs"), None);
    }
}
