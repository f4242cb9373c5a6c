//! What an API's route entry carries beside its operations: its endpoints (the lone URLs,
//! and the whole lists with their settings), its `maxTps` and its CORS settings.

use apim_http::endpoints::{Balance, EndpointConfig, Endpoints};
use apim_manifest::{Cors, MaxTps};
use serde_json::Value;

use crate::apis::records::{self as apis, CorsConfiguration};

/// Every endpoint of every list with its settings; `None` for lone endpoints without
/// settings, which `production_url` and `sandbox_url` describe whole (their entries stay
/// as they were). Records are checked when stored, so a list that does not read is one
/// stored before, left to the lone URLs.
pub(super) fn endpoint_lists(config: &Value) -> Option<Endpoints> {
    let endpoints = Endpoints::from_wso2(config).ok()?;
    let lone = EndpointConfig::never_suspended();
    let plain = endpoints.balance == Balance::Single
        && [&endpoints.production, &endpoints.sandbox]
            .iter()
            .all(|list| list.len() <= 1 && list.iter().all(|e| e.config == lone));
    (!plain).then_some(endpoints)
}

/// The URL of `{url, config}`, or of the first of a list of them.
pub(super) fn endpoint_url(endpoint: &Value) -> Option<String> {
    let endpoint = match endpoint {
        Value::Array(list) => list.first()?,
        other => other,
    };
    endpoint["url"].as_str().map(str::to_string)
}

/// The API's `maxTps`, positive limits only.
pub(super) fn max_tps(limits: Option<apis::MaxTps>) -> MaxTps {
    let positive = |t: Option<i64>| t.filter(|t| *t > 0).map(|t| t as u64);
    MaxTps {
        production: positive(limits.as_ref().and_then(|l| l.production)),
        sandbox: positive(limits.as_ref().and_then(|l| l.sandbox)),
    }
}

/// The API's CORS settings, when enabled.
pub(super) fn cors(config: CorsConfiguration) -> Option<Cors> {
    if config.cors_configuration_enabled != Some(true) {
        return None;
    }
    Some(Cors {
        allow_origins: config.access_control_allow_origins.unwrap_or_default(),
        allow_headers: config
            .access_control_allow_headers
            .unwrap_or_default()
            .join(","),
        allow_methods: config
            .access_control_allow_methods
            .unwrap_or_default()
            .join(","),
        allow_credentials: config.access_control_allow_credentials.unwrap_or(false),
    })
}
