//! The route manifest: everything a gateway needs to serve the published APIs, compiled by
//! the control plane and verified by the gateway component. This crate is the one
//! definition both sides use; it builds natively and for `wasm32-wasip2`.
//!
//! The manifest is a set of small keyed entries ([`entries`]): one per API, route prefix,
//! application, subscription, revoked token and endpoint with certificates ([`trust`]),
//! plus one [`Meta`]. Each entry carries the
//! version that last changed it, so a gateway at version `v` catches up by applying only
//! the entries changed after `v`, in signed [`page::Page`]s; a change costs what it
//! changes, whatever the number of APIs, and a gateway reads only the entries a request
//! needs. [`bounds`] says how large an API, an entry and a page may be.

pub mod analytics;
pub mod bounds;
pub mod canon;
pub mod entries;
pub mod introspection;
pub mod mcp;
pub mod mediation;
pub mod page;
pub mod sealed;
pub mod stored;
pub mod trust;

use std::collections::BTreeMap;

use apim_http::Scheme;
use apim_http::endpoints::{Balance, Endpoint, EndpointConfig, Endpoints};
use serde::{Deserialize, Serialize};

pub use entries::{
    DeployedApi, EntriesBuilder, Key, Manifest, RouteSource, RouteTarget, key, route_depth,
    route_table,
};
pub use introspection::Introspection;
pub use page::{Change, Page, PageReport, Position};

/// What every request needs whatever API it calls: who issues tokens, the keys that
/// verify them, and the tiers' limits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// `iss` that access tokens must carry.
    pub token_issuer: String,
    /// Public keys that verify access tokens (the control plane's JWKS).
    pub token_keys: Vec<TokenKey>,
    /// Request limits per minute of every tier, by level and name; `None` is unlimited.
    pub tiers: Tiers,
    /// Tiers tenants created or changed, by tenant domain: looked up before [`Meta::tiers`]
    /// for an API of that tenant (omitted while there are none, as manifests had it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tenant_tiers: BTreeMap<String, TenantTiers>,
    /// Most segments a route prefix has (`/t/acme.com/pets/v1` has 4): how many of a
    /// request path's leading segments can name an API.
    pub route_depth: usize,
    /// WSO2's throttling with advanced throttling off: an operation's `x-throttling-tier`
    /// names a subscription tier, whose limit the resource gets (counted over all its
    /// callers). Omitted while off, as manifests had it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub legacy_throttling: bool,
    /// Further `iss` values whose tokens still verify beside [`Meta::token_issuer`]: a
    /// changed issuer must not void the tokens issued under the old one before they expire.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_issuers: Vec<String>,
    /// The base URLs clients reach the gateways at (`http://gw.example.com:8280`): what
    /// an access token's audience (RFC 8707) must name, and where the protected-resource
    /// metadata (RFC 9728) says the APIs are. Empty: the request's own scheme and `Host`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gateway_urls: Vec<String>,
    /// WSO2's backend JWT (`X-JWT-Assertion`): the key gateways sign it with and the
    /// tenants that switched it on. Omitted while no tenant has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_jwt: Option<BackendJwt>,
}

/// What gateways need to tell backends who called, as WSO2 2.6's JWT generation does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendJwt {
    /// The signing key's id, written into every assertion's header (the control plane
    /// publishes the public half under it).
    pub kid: String,
    /// The RSA private key (PKCS#1 DER, base64) sealed for the gateways
    /// ([`sealed::GatewayKey`], bound to [`BackendJwt::sealing_label`] of `kid`).
    pub sealed_key: String,
    /// Tenant domains whose APIs' backends get the assertion, sorted.
    pub tenants: Vec<String>,
}

impl BackendJwt {
    /// What the key of `kid` is sealed for, so it opens as nothing else.
    pub fn sealing_label(kid: &str) -> String {
        format!("backend-jwt:{kid}")
    }

    /// Whether the backends of APIs of `tenant` get the assertion.
    pub fn covers(&self, tenant: &str) -> bool {
        self.tenants
            .binary_search_by(|t| t.as_str().cmp(tenant))
            .is_ok()
    }
}

/// An Ed25519 public key for access tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenKey {
    /// Key id, as in the token header.
    pub kid: String,
    /// The public key, base64url without padding (JWK `x`).
    pub x: String,
}

/// Lifecycle state of a deployed API, as the gateway treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ApiState {
    /// Invocable.
    Published,
    /// Invocable as a prototype.
    Prototyped,
    /// Invocable; no new subscriptions.
    Deprecated,
    /// Deployed but answering 503 (700700).
    Blocked,
}

impl ApiState {
    /// The state of a lifecycle status, if the gateway deploys APIs in it.
    pub fn deployed(status: &str) -> Option<Self> {
        match status {
            "PUBLISHED" => Some(Self::Published),
            "PROTOTYPED" => Some(Self::Prototyped),
            "DEPRECATED" => Some(Self::Deprecated),
            "BLOCKED" => Some(Self::Blocked),
            _ => None,
        }
    }
}

/// One API as the gateway routes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiRoute {
    /// API id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Context, starting with `/` (tenants' under `/t/<domain>`).
    pub context: String,
    /// Lifecycle state.
    pub state: ApiState,
    /// Also routed at `<context>` without the version.
    pub default_version: bool,
    /// Operations, most specific first.
    pub operations: Vec<Operation>,
    /// Production endpoint URL.
    pub production_url: Option<String>,
    /// Sandbox endpoint URL.
    pub sandbox_url: Option<String>,
    /// `Authorization` value sent to the backend instead of the client's (endpointSecurity),
    /// sealed for the gateways ([`sealed::GatewayKey`], bound to the API id): never in clear
    /// in pages, recorded entries or key-value stores.
    pub sealed_backend_authorization: Option<String>,
    /// Transactions per second, per environment.
    pub max_tps: MaxTps,
    /// CORS headers, when enabled.
    pub cors: Option<Cors>,
    /// Seconds GET responses are cached, when response caching is enabled.
    pub cache_timeout_secs: Option<u64>,
    /// Every endpoint of every list with its settings (`endpointConfig`); absent from
    /// entries compiled before endpoint types, whose `production_url` and `sandbox_url`
    /// are then their lone endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Endpoints>,
    /// WSO2's `type`: a WebSocket API's calls are handshakes relayed to `ws://` or
    /// `wss://` endpoints (absent, as entries compiled before it have it, for HTTP).
    #[serde(default, skip_serializing_if = "ApiType::is_http")]
    pub api_type: ApiType,
    /// WSO2's `transport`: the schemes it is served on (absent, as entries compiled
    /// before it have it, for both).
    #[serde(default, skip_serializing_if = "Transports::is_both")]
    pub transports: Transports,
    /// The OAuth scopes its operations name (Swagger `x-scope`), sorted and once each:
    /// what its protected-resource metadata offers as `scopes_supported`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Its MCP server, when its provider serves it as one (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<mcp::McpServer>,
    /// Its sequences, compiled (absent when it has none that does anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mediation: Option<mediation::Mediation>,
}

/// The schemes an API is served on (WSO2's `transport`, which its gateway applies as the
/// Synapse API's `transports`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transports {
    /// `http` and `https`.
    #[default]
    Both,
    /// `http` alone.
    Http,
    /// `https` alone.
    Https,
}

impl Transports {
    /// The transports of WSO2's `transport` list (`http`, `https`); both when it names
    /// neither or both (WSO2's default).
    pub fn of_list<'a>(list: impl IntoIterator<Item = &'a str>) -> Self {
        let (mut http, mut https) = (false, false);
        for transport in list {
            http |= transport.eq_ignore_ascii_case("http");
            https |= transport.eq_ignore_ascii_case("https");
        }
        match (http, https) {
            (true, false) => Self::Http,
            (false, true) => Self::Https,
            _ => Self::Both,
        }
    }

    /// Whether it is the default, both.
    pub fn is_both(&self) -> bool {
        *self == Self::Both
    }

    /// Whether a request that came on `scheme` is served.
    pub fn serve(self, scheme: Scheme) -> bool {
        match self {
            Self::Both => true,
            Self::Http => scheme == Scheme::Http,
            Self::Https => scheme == Scheme::Https,
        }
    }
}

/// What an API speaks (WSO2's API `type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ApiType {
    /// Requests and answers (`HTTP`).
    #[default]
    Http,
    /// WebSocket connections (`WS`): a handshake, then messages both ways.
    Ws,
}

impl ApiType {
    /// Whether it is the default, HTTP.
    pub fn is_http(&self) -> bool {
        *self == Self::Http
    }
}

/// A WebSocket API's one resource, as WSO2 2.6 has it: its Swagger paths are not routed,
/// every path under the context takes the handshake (a `GET`), with a token.
pub fn websocket_operations() -> Vec<Operation> {
    let template = "/*";
    vec![Operation {
        method: "GET".into(),
        template: template.into(),
        segments: compile_template(template),
        auth: AuthType::Required,
        throttling_tier: None,
        scope: None,
    }]
}

impl ApiRoute {
    /// How the endpoints of `sandbox` or production are used, and the endpoints.
    pub fn endpoint_list(&self, sandbox: bool) -> (Balance, Vec<Endpoint>) {
        if let Some(endpoints) = &self.endpoints {
            let list = if sandbox {
                &endpoints.sandbox
            } else {
                &endpoints.production
            };
            return (endpoints.balance, list.clone());
        }
        let url = if sandbox {
            &self.sandbox_url
        } else {
            &self.production_url
        };
        let lone = url.iter().map(|url| Endpoint {
            url: url.clone(),
            config: EndpointConfig::never_suspended(),
        });
        (Balance::Single, lone.collect())
    }
}

/// Transactions-per-second limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaxTps {
    /// Production limit.
    pub production: Option<u64>,
    /// Sandbox limit.
    pub sandbox: Option<u64>,
}

/// CORS settings, ready to be sent as headers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cors {
    /// Allowed origins; `*` allows any.
    pub allow_origins: Vec<String>,
    /// `Access-Control-Allow-Headers` value.
    pub allow_headers: String,
    /// `Access-Control-Allow-Methods` value.
    pub allow_methods: String,
    /// `Access-Control-Allow-Credentials`.
    pub allow_credentials: bool,
}

/// Who may call an operation (`x-auth-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthType {
    /// No token needed.
    None,
    /// A valid token of a subscribed application.
    Required,
}

impl AuthType {
    /// The auth type of an `x-auth-type` value (absent means a token is needed).
    pub fn from_swagger(value: Option<&str>) -> Self {
        match value {
            Some("None") => Self::None,
            _ => Self::Required,
        }
    }
}

/// One operation: a method and a path template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    /// Upper-case HTTP method.
    pub method: String,
    /// The template as written, e.g. `/devs/{username}`.
    pub template: String,
    /// The template, precompiled.
    pub segments: Vec<Segment>,
    /// Who may call it.
    pub auth: AuthType,
    /// Resource tier (`x-throttling-tier`), if limited.
    pub throttling_tier: Option<String>,
    /// The OAuth scope a token needs for it (`x-scope`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// A path template segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Segment {
    /// Must equal this text.
    Literal(String),
    /// Any one non-empty segment (`{name}`).
    Param,
    /// Any rest of the path, including nothing (`*` as the last segment).
    Rest,
}

/// Compiles a swagger path template into segments.
pub fn compile_template(template: &str) -> Vec<Segment> {
    let segments: Vec<&str> = template.split('/').filter(|s| !s.is_empty()).collect();
    segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if *s == "*" && i + 1 == segments.len() {
                Segment::Rest
            } else if s.starts_with('{') && s.ends_with('}') {
                Segment::Param
            } else {
                Segment::Literal((*s).to_string())
            }
        })
        .collect()
}

/// Whether a canonical request path ([`canon::canonical_path`], without query) matches
/// compiled segments. A parameter takes exactly one segment, never a `/`; literals match
/// their segment's decoded text without regard to ASCII case, so that a backend that
/// ignores case cannot be reached around a protected literal by an open parameter.
pub fn matches(segments: &[Segment], path: &str) -> bool {
    let mut parts = path.split('/').filter(|s| !s.is_empty());
    for segment in segments {
        match segment {
            Segment::Rest => return true,
            Segment::Literal(text) => match parts.next() {
                Some(part) if literal_matches(part, text) => {}
                _ => return false,
            },
            Segment::Param => {
                if parts.next().is_none() {
                    return false;
                }
            }
        }
    }
    parts.next().is_none()
}

/// Whether a canonical path segment reads as a template's literal text.
fn literal_matches(part: &str, text: &str) -> bool {
    part.eq_ignore_ascii_case(text)
        || (part.contains('%') && canon::decode(part).is_some_and(|d| d.eq_ignore_ascii_case(text)))
}

/// Sort key putting more specific templates first: more literal segments, then fewer
/// parameters, then no trailing wildcard.
pub fn specificity(segments: &[Segment]) -> (usize, usize, bool) {
    let literals = segments
        .iter()
        .filter(|s| matches!(s, Segment::Literal(_)))
        .count();
    let params = segments
        .iter()
        .filter(|s| matches!(s, Segment::Param))
        .count();
    let rest = segments.contains(&Segment::Rest);
    (usize::MAX - literals, params, rest)
}

/// An application, as the gateway needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Application {
    /// Application tier.
    pub tier: String,
    /// Name (the backend JWT's `applicationname`; absent from entries compiled before).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Owner, the subscriber (the backend JWT's `subscriber`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub owner: String,
}

/// A subscription of an application to an API (the entry's key names both).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscription {
    /// Subscription tier.
    pub tier: String,
    /// UNBLOCKED, BLOCKED, PROD_ONLY_BLOCKED, ON_HOLD or REJECTED.
    pub status: String,
}

/// A revoked access token (the entry's key names its `jti`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revocation {
    /// When it expires anyway, Unix seconds.
    pub exp: i64,
}

/// Requests per minute of every tier; `None` means unlimited.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tiers {
    /// Subscription tiers.
    pub subscription: BTreeMap<String, Option<u64>>,
    /// Application tiers.
    pub application: BTreeMap<String, Option<u64>>,
    /// Resource tiers.
    pub resource: BTreeMap<String, Option<u64>>,
}

/// A tenant's own tiers, by level and name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantTiers {
    /// Subscription tiers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subscription: BTreeMap<String, TierRate>,
    /// Application tiers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub application: BTreeMap<String, TierRate>,
    /// Resource tiers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource: BTreeMap<String, TierRate>,
}

/// A tier's limit: requests per window; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierRate {
    /// Requests allowed in a window; `None`: unlimited.
    pub requests: Option<u64>,
    /// The window's length, milliseconds.
    pub window_ms: u64,
}

impl Meta {
    /// Whether tokens naming `issuer` as their `iss` verify: the issuer's own, or one it
    /// still accepts.
    pub fn accepts_issuer(&self, issuer: &str) -> bool {
        self.token_issuer == issuer || self.accepted_issuers.iter().any(|i| i == issuer)
    }

    /// The limit of a tier of `level` (`subscription`, `application` or `resource`) named
    /// `name`, for an API of `tenant`: the tenant's own tier of that name, else the shared
    /// one's per minute; `None` when unlimited or unknown.
    pub fn tier_rate(&self, tenant: &str, level: TierLevel, name: &str) -> Option<TierRate> {
        let own = self.tenant_tiers.get(tenant).and_then(|tiers| match level {
            TierLevel::Subscription => tiers.subscription.get(name),
            TierLevel::Application => tiers.application.get(name),
            TierLevel::Resource => tiers.resource.get(name),
        });
        if let Some(rate) = own {
            return rate.requests.is_some().then_some(*rate);
        }
        let shared = match level {
            TierLevel::Subscription => &self.tiers.subscription,
            TierLevel::Application => &self.tiers.application,
            TierLevel::Resource => &self.tiers.resource,
        };
        shared
            .get(name)
            .copied()
            .flatten()
            .map(|requests| TierRate {
                requests: Some(requests),
                window_ms: 60_000,
            })
    }
}

/// The level a tier applies at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierLevel {
    /// A subscription's tier.
    Subscription,
    /// An application's tier.
    Application,
    /// An operation's tier (`x-throttling-tier`).
    Resource,
}

/// The tenant an API of this context belongs to: `acme.com` of `/t/acme.com/...`, else
/// the super tenant, `carbon.super`.
pub fn tenant_of_context(context: &str) -> &str {
    context
        .strip_prefix("/t/")
        .and_then(|rest| rest.split('/').next())
        .filter(|domain| !domain.is_empty())
        .unwrap_or("carbon.super")
}

/// Where gateways take pages and say what they hold, and where the control plane serves
/// pages (each a compact JWS of a [`Page`]).
pub mod paths {
    /// Gateway: POST a signed page here; GET the position it holds. Both answer
    /// `{"version": n}`, plus `"snapshot": m` while a snapshot is half applied.
    pub const GATEWAY_PUSH: &str = "/_apim/manifest";
    /// Gateway: POST here to make it pull what it misses now.
    pub const GATEWAY_SYNC: &str = "/_apim/sync";
    /// Control plane: GET the page after `?after=n` (`&snapshot=true` to continue a
    /// snapshot), with the gateway secret as bearer token.
    pub const CONTROL_PLANE_MANIFEST: &str = "/internal/gateway/manifest";
    /// Control plane: GET `?after=n&wait=s&gateway=id&environment=e`, with the gateway
    /// secret as bearer token: answers `{"latest": m}` once the manifest is past `n`, or
    /// after `s` seconds (at most 30); records the gateway as holding `n`.
    pub const CONTROL_PLANE_CHANGES: &str = "/internal/gateway/changes";
    /// Control plane: POST a [`PageReport`](crate::page::PageReport) here, with the
    /// gateway secret as bearer token, when a pulled page could not be taken.
    pub const CONTROL_PLANE_REPORT: &str = "/internal/gateway/report";
    /// Control plane: POST a form `token=...` here, with the gateway secret as bearer
    /// token: an [`Introspection`](crate::Introspection) of it (RFC 7662).
    pub const CONTROL_PLANE_INTROSPECT: &str = "/oauth2/introspect";
    /// Control plane: POST an [`AnalyticsReport`](crate::analytics::AnalyticsReport)
    /// here, with the gateway secret as bearer token; 204 once stored.
    pub const CONTROL_PLANE_ANALYTICS: &str = "/internal/gateway/analytics";
    /// Control plane: GET `<this><digest>`, with the gateway secret as bearer token: the
    /// bytes of the WebAssembly policy of that digest
    /// ([`WasmPolicy`](crate::mediation::WasmPolicy)), `application/wasm`.
    pub const CONTROL_PLANE_POLICIES: &str = "/internal/gateway/policies/";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_own_tiers_come_before_the_shared_ones() {
        let mut meta = Meta::default();
        meta.tiers.subscription.insert("Gold".into(), Some(5000));
        meta.tiers.subscription.insert("Unlimited".into(), None);
        let own = |requests, window_ms| TierRate {
            requests,
            window_ms,
        };
        let mut acme = TenantTiers::default();
        acme.subscription.insert("Gold".into(), own(Some(10), 1000));
        acme.subscription.insert("Free".into(), own(None, 60_000));
        acme.subscription
            .insert("Tiny".into(), own(Some(3), 60_000));
        meta.tenant_tiers.insert("acme.com".into(), acme);
        let rate = |tenant, name| meta.tier_rate(tenant, TierLevel::Subscription, name);
        assert_eq!(rate("carbon.super", "Gold"), Some(own(Some(5000), 60_000)));
        assert_eq!(rate("acme.com", "Gold"), Some(own(Some(10), 1000)));
        assert_eq!(rate("acme.com", "Tiny"), Some(own(Some(3), 60_000)));
        assert_eq!(rate("carbon.super", "Tiny"), None);
        assert_eq!(rate("acme.com", "Free"), None);
        assert_eq!(rate("acme.com", "Unlimited"), None);
        assert_eq!(
            meta.tier_rate("acme.com", TierLevel::Application, "Tiny"),
            None
        );
        assert_eq!(tenant_of_context("/t/acme.com/pets"), "acme.com");
        assert_eq!(tenant_of_context("/pets"), "carbon.super");
        assert_eq!(tenant_of_context("/t/"), "carbon.super");
        // Manifests without tenants' tiers read as before, and are written as before.
        let text = serde_json::to_string(&Meta::default()).unwrap();
        assert!(!text.contains("tenant_tiers"), "{text}");
        let read: Meta = serde_json::from_str(&text).unwrap();
        assert_eq!(read, Meta::default());
    }

    #[test]
    fn accepted_issuers_and_gateway_urls_are_left_out_while_empty() {
        let mut meta = Meta {
            token_issuer: "http://cp:9443".into(),
            ..Meta::default()
        };
        let text = serde_json::to_string(&meta).unwrap();
        assert!(!text.contains("accepted_issuers") && !text.contains("gateway_urls"));
        assert!(meta.accepts_issuer("http://cp:9443"));
        assert!(!meta.accepts_issuer("http://cp:9443/oauth2/token"));
        assert!(!meta.accepts_issuer(""));
        meta.accepted_issuers = vec!["http://cp:9443/oauth2/token".into()];
        meta.gateway_urls = vec!["https://gw.example.com:8243".into()];
        assert!(meta.accepts_issuer("http://cp:9443/oauth2/token"));
        let read: Meta = serde_json::from_str(&serde_json::to_string(&meta).unwrap()).unwrap();
        assert_eq!(read, meta);
    }

    #[test]
    fn transports_serve_their_schemes_and_both_is_left_out() {
        let cases = [
            (&["http", "https"][..], Transports::Both),
            (&["https"][..], Transports::Https),
            (&["HTTP"][..], Transports::Http),
            (&[][..], Transports::Both),
            (&["ftp"][..], Transports::Both),
        ];
        for (list, transports) in cases {
            assert_eq!(
                Transports::of_list(list.iter().copied()),
                transports,
                "{list:?}"
            );
        }
        assert!(Transports::Both.serve(Scheme::Http) && Transports::Both.serve(Scheme::Https));
        assert!(Transports::Https.serve(Scheme::Https) && !Transports::Https.serve(Scheme::Http));
        assert!(Transports::Http.serve(Scheme::Http) && !Transports::Http.serve(Scheme::Https));
        assert_eq!(
            serde_json::to_string(&Transports::Https).unwrap(),
            "\"https\""
        );
        assert!(serde_json::from_str::<Transports>("\"smtp\"").is_err());
    }

    #[test]
    fn templates_match_paths() {
        let devs = compile_template("/devs/{username}");
        assert!(matches(&devs, "/devs/alice"));
        assert!(!matches(&devs, "/devs"));
        assert!(!matches(&devs, "/devs/alice/repos"));
        let repos = compile_template("/devs/{username}/repos");
        assert!(matches(&repos, "/devs/alice/repos"));
        let any = compile_template("/*");
        assert!(matches(&any, "/"));
        assert!(matches(&any, "/a/b"));
        let root = compile_template("/");
        assert!(matches(&root, "/"));
        assert!(matches(&root, ""));
        assert!(specificity(&repos) < specificity(&devs));
        assert!(specificity(&devs) < specificity(&any));
    }
}
