//! What the gateway's WASI glue for either version shares ([`crate::wasm`] for WASI 0.2,
//! `crate::wasm_p3` for WASI 0.3): the instance's gateway, and [`Host`] over
//! `wasi:keyvalue` (draft2), `wasi:config/store` and the version's `wasi:http` client
//! (through [`apim_http::wasi`] or `apim_http::wasi_p3`).

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use apim_http::contract;
#[cfg(not(feature = "p3"))]
use apim_http::wasi as http;
use apim_http::wasi::BodyError;
#[cfg(feature = "p3")]
use apim_http::wasi_p3 as http;

use crate::access::Logged;
use crate::faults::Fault;
use crate::gateway::Gateway;
use crate::host::{Host, Outbound, Request, Response, SendError};

mod bindings {
    wit_bindgen::generate!({
        world: "apim:gateway/state",
        path: "../../wit",
        generate_all,
    });
}

/// The `wasi:keyvalue` bindings, for the gateway's world (wit-bindgen's `with`).
pub(crate) use bindings::wasi::keyvalue::{atomics as kv_atomics, store as kv_store};
use kv_atomics as atomics;
use kv_store as kv;

thread_local! {
    /// The instance's gateway, kept across requests when the host reuses the instance.
    pub(crate) static GATEWAY: RefCell<Gateway> = RefCell::new(Gateway::default());
    /// The opened key-value bucket.
    static BUCKET: RefCell<Option<kv::Bucket>> = const { RefCell::new(None) };
}

/// Whether the access log is on (`access_log` = `on`; Spin's manifest turns it on).
pub(crate) fn access_log_on() -> bool {
    WasiHost
        .setting(contract::settings::ACCESS_LOG)
        .is_some_and(|value| value.trim().eq_ignore_ascii_case(contract::ACCESS_LOG_ON))
}

impl Logged {
    /// What the access log notes of a request from its head.
    pub(crate) fn of(head: &Request) -> Self {
        Self {
            method: head.method.clone(),
            client: crate::host::header(&head.headers, contract::CLIENT_ADDR_HEADER)
                .unwrap_or_default()
                .to_string(),
        }
    }
}

/// The refusal of a request whose body could not be read.
pub(crate) fn body_fault(err: BodyError) -> Fault {
    match err {
        BodyError::TooLarge => Fault::payload_too_large(),
        BodyError::Broken(reason) => {
            eprintln!("reading the request body failed: {reason}");
            Fault::backend_unreachable()
        }
    }
}

/// The component's host, over WASI.
pub(crate) struct WasiHost;

impl WasiHost {
    fn with_bucket<T>(
        &self,
        f: impl FnOnce(&kv::Bucket) -> Result<T, kv::Error>,
    ) -> Result<T, String> {
        BUCKET.with(|cell| {
            let mut bucket = cell.borrow_mut();
            if bucket.is_none() {
                *bucket = Some(kv::open(contract::KV_BUCKET).map_err(|e| format!("{e:?}"))?);
            }
            f(bucket.as_ref().expect("opened above")).map_err(|e| format!("{e:?}"))
        })
    }
}

impl Host for WasiHost {
    fn kv_get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        self.with_bucket(|b| b.get(key))
    }

    fn kv_set(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.with_bucket(|b| b.set(key, value))
    }

    fn kv_delete(&self, key: &str) -> Result<(), String> {
        self.with_bucket(|b| b.delete(key))
    }

    fn kv_increment(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.with_bucket(|b| atomics::increment(b, key, delta))
    }

    fn kv_compare_and_swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, String> {
        let cas = self.with_bucket(|b| atomics::Cas::new(b, key))?;
        let current = cas.current().map_err(|e| format!("{e:?}"))?;
        if current.as_deref() != expected {
            return Ok(false);
        }
        match atomics::swap(cas, value) {
            Ok(()) => Ok(true),
            Err(atomics::CasError::CasFailed(_)) => Ok(false),
            Err(atomics::CasError::StoreError(err)) => Err(format!("{err:?}")),
        }
    }

    fn kv_list_keys(&self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), String> {
        self.with_bucket(|b| b.list_keys(cursor))
            .map(|page| (page.keys, page.cursor))
    }

    fn setting(&self, name: &str) -> Option<String> {
        http::setting(name)
    }

    fn send(&self, request: Outbound) -> Result<Response, SendError> {
        http::send(request)
    }

    fn now_millis(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default()
    }

    fn sleep_ms(&self, ms: u64) {
        http::sleep_ms(ms);
    }

    fn random_u64(&self) -> u64 {
        http::random_u64()
    }
}
