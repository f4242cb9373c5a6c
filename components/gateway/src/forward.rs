//! Building the requests the gateway sends (to backends and to the token service) and
//! cleaning what comes back.

use std::cell::RefCell;

use apim_manifest::sealed::GatewayKey;
use apim_manifest::{ApiRoute, ApiType};

use crate::auth::Environment;
use crate::backend_jwt::Assertions;
use crate::faults::Fault;
pub use crate::host::end_to_end;
use crate::host::{
    Headers, Host, Outbound, Request, Response, SendError, connection_tokens, header, passes_on,
};
use crate::keys::{Key, KeyMap};
use crate::mediate::Patterns;
use crate::sync::{self, DEFAULT_GATEWAY_ID, settings};
use crate::upgrade;
use apim_http::contract::Replaced;
use apim_http::egress::{self, EgressPolicy};
use apim_http::endpoints::{self, Balance, EndpointConfig};
use apim_http::split_endpoint_url;

/// Headers of an MCP tool call's operation request that the host sets itself on the
/// backend's request, lower-case: the client's trace context passes on as it came, and
/// credentials, `X-Forwarded-For` and the body's length are the gateway's.
const OPERATION_HEADERS_THE_HOST_SETS: [&str; 5] = [
    "authorization",
    "traceparent",
    "tracestate",
    "x-forwarded-for",
    "content-length",
];

/// The request for an API's backend, as it differs from the client's: where it may go,
/// and the headers added to those of the client's that pass on.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendRequest {
    /// The method to send instead of the client's (an MCP tool call's operation's).
    pub method: Option<String>,
    /// The endpoints of the list the call goes to, in the list's order (at least one).
    pub targets: Vec<BackendTarget>,
    /// How the list is used.
    pub balance: Balance,
    /// Names the list's round robin in a [`HealthBook`].
    pub list: String,
    /// Client headers that do not pass on (besides hop-by-hop ones).
    pub replaced: Replaced,
    /// Client headers that do not pass on either (an API's mediation removed or set
    /// them), lower-case.
    pub removed_headers: Vec<String>,
    /// The endpoint credentials, if any, `X-Forwarded-For` and `Via`, and what an
    /// API's mediation sets.
    pub added_headers: Headers,
    /// A WebSocket handshake, for a host that relays the connection once the backend
    /// accepts it.
    pub upgrade: bool,
    /// The body to send instead of the client's (an API's in flow made or converted it).
    pub body: Option<Vec<u8>>,
    /// The API's WebAssembly policy, which the host runs before it sends the request
    /// (boxed: few calls have one).
    pub policy: Option<Box<TenantPolicy>>,
}

/// An API's WebAssembly policy as a call runs it (the host's `tenant-policy`).
#[derive(Debug, Clone, PartialEq)]
pub struct TenantPolicy {
    /// Its digest, lower-case hex.
    pub digest: String,
    /// Its size, bytes.
    pub size: u64,
    /// It is given the client's body.
    pub with_body: bool,
    /// The resource's path and query after the endpoint's URL, which every target's path
    /// ends with.
    pub resource: String,
}

/// One endpoint a call may go to.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendTarget {
    /// `http` or `https`.
    pub scheme: String,
    /// `host:port`.
    pub authority: String,
    /// Endpoint path + resource path + query.
    pub path_with_query: String,
    /// Connect, first-byte and between-bytes timeout.
    pub timeout_ms: u64,
    /// Names the endpoint's health in a [`HealthBook`].
    pub key: String,
    /// Its timeout and suspension settings.
    pub config: EndpointConfig,
}

impl BackendRequest {
    /// A request for one place that is never suspended (the token service).
    pub fn single(
        scheme: String,
        authority: String,
        path_with_query: String,
        timeout_ms: u64,
        replaced: Replaced,
        added_headers: Headers,
    ) -> Self {
        let target = BackendTarget {
            scheme,
            authority,
            path_with_query,
            timeout_ms,
            key: String::new(),
            config: EndpointConfig::never_suspended(),
        };
        Self {
            method: None,
            targets: vec![target],
            balance: Balance::Single,
            list: String::new(),
            replaced,
            removed_headers: Vec::new(),
            added_headers,
            upgrade: false,
            body: None,
            policy: None,
        }
    }

    /// Whether any endpoint's state matters: a lone endpoint that is never suspended
    /// needs no book (most APIs, whose calls then cost what they did).
    pub fn needs_book(&self) -> bool {
        endpoints::needs_book(
            self.balance,
            self.targets.iter().map(|t| t.config.suspend_ms),
        )
    }
}

/// Backend URLs whose verdicts, and APIs whose opened credentials, an instance remembers
/// at most.
const MAX_CHECKED_URLS: usize = 256;

/// What forwarding reads from the settings, once per instance (settings do not change
/// under an instance).
#[derive(Debug, Clone)]
pub struct ForwardSettings {
    /// Connect, first-byte and between-bytes timeout (an endpoint's own is shorter).
    pub timeout_ms: u64,
    /// How throttling counters are written where the component counts them.
    pub counting: crate::throttle::Counting,
    /// Where backends may be.
    pub egress: EgressPolicy,
    /// This gateway's name in `Via`.
    pub gateway_id: String,
    /// Its own `Via` entry, `1.1 <gateway_id>`.
    own_via: String,
    /// Backend URLs checked so far, and whether they may be reached (settings do not
    /// change under an instance, so neither do the verdicts).
    checked: RefCell<KeyMap<bool>>,
    /// The control plane's host and port, which no backend may be.
    pub control_plane: Option<(String, u16)>,
    /// Opens the backend credentials API entries carry sealed (derived from the gateway
    /// secret once per instance); none without a secret.
    credentials: Option<GatewayKey>,
    /// Credentials opened so far, by API id with the sealed text they were opened from:
    /// opening costs about 2 µs natively, a few percent of a request, paid once per entry
    /// an instance sees (a changed entry brings another sealed text).
    opened: RefCell<KeyMap<(String, String)>>,
    /// The backend JWTs this instance makes, when this gateway's switch is on and it
    /// has a secret to open their key.
    pub backend_jwt: Option<Assertions>,
    /// Mediation filters' patterns, compiled once.
    pub patterns: Patterns,
}

impl ForwardSettings {
    /// The settings the host gives.
    pub fn read(host: &dyn Host) -> Self {
        let allow = host.setting(settings::EGRESS_ALLOW).unwrap_or_default();
        let egress = EgressPolicy::parse(&allow).unwrap_or_else(|err| {
            // Failing closed: the defaults refuse more than any list.
            eprintln!("egress_allow is not valid, using the default policy: {err}");
            EgressPolicy::default()
        });
        let gateway_id = host
            .setting(settings::GATEWAY_ID)
            .unwrap_or_else(|| DEFAULT_GATEWAY_ID.to_string());
        let credentials = host
            .setting(settings::GATEWAY_SECRET)
            .filter(|secret| !secret.is_empty())
            .map(|secret| GatewayKey::derive(&secret));
        let backend_jwt_on = host.setting(settings::BACKEND_JWT).as_deref()
            == Some(apim_http::contract::BACKEND_JWT_ON);
        Self {
            timeout_ms: sync::timeout_ms(host),
            counting: crate::throttle::Counting::read(host),
            egress,
            own_via: format!("1.1 {gateway_id}"),
            gateway_id,
            checked: RefCell::default(),
            control_plane: host
                .setting(settings::CONTROL_PLANE_URL)
                .and_then(|url| egress::host_and_port(&url)),
            credentials: credentials.clone(),
            opened: RefCell::default(),
            backend_jwt: credentials.filter(|_| backend_jwt_on).map(Assertions::new),
            patterns: Patterns::default(),
        }
    }

    /// The `Authorization` value for an API's backend, opened from its entry. An entry
    /// this gateway cannot open (no or another gateway secret) fails the call rather
    /// than reach the backend without its credentials.
    fn backend_authorization(&self, api: &ApiRoute) -> Result<Option<String>, Fault> {
        let Some(sealed) = &api.sealed_backend_authorization else {
            return Ok(None);
        };
        if let Some((from, credentials)) = self.opened.borrow().get(api.id.as_str())
            && from == sealed
        {
            return Ok(Some(credentials.clone()));
        }
        let opened = self
            .credentials
            .as_ref()
            .and_then(|key| key.open(&api.id, sealed));
        match opened {
            Some(credentials) => {
                let mut cache = self.opened.borrow_mut();
                if cache.len() >= MAX_CHECKED_URLS {
                    cache.clear();
                }
                cache.insert(
                    Key::from(api.id.as_str()),
                    (sealed.clone(), credentials.clone()),
                );
                Ok(Some(credentials))
            }
            None => {
                eprintln!(
                    "the backend credentials of API {} do not open with this gateway's gateway_secret",
                    api.id
                );
                Err(Fault::backend_unreachable())
            }
        }
    }

    /// Whether the backend at `url` may be reached (remembered per URL).
    fn check_backend(&self, url: &str) -> Result<(), Fault> {
        let known = self.checked.borrow().get(url).copied();
        let allowed = match known {
            Some(allowed) => allowed,
            None => {
                let allowed = self.judge_backend(url).is_ok();
                let mut checked = self.checked.borrow_mut();
                if checked.len() >= MAX_CHECKED_URLS {
                    checked.clear();
                }
                checked.insert(Key::from(url), allowed);
                allowed
            }
        };
        if allowed {
            Ok(())
        } else {
            Err(Fault::egress_denied())
        }
    }

    /// Whether the backend at `url` may be reached: never the control plane, and only
    /// where the egress policy allows (edge-gateway checks resolved names again).
    fn judge_backend(&self, url: &str) -> Result<(), Fault> {
        let refused = |why: String| {
            eprintln!("backend {url} refused by the egress policy: {why}");
            Fault::egress_denied()
        };
        if let Some(control_plane) = &self.control_plane
            && egress::host_and_port(url).as_ref() == Some(control_plane)
        {
            return Err(refused("it is the control plane".into()));
        }
        self.egress
            .check_url(url)
            .map_err(|denied| refused(denied.0))
    }
}

/// The request to the API's backend: endpoint URL + resource path + query; the client's
/// `Authorization` replaced by the endpoint credentials (or dropped), `X-Forwarded-For`
/// extended with the client address, `Via` with this gateway. Refused when the egress
/// policy does not allow the endpoint.
pub fn backend_request(
    settings: &ForwardSettings,
    api: &ApiRoute,
    environment: Environment,
    resource_with_query: &str,
    request: &Request,
) -> Result<BackendRequest, Fault> {
    let sandbox = environment == Environment::Sandbox;
    let (balance, endpoints) = api.endpoint_list(sandbox);
    // Names for the host's book, only where it keeps one.
    let book = endpoints::needs_book(balance, endpoints.iter().map(|e| e.config.suspend_ms));
    let list = if book {
        apim_http::joined([api.id.as_str(), ":", environment.name()])
    } else {
        String::new()
    };
    let mut refused = None;
    let mut targets = Vec::with_capacity(endpoints.len());
    for endpoint in endpoints {
        // An endpoint this gateway's egress policy refuses is left out of the list.
        if let Err(fault) = settings.check_backend(&endpoint.url) {
            refused = Some(fault);
            continue;
        }
        let (scheme, authority, base_path) =
            split_endpoint_url(&endpoint.url).ok_or_else(Fault::backend_unreachable)?;
        targets.push(BackendTarget {
            scheme: upgrade::handshake_scheme(scheme).to_string(),
            authority: authority.to_string(),
            path_with_query: endpoints::join_path(base_path, resource_with_query),
            // The endpoint's own timeout, within the gateway's.
            timeout_ms: endpoint
                .config
                .timeout_ms
                .map_or(settings.timeout_ms, |ms| ms.min(settings.timeout_ms)),
            key: if book {
                apim_http::joined([list.as_str(), ":", endpoint.url.as_str()])
            } else {
                String::new()
            },
            config: endpoint.config,
        });
    }
    if targets.is_empty() {
        return Err(refused.unwrap_or_else(Fault::backend_unreachable));
    }
    let mut added_headers = Headers::new();
    if let Some(credentials) = settings.backend_authorization(api)? {
        added_headers.push(("authorization".into(), credentials.into_bytes()));
    }
    added_headers.push((
        "x-forwarded-for".into(),
        forwarded_for(&request.headers).into_bytes(),
    ));
    added_headers.push((
        "via".into(),
        via(&settings.own_via, &request.headers).into_bytes(),
    ));
    let upgrade = api.api_type == ApiType::Ws;
    Ok(BackendRequest {
        method: None,
        targets,
        balance,
        list,
        replaced: if upgrade {
            Replaced::WebSocket
        } else {
            Replaced::ApiCall
        },
        removed_headers: Vec::new(),
        added_headers,
        upgrade,
        body: None,
        policy: None,
    })
}

impl BackendRequest {
    /// No request: the call is answered before it would go anywhere.
    pub fn unsent() -> Self {
        Self {
            method: None,
            targets: Vec::new(),
            balance: Balance::Single,
            list: String::new(),
            replaced: Replaced::ApiCall,
            removed_headers: Vec::new(),
            added_headers: Headers::new(),
            upgrade: false,
            body: None,
            policy: None,
        }
    }

    /// Makes this, planned for an MCP tool call's `operation` request, the request for a
    /// host that sends the client's (the message, whose headers are `client`): the
    /// operation's method and body, and its headers instead of the client's, but for
    /// those the host itself carries on or replaces (trace context, credentials,
    /// `X-Forwarded-For`, the body's length).
    pub fn take_operation(&mut self, client: &Headers, operation: Request) {
        let Request {
            method,
            headers,
            body,
            ..
        } = operation;
        let hosts_own = |name: &str| OPERATION_HEADERS_THE_HOST_SETS.contains(&name);
        let mut removed: Vec<String> = Vec::with_capacity(client.len());
        for (name, _) in client {
            let name = name.to_ascii_lowercase();
            if !hosts_own(&name) && !removed.contains(&name) {
                removed.push(name);
            }
        }
        let mediated = std::mem::take(&mut self.removed_headers);
        let mut added: Headers = headers
            .into_iter()
            .filter(|(name, _)| !hosts_own(name) && !mediated.contains(name))
            .collect();
        added.append(&mut self.added_headers);
        for name in mediated {
            if !removed.contains(&name) {
                removed.push(name);
            }
        }
        self.method = Some(method);
        self.body.get_or_insert(body);
        self.removed_headers = removed;
        self.added_headers = added;
    }

    /// Takes what an API's mediation does to the request: the client headers it removed
    /// or set do not pass on, nor do the gateway's own of those names; its values do,
    /// and its body where it made one.
    pub fn mediate(&mut self, removed: Vec<String>, added: Headers, body: Option<Vec<u8>>) {
        apim_http::remove_headers(&mut self.added_headers, &removed);
        self.added_headers.extend(added);
        self.removed_headers = removed;
        self.body = body;
    }

    /// The whole request for the endpoint `target`, with the client's headers that pass
    /// on and its body.
    pub fn outbound(&self, target: &BackendTarget, request: &Request) -> Outbound {
        let connection = connection_tokens(header(&request.headers, "connection"));
        let mut headers: Headers = request
            .headers
            .iter()
            .filter(|(name, _)| {
                passes_on(name, &connection, self.replaced.names())
                    && !self
                        .removed_headers
                        .iter()
                        .any(|removed| name.eq_ignore_ascii_case(removed))
            })
            .cloned()
            .collect();
        headers.extend(self.added_headers.iter().cloned());
        Outbound {
            method: request.method.clone(),
            scheme: target.scheme.clone(),
            authority: target.authority.clone(),
            path_with_query: target.path_with_query.clone(),
            headers,
            body: self.body.as_ref().unwrap_or(&request.body).clone(),
            timeout_ms: target.timeout_ms,
        }
    }
}

/// The client's address without its port, as the host reports it (`spin-client-addr`).
pub fn client_ip(headers: &Headers) -> Option<String> {
    header(headers, apim_http::contract::CLIENT_ADDR_HEADER).map(|addr| {
        match addr.rsplit_once(':') {
            Some((ip, port)) if port.chars().all(|c| c.is_ascii_digit()) => {
                ip.trim_matches(['[', ']']).to_string()
            }
            _ => addr.to_string(),
        }
    })
}

/// `X-Forwarded-For` with the client's address appended (the host reports it in
/// `spin-client-addr`, as Spin does).
pub fn forwarded_for(headers: &Headers) -> String {
    let client = client_ip(headers).unwrap_or_else(|| "unknown".to_string());
    match header(headers, "x-forwarded-for") {
        Some(existing) if !existing.trim().is_empty() => format!("{existing}, {client}"),
        _ => client,
    }
}

/// The request's `Via` entries (RFC 9110 §7.6.3): protocol and the name of each
/// intermediary it passed.
fn via_entries(headers: &Headers) -> impl Iterator<Item = &str> {
    headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("via"))
        .filter_map(|(_, value)| apim_http::text(value))
        .flat_map(|value| value.split(','))
        .map(str::trim)
}

/// Whether the request has passed through this gateway already (its `Via` names it).
pub fn has_looped(gateway_id: &str, headers: &Headers) -> bool {
    via_entries(headers).any(|entry| {
        let mut parts = entry.split_whitespace();
        parts.next();
        parts.next() == Some(gateway_id)
    })
}

/// The request's `Via` with this gateway's entry (`own`) appended.
fn via(own: &str, headers: &Headers) -> String {
    let mut value = String::with_capacity(own.len());
    for entry in via_entries(headers).filter(|e| !e.is_empty()) {
        value.push_str(entry);
        value.push_str(", ");
    }
    value.push_str(own);
    value
}

/// A backend's answer, or the fault for its failure.
pub fn backend_response(result: Result<Response, SendError>) -> Result<Response, Fault> {
    match result {
        Ok(response) => Ok(Response {
            status: response.status,
            headers: end_to_end(&response.headers),
            body: response.body,
        }),
        Err(SendError::Timeout(err)) => {
            eprintln!("backend timed out: {err}");
            Err(Fault::backend_timeout())
        }
        Err(SendError::Unreachable(err)) => {
            eprintln!("backend unreachable: {err}");
            Err(Fault::backend_unreachable())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_without_double_slashes() {
        assert_eq!(endpoints::join_path("/", "/devs/a?x=1"), "/devs/a?x=1");
        assert_eq!(endpoints::join_path("/api/", "/devs"), "/api/devs");
        assert_eq!(endpoints::join_path("", ""), "/");
        assert_eq!(endpoints::join_path("/api", ""), "/api");
        assert_eq!(endpoints::join_path("/api", "?q=1"), "/api/?q=1");
    }

    #[test]
    fn hop_by_hop_headers_and_client_address() {
        let headers: Headers = vec![
            ("connection".into(), b"close, x-private".to_vec()),
            ("x-private".into(), b"1".to_vec()),
            (
                apim_http::contract::CLIENT_ADDR_HEADER.into(),
                b"10.1.2.3:5555".to_vec(),
            ),
            ("x-forwarded-for".into(), b"1.1.1.1".to_vec()),
            ("accept".into(), b"*/*".to_vec()),
        ];
        let kept: Vec<String> = end_to_end(&headers).into_iter().map(|(n, _)| n).collect();
        assert_eq!(kept, vec!["x-forwarded-for", "accept"]);
        assert_eq!(forwarded_for(&headers), "1.1.1.1, 10.1.2.3");
    }
}
