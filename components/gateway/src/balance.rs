//! A call sent to its endpoints as their list says ([`HealthBook::plan`]), on the
//! component's own path (`wasi:http`; edge-gateway's host forwarding runs the same
//! decision with a book of its own), with the endpoints' health kept in the host's
//! key-value store.

use apim_http::endpoints::{self, Health, HealthBook};
use apim_http::expiry;

use crate::faults::Fault;
use crate::forward::{BackendRequest, backend_response};
use crate::host::{Headers, Host, Request, Response, SendError};

/// Sends a call to its endpoints as the list says ([`HealthBook::plan`]): each failure
/// recorded against its endpoint and, for `load_balance` and `failover`, the call sent
/// on to the next; the backend's answer, or the fault for the last failure (503 at once
/// when every endpoint is suspended). The book is the host's store, shared by every
/// instance that shares it.
pub fn send(
    host: &dyn Host,
    backend: &BackendRequest,
    request: &Request,
) -> Result<Response, Fault> {
    if !backend.needs_book() {
        return backend_response(host.send(backend.outbound(&backend.targets[0], request)));
    }
    let book = StoreBook { host };
    let keys: Vec<&str> = backend.targets.iter().map(|t| t.key.as_str()).collect();
    let now = || u64::try_from(host.now_millis()).unwrap_or(0);
    let order = book.plan(backend.balance, &backend.list, &keys, now());
    let mut last = Fault::endpoints_suspended();
    for index in order {
        let target = &backend.targets[index];
        let failure = match host.send(backend.outbound(target, request)) {
            Ok(response) => {
                book.succeeded(&target.key);
                return backend_response(Ok(response));
            }
            Err(failure) => failure,
        };
        let code = match failure {
            SendError::Timeout(_) => endpoints::codes::TIMED_OUT,
            SendError::Unreachable(_) => endpoints::codes::CONNECTION_FAILED,
        };
        book.failed(&target.key, &target.config, code, now());
        let discarded = code == endpoints::codes::TIMED_OUT && target.config.discard_on_timeout;
        match backend_response(Err(failure)) {
            Err(_) if discarded => return Ok(discarded_answer()),
            Err(fault) => last = fault,
            Ok(_) => unreachable!("a failure is a fault"),
        }
        if !endpoints::goes_on(backend.balance, &target.config, code) {
            break;
        }
    }
    Err(last)
}

/// The answer to a call whose endpoint timed out with `actionSelect` `discard`: WSO2
/// drops such a call without a fault; the client gets an empty 504.
pub fn discarded_answer() -> Response {
    Response {
        status: 504,
        headers: Headers::new(),
        body: Vec::new(),
    }
}

/// Endpoints' health in the host's key-value store: shared by every instance on the
/// store (and every node, on a shared one). Keys expire: a list's turn an hour after its
/// last call, an endpoint's health two days after its last failure (longer than the
/// longest suspension).
struct StoreBook<'h> {
    host: &'h dyn Host,
}

impl StoreBook<'_> {
    fn health_key(endpoint: &str) -> String {
        expiry::key(2 * 86_400, &format!("endpoint:{endpoint}"))
    }
}

impl HealthBook for StoreBook<'_> {
    fn turn(&self, list: &str) -> u64 {
        let key = expiry::key(3_600, &format!("turn:{list}"));
        self.host
            .kv_increment(&key, 1)
            // The counter's new value: the first call's turn is 0, as in memory.
            .map_or(0, |n| u64::try_from(n.saturating_sub(1)).unwrap_or(0))
    }

    fn health(&self, endpoint: &str) -> Health {
        let Ok(Some(value)) = self.host.kv_get(&Self::health_key(endpoint)) else {
            return Health::default();
        };
        let text = String::from_utf8_lossy(&value);
        let mut fields = text.split(',').map(|f| f.parse::<u64>().unwrap_or(0));
        let mut next = || fields.next().unwrap_or(0);
        Health {
            failures: u32::try_from(next()).unwrap_or(0),
            suspended_until_ms: next(),
            last_suspension_ms: next(),
        }
    }

    fn set_health(&self, endpoint: &str, health: Health) {
        let key = Self::health_key(endpoint);
        let written = if health == Health::default() {
            self.host.kv_delete(&key)
        } else {
            let value = format!(
                "{},{},{}",
                health.failures, health.suspended_until_ms, health.last_suspension_ms
            );
            self.host.kv_set(&key, value.as_bytes())
        };
        if let Err(err) = written {
            eprintln!("an endpoint's health could not be kept: {err}");
        }
    }
}
