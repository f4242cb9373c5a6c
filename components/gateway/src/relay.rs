//! `/token` and `/revoke`: the gateway relays them to the control plane's token service,
//! with the client's credentials and address; and the refusals of forwarded requests that
//! got no answer.

use apim_http::contract::Replaced;
use apim_manifest::canon::Target;

use crate::balance;
use crate::faults::Fault;
use crate::forward::{self, BackendRequest};
use crate::host::{Headers, Host, Request, Response};
use crate::sync;

/// The token service's path for the gateway's `/token` and `/revoke`.
pub fn token_service_path(path: &str) -> Option<&'static str> {
    match path {
        "/token" => Some("/oauth2/token"),
        "/revoke" => Some("/oauth2/revoke"),
        _ => None,
    }
}

/// The request relaying `/token` or `/revoke` to the control plane's token service at
/// `service`: the client's headers (its credentials included) and body pass on as they
/// are, with the client's address appended to `X-Forwarded-For`, so that a control plane
/// listing the gateways in `APIM_TRUSTED_PROXIES` throttles failed logins per client
/// rather than per gateway.
pub fn token_relay(
    host: &dyn Host,
    service: &str,
    target: &Target,
    headers: &Headers,
) -> Result<BackendRequest, Fault> {
    let relayed = sync::to_control_plane(
        host,
        "",
        &target.with_query(service),
        Headers::new(),
        Vec::new(),
    )
    .map_err(|err| {
        eprintln!("the token service cannot be reached: {err}");
        Fault::token_service_unavailable()
    })?;
    Ok(BackendRequest::single(
        relayed.scheme,
        relayed.authority,
        relayed.path_with_query,
        relayed.timeout_ms,
        Replaced::TokenRelay,
        vec![(
            "x-forwarded-for".into(),
            forward::forwarded_for(headers).into_bytes(),
        )],
    ))
}

/// `/token` and `/revoke`, relayed by the component itself.
pub fn token_service(host: &dyn Host, request: &Request, target: &Target) -> Response {
    let relayed = token_service_path(&target.path)
        .ok_or_else(Fault::not_found)
        .and_then(|service| token_relay(host, service, target, &request.headers))
        .and_then(|backend| {
            balance::send(host, &backend, request).map_err(|_| Fault::token_service_unavailable())
        });
    relayed.unwrap_or_else(|fault| fault.render(&request.headers))
}

/// The refusal for a forwarded request (head `request`) that got no answer in time
/// (`timed_out`) or none at all, or whose every endpoint is `suspended`: the token
/// service's unavailability for `/token` and `/revoke`, the backend's failure otherwise.
pub fn forwarding_failed(request: &Request, timed_out: bool, suspended: bool) -> Fault {
    let relayed = Target::parse(&request.path_with_query)
        .is_ok_and(|target| token_service_path(&target.path).is_some());
    if relayed {
        Fault::token_service_unavailable()
    } else if suspended {
        Fault::endpoints_suspended()
    } else if timed_out {
        Fault::backend_timeout()
    } else {
        Fault::backend_unreachable()
    }
}
