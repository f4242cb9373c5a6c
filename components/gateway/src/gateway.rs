//! The request pipeline: internal routes, then for API calls routing, CORS, resource
//! matching, authentication, throttling, the response cache and forwarding.

use apim_manifest::{ApiState, AuthType, Operation, paths};

use crate::auth::{self, Admitted, Environment};
use crate::faults::Fault;
use crate::host::{Host, Request, Response, header};
use crate::state;
use crate::sync::{self, settings};
use crate::view::View;
use crate::{cache, cors, forward, throttle};

/// How long a request waits for another instance to finish pulling the first manifest.
const FIRST_MANIFEST_WAIT_MS: u64 = 5_000;
/// How often it looks meanwhile.
const FIRST_MANIFEST_POLL_MS: u64 = 5;

/// One instance's gateway: its view of the manifest, with what it has verified under it.
/// Correct whether it lives for one request (Spin) or many (edge-gateway reuse).
#[derive(Default)]
pub struct Gateway {
    view: Option<View>,
}

impl Gateway {
    /// Handles one request.
    pub fn handle(&mut self, host: &dyn Host, request: Request) -> Response {
        let path = request
            .path_with_query
            .split('?')
            .next()
            .unwrap_or_default()
            .to_string();
        match (request.method.as_str(), path.as_str()) {
            ("POST", paths::GATEWAY_PUSH) => sync::receive_push(host, &request),
            ("GET", paths::GATEWAY_PUSH) => sync::status(host),
            ("POST", paths::GATEWAY_SYNC) => sync::sync_now(host),
            (_, "/token") => token_service(host, &request, "/oauth2/token"),
            (_, "/revoke") => token_service(host, &request, "/oauth2/revoke"),
            _ => self
                .invoke(host, &request, &path)
                .unwrap_or_else(|fault| fault.render(&request.headers)),
        }
    }

    /// The view of the manifest the store holds now; when the store holds none yet, the
    /// control plane's, pulled (or, while another instance pulls it, waited for).
    fn current(&mut self, host: &dyn Host) -> Option<&mut View> {
        let head = match state::read_head(host) {
            Some(head) => head,
            None => first_manifest(host)?,
        };
        match &mut self.view {
            Some(view) => view.advance(host, head),
            None => {
                let environment = host.setting(settings::GATEWAY_ENVIRONMENT);
                self.view = View::load(host, head, environment);
            }
        }
        self.view.as_mut()
    }

    fn invoke(
        &mut self,
        host: &dyn Host,
        request: &Request,
        path: &str,
    ) -> Result<Response, Fault> {
        let now_ms = host.now_millis();
        let view = self.current(host).ok_or_else(Fault::not_found)?;
        let (api, resource) = view.route(host, path).ok_or_else(Fault::not_found)?;
        let api = &*api;
        if api.state == ApiState::Blocked {
            return Err(Fault::api_blocked());
        }
        if let Some(cors) = &api.cors
            && cors::is_preflight(&request.method, &request.headers)
        {
            return Ok(cors::preflight(cors, &request.headers));
        }
        let operation = find_operation(
            &api.operations,
            &request.method,
            resource,
            &api.context,
            &api.version,
        )?;
        let caller = match operation.auth {
            AuthType::None => None,
            AuthType::Required => {
                let token = auth::bearer(header(&request.headers, "authorization"))
                    .ok_or_else(Fault::missing_credentials)?;
                Some(auth::admit(view, host, api, token, now_ms / 1000)?)
            }
        };
        let environment = environment_of(caller.as_ref(), api.production_url.is_some());
        throttle::check(
            host,
            &view.meta().meta.tiers,
            api,
            operation,
            caller.as_ref(),
            environment,
            now_ms,
        )?;

        // `resource` ends `path`, which the query follows: the resource path with its query.
        let resource_with_query = &request.path_with_query[path.len() - resource.len()..];
        let cache_key = (request.method == "GET")
            .then_some(api.cache_timeout_secs)
            .flatten()
            .map(|ttl| {
                (
                    cache::key(&api.id, environment.name(), resource_with_query),
                    ttl,
                )
            });
        let cached = cache_key
            .as_ref()
            .and_then(|(key, _)| cache::lookup(host, key, now_ms));
        let mut response = match cached {
            Some(hit) => hit,
            None => {
                let outbound = forward::backend_request(
                    api,
                    environment,
                    resource_with_query,
                    request,
                    sync::timeout_ms(host),
                )?;
                let response = forward::backend_response(host.send(outbound))?;
                if let Some((key, ttl)) = &cache_key {
                    cache::store(host, key, &response, *ttl, now_ms);
                }
                response
            }
        };
        if let Some(cors) = &api.cors {
            cors::add_headers(cors, &request.headers, &mut response);
        }
        Ok(response)
    }
}

/// The head once the first manifest is in the store: pulled by this request, or by
/// another instance that holds the lease meanwhile.
fn first_manifest(host: &dyn Host) -> Option<state::Head> {
    match sync::pull(host) {
        Ok(_) => {}
        Err(sync::PullError::Busy) => {
            let mut waited = 0;
            while waited < FIRST_MANIFEST_WAIT_MS {
                host.sleep_ms(FIRST_MANIFEST_POLL_MS);
                waited += FIRST_MANIFEST_POLL_MS;
                if let Some(head) = state::read_head(host) {
                    return Some(head);
                }
            }
        }
        Err(err) => eprintln!("no route manifest yet and none could be pulled: {err}"),
    }
    state::read_head(host)
}

/// Where a request goes: the key type's environment; production for open operations
/// (sandbox when the API has only a sandbox endpoint).
fn environment_of(caller: Option<&Admitted>, has_production: bool) -> Environment {
    match caller {
        Some(admitted) => admitted.environment,
        None if has_production => Environment::Production,
        None => Environment::Sandbox,
    }
}

/// The operation for this method and resource path: 404 when no template matches the
/// path, 403 (900906) when templates match but not for this method.
fn find_operation<'a>(
    operations: &'a [Operation],
    method: &str,
    resource: &str,
    context: &str,
    version: &str,
) -> Result<&'a Operation, Fault> {
    let mut path_matched = false;
    for operation in operations {
        if apim_manifest::matches(&operation.segments, resource) {
            if operation.method == method || (method == "HEAD" && operation.method == "GET") {
                return Ok(operation);
            }
            path_matched = true;
        }
    }
    Err(if path_matched {
        Fault::no_matching_resource(context, version)
    } else {
        Fault::resource_mismatch()
    })
}

/// `/token` and `/revoke`: relayed to the control plane's token service as they are.
fn token_service(host: &dyn Host, request: &Request, path: &str) -> Response {
    let query = request
        .path_with_query
        .find('?')
        .map(|i| &request.path_with_query[i..])
        .unwrap_or("");
    let relayed = sync::to_control_plane(
        host,
        &request.method,
        &format!("{path}{query}"),
        forward::end_to_end(&request.headers),
        request.body.clone(),
    );
    let Ok(outbound) = relayed else {
        return Fault::token_service_unavailable().render(&request.headers);
    };
    match forward::backend_response(host.send(outbound)) {
        Ok(response) => response,
        Err(_) => Fault::token_service_unavailable().render(&request.headers),
    }
}
