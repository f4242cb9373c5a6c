//! A call sent to its endpoints as their list says ([`HealthBook::plan`]), on the
//! component's own path (`wasi:http`; edge-gateway's host forwarding runs the same
//! decision with a book of its own), with the endpoints' health kept in the host's
//! key-value store.

use apim_http::endpoints::{self, Health, HealthBook};
use apim_http::expiry;

use crate::faults::Fault;
use crate::forward::{BackendRequest, backend_response};
use crate::host::{Headers, Host, Request, Response, SendError};
use crate::kept;

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
/// store (and every node, on a shared one), and briefly kept by a kept instance
/// ([`kept::HEALTH_FRESH_MS`]). Keys expire: a list's turn an hour after its
/// last call, an endpoint's health two days after its last failure (longer than the
/// longest suspension).
struct StoreBook<'h> {
    host: &'h dyn Host,
}

impl StoreBook<'_> {
    fn health_key(endpoint: &str) -> String {
        expiry::key(2 * 86_400, &format!("endpoint:{endpoint}"))
    }

    fn stored_health(&self, endpoint: &str) -> Health {
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
}

impl HealthBook for StoreBook<'_> {
    /// Turns come from the list's shared counter, one at a time, or a block at a time
    /// in a kept instance ([`kept::TURN_BLOCK`]): every turn is taken once either way,
    /// so the lists' calls stay spread evenly.
    fn turn(&self, list: &str) -> u64 {
        if let Some(turn) = kept::next_turn(list) {
            return turn;
        }
        let block = if kept::is_kept() { kept::TURN_BLOCK } else { 1 };
        let key = expiry::key(3_600, &format!("turn:{list}"));
        // The counter's new value: the first call's turn is 0, as in memory.
        let Ok(end) = self.host.kv_increment(&key, block as i64) else {
            return 0;
        };
        let end = u64::try_from(end).unwrap_or(0);
        let first = end.saturating_sub(block);
        kept::hold_turns(list, first + 1..end);
        first
    }

    fn health(&self, endpoint: &str) -> Health {
        let now = self.host.now_millis();
        if let Some(health) = kept::fresh_health(endpoint, now) {
            return health;
        }
        let health = self.stored_health(endpoint);
        kept::note_health(endpoint, health, now);
        health
    }

    fn set_health(&self, endpoint: &str, health: Health) {
        kept::note_health(endpoint, health, self.host.now_millis());
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
