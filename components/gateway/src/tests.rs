//! The whole pipeline against an in-memory host: manifest pages, tokens, subscriptions,
//! throttling, CORS, caching, forwarding and faults.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use apim_http::contract::Replaced;
use apim_manifest::*;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{EncodePrivateKey, spki::der::pem::LineEnding};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use serde_json::value::RawValue;

use crate::cache;
use crate::gateway::{Decision, Gateway, Moment, Verdict};
use crate::host::*;

struct Keys {
    encoding: EncodingKey,
    x: String,
}

fn keys(seed: u8) -> Keys {
    use base64::Engine;
    let signing = SigningKey::from_bytes(&[seed; 32]);
    let pem = signing.to_pkcs8_pem(LineEnding::LF).unwrap();
    Keys {
        encoding: EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
        x: base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(signing.verifying_key().as_bytes()),
    }
}

fn sign<T: serde::Serialize>(keys: &Keys, kid: &str, value: &T) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, value, &keys.encoding).unwrap()
}

type Backend = dyn Fn(&Outbound) -> Result<Response, SendError>;

/// A refused call: headers, path, status and fault code.
type Case<'a> = (Vec<(&'a str, String)>, &'a str, u16, &'a str);

/// Keys per `list-keys` page of the fake store: small, so that paging is exercised.
const KEYS_PER_PAGE: usize = 3;

/// An in-memory host; `backend` answers outbound requests and records them.
struct FakeHost {
    kv: RefCell<BTreeMap<String, Vec<u8>>>,
    settings: HashMap<&'static str, String>,
    sent: RefCell<Vec<Outbound>>,
    backend: Box<Backend>,
    now_ms: RefCell<i64>,
    /// What `random_u64` gives next (counting up from 0x10), unless `os_random`.
    random: std::cell::Cell<u64>,
    /// `random_u64` from the operating system's source, as a host's `wasi:random` is.
    os_random: std::cell::Cell<bool>,
    /// Increments made so far (writes of counters).
    increments: std::cell::Cell<usize>,
    /// Keys read so far.
    read: RefCell<Vec<String>>,
}

impl FakeHost {
    fn new(settings: HashMap<&'static str, String>, backend: Box<Backend>) -> Self {
        FakeHost {
            kv: RefCell::new(BTreeMap::new()),
            settings,
            sent: RefCell::new(vec![]),
            backend,
            now_ms: RefCell::new(NOW_SECS * 1000),
            random: std::cell::Cell::new(0x10),
            os_random: std::cell::Cell::new(false),
            increments: std::cell::Cell::new(0),
            read: RefCell::default(),
        }
    }
}

impl Host for FakeHost {
    fn kv_get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        self.read.borrow_mut().push(key.into());
        Ok(self.kv.borrow().get(key).cloned())
    }
    fn kv_set(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.kv.borrow_mut().insert(key.into(), value.to_vec());
        Ok(())
    }
    fn kv_delete(&self, key: &str) -> Result<(), String> {
        self.kv.borrow_mut().remove(key);
        Ok(())
    }
    fn kv_increment(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.increments.set(self.increments.get() + 1);
        let mut kv = self.kv.borrow_mut();
        let current: i64 = kv
            .get(key)
            .and_then(|v| String::from_utf8(v.clone()).ok()?.parse().ok())
            .unwrap_or(0);
        kv.insert(key.into(), (current + delta).to_string().into_bytes());
        Ok(current + delta)
    }
    fn kv_compare_and_swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, String> {
        let mut kv = self.kv.borrow_mut();
        if kv.get(key).map(Vec::as_slice) != expected {
            return Ok(false);
        }
        kv.insert(key.into(), value.to_vec());
        Ok(true)
    }
    fn kv_list_keys(&self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>), String> {
        let kv = self.kv.borrow();
        let keys: Vec<String> = kv
            .keys()
            .filter(|k| cursor.is_none_or(|c| k.as_str() > c))
            .take(KEYS_PER_PAGE + 1)
            .cloned()
            .collect();
        let more = keys.len() > KEYS_PER_PAGE;
        let keys: Vec<String> = keys.into_iter().take(KEYS_PER_PAGE).collect();
        let next = more.then(|| keys.last().cloned()).flatten();
        Ok((keys, next))
    }
    fn setting(&self, name: &str) -> Option<String> {
        self.settings.get(name).cloned()
    }
    fn send(&self, request: Outbound) -> Result<Response, SendError> {
        let answer = (self.backend)(&request);
        self.sent.borrow_mut().push(request);
        answer
    }
    fn now_millis(&self) -> i64 {
        *self.now_ms.borrow()
    }
    fn sleep_ms(&self, ms: u64) {
        *self.now_ms.borrow_mut() += ms as i64;
    }
    fn random_u64(&self) -> u64 {
        if self.os_random.get() {
            return rand::random();
        }
        let next = self.random.get();
        self.random.set(next + 1);
        next
    }
}

const ISSUER: &str = "http://cp/oauth2/token";
const NOW_SECS: i64 = 1_900_000_000;

/// A gateway instance over a fake host, and the manifest the "control plane" has pushed.
struct World {
    host: FakeHost,
    gateway: Gateway,
    manifest_keys: Keys,
    token_keys: Keys,
    /// What the control plane holds; change it, then [`World::publish`].
    manifest: Manifest,
    /// Entries as last pushed, and their version.
    pushed: BTreeMap<String, Arc<str>>,
    version: u64,
}

fn operation(method: &str, template: &str, auth: AuthType, tier: Option<&str>) -> Operation {
    Operation {
        method: method.into(),
        template: template.into(),
        segments: compile_template(template),
        auth,
        throttling_tier: tier.map(str::to_string),
        scope: None,
    }
}

fn dev_api() -> ApiRoute {
    dev_api_as("api-1")
}

/// [`dev_api`] under another id (its backend credentials sealed for that id).
fn dev_api_as(id: &str) -> ApiRoute {
    ApiRoute {
        id: id.into(),
        name: "Dev".into(),
        version: "v1".into(),
        context: "/dev".into(),
        state: ApiState::Published,
        default_version: false,
        operations: vec![
            operation("GET", "/devs/{username}/repos", AuthType::Required, None),
            operation(
                "GET",
                "/devs/{username}",
                AuthType::Required,
                Some("10KPerMin"),
            ),
            operation("GET", "/open", AuthType::None, None),
        ],
        production_url: Some("http://backend:8080/base/".into()),
        sandbox_url: None,
        sealed_backend_authorization: Some(
            sealed::GatewayKey::derive(GATEWAY_SECRET).seal(id, "Basic dTpw"),
        ),
        max_tps: MaxTps {
            production: Some(1000),
            sandbox: None,
        },
        cors: Some(Cors {
            allow_origins: vec!["*".into()],
            allow_headers: "authorization".into(),
            allow_methods: "GET".into(),
            allow_credentials: false,
        }),
        cache_timeout_secs: None,
        endpoints: None,
        api_type: ApiType::Http,
        transports: Transports::Both,
        scopes: Vec::new(),
        mcp: None,
        mediation: None,
    }
}

fn manifest(token_x: &str) -> Manifest {
    let mut tiers = Tiers::default();
    tiers.subscription.insert("Gold".into(), Some(3));
    tiers.subscription.insert("Unlimited".into(), None);
    tiers.application.insert("10PerMin".into(), Some(2));
    tiers.application.insert("Unlimited".into(), None);
    tiers.resource.insert("10KPerMin".into(), Some(10000));
    let application = |tier: &str| Application {
        tier: tier.into(),
        name: String::new(),
        owner: String::new(),
    };
    let subscription = Subscription {
        tier: "Unlimited".into(),
        status: "UNBLOCKED".into(),
    };
    Manifest {
        meta: Meta {
            token_issuer: ISSUER.into(),
            token_keys: vec![TokenKey {
                kid: "k1".into(),
                x: token_x.into(),
            }],
            tiers,
            tenant_tiers: BTreeMap::new(),
            route_depth: 0,
            legacy_throttling: false,
            accepted_issuers: Vec::new(),
            gateway_urls: Vec::new(),
            backend_jwt: None,
        },
        apis: vec![DeployedApi {
            route: dev_api(),
            environments: vec!["Production and Sandbox".into()],
        }],
        applications: BTreeMap::from([
            ("app-1".into(), application("Unlimited")),
            ("app-2".into(), application("10PerMin")),
        ]),
        subscriptions: BTreeMap::from([
            (("app-1".into(), "api-1".into()), subscription.clone()),
            (("app-2".into(), "api-1".into()), subscription),
        ]),
        revocations: BTreeMap::from([(
            "revoked".into(),
            Revocation {
                exp: NOW_SECS + 100,
            },
        )]),
    }
}

/// The changes from `old` to `new`, in key order.
fn diff(old: &BTreeMap<String, Arc<str>>, new: &BTreeMap<String, Arc<str>>) -> Vec<Change> {
    let mut changes: Vec<Change> = new
        .iter()
        .filter(|(key, value)| old.get(*key) != Some(value))
        .map(|(key, value)| change(key, Some(value)))
        .collect();
    changes.extend(
        old.keys()
            .filter(|key| !new.contains_key(*key))
            .map(|key| change(key, None)),
    );
    changes.sort_by(|a, b| a.key.cmp(&b.key));
    changes
}

fn change(key: &str, value: Option<&Arc<str>>) -> Change {
    Change {
        key: key.to_string(),
        value: value.map(|v| RawValue::from_string(v.to_string()).unwrap()),
    }
}

fn page(after: u64, upto: u64, latest: u64, snapshot: bool, changes: Vec<Change>) -> Page {
    Page {
        after,
        upto,
        latest,
        snapshot,
        issued_at: NOW_SECS,
        changes,
    }
}

/// The gateway secret of [`settings`].
const GATEWAY_SECRET: &str = "s3cret";

/// What proves the gateway secret of [`settings`] to the gateway's own endpoints.
const INTERNAL: &[(&str, &str)] = &[("authorization", "Bearer s3cret")];

fn settings(manifest_keys: &Keys) -> HashMap<&'static str, String> {
    HashMap::from([
        ("manifest_public_key", manifest_keys.x.clone()),
        ("control_plane_url", "http://cp:9763".to_string()),
        ("gateway_secret", GATEWAY_SECRET.to_string()),
    ])
}

impl World {
    /// A gateway that has taken the manifest of [`manifest`] as a one-page snapshot.
    fn new() -> Self {
        let manifest_keys = keys(1);
        let token_keys = keys(2);
        let manifest = manifest(&token_keys.x);
        let mut world = World {
            host: FakeHost::new(
                settings(&manifest_keys),
                Box::new(|_| Ok(Response::new(200, "application/json", "{\"ok\":true}"))),
            ),
            gateway: Gateway::default(),
            manifest_keys,
            token_keys,
            manifest,
            pushed: BTreeMap::new(),
            version: 4,
        };
        let entries = world.manifest.entries();
        let snapshot = page(0, 5, 5, true, diff(&BTreeMap::new(), &entries));
        assert_eq!(world.push(&snapshot).status, 200);
        (world.pushed, world.version) = (entries, 5);
        world
    }

    /// Pushes what changed in `self.manifest` since the last push, as the next version.
    fn publish(&mut self) -> Response {
        let entries = self.manifest.entries();
        let delta = page(
            self.version,
            self.version + 1,
            self.version + 1,
            false,
            diff(&self.pushed, &entries),
        );
        let response = self.push(&delta);
        if response.status == 200 {
            self.pushed = entries;
            self.version += 1;
        }
        response
    }

    /// Sends a signed page to a fresh instance, as a push lands on any instance.
    fn push(&self, page: &Page) -> Response {
        self.push_signed(&sign(&self.manifest_keys, "m1", page))
    }

    fn push_signed(&self, jws: &str) -> Response {
        Gateway::default().handle(
            &self.host,
            request("POST", "/_apim/manifest", INTERNAL, jws.as_bytes()),
        )
    }

    fn position(&self) -> serde_json::Value {
        let response =
            Gateway::default().handle(&self.host, request("GET", "/_apim/manifest", INTERNAL, b""));
        serde_json::from_slice(&response.body).unwrap()
    }

    fn token(&self, application: &str, key_type: &str, jti: &str, exp: i64) -> String {
        sign(
            &self.token_keys,
            "k1",
            &json!({"iss": ISSUER, "sub": "admin", "iat": NOW_SECS, "exp": exp, "jti": jti, "scope": "default",
                    "client_id": "c", "application_id": application, "key_type": key_type}),
        )
    }

    fn bearer(&self, application: &str) -> String {
        format!(
            "Bearer {}",
            self.token(application, "PRODUCTION", "t1", NOW_SECS + 3600)
        )
    }

    fn call(&mut self, method: &str, path: &str, headers: &[(&str, &str)]) -> Response {
        self.gateway
            .handle(&self.host, request(method, path, headers, b""))
    }
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Request {
    Request {
        method: method.into(),
        path_with_query: path.into(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect(),
        body: body.to_vec(),
        scheme: apim_http::Scheme::Http,
    }
}

fn code(response: &Response) -> String {
    let body = String::from_utf8_lossy(&response.body);
    body.split("code>")
        .nth(1)
        .map(|s| {
            s.trim_end_matches("</ams:")
                .trim_end_matches("</amt:")
                .trim_end_matches("</am:")
                .to_string()
        })
        .unwrap_or_default()
}

#[test]
fn forwards_a_subscribed_call_to_the_backend() {
    let mut world = World::new();
    let token = world.token("app-1", "PRODUCTION", "t1", NOW_SECS + 60);
    let bearer = format!("Bearer {token}");
    let response = world.call(
        "GET",
        "/dev/v1/devs/alice/repos?page=2",
        &[
            ("authorization", &bearer),
            ("spin-client-addr", "10.0.0.9:4444"),
            ("connection", "keep-alive"),
        ],
    );
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let sent = world.host.sent.borrow();
    let outbound = &sent[0];
    assert_eq!(
        (outbound.scheme.as_str(), outbound.authority.as_str()),
        ("http", "backend:8080")
    );
    assert_eq!(outbound.path_with_query, "/base/devs/alice/repos?page=2");
    assert_eq!(
        header(&outbound.headers, "authorization"),
        Some("Basic dTpw")
    );
    assert_eq!(
        header(&outbound.headers, "x-forwarded-for"),
        Some("10.0.0.9")
    );
    assert!(header(&outbound.headers, "connection").is_none());
    assert!(header(&outbound.headers, "spin-client-addr").is_none());
}

#[test]
fn refuses_as_wso2_does() {
    let mut world = World::new();
    let valid = format!(
        "Bearer {}",
        world.token("app-1", "PRODUCTION", "t1", NOW_SECS + 60)
    );
    let cases: Vec<Case> = vec![
        (vec![], "/dev/v1/devs/a", 401, "900902"),
        (
            vec![("authorization", "Bearer nonsense".into())],
            "/dev/v1/devs/a",
            401,
            "900901",
        ),
        (
            vec![(
                "authorization",
                format!(
                    "Bearer {}",
                    world.token("app-1", "PRODUCTION", "t2", NOW_SECS - 1)
                ),
            )],
            "/dev/v1/devs/a",
            401,
            "900903",
        ),
        (
            vec![(
                "authorization",
                format!(
                    "Bearer {}",
                    world.token("app-1", "PRODUCTION", "revoked", NOW_SECS + 60)
                ),
            )],
            "/dev/v1/devs/a",
            401,
            "900901",
        ),
        (
            vec![(
                "authorization",
                format!(
                    "Bearer {}",
                    world.token("app-9", "PRODUCTION", "t3", NOW_SECS + 60)
                ),
            )],
            "/dev/v1/devs/a",
            403,
            "900908",
        ),
        (
            vec![(
                "authorization",
                format!(
                    "Bearer {}",
                    world.token("app-1", "SANDBOX", "t4", NOW_SECS + 60)
                ),
            )],
            "/dev/v1/devs/a",
            401,
            "900905",
        ),
        (
            vec![("authorization", valid.clone())],
            "/dev/v1/nothing",
            404,
            "404",
        ),
        (
            vec![("authorization", valid.clone())],
            "/dev/v2/devs/a",
            404,
            "404",
        ),
        (
            vec![("authorization", valid.clone())],
            "/unknown",
            404,
            "404",
        ),
    ];
    for (headers, path, status, fault_code) in cases {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let response = world.call("GET", path, &headers);
        assert_eq!(response.status, status, "{path} {headers:?}");
        assert_eq!(
            code(&response),
            fault_code,
            "{path}: {}",
            String::from_utf8_lossy(&response.body)
        );
    }
    let wrong_method = world.call("DELETE", "/dev/v1/devs/a", &[("authorization", &valid)]);
    assert_eq!(
        (wrong_method.status, code(&wrong_method).as_str()),
        (403, "900906")
    );
    let json = world.call("GET", "/dev/v1/devs/a", &[("accept", "application/json")]);
    let value: serde_json::Value = serde_json::from_slice(&json.body).unwrap();
    assert_eq!(value["fault"]["code"], 900902);
    // Open operations need no token.
    assert_eq!(world.call("GET", "/dev/v1/open", &[]).status, 200);
}

#[test]
fn throttles_by_application_tier_and_tps() {
    let mut world = World::new();
    let limited = format!(
        "Bearer {}",
        world.token("app-2", "PRODUCTION", "t1", NOW_SECS + 3600)
    );
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &limited)])
            .status,
        200
    );
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &limited)])
            .status,
        200
    );
    let throttled = world.call("GET", "/dev/v1/devs/a", &[("authorization", &limited)]);
    assert_eq!(
        (throttled.status, code(&throttled).as_str()),
        (429, "900803")
    );
    assert!(String::from_utf8_lossy(&throttled.body).contains("<amt:nextAccessTime>"));
    // Two minutes on (windows slide, see below), nothing of it is left.
    *world.host.now_ms.borrow_mut() += 120_000;
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &limited)])
            .status,
        200
    );

    // maxTps counts per second: two seconds on, nothing of the last calls weighs in.
    *world.host.now_ms.borrow_mut() += 2000;
    world.manifest.apis[0].route.max_tps.production = Some(1);
    assert_eq!(world.publish().status, 200);
    assert_eq!(world.call("GET", "/dev/v1/open", &[]).status, 200);
    let over = world.call("GET", "/dev/v1/open", &[]);
    assert_eq!((over.status, code(&over).as_str()), (503, "900801"));
}

/// With WSO2's legacy throttling an operation's tier is a subscription tier, counted over
/// all the resource's callers; with advanced throttling (the default) that name is no
/// resource tier and the operation has no resource limit.
#[test]
fn legacy_throttling_limits_resources_by_subscription_tiers() {
    let mut world = World::new();
    world
        .manifest
        .meta
        .tiers
        .subscription
        .insert("Trickle".into(), Some(2));
    let operations = &mut world.manifest.apis[0].route.operations;
    let open = operations
        .iter_mut()
        .find(|o| o.template == "/open")
        .unwrap();
    open.throttling_tier = Some("Trickle".into());
    assert_eq!(world.publish().status, 200);
    for _ in 0..3 {
        assert_eq!(world.call("GET", "/dev/v1/open", &[]).status, 200);
    }

    world.manifest.meta.legacy_throttling = true;
    assert_eq!(world.publish().status, 200);
    *world.host.now_ms.borrow_mut() += 120_000;
    for _ in 0..2 {
        assert_eq!(world.call("GET", "/dev/v1/open", &[]).status, 200);
    }
    let over = world.call("GET", "/dev/v1/open", &[]);
    assert_eq!((over.status, code(&over).as_str()), (429, "900802"));
}

/// A call one limit refuses counts against none: the limits it passed before are given
/// back, so the next call that they alone govern still passes.
#[test]
fn a_refused_call_counts_against_none_of_its_limits() {
    use crate::throttle::{self, Limit, LimitKind};
    let world = World::new();
    let limit = |kind, key: &str, allowed| Limit {
        kind,
        key: key.into(),
        allowed,
        window_ms: 60_000,
    };
    let subscription = limit(LimitKind::SubscriptionTier, "sub", 1);
    let closed = limit(LimitKind::ApplicationTier, "app", 0);
    let now = *world.host.now_ms.borrow();
    let refused = throttle::count(
        &world.host,
        &[subscription.clone(), closed],
        now,
        crate::throttle::Counting::Batched,
    );
    let refusal = refused.unwrap_err().render(&Headers::new());
    assert_eq!(refusal.status, 429);
    assert!(String::from_utf8_lossy(&refusal.body).contains("900803"));
    assert!(admitted_in_batches(&world, &subscription, now));
    let over = throttle::count(
        &world.host,
        &[subscription],
        now,
        crate::throttle::Counting::Batched,
    )
    .unwrap_err();
    assert_eq!(over.render(&Headers::new()).status, 429);
}

/// A burst at the end of one window and another at the start of the next pass the limit
/// once, not twice; as the first burst slides out of the last window's length, calls pass
/// again at the rate it leaves.
#[test]
fn a_burst_at_a_window_edge_cannot_double_the_limit() {
    let mut world = World::new();
    world.manifest.apis[0].route.max_tps.production = Some(10);
    assert_eq!(world.publish().status, 200);
    // 900 ms into a second.
    let second = (*world.host.now_ms.borrow()).div_euclid(1000) + 1;
    *world.host.now_ms.borrow_mut() = second * 1000 + 900;
    let admitted = |world: &mut World, calls: usize| {
        (0..calls)
            .filter(|_| world.call("GET", "/dev/v1/open", &[]).status == 200)
            .count()
    };
    assert_eq!(admitted(&mut world, 15), 10);
    // 200 ms later, in the next second: 90 % of the first burst is within the last second.
    *world.host.now_ms.borrow_mut() += 200;
    assert_eq!(
        admitted(&mut world, 15),
        1,
        "10 × 0.9 = 9 of 10 still counted"
    );
    // Half a second on: half of the first burst has slid out.
    *world.host.now_ms.borrow_mut() += 500;
    assert_eq!(
        admitted(&mut world, 15),
        5,
        "4 of the first burst + 1 + 5 = 10"
    );
    // Refused calls were taken back out: two seconds on, the full limit again.
    *world.host.now_ms.borrow_mut() += 2000;
    assert_eq!(admitted(&mut world, 15), 10);
}

#[test]
fn pages_apply_in_order_and_only_when_signed() {
    let mut world = World::new();
    let replayed = page(0, 5, 5, true, vec![]);
    let stale = page(4, 5, 5, false, vec![]);
    assert_eq!(world.push(&stale).status, 409, "not on top of version 5");
    assert_eq!(world.position(), json!({"version": 5}));
    let forged = sign(&keys(9), "m1", &page(5, 50, 50, false, vec![]));
    assert_eq!(world.push_signed(&forged).status, 400);
    assert_eq!(world.push_signed("not a jws").status, 400);

    // A blocked API answers 503 700700 once the next page lands, in the same instance.
    let token = world.bearer("app-1");
    let call =
        |world: &mut World| world.call("GET", "/dev/v1/devs/a", &[("authorization", &token)]);
    assert_eq!(call(&mut world).status, 200);
    world.manifest.apis[0].route.state = ApiState::Blocked;
    assert_eq!(world.publish().status, 200);
    let response = call(&mut world);
    assert_eq!((response.status, code(&response).as_str()), (503, "700700"));
    world.manifest.apis[0].route.state = ApiState::Published;
    world.publish();
    assert_eq!(call(&mut world).status, 200);

    // Unsubscribed: 403 900908.
    world.manifest.subscriptions.clear();
    world.publish();
    assert_eq!(call(&mut world).status, 403);
    assert_eq!(world.position(), json!({"version": 8}));

    // A snapshot of an older version is never taken, whatever its pages say.
    let mut replayed = replayed;
    replayed.changes = diff(&BTreeMap::new(), &world.pushed);
    assert_eq!(world.push(&replayed).status, 409);
    assert_eq!(world.position(), json!({"version": 8}));
}

#[test]
fn blocked_subscriptions_refuse_the_key_types_they_block() {
    let mut world = World::new();
    world.manifest.apis[0].route.sandbox_url = Some("http://sandbox:8080/".into());
    assert_eq!(world.publish().status, 200);
    let production = world.bearer("app-1");
    let sandbox = format!(
        "Bearer {}",
        world.token("app-1", "SANDBOX", "t2", NOW_SECS + 3600)
    );
    let call = |world: &mut World, bearer: &str| {
        let response = world.call("GET", "/dev/v1/devs/a", &[("authorization", bearer)]);
        (response.status, code(&response))
    };
    let set_status = |world: &mut World, status: &str| {
        let key = ("app-1".to_string(), "api-1".to_string());
        world.manifest.subscriptions.get_mut(&key).unwrap().status = status.into();
        assert_eq!(world.publish().status, 200);
    };
    let blocked = (401, "900907".to_string());
    set_status(&mut world, "BLOCKED");
    assert_eq!(call(&mut world, &production), blocked);
    assert_eq!(call(&mut world, &sandbox), blocked);
    // Production keys only: the sandbox key still calls the API.
    set_status(&mut world, "PROD_ONLY_BLOCKED");
    assert_eq!(call(&mut world, &production), blocked);
    assert_eq!(call(&mut world, &sandbox).0, 200);
    set_status(&mut world, "UNBLOCKED");
    assert_eq!(call(&mut world, &production).0, 200);
    assert_eq!(call(&mut world, &sandbox).0, 200);
}

#[test]
fn snapshots_are_kept_apart_until_their_last_page() {
    let mut world = World::new();
    let token = world.bearer("app-1");
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &token)])
            .status,
        200
    );
    // A new manifest without the Dev API but with another, sent as a two-page snapshot.
    let mut other = dev_api_as("api-2");
    other.context = "/other".into();
    world.manifest.apis = vec![DeployedApi {
        route: other,
        environments: vec![],
    }];
    world.manifest.subscriptions = BTreeMap::from([(
        ("app-1".into(), "api-2".into()),
        Subscription {
            tier: "Unlimited".into(),
            status: "UNBLOCKED".into(),
        },
    )]);
    let entries = world.manifest.entries();
    let changes = diff(&BTreeMap::new(), &entries);
    let (first, second) = changes.split_at(changes.len() / 2);
    let first = page(0, 7, 9, true, first.to_vec());
    let second = page(7, 9, 9, true, second.to_vec());
    assert_eq!(
        world.push(&second).status,
        409,
        "pages of a snapshot land in order"
    );
    assert_eq!(world.push(&first).status, 200);
    assert_eq!(world.position(), json!({"version": 5, "snapshot": 7}));
    // Meanwhile the old manifest is served, and deltas cannot land.
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &token)])
            .status,
        200
    );
    assert_eq!(world.push(&page(5, 6, 6, false, vec![])).status, 200);
    assert_eq!(world.push(&second).status, 200);
    assert_eq!(world.position(), json!({"version": 9}));
    let gone = world.call("GET", "/dev/v1/devs/a", &[("authorization", &token)]);
    assert_eq!(gone.status, 404, "the old API went with the old generation");
    assert_eq!(
        world
            .call("GET", "/other/v1/devs/a", &[("authorization", &token)])
            .status,
        200
    );
    // The generation it replaced stays for instances still reading it, until the next
    // snapshot.
    let generation_1 = || {
        let kv = world.host.kv.borrow();
        kv.keys().filter(|k| k.starts_with("apim:m:1:")).count()
    };
    assert!(generation_1() > 0);
    let again = page(0, 10, 10, true, diff(&BTreeMap::new(), &entries));
    assert_eq!(world.push(&again).status, 200);
    assert_eq!(
        generation_1(),
        0,
        "two snapshots on, the first generation is gone"
    );
}

#[test]
fn a_page_waits_while_another_is_applied() {
    let world = World::new();
    let until = (NOW_SECS * 1000 + 5_000).to_string();
    world.host.kv_set("apim:m:lock", until.as_bytes()).unwrap();
    let busy = world.push(&page(5, 6, 6, false, vec![]));
    assert_eq!(busy.status, 503);
    let retry_after = busy.headers.iter().find(|(name, _)| name == "retry-after");
    assert_eq!(retry_after.map(|(_, value)| &value[..]), Some(&b"1"[..]));
    // A lease its holder never gave back runs out.
    *world.host.now_ms.borrow_mut() += 10_000;
    assert_eq!(world.push(&page(5, 6, 6, false, vec![])).status, 200);
    assert_eq!(
        world.host.kv_get("apim:m:lock").unwrap().as_deref(),
        Some(&b"0"[..]),
        "given back"
    );
    assert_eq!(world.push(&page(6, 7, 7, false, vec![])).status, 200);
}

#[test]
fn pulls_the_manifest_when_the_store_has_none() {
    let manifest_keys = keys(1);
    let token_keys = keys(2);
    let entries = manifest(&token_keys.x).entries();
    let changes = diff(&BTreeMap::new(), &entries);
    let (first, second) = changes.split_at(4);
    let pages = [
        sign(&manifest_keys, "m1", &page(0, 2, 3, true, first.to_vec())),
        sign(&manifest_keys, "m1", &page(2, 3, 3, true, second.to_vec())),
    ];
    let host = FakeHost::new(
        settings(&manifest_keys),
        Box::new(move |request| {
            let path = &request.path_with_query;
            if path.starts_with(paths::CONTROL_PLANE_MANIFEST) {
                assert_eq!(
                    header(&request.headers, "authorization"),
                    Some("Bearer s3cret")
                );
                // Each pull names the gateway, so the control plane lists it.
                let jws = match path.split_once('?').map(|(_, q)| q) {
                    Some("after=0&snapshot=false&gateway=apim-gateway&environment=") => &pages[0],
                    Some("after=2&snapshot=true&gateway=apim-gateway&environment=") => &pages[1],
                    other => panic!("unexpected pull {other:?}"),
                };
                Ok(Response::new(200, "application/jwt", jws.clone()))
            } else {
                Err(SendError::Timeout("slow".into()))
            }
        }),
    );
    let response = Gateway::default().handle(&host, request("GET", "/dev/v1/open", &[], b""));
    assert_eq!(response.status, 504, "a timed-out backend is 504");
    assert_eq!(
        crate::state::position(&host),
        Position {
            version: 3,
            snapshot: None
        }
    );
}

/// An API taken on one transport is refused on the other with WSO2's 404 (its main
/// sequence), before anything else about the call (no token, a preflight) is looked at;
/// an API of both, as entries without transports are, serves both.
#[test]
fn transports_decide_which_schemes_an_api_serves() {
    let mut world = World::new();
    let bearer = world.bearer("app-1");
    let over = |scheme, headers: &[(&str, &str)]| Request {
        scheme,
        ..request("GET", "/dev/v1/devs/alice", headers, b"")
    };
    let authorized = [("authorization", bearer.as_str())];
    for scheme in [apim_http::Scheme::Http, apim_http::Scheme::Https] {
        let served = world.gateway.handle(&world.host, over(scheme, &authorized));
        assert_eq!(served.status, 200, "{scheme:?}");
    }
    world.manifest.apis[0].route.transports = Transports::Https;
    assert_eq!(world.publish().status, 200);
    let preflight = [
        ("origin", "http://site"),
        ("access-control-request-method", "GET"),
    ];
    for headers in [&authorized[..], &[], &preflight[..]] {
        let refused = world
            .gateway
            .handle(&world.host, over(apim_http::Scheme::Http, headers));
        assert_eq!((refused.status, code(&refused).as_str()), (404, "404"));
        assert!(String::from_utf8_lossy(&refused.body).contains("<am:message>Not Found"));
        let mut decided = over(apim_http::Scheme::Http, headers);
        decided
            .headers
            .push(("accept".into(), b"application/json".to_vec()));
        let verdict = world.gateway.decide(&world.host, &decided);
        assert!(verdict.limits.is_empty());
        let crate::gateway::Decision::Respond(refused) = verdict.decision else {
            panic!("an https-only API forwarded over http");
        };
        assert_eq!(refused.status, 404);
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&refused.body).unwrap()["fault"]["code"],
            404
        );
    }
    let served = world
        .gateway
        .handle(&world.host, over(apim_http::Scheme::Https, &authorized));
    assert_eq!(served.status, 200);
    world.manifest.apis[0].route.transports = Transports::Http;
    assert_eq!(world.publish().status, 200);
    let refused = world
        .gateway
        .handle(&world.host, over(apim_http::Scheme::Https, &authorized));
    assert_eq!(refused.status, 404);
    let served = world
        .gateway
        .handle(&world.host, over(apim_http::Scheme::Http, &authorized));
    assert_eq!(served.status, 200);
}

#[test]
fn cors_preflight_and_token_relay() {
    let mut world = World::new();
    let preflight = world.call(
        "OPTIONS",
        "/dev/v1/devs/a",
        &[
            ("origin", "http://site"),
            ("access-control-request-method", "GET"),
        ],
    );
    assert_eq!(preflight.status, 200);
    assert_eq!(
        header(&preflight.headers, "access-control-allow-origin"),
        Some("*")
    );
    // A refusal carries them too (WSO2's fault sequences run its CORS handler), so that
    // a page reads why: on the handler and on a decision alike.
    let from_site = [("origin", "http://site")];
    let refused = world.call("GET", "/dev/v1/devs/a", &from_site);
    assert_eq!(refused.status, 401);
    assert_eq!(
        header(&refused.headers, "access-control-allow-origin"),
        Some("*")
    );
    let decided = world.gateway.decide(
        &world.host,
        &request("GET", "/dev/v1/devs/a", &from_site, b""),
    );
    let Decision::Respond(decided) = decided.decision else {
        panic!("refused");
    };
    assert_eq!(
        header(&decided.headers, "access-control-allow-origin"),
        Some("*")
    );
    let relayed = world.gateway.handle(
        &world.host,
        request(
            "POST",
            "/token",
            &[
                ("authorization", "Basic eDp5"),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            b"grant_type=client_credentials",
        ),
    );
    assert_eq!(relayed.status, 200);
    let sent = world.host.sent.borrow();
    let last = sent.last().unwrap();
    assert_eq!(
        (last.authority.as_str(), last.path_with_query.as_str()),
        ("cp:9763", "/oauth2/token")
    );
    assert_eq!(header(&last.headers, "authorization"), Some("Basic eDp5"));
    assert_eq!(last.body, b"grant_type=client_credentials");
}

#[test]
fn gateways_route_only_the_apis_of_their_environment() {
    let mut world = World::new();
    world
        .host
        .settings
        .insert("gateway_environment", "Edge".into());
    let mut fresh = Gateway::default();
    let open = fresh.handle(&world.host, request("GET", "/dev/v1/open", &[], b""));
    assert_eq!(open.status, 404, "deployed to another environment");
    world
        .host
        .settings
        .insert("gateway_environment", "Production and Sandbox".into());
    assert_eq!(world.call("GET", "/dev/v1/open", &[]).status, 200);
}

#[test]
fn caches_get_responses_for_the_cache_timeout() {
    let mut world = World::new();
    world.manifest.apis[0].route.cache_timeout_secs = Some(60);
    assert_eq!(world.publish().status, 200);
    let token = format!(
        "Bearer {}",
        world.token("app-1", "PRODUCTION", "t1", NOW_SECS + 3600)
    );
    let first = world.call("GET", "/dev/v1/devs/a?x=1", &[("authorization", &token)]);
    let second = world.call("GET", "/dev/v1/devs/a?x=1", &[("authorization", &token)]);
    assert_eq!((first.status, second.status), (200, 200));
    assert_eq!(first.body, second.body);
    assert_eq!(
        world.host.sent.borrow().len(),
        1,
        "the second answer came from the cache"
    );
    // Another query is another entry; an expired entry goes back to the backend.
    world.call("GET", "/dev/v1/devs/a?x=2", &[("authorization", &token)]);
    assert_eq!(world.host.sent.borrow().len(), 2);
    *world.host.now_ms.borrow_mut() += 61_000;
    world.call("GET", "/dev/v1/devs/a?x=1", &[("authorization", &token)]);
    assert_eq!(world.host.sent.borrow().len(), 3);
    // Authentication still applies to cached resources.
    assert_eq!(world.call("GET", "/dev/v1/devs/a?x=1", &[]).status, 401);
}

#[test]
fn routes_by_context_and_version_at_segment_boundaries() {
    let mut world = World::new();
    let api = |id: &str, context: &str, version: &str, default_version: bool| {
        let mut route = dev_api_as(id);
        (route.context, route.version) = (context.into(), version.into());
        route.default_version = default_version;
        route.production_url = Some(format!("http://{id}"));
        DeployedApi {
            route,
            environments: vec![],
        }
    };
    world.manifest.apis = vec![
        api("a", "/dev", "v1", true),
        api("b", "/dev", "v2", false),
        api("c", "/developers", "v1", false),
        api("d", "/t/acme.com/dev", "v1", false),
    ];
    assert_eq!(world.publish().status, 200);
    let backend_of = |world: &mut World, path: &str| {
        let status = world.call("GET", path, &[]).status;
        let sent = world.host.sent.borrow();
        (status == 200).then(|| sent.last().unwrap().authority.clone())
    };
    assert_eq!(backend_of(&mut world, "/dev/v2/open").as_deref(), Some("b"));
    assert_eq!(backend_of(&mut world, "/dev/open").as_deref(), Some("a"));
    assert_eq!(backend_of(&mut world, "/dev/v1/open").as_deref(), Some("a"));
    assert_eq!(
        backend_of(&mut world, "/developers/v1/open").as_deref(),
        Some("c")
    );
    assert_eq!(
        backend_of(&mut world, "/t/acme.com/dev/v1/open").as_deref(),
        Some("d")
    );
    for unknown in ["/devx/v1/open", "/other", "/", "/developers/open"] {
        assert_eq!(world.call("GET", unknown, &[]).status, 404, "{unknown}");
    }
}

#[test]
fn request_bodies_follow_one_limit() {
    use crate::sync::settings::MAX_REQUEST_BODY_BYTES;
    let mut world = World::new();
    let bearer = world.bearer("app-1");
    world.manifest.apis[0].route.operations.push(operation(
        "POST",
        "/devs/{username}",
        AuthType::Required,
        None,
    ));
    world.publish();
    let post = |path: &str, length: u64| {
        let length = length.to_string();
        let headers = [
            ("authorization", bearer.as_str()),
            ("content-length", length.as_str()),
        ];
        request("POST", path, &headers, b"")
    };
    let api = "/dev/v1/devs/a";
    let held = MAX_BODY_BYTES as u64;
    // Unset: no cap where the host streams bodies; where the component holds them, what
    // it can hold.
    let streamed = world.gateway.decide(&world.host, &post(api, 10 << 30));
    assert!(matches!(streamed.decision, Decision::Forward(_)));
    let refused = world.gateway.handle(&world.host, post(api, held + 1));
    assert_eq!((refused.status, code(&refused)), (413, "413".to_string()));
    assert_eq!(
        world.gateway.handle(&world.host, post(api, held)).status,
        200
    );
    // Set: the same limit on both, refused from the head with WSO2's fault.
    world
        .host
        .settings
        .insert(MAX_REQUEST_BODY_BYTES, "4096".to_string());
    let refused = world.gateway.decide(&world.host, &post(api, 4097));
    let Decision::Respond(refusal) = refused.decision else {
        panic!("an announced body over the limit is answered");
    };
    assert_eq!((refusal.status, code(&refusal)), (413, "413".to_string()));
    assert_eq!(refused.call.fault_code, 413);
    let admitted = world.gateway.decide(&world.host, &post(api, 4096));
    assert!(matches!(admitted.decision, Decision::Forward(_)));
    assert_eq!(
        world.gateway.handle(&world.host, post(api, 4097)).status,
        413
    );
    assert_eq!(
        world.gateway.handle(&world.host, post(api, 4096)).status,
        200
    );
    // The gateway's own endpoints take manifest pages whatever the limit.
    let mut push = post("/_apim/manifest", 5000);
    push.headers.retain(|(name, _)| name != "authorization");
    push.headers
        .push(("authorization".into(), INTERNAL[0].1.as_bytes().to_vec()));
    assert_ne!(world.gateway.handle(&world.host, push.clone()).status, 413);
    assert!(matches!(
        world.gateway.decide(&world.host, &push).decision,
        Decision::Handle
    ));
    // A limit larger than a component holds still holds only that much.
    world
        .host
        .settings
        .insert(MAX_REQUEST_BODY_BYTES, (held * 4).to_string());
    assert_eq!(
        world
            .gateway
            .handle(&world.host, post(api, held + 1))
            .status,
        413
    );
    let streamed = world.gateway.decide(&world.host, &post(api, held + 1));
    assert!(matches!(streamed.decision, Decision::Forward(_)));
}

#[test]
fn decisions_for_hosts_that_forward_match_what_the_handler_sends() {
    use crate::gateway::Decision;
    let mut world = World::new();
    let bearer = world.bearer("app-1");
    let head = |path: &str, headers: &[(&str, &str)]| request("GET", path, headers, b"");
    let client = [
        ("authorization", bearer.as_str()),
        ("spin-client-addr", "10.0.0.9:4444"),
        ("origin", "http://site"),
        ("accept", "*/*"),
    ];
    let Decision::Forward(forwarding) = world
        .gateway
        .decide(
            &world.host,
            &head("/dev/v1/devs/alice/repos?page=2", &client),
        )
        .decision
    else {
        panic!("an admitted call is forwarded");
    };
    let backend = &forwarding.backend.targets[0];
    assert_eq!(
        (
            backend.scheme.as_str(),
            backend.authority.as_str(),
            backend.path_with_query.as_str()
        ),
        ("http", "backend:8080", "/base/devs/alice/repos?page=2")
    );
    let added = &forwarding.backend.added_headers;
    assert_eq!(header(added, "authorization"), Some("Basic dTpw"));
    assert_eq!(header(added, "x-forwarded-for"), Some("10.0.0.9"));
    assert_eq!(
        header(&forwarding.response_headers, "access-control-allow-origin"),
        Some("*")
    );
    // The handler sends the same: the client's headers that pass on, plus these.
    let outbound = forwarding.backend.outbound(
        &forwarding.backend.targets[0],
        &head("/dev/v1/devs/alice/repos?page=2", &client),
    );
    let names: Vec<&str> = outbound.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "origin",
            "accept",
            "authorization",
            "x-forwarded-for",
            "via"
        ]
    );

    let refused = world
        .gateway
        .decide(&world.host, &head("/dev/v1/devs/a", &[]))
        .decision;
    assert!(matches!(refused, Decision::Respond(r) if r.status == 401));
    let decision = world
        .gateway
        .decide(
            &world.host,
            &request("GET", "/_apim/manifest", INTERNAL, b""),
        )
        .decision;
    assert!(matches!(decision, Decision::Handle));
    // The token service is forwarded to, with the client's credentials.
    for (path, service) in [
        ("/token", "/oauth2/token"),
        ("/revoke?x=1", "/oauth2/revoke?x=1"),
    ] {
        let Decision::Forward(relay) = world.gateway.decide(&world.host, &head(path, &[])).decision
        else {
            panic!("{path} is forwarded");
        };
        assert_eq!(
            (
                relay.backend.targets[0].authority.as_str(),
                relay.backend.targets[0].path_with_query.as_str()
            ),
            ("cp:9763", service)
        );
        // The client's own headers pass on, X-Forwarded-For extended with its address.
        assert_eq!(relay.backend.replaced, Replaced::TokenRelay);
        assert!(header(&relay.backend.added_headers, "x-forwarded-for").is_some());
    }
    // The gateway's own endpoints are refused from the head without the secret.
    let unproven = world
        .gateway
        .decide(&world.host, &head("/_apim/manifest", &[]))
        .decision;
    assert!(matches!(unproven, Decision::Respond(r) if r.status == 401));
    // A body of unknown length is forwarded as it comes (chunked stays chunked).
    world.manifest.apis[0].route.operations.push(operation(
        "POST",
        "/devs/{username}",
        AuthType::Required,
        None,
    ));
    world.publish();
    let chunked = request("POST", "/dev/v1/devs/a", &[("authorization", &bearer)], b"");
    assert!(matches!(
        world.gateway.decide(&world.host, &chunked).decision,
        Decision::Forward(_)
    ));
    // A cacheable GET is decided once: forwarded with where to keep the answer, then
    // (once the host has kept it) answered from the cache; the host counts both against
    // the same limits, which the component leaves uncounted.
    world.manifest.apis[0].route.cache_timeout_secs = Some(60);
    world.manifest.apis[0].route.max_tps.production = Some(2);
    world.publish();
    let verdict = world
        .gateway
        .decide(&world.host, &head("/dev/v1/devs/a", &client));
    // The API's maxTps first, then the resource's tier.
    let tps = crate::throttle::Limit {
        kind: crate::throttle::LimitKind::ApiTps,
        key: format!("tps:{}:production", world.manifest.apis[0].route.id),
        allowed: 2,
        window_ms: 1000,
    };
    assert_eq!(verdict.limits[0], tps);
    let Decision::Forward(miss) = verdict.decision else {
        panic!("a miss is forwarded");
    };
    let (key, ttl) = miss.cache.clone().expect("where to keep the answer");
    let answer = Response::new(200, "text/plain", "kept");
    cache::store(
        &world.host,
        &key,
        &answer,
        ttl,
        NOW_SECS * 1000 + 2000,
        &Headers::new(),
    );
    for _ in 0..3 {
        let hit = world
            .gateway
            .decide(&world.host, &head("/dev/v1/devs/a", &client));
        assert!(matches!(&hit.decision, Decision::Respond(r) if r.body == b"kept"));
        assert_eq!(hit.limits, verdict.limits, "hits count too");
    }
}

/// An API whose open template sits next to a protected literal, as attackers like it.
fn open_template_next_to_protected_literal(world: &mut World) {
    world.manifest.apis[0].route.operations = vec![
        operation("GET", "/devs/admin", AuthType::Required, None),
        operation("GET", "/devs/{username}", AuthType::None, None),
    ];
    assert_eq!(world.publish().status, 200);
}

#[test]
fn encodings_cannot_reach_a_protected_literal_through_an_open_template() {
    let mut world = World::new();
    open_template_next_to_protected_literal(&mut world);
    let token = format!(
        "Bearer {}",
        world.token("app-1", "PRODUCTION", "t1", NOW_SECS + 60)
    );
    for path in [
        "/dev/v1/devs/admin",
        "/dev/v1/devs/%61dmin",
        "/dev/v1/devs/%61%64%6D%69%6E",
        "/dev/v1/devs/ADMIN",
        "/dev/v1/devs/Admin/",
        "/dev/v1/devs//admin",
        "//dev//v1//devs//admin",
    ] {
        let response = world.call("GET", path, &[]);
        assert_eq!(
            (response.status, code(&response)),
            (401, "900902".into()),
            "{path}"
        );
    }
    for (path, why) in [
        ("/dev/v1/devs/..%2Fsecure", "encoded"),
        ("/dev/v1/devs/..%2fsecure", "encoded"),
        ("/dev/v1/devs/a%5Cb", "encoded"),
        ("/dev/v1/devs/..", "segment"),
        ("/dev/v1/devs/.", "segment"),
        ("/dev/v1/devs/%2e%2e", "segment"),
        ("/dev/v1/devs/%2E%2e/secure", "segment"),
        ("/dev/v1/devs/a%00", "control character"),
        ("/dev/v1/devs/%ff", "UTF-8"),
        ("/dev/v1/devs/%zz", "percent-escape"),
        ("/dev/v1/devs/a?q=%g0", "percent-escape"),
    ] {
        let response = world.call("GET", path, &[]);
        assert_eq!(
            (response.status, code(&response)),
            (400, "400".into()),
            "{path}"
        );
        assert!(
            String::from_utf8_lossy(&response.body).contains(why),
            "{path}: {}",
            String::from_utf8_lossy(&response.body)
        );
    }
    assert_eq!(
        world
            .call("GET", &format!("/dev/v1/devs/{}", "a".repeat(5000)), &[])
            .status,
        400
    );
    assert!(
        world.host.sent.borrow().is_empty(),
        "nothing refused reached the backend"
    );

    // The legitimate calls go through, and the backend gets exactly what was matched.
    let sent_path = |world: &mut World, path: &str, headers: &[(&str, &str)]| {
        let response = world.call("GET", path, headers);
        assert_eq!(
            response.status,
            200,
            "{path}: {}",
            String::from_utf8_lossy(&response.body)
        );
        world
            .host
            .sent
            .borrow()
            .last()
            .unwrap()
            .path_with_query
            .clone()
    };
    assert_eq!(
        sent_path(
            &mut world,
            "/dev/v1/devs/admin",
            &[("authorization", &token)]
        ),
        "/base/devs/admin"
    );
    assert_eq!(
        sent_path(
            &mut world,
            "/dev/v1/devs/%61dmin",
            &[("authorization", &token)]
        ),
        "/base/devs/admin"
    );
    assert_eq!(
        sent_path(&mut world, "/dev/v1/devs/alice", &[]),
        "/base/devs/alice"
    );
    assert_eq!(
        sent_path(&mut world, "/dev/v1/devs/%61lice", &[]),
        "/base/devs/alice"
    );
    // A Java server would cut `;...` off: it travels escaped, as one segment.
    assert_eq!(
        sent_path(&mut world, "/dev/v1/devs/admin;x=1", &[]),
        "/base/devs/admin%3Bx=1"
    );
    assert_eq!(
        sent_path(&mut world, "/dev/v1/devs/a%20b", &[]),
        "/base/devs/a%20b"
    );
    assert_eq!(
        sent_path(&mut world, "/dev/v1/devs/bob?x=%61&y=%2f&z=a+b", &[]),
        "/base/devs/bob?x=a&y=%2F&z=a+b"
    );
}

#[test]
fn a_request_that_has_passed_this_gateway_is_a_loop() {
    let mut world = World::new();
    let response = world.call(
        "GET",
        "/dev/v1/open",
        &[("via", "1.1 edge, 1.1 apim-gateway")],
    );
    assert_eq!((response.status, code(&response)), (508, "508".into()));
    assert!(world.host.sent.borrow().is_empty());
    // Other intermediaries are fine, and the gateway adds itself.
    assert_eq!(
        world
            .call("GET", "/dev/v1/open", &[("via", "1.1 edge")])
            .status,
        200
    );
    let sent = world.host.sent.borrow();
    assert_eq!(
        header(&sent[0].headers, "via"),
        Some("1.1 edge, 1.1 apim-gateway")
    );
}

#[test]
fn backends_are_reached_only_where_the_egress_policy_allows() {
    let refused = |url: &str, allow: Option<&str>| {
        let mut world = World::new();
        if let Some(allow) = allow {
            world
                .host
                .settings
                .insert("egress_allow", allow.to_string());
        }
        world.manifest.apis[0].route.production_url = Some(url.to_string());
        world.publish();
        let response = world.call("GET", "/dev/v1/open", &[]);
        let sent = world.host.sent.borrow().len();
        match response.status {
            502 => {
                assert_eq!((code(&response), sent), ("101503".into(), 0), "{url}");
                true
            }
            200 => false,
            other => panic!("{url}: {other}"),
        }
    };
    for url in [
        "http://127.0.0.1:8080/",
        "http://localhost:8080/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0.0.0.0:8280/",
        "http://2130706433/",
    ] {
        assert!(refused(url, None), "{url}");
    }
    assert!(!refused("http://127.0.0.1:8080/", Some("127.0.0.1:8080")));
    assert!(refused("http://127.0.0.1:8081/", Some("127.0.0.1:8080")));
    assert!(!refused("http://10.0.0.5/", None));
    // The control plane is never a backend, whatever the list says.
    assert!(refused(
        "http://cp:9763/internal/gateway/manifest",
        Some("cp")
    ));
    // An invalid list fails closed.
    assert!(refused(
        "http://127.0.0.1:8080/",
        Some("127.0.0.1:8080, not a host!")
    ));
}

#[test]
fn cached_answers_go_only_to_whoever_could_have_had_them() {
    let mut world = World::new();
    world.manifest.apis[0].route.cache_timeout_secs = Some(60);
    assert_eq!(world.publish().status, 200);
    // The backend answers with who asked, varying on Accept-Language.
    world.host.backend = Box::new(|outbound: &Outbound| {
        let language = header(&outbound.headers, "accept-language").unwrap_or("-");
        let mut response = Response::new(200, "text/plain", format!("lang={language}"));
        response
            .headers
            .push(("vary".into(), b"Accept-Language".to_vec()));
        Ok(response)
    });
    let bearer = |world: &World, app: &str, jti: &str| {
        format!(
            "Bearer {}",
            world.token(app, "PRODUCTION", jti, NOW_SECS + 3600)
        )
    };
    let (one, two) = (bearer(&world, "app-1", "t1"), bearer(&world, "app-2", "t2"));
    let get = |world: &mut World, token: &str, language: &str| {
        let response = world.call(
            "GET",
            "/dev/v1/devs/a",
            &[("authorization", token), ("accept-language", language)],
        );
        (
            response.status,
            String::from_utf8_lossy(&response.body).to_string(),
        )
    };
    assert_eq!(get(&mut world, &one, "en"), (200, "lang=en".into()));
    assert_eq!(get(&mut world, &one, "en"), (200, "lang=en".into()));
    assert_eq!(
        world.host.sent.borrow().len(),
        1,
        "the same caller and variant: cached"
    );
    assert_eq!(get(&mut world, &two, "en"), (200, "lang=en".into()));
    assert_eq!(
        world.host.sent.borrow().len(),
        2,
        "another application: not shared"
    );
    assert_eq!(get(&mut world, &one, "fr"), (200, "lang=fr".into()));
    assert_eq!(
        world.host.sent.borrow().len(),
        3,
        "another variant: not shared"
    );

    // Private answers, cookies and `Vary: *` are never kept.
    for (name, value) in [
        ("cache-control", "private, max-age=60"),
        ("cache-control", "no-store"),
        ("set-cookie", "session=1"),
        ("vary", "*"),
    ] {
        let mut world = World::new();
        world.manifest.apis[0].route.cache_timeout_secs = Some(60);
        world.publish();
        let header = (name.to_string(), value.as_bytes().to_vec());
        world.host.backend = Box::new(move |_: &Outbound| {
            let mut response = Response::new(200, "text/plain", "x");
            response.headers.push(header.clone());
            Ok(response)
        });
        let token = bearer(&world, "app-1", "t1");
        get(&mut world, &token, "en");
        get(&mut world, &token, "en");
        assert_eq!(world.host.sent.borrow().len(), 2, "{name}: {value}");
    }
}

#[test]
fn every_key_written_per_request_has_a_lifetime() {
    let mut world = World::new();
    world.manifest.apis[0].route.cache_timeout_secs = Some(60);
    world.publish();
    let manifest_keys: Vec<String> = world.host.kv.borrow().keys().cloned().collect();
    let token = format!(
        "Bearer {}",
        world.token("app-2", "PRODUCTION", "t1", NOW_SECS + 3600)
    );
    for i in 0..5 {
        world.call(
            "GET",
            &format!("/dev/v1/devs/a?i={i}"),
            &[("authorization", &token)],
        );
    }
    let written: Vec<String> = world
        .host
        .kv
        .borrow()
        .keys()
        .filter(|key| !manifest_keys.contains(key))
        .cloned()
        .collect();
    assert!(written.len() >= 4, "{written:?}");
    for key in written {
        assert!(
            apim_http::expiry::ttl_secs(&key).is_some(),
            "{key} lives forever"
        );
    }
}

/// A pulled page the gateway cannot take (too large to read whole, or not a valid signed
/// page) is reported to the control plane with the gateway secret; the pull after it
/// still takes the pages the control plane sends then.
#[test]
fn reports_pulled_pages_it_cannot_take_and_takes_the_next() {
    use std::collections::VecDeque;
    use std::rc::Rc;

    let manifest_keys = keys(1);
    let entries = manifest(&keys(2).x).entries();
    let snapshot = page(0, 3, 3, true, diff(&BTreeMap::new(), &entries));
    let answers: Rc<RefCell<VecDeque<Result<Response, SendError>>>> =
        Rc::new(RefCell::new(VecDeque::from([
            Err(SendError::Unreachable("response body".into())),
            Ok(Response::new(200, "application/jwt", "not a page")),
            Ok(Response::new(
                200,
                "application/jwt",
                sign(&manifest_keys, "m1", &snapshot),
            )),
        ])));
    let host = FakeHost::new(
        settings(&manifest_keys),
        Box::new({
            let answers = answers.clone();
            move |request| {
                if request
                    .path_with_query
                    .starts_with(paths::CONTROL_PLANE_REPORT)
                {
                    return Ok(Response::new(204, "text/plain", ""));
                }
                answers.borrow_mut().pop_front().expect("no more pulls")
            }
        }),
    );
    for _ in 0..2 {
        assert!(crate::sync::pull(&host).is_err());
        assert_eq!(crate::state::position(&host), Position::default());
    }
    assert_eq!(crate::sync::pull(&host).unwrap().version, 3);

    let sent = host.sent.borrow();
    let reports: Vec<PageReport> = sent
        .iter()
        .filter(|r| r.path_with_query == paths::CONTROL_PLANE_REPORT)
        .map(|r| {
            assert_eq!(r.method, "POST");
            assert_eq!(header(&r.headers, "authorization"), Some("Bearer s3cret"));
            serde_json::from_slice(&r.body).unwrap()
        })
        .collect();
    assert_eq!(reports.len(), 2, "one report per page not taken");
    assert!(reports.iter().all(|r| (r.after, r.snapshot) == (0, false)));
    assert!(reports[0].reason.contains("could not be read whole"));
    assert!(reports[1].reason.contains("signature or content invalid"));
}

#[test]
fn backend_credentials_stay_sealed_until_they_are_forwarded() {
    let mut world = World::new();
    let bearer = world.bearer("app-1");
    // Neither the pages' entries nor the key-value store hold them in clear.
    let stored = world
        .host
        .kv
        .borrow()
        .values()
        .flatten()
        .copied()
        .collect::<Vec<u8>>();
    let stored = String::from_utf8_lossy(&stored);
    assert!(stored.contains("sealed_backend_authorization"), "{stored}");
    assert!(!stored.contains("dTpw") && !stored.contains("Basic"));
    let call = |world: &mut World| {
        world.call(
            "GET",
            "/dev/v1/devs/alice/repos",
            &[("authorization", &bearer)],
        )
    };
    assert_eq!(call(&mut world).status, 200);
    let sent = world.host.sent.borrow().last().cloned().unwrap();
    assert_eq!(header(&sent.headers, "authorization"), Some("Basic dTpw"));

    // Sealed under another gateway secret (or moved from another API's entry): the call
    // fails rather than reach the backend without its credentials.
    let before = world.host.sent.borrow().len();
    world.manifest.apis[0].route.sealed_backend_authorization =
        Some(sealed::GatewayKey::derive("another secret").seal("api-1", "Basic dTpw"));
    assert_eq!(world.publish().status, 200);
    assert_eq!(call(&mut world).status, 502);
    world.manifest.apis[0].route.sealed_backend_authorization =
        Some(sealed::GatewayKey::derive(GATEWAY_SECRET).seal("api-2", "Basic dTpw"));
    assert_eq!(world.publish().status, 200);
    assert_eq!(call(&mut world).status, 502);
    assert_eq!(world.host.sent.borrow().len(), before, "nothing sent");
}

#[test]
fn decisions_say_what_the_request_came_to() {
    use crate::gateway::{Call, Decision};
    let mut world = World::new();
    let bearer = world.bearer("app-1");
    let get = |path: &str, headers: &[(&str, &str)]| request("GET", path, headers, b"");
    let admitted = world.gateway.decide(
        &world.host,
        &get("/dev/v1/devs/alice", &[("authorization", &bearer)]),
    );
    assert!(matches!(admitted.decision, Decision::Forward(_)));
    let expected = Call {
        api: "Dev".into(),
        api_id: "api-1".into(),
        version: "v1".into(),
        resource: "/devs/{username}".into(),
        application: "app-1".into(),
        key_type: "PRODUCTION".into(),
        user: "admin".into(),
        cached: false,
        fault_code: 0,
    };
    assert_eq!(admitted.call, expected);
    // A refusal says how far the request got, and its fault code.
    let refused = world
        .gateway
        .decide(&world.host, &get("/dev/v1/devs/alice", &[]));
    assert!(matches!(refused.decision, Decision::Respond(r) if r.status == 401));
    let missing = Call {
        fault_code: 900902,
        ..Call {
            application: String::new(),
            key_type: String::new(),
            user: String::new(),
            ..expected.clone()
        }
    };
    assert_eq!(refused.call, missing);
    let forged = world.gateway.decide(
        &world.host,
        &get("/dev/v1/devs/alice", &[("authorization", "Bearer forged")]),
    );
    assert_eq!(forged.call.fault_code, 900901);
    let nowhere = world
        .gateway
        .decide(&world.host, &get("/nowhere/v1/x", &[]));
    assert_eq!(
        nowhere.call,
        Call {
            fault_code: 404,
            ..Call::default()
        }
    );
    let unproven = world
        .gateway
        .decide(&world.host, &get("/_apim/manifest", &[]));
    assert_eq!(unproven.call.fault_code, 900902);
}

#[test]
fn the_handler_describes_what_it_answered_for_the_access_log() {
    use crate::gateway::Call;
    let mut world = World::new();
    let bearer = world.bearer("app-1");
    let mut call = Call::default();
    let get = |headers: &[(&str, &str)]| request("GET", "/dev/v1/devs/alice", headers, b"");
    let refused = world
        .gateway
        .handle_described(&world.host, get(&[]), &mut call);
    assert_eq!((refused.status, call.fault_code), (401, 900902));
    assert_eq!(
        (call.api.as_str(), call.resource.as_str()),
        ("Dev", "/devs/{username}")
    );
    let logged = crate::access::Logged {
        method: "GET".into(),
        client: "10.0.0.9:4444".into(),
    };
    let trace_id = [b'a'; 32];
    let line = crate::access::line(&call, &logged, &trace_id, 401, (1_764_134_485_123, 3));
    let line: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(line["trace_id"], "a".repeat(32));
    assert_eq!(line["time"], "2025-11-26T05:21:25.123Z");
    assert_eq!(line["fault_code"], 900902);
    assert_eq!(line["client"], "10.0.0.9:4444");
    assert_eq!(line["application"], "");
    let mut admitted = Call::default();
    world.gateway.handle_described(
        &world.host,
        get(&[("authorization", &bearer)]),
        &mut admitted,
    );
    assert_eq!(
        (admitted.application.as_str(), admitted.fault_code),
        ("app-1", 0)
    );
}

const CLIENT_TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The `traceparent` and `tracestate` the backend got for a call with `headers`, and the
/// trace the call was in.
fn traced_call(world: &mut World, headers: &[(&str, &str)]) -> (Vec<String>, Vec<String>, String) {
    let bearer = world.bearer("app-1");
    let mut all = vec![("authorization", bearer.as_str())];
    all.extend_from_slice(headers);
    let mut request = request("GET", "/dev/v1/devs/alice", &all, b"");
    let traced = crate::trace::begin(&world.host, &mut request.headers);
    let mut call = crate::gateway::Call::default();
    let answer = world
        .gateway
        .handle_described(&world.host, request, &mut call);
    assert_eq!(answer.status, 200);
    let sent = world.host.sent.borrow();
    let backend = sent.last().expect("forwarded");
    let values = |name: &str| -> Vec<String> {
        backend
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8(v.clone()).unwrap())
            .collect()
    };
    let trace_id = String::from_utf8(traced.trace_id_hex().to_vec()).unwrap();
    (values("traceparent"), values("tracestate"), trace_id)
}

/// On Spin the component makes the gateway's span: the backend's parent, in the client's
/// trace, or a new trace when the client sent none or a value that is not valid.
#[test]
fn backends_get_the_gateways_span_in_the_clients_trace_or_a_new_one() {
    let mut world = World::new();
    let (parent, state, trace_id) = traced_call(
        &mut world,
        &[("traceparent", CLIENT_TRACE), ("tracestate", "vendor=1")],
    );
    assert_eq!(trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(parent.len(), 1, "{parent:?}");
    assert!(parent[0].starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
    assert!(parent[0].ends_with("-01"), "the client's flags");
    assert_ne!(parent[0], CLIENT_TRACE, "the gateway's span is the parent");
    assert_eq!(state, ["vendor=1"]);

    let (fresh, _, fresh_id) = traced_call(&mut world, &[]);
    assert_eq!(fresh.len(), 1);
    let fresh = apim_http::trace::TraceParent::parse(fresh[0].as_bytes()).unwrap();
    assert_eq!(&fresh.trace_id_hex()[..], fresh_id.as_bytes());
    assert!(!fresh.sampled(), "nothing recorded it");

    let hostile = [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx-injected: 1",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "garbage",
    ];
    for value in hostile {
        let (sent, state, trace_id) = traced_call(
            &mut world,
            &[("traceparent", value), ("tracestate", "forged=1")],
        );
        assert_eq!(sent.len(), 1, "{value}");
        assert!(apim_http::trace::TraceParent::parse(sent[0].as_bytes()).is_some());
        assert!(!sent[0].contains("4bf92f3577b34da6"), "{value}");
        assert_eq!(&sent[0][3..35], trace_id, "the new trace is the request's");
        assert!(state.is_empty(), "a replaced trace drops its state");
    }
    let (twice, _, _) = traced_call(
        &mut world,
        &[("traceparent", CLIENT_TRACE), ("traceparent", CLIENT_TRACE)],
    );
    assert_eq!(twice.len(), 1);
    assert!(!twice[0].contains("4bf92f3577b34da6a3ce929d0e0e4736"));
}

/// Under edge-gateway, which makes and exports the span, a valid `traceparent` passes on
/// as it is; one that is not valid is still replaced.
#[test]
fn a_host_that_makes_spans_has_its_traceparent_passed_on() {
    let mut world = World::new();
    world
        .host
        .settings
        .insert(crate::sync::settings::TRACE_SPANS, "host".into());
    let (parent, _, _) = traced_call(&mut world, &[("traceparent", CLIENT_TRACE)]);
    assert_eq!(parent, [CLIENT_TRACE]);
    let (replaced, _, _) = traced_call(&mut world, &[("traceparent", "nonsense")]);
    assert!(apim_http::trace::TraceParent::parse(replaced[0].as_bytes()).is_some());
}

/// The component's own path sends a call as its list says, with the endpoints' health in
/// the host's store: round robin, a failed endpoint skipped (the call goes on to the
/// next) until its suspension ends, and 503 101503 without a send while every endpoint
/// is suspended.
/// A kept instance takes the manifest's head as it read it for a moment: calls within
/// it read no head, and what another instance applies meanwhile reaches it after it.
#[test]
fn a_kept_instance_reads_the_manifests_head_once_in_a_while() {
    crate::kept::keep();
    let mut world = World::new();
    let bearer = world.bearer("app-1");
    let path = "/dev/v1/devs/alice/repos";
    let auth = [("authorization", bearer.as_str())];
    let heads = |world: &World| {
        let read = world.host.read.borrow();
        read.iter()
            .filter(|key| *key == crate::state::HEAD_KEY)
            .count()
    };
    assert_eq!(world.call("GET", path, &auth).status, 200);
    let read = heads(&world);
    for _ in 0..3 {
        assert_eq!(world.call("GET", path, &auth).status, 200);
    }
    assert_eq!(heads(&world), read, "no head read while it is fresh");

    world.manifest.apis[0].route.state = ApiState::Blocked;
    assert_eq!(world.publish().status, 200);
    let read = heads(&world);
    assert_eq!(world.call("GET", path, &auth).status, 200);
    *world.host.now_ms.borrow_mut() += crate::kept::HEAD_FRESH_MS;
    assert_eq!(world.call("GET", path, &auth).status, 503);
    assert_eq!(heads(&world), read + 1);
}

/// How often a call's windows of `counter` were read.
fn window_reads(world: &World, counter: &str) -> usize {
    let read = world.host.read.borrow();
    read.iter()
        .filter(|key| key.contains(":window:") && key.contains(counter))
        .count()
}

#[test]
fn a_kept_instance_reads_a_window_far_from_its_limit_once_in_a_while() {
    crate::kept::keep();
    let mut world = World::new();
    let tiers = &mut world.manifest.meta.tiers.subscription;
    tiers.insert("Large".into(), Some(1_000_000));
    let subscription = (String::from("app-1"), String::from("api-1"));
    world
        .manifest
        .subscriptions
        .get_mut(&subscription)
        .unwrap()
        .tier = "Large".into();
    world.manifest.apis[0].route.max_tps.production = None;
    assert_eq!(world.publish().status, 200);
    let bearer = world.bearer("app-1");
    let auth = [("authorization", bearer.as_str())];
    let calls = 4 * crate::kept::WINDOW_FRESH_MS;
    for _ in 0..calls {
        assert_eq!(world.call("GET", "/dev/v1/devs/alice", &auth).status, 200);
        world.host.sleep_ms(1);
    }
    let reads = window_reads(&world, "thr:sub:app-1");
    assert!(reads <= 2 * 5, "{reads} reads for {calls} calls");

    // Near its limit a window is read for every call, and the limit holds exactly.
    world
        .manifest
        .subscriptions
        .get_mut(&subscription)
        .unwrap()
        .tier = "Gold".into();
    assert_eq!(world.publish().status, 200);
    world.host.sleep_ms(120_000);
    let before = window_reads(&world, "thr:sub:app-1");
    for _ in 0..3 {
        assert_eq!(world.call("GET", "/dev/v1/devs/alice", &auth).status, 200);
    }
    let over = world.call("GET", "/dev/v1/devs/alice", &auth);
    assert_eq!((over.status, code(&over).as_str()), (429, "900804"));
    assert_eq!(window_reads(&world, "thr:sub:app-1") - before, 2 * 4);
}

/// A call load-balanced over `a:1`, `b:1` and `c:1`, each with `config`.
fn balanced_over_three(
    config: &apim_http::endpoints::EndpointConfig,
) -> crate::forward::BackendRequest {
    use crate::forward::{BackendRequest, BackendTarget};
    let target = |authority: &str| BackendTarget {
        scheme: "http".into(),
        authority: authority.into(),
        path_with_query: "/".into(),
        timeout_ms: 1_000,
        key: format!("api:production:{authority}"),
        config: config.clone(),
    };
    BackendRequest {
        targets: vec![target("a:1"), target("b:1"), target("c:1")],
        balance: apim_http::endpoints::Balance::LoadBalance,
        list: "api:production".into(),
        ..BackendRequest::unsent()
    }
}

#[test]
fn calls_go_round_the_list_and_skip_suspended_endpoints_in_the_store() {
    use std::rc::Rc;

    use crate::balance;
    use apim_http::endpoints::EndpointConfig;

    let down = Rc::new(RefCell::new(vec!["b:1".to_string()]));
    let failing = down.clone();
    let host = FakeHost::new(
        HashMap::new(),
        Box::new(move |request: &Outbound| {
            if failing.borrow().contains(&request.authority) {
                return Err(SendError::Unreachable("refused".into()));
            }
            Ok(Response::json(200, &serde_json::json!({})))
        }),
    );
    let config = EndpointConfig {
        suspend_ms: 1_000,
        ..EndpointConfig::default()
    };
    let backend = balanced_over_three(&config);
    let request = Request {
        method: "GET".into(),
        ..Request::default()
    };
    let sent = |host: &FakeHost| -> Vec<String> {
        host.sent
            .borrow_mut()
            .drain(..)
            .map(|r| r.authority)
            .collect()
    };
    for _ in 0..3 {
        assert_eq!(
            balance::send(&host, &backend, &request).unwrap().status,
            200
        );
    }
    assert_eq!(
        sent(&host),
        ["a:1", "b:1", "c:1", "c:1"],
        "b failed: on to c"
    );
    for _ in 0..4 {
        balance::send(&host, &backend, &request).unwrap();
    }
    assert!(!sent(&host).contains(&"b:1".to_string()), "b is suspended");
    host.sleep_ms(1_000);
    down.borrow_mut().clear();
    for _ in 0..3 {
        balance::send(&host, &backend, &request).unwrap();
    }
    assert!(
        sent(&host).contains(&"b:1".to_string()),
        "b's suspension is over"
    );

    down.borrow_mut()
        .extend(["a:1", "b:1", "c:1"].map(String::from));
    let fault = balance::send(&host, &backend, &request).unwrap_err();
    assert_eq!((fault.status, fault.code), (502, 101503));
    assert_eq!(sent(&host).len(), 3);
    let fault = balance::send(&host, &backend, &request).unwrap_err();
    assert_eq!((fault.status, fault.code), (503, 101503));
    assert!(
        sent(&host).is_empty(),
        "no send while every endpoint is suspended"
    );
}

/// An opaque token of app-1, which the fake control plane's introspection knows.
const OPAQUE: &str = "0b9ad3a4-2f6e-4c1e-9d7a-5a1f8c2e4b6d";

/// Answers introspections as the control plane does (with the gateway secret only),
/// counting them in `asked`; `OPAQUE` is active until `NOW_SECS + 60` unless
/// `down`, when nothing answers; other requests are the backend's.
fn introspecting_backend(
    asked: std::rc::Rc<std::cell::Cell<usize>>,
    down: std::rc::Rc<std::cell::Cell<bool>>,
) -> Box<Backend> {
    Box::new(move |request: &Outbound| {
        if !request.path_with_query.ends_with("/oauth2/introspect") {
            return Ok(Response::new(200, "application/json", "{\"ok\":true}"));
        }
        if down.get() {
            return Err(SendError::Unreachable("connection refused".into()));
        }
        asked.set(asked.get() + 1);
        assert_eq!(
            header(&request.headers, "authorization"),
            Some("Bearer s3cret")
        );
        let body = String::from_utf8_lossy(&request.body);
        let answer = if body == format!("token={OPAQUE}") {
            json!({"active": true, "jti": "opaque-1", "exp": NOW_SECS + 60, "sub": "admin",
                   "application_id": "app-1", "key_type": "PRODUCTION", "scope": "default"})
        } else {
            json!({"active": false})
        };
        Ok(Response::json(200, &answer))
    })
}

#[test]
fn opaque_tokens_are_introspected_once_then_checked_as_jwts_are() {
    let mut world = World::new();
    let asked = std::rc::Rc::new(std::cell::Cell::new(0));
    let down = std::rc::Rc::new(std::cell::Cell::new(false));
    world.host.backend = introspecting_backend(asked.clone(), down.clone());
    let bearer = format!("Bearer {OPAQUE}");
    let call = |world: &mut World, bearer: &str| {
        let response = world.call("GET", "/dev/v1/devs/a", &[("authorization", bearer)]);
        (response.status, code(&response))
    };
    // First use: one introspection; later uses, on this instance or a fresh one (which
    // finds it in the shared store, as on Spin), none.
    assert_eq!(call(&mut world, &bearer).0, 200);
    assert_eq!(call(&mut world, &bearer).0, 200);
    world.gateway = Gateway::default();
    assert_eq!(call(&mut world, &bearer).0, 200);
    assert_eq!(asked.get(), 1);
    // The store keeps its digest, never the token.
    assert!(world.host.kv.borrow().keys().all(|k| !k.contains(OPAQUE)));

    // Unknown tokens of the form are asked about and refused; others are not asked about.
    let unknown = format!("Bearer {}", OPAQUE.replace('0', "1"));
    assert_eq!(call(&mut world, &unknown), (401, "900901".into()));
    assert_eq!(asked.get(), 2);
    let not_uuid = format!("Bearer {}", "x".repeat(36));
    assert_eq!(call(&mut world, &not_uuid), (401, "900901".into()));
    assert_eq!(asked.get(), 2);

    // Found inactive, it is refused without asking again for a while.
    assert_eq!(call(&mut world, &unknown), (401, "900901".into()));
    assert_eq!(asked.get(), 2);

    // The control plane down: a known token still calls, an unknown one is never admitted.
    down.set(true);
    assert_eq!(call(&mut world, &bearer).0, 200);
    let another = format!("Bearer {}", OPAQUE.replace('0', "2"));
    assert_eq!(call(&mut world, &another), (500, "900900".into()));
    down.set(false);

    // A revocation reaches the cached token with the manifest, as for a JWT.
    world
        .manifest
        .revocations
        .insert("opaque-1".into(), Revocation { exp: NOW_SECS + 60 });
    assert_eq!(world.publish().status, 200);
    assert_eq!(call(&mut world, &bearer), (401, "900901".into()));
    world.manifest.revocations.remove("opaque-1");
    assert_eq!(world.publish().status, 200);
    assert_eq!(call(&mut world, &bearer).0, 200);

    // Past its expiry the instance refuses it as expired; a fresh instance does not
    // trust the stale store entry and asks again.
    *world.host.now_ms.borrow_mut() = (NOW_SECS + 60) * 1000;
    assert_eq!(call(&mut world, &bearer), (401, "900903".into()));
    world.gateway = Gateway::default();
    let asked_before = asked.get();
    assert_eq!(call(&mut world, &bearer).0, 401);
    assert_eq!(asked.get(), asked_before + 1);
}

/// Unknown tokens cost at most so many introspections a second: past one client's share
/// its next unknown token is 503 with `Retry-After` at once, without a question, while
/// another client's are still asked about; past the gateway's, every client's are; the
/// next second starts afresh, and a real token's first use then goes through. Each
/// question waits at most the introspection's own short timeout.
#[test]
fn introspections_are_bounded_per_client_and_per_gateway() {
    use crate::introspect::{
        CLIENT_INTROSPECTIONS_PER_SEC, INTROSPECT_TIMEOUT_MS, INTROSPECTIONS_PER_SEC,
    };
    let mut world = World::new();
    let asked = std::rc::Rc::new(std::cell::Cell::new(0));
    let inner = introspecting_backend(asked.clone(), std::rc::Rc::default());
    world.host.backend = Box::new(move |request: &Outbound| {
        if request.path_with_query.ends_with("/oauth2/introspect") {
            assert!(request.timeout_ms <= INTROSPECT_TIMEOUT_MS);
        }
        inner(request)
    });
    let mut made_up = 0_u64;
    let mut call = |world: &mut World, client: &str, token: Option<&str>| {
        made_up += 1;
        let token = token.map_or_else(
            || format!("{made_up:08x}-0000-4000-8000-000000000000"),
            str::to_string,
        );
        let bearer = format!("Bearer {token}");
        let headers = [
            ("authorization", bearer.as_str()),
            (apim_http::contract::CLIENT_ADDR_HEADER, client),
        ];
        let response = world.call("GET", "/dev/v1/devs/a", &headers);
        let retry = header(&response.headers, "retry-after").map(str::to_string);
        (response.status, code(&response), retry)
    };
    let client_share = usize::try_from(CLIENT_INTROSPECTIONS_PER_SEC).unwrap();
    for _ in 0..client_share {
        assert_eq!(call(&mut world, "10.0.0.1:1000", None).0, 401);
    }
    assert_eq!(asked.get(), client_share);
    let busy = call(&mut world, "10.0.0.1:1001", None);
    assert_eq!(busy, (503, "900900".into(), Some("1".into())));
    assert_eq!(asked.get(), client_share, "refused without a question");
    assert_eq!(call(&mut world, "10.0.0.2:1000", None).0, 401);
    assert_eq!(asked.get(), client_share + 1);

    // Other clients spend the gateway's share; then nobody's unknown token is asked about.
    let gateway_share = usize::try_from(INTROSPECTIONS_PER_SEC).unwrap();
    for n in 0.. {
        if asked.get() == gateway_share {
            break;
        }
        let client = format!("10.0.1.{}:1000", n / client_share);
        assert_eq!(call(&mut world, &client, None).0, 401);
    }
    assert_eq!(call(&mut world, "10.0.9.9:1000", Some(OPAQUE)).0, 503);
    assert_eq!(asked.get(), gateway_share);

    // The next second: the real token's retry is admitted.
    *world.host.now_ms.borrow_mut() += 1_000;
    assert_eq!(call(&mut world, "10.0.9.9:1000", Some(OPAQUE)).0, 200);
    assert_eq!(asked.get(), gateway_share + 1);
}

/// A use of a token another instance is asking about at that moment is not asked about
/// again: it waits for that answer, and without one in time it is told to retry (503),
/// never sent; once nobody is asking, the next use asks.
#[test]
fn uses_that_meet_are_asked_about_once() {
    use crate::host::Host as _;
    let mut world = World::new();
    let asked = std::rc::Rc::new(std::cell::Cell::new(0));
    world.host.backend = introspecting_backend(asked.clone(), std::rc::Rc::default());
    let asking = crate::introspect::digest_key(4, &format!("asking:{}", NOW_SECS / 2), OPAQUE);
    world.host.kv_increment(&asking, 1).unwrap();
    let bearer = format!("Bearer {OPAQUE}");
    let waited = world.call("GET", "/dev/v1/devs/a", &[("authorization", &bearer)]);
    assert_eq!((waited.status, code(&waited)), (503, "900900".into()));
    assert_eq!(asked.get(), 0, "the waiting use asked");
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &bearer)])
            .status,
        200
    );
    assert_eq!(asked.get(), 1);
}

/// A JWT verified by one instance is remembered in the shared store under its digest
/// (never the token), so that a fresh instance (Spin's, one per request) takes it without
/// checking its signature again; the memo counts only while the manifest still has the
/// key and issuer that verified it, and a remembered token is refused once revoked or
/// expired, as any token.
#[test]
fn tokens_verified_by_one_instance_are_taken_by_fresh_ones_until_revoked_or_expired() {
    let mut world = World::new();
    let token = world.token("app-1", "PRODUCTION", "memo-1", NOW_SECS + 60);
    let bearer = format!("Bearer {token}");
    let fresh = |world: &World, bearer: &str| {
        let response = Gateway::default().handle(
            &world.host,
            request("GET", "/dev/v1/devs/a", &[("authorization", bearer)], b""),
        );
        (response.status, code(&response))
    };
    assert_eq!(fresh(&world, &bearer).0, 200);
    let memo_key = crate::introspect::digest_key(crate::auth::MEMO_SECS, "verified", &token);
    let memo = world
        .host
        .kv
        .borrow()
        .get(&memo_key)
        .cloned()
        .expect("memo");
    assert!(world.host.kv.borrow().keys().all(|k| !k.contains(&token)));

    // The memo is what a fresh instance goes by: a token whose signature is broken but
    // whose digest had a memo (which only a verification writes) would pass.
    let (unsigned, _) = token.rsplit_once('.').unwrap();
    let forged = format!("{unsigned}.{}", "A".repeat(86));
    assert_eq!(
        fresh(&world, &format!("Bearer {forged}")),
        (401, "900901".into())
    );
    let forged_key = crate::introspect::digest_key(crate::auth::MEMO_SECS, "verified", &forged);
    world
        .host
        .kv
        .borrow_mut()
        .insert(forged_key.clone(), memo.clone());
    assert_eq!(fresh(&world, &format!("Bearer {forged}")).0, 200);
    world.host.kv.borrow_mut().remove(&forged_key);

    // Revoked: refused although remembered; and again once the revocation is gone.
    world
        .manifest
        .revocations
        .insert("memo-1".into(), Revocation { exp: NOW_SECS + 60 });
    assert_eq!(world.publish().status, 200);
    assert_eq!(fresh(&world, &bearer), (401, "900901".into()));
    world.manifest.revocations.remove("memo-1");
    assert_eq!(world.publish().status, 200);
    assert_eq!(fresh(&world, &bearer).0, 200);

    // A new signing key (the old one gone from the manifest): the memo no longer counts.
    let rotated = keys(3);
    world.manifest.meta.token_keys = vec![TokenKey {
        kid: "k1".into(),
        x: rotated.x.clone(),
    }];
    assert_eq!(world.publish().status, 200);
    assert_eq!(fresh(&world, &bearer), (401, "900901".into()));
    assert!(!world.host.kv.borrow().contains_key(&memo_key));
    world.manifest.meta.token_keys[0].x = world.token_keys.x.clone();
    assert_eq!(world.publish().status, 200);
    assert_eq!(fresh(&world, &bearer).0, 200);

    // Expired: refused as expired, and the memo is dropped.
    *world.host.now_ms.borrow_mut() = (NOW_SECS + 60) * 1000;
    assert_eq!(fresh(&world, &bearer), (401, "900903".into()));
    assert!(!world.host.kv.borrow().contains_key(&memo_key));
    assert_eq!(fresh(&world, &bearer), (401, "900903".into()));
}

/// An instance remembers an expired token it refused, so that a client retrying it is
/// refused again without another signature check; a valid token still calls.
#[test]
fn an_expired_token_is_refused_again_without_another_check() {
    let mut world = World::new();
    let token = world.token("app-1", "PRODUCTION", "late-1", NOW_SECS);
    let bearer = format!("Bearer {token}");
    let memo_key = crate::introspect::digest_key(crate::auth::MEMO_SECS, "verified", &token);
    for _ in 0..3 {
        let response = world.call("GET", "/dev/v1/devs/a", &[("authorization", &bearer)]);
        assert_eq!((response.status, code(&response)), (401, "900903".into()));
    }
    let memo_reads = world
        .host
        .read
        .borrow()
        .iter()
        .filter(|k| **k == memo_key)
        .count();
    assert_eq!(memo_reads, 1);
    assert!(!world.host.kv.borrow().contains_key(&memo_key));

    let valid = world.token("app-1", "PRODUCTION", "on-time-1", NOW_SECS + 1);
    let response = world.call(
        "GET",
        "/dev/v1/devs/a",
        &[("authorization", &format!("Bearer {valid}"))],
    );
    assert_eq!(response.status, 200);
}

/// A verified token is looked up by its tail, but only the whole token is taken: another
/// payload under the same signature is checked, and refused.
#[test]
fn a_token_sharing_a_verified_ones_tail_is_checked_whole() {
    let mut world = World::new();
    let genuine = world.token("app-1", "PRODUCTION", "t1", NOW_SECS + 3600);
    let call = |world: &mut World, token: &str| {
        let bearer = format!("Bearer {token}");
        let response = world.call("GET", "/dev/v1/devs/a", &[("authorization", &bearer)]);
        (response.status, code(&response))
    };
    assert_eq!(call(&mut world, &genuine).0, 200);
    let (_, signature) = genuine.rsplit_once('.').unwrap();
    let other = world.token("app-2", "PRODUCTION", "t2", NOW_SECS + 3600);
    let (unsigned, _) = other.rsplit_once('.').unwrap();
    let spliced = format!("{unsigned}.{signature}");
    assert_eq!(call(&mut world, &spliced), (401, "900901".into()));
    assert_eq!(call(&mut world, "no-dots-at-all"), (401, "900901".into()));
    assert_eq!(call(&mut world, &genuine).0, 200);
}

/// Under a host's manifest epoch, a reused instance reads the head once, not per request;
/// a page that lands moves the epoch, and the next decision sees it (a blocked API), as a
/// decision without an epoch always does. The moment's clock decides the token's expiry.
#[test]
fn the_head_is_read_again_only_when_the_epoch_moves() {
    let mut world = World::new();
    let token = world.bearer("app-1");
    let call = request("GET", "/dev/v1/devs/a", &[("authorization", &token)], b"");
    let head_reads = |world: &World| {
        let reads = world.host.read.borrow();
        reads
            .iter()
            .filter(|k| *k == crate::state::HEAD_KEY)
            .count()
    };
    let status = |verdict: Verdict| match verdict.decision {
        Decision::Forward(_) => 200,
        Decision::Respond(response) => response.status,
        Decision::Handle | Decision::ReadBody(_) => 0,
    };
    let at = |manifest_epoch| Moment {
        manifest_epoch,
        now_ms: NOW_SECS * 1000,
    };
    let before = head_reads(&world);
    for _ in 0..3 {
        assert_eq!(
            status(world.gateway.decide_at(&world.host, &call, at(1))),
            200
        );
    }
    assert_eq!(
        head_reads(&world) - before,
        1,
        "one read for three decisions"
    );

    // Publishing reads the head too (another instance applies the page): count after.
    world.manifest.apis[0].route.state = ApiState::Blocked;
    assert_eq!(world.publish().status, 200);
    let before = head_reads(&world);
    assert_eq!(
        status(world.gateway.decide_at(&world.host, &call, at(2))),
        503
    );
    assert_eq!(
        status(world.gateway.decide_at(&world.host, &call, at(2))),
        503
    );
    assert_eq!(head_reads(&world) - before, 1);
    // Without an epoch (Spin, the gateway's own endpoints), every decision reads it.
    world.manifest.apis[0].route.state = ApiState::Published;
    assert_eq!(world.publish().status, 200);
    let before = head_reads(&world);
    assert_eq!(status(world.gateway.decide(&world.host, &call)), 200);
    assert_eq!(status(world.gateway.decide(&world.host, &call)), 200);
    assert_eq!(head_reads(&world) - before, 2);
    // An epoch seen before a read without one is not trusted: it reads again.
    assert_eq!(
        status(world.gateway.decide_at(&world.host, &call, at(2))),
        200
    );
    assert_eq!(head_reads(&world) - before, 3);
    // The moment's clock is the decision's: past the token's expiry, it is refused.
    let later = Moment {
        manifest_epoch: 2,
        now_ms: (NOW_SECS + 7200) * 1000,
    };
    assert_eq!(
        status(world.gateway.decide_at(&world.host, &call, later)),
        401
    );
}

/// A lone endpoint that is never suspended needs no book: its call names no list or key
/// (nothing to build or to hand over per request); a load-balanced list names both.
#[test]
fn only_lists_with_a_book_name_their_keys() {
    use apim_http::endpoints::{Balance, Endpoint, EndpointConfig, Endpoints};
    let mut world = World::new();
    let token = world.bearer("app-1");
    let call = request("GET", "/dev/v1/devs/a", &[("authorization", &token)], b"");
    let backend = |world: &mut World| match world.gateway.decide(&world.host, &call).decision {
        Decision::Forward(forwarding) => forwarding.backend,
        _ => panic!("the call is forwarded"),
    };
    let lone = backend(&mut world);
    assert!(!lone.needs_book());
    assert!(lone.list.is_empty() && lone.targets[0].key.is_empty());

    let endpoint = |url: &str| Endpoint {
        url: url.into(),
        config: EndpointConfig::never_suspended(),
    };
    world.manifest.apis[0].route.endpoints = Some(Endpoints {
        balance: Balance::LoadBalance,
        production: vec![endpoint("http://a:8080/"), endpoint("http://b:8080/")],
        sandbox: Vec::new(),
    });
    assert_eq!(world.publish().status, 200);
    let balanced = backend(&mut world);
    assert!(balanced.needs_book());
    assert!(!balanced.list.is_empty());
    assert_ne!(balanced.targets[0].key, balanced.targets[1].key);
    assert!(balanced.targets[0].key.starts_with(&balanced.list));
}

/// Whether one call within `limit` at `now` is admitted, counted in batches as on Spin.
fn admitted_in_batches(world: &World, limit: &crate::throttle::Limit, now: i64) -> bool {
    let limits = std::slice::from_ref(limit);
    crate::throttle::count(&world.host, limits, now, crate::throttle::Counting::Batched).is_ok()
}

/// Far from its limit, a window is counted in batches (a write for every few calls), right
/// on average; its last calls are counted one by one, so the limit still holds.
#[test]
fn far_from_the_limit_calls_are_counted_in_batches_and_the_limit_holds() {
    use crate::throttle::{Limit, LimitKind};
    let world = World::new();
    let limit = Limit {
        kind: LimitKind::SubscriptionTier,
        key: "batched".into(),
        allowed: 20_000,
        window_ms: 60_000,
    };
    // At the start of a window, with nothing from the previous one.
    let now = (NOW_SECS * 1000).div_euclid(60_000) * 60_000 + 60_000;
    let admitted = (0..30_000)
        .take_while(|_| admitted_in_batches(&world, &limit, now))
        .count();
    assert!(
        (19_000..=20_100).contains(&admitted),
        "{admitted} admitted of 20,000"
    );
    let writes = world.host.increments.get();
    assert!(
        writes < admitted / 3,
        "{writes} writes for {admitted} calls"
    );
    // A limit within reach is counted call by call, exactly.
    let exact = Limit {
        key: "exact".into(),
        allowed: 1000,
        ..limit
    };
    let admitted = (0..1500)
        .filter(|_| admitted_in_batches(&world, &exact, now))
        .count();
    assert_eq!(admitted, 1000);
}

/// A kept instance takes a list's turns a block at a time: one write for many calls,
/// and the calls still go round the list in order.
#[test]
fn a_kept_instance_takes_a_lists_turns_in_blocks() {
    use crate::balance;
    use apim_http::endpoints::EndpointConfig;

    crate::kept::keep();
    let host = FakeHost::new(
        HashMap::new(),
        Box::new(|_: &Outbound| Ok(Response::json(200, &serde_json::json!({})))),
    );
    let backend = balanced_over_three(&EndpointConfig::default());
    let request = Request {
        method: "GET".into(),
        ..Request::default()
    };
    let calls = 3 * crate::kept::TURN_BLOCK as usize;
    for _ in 0..calls {
        balance::send(&host, &backend, &request).unwrap();
    }
    let sent: Vec<String> = host
        .sent
        .borrow()
        .iter()
        .map(|r| r.authority.clone())
        .collect();
    let round: Vec<&str> = ["a:1", "b:1", "c:1"]
        .into_iter()
        .cycle()
        .take(calls)
        .collect();
    assert_eq!(sent, round);
    assert_eq!(host.increments.get(), 3, "a write per block of turns");
    assert!(
        host.read.borrow().len() <= 2 * 3,
        "health read once while fresh: {:?}",
        host.read.borrow()
    );
}

/// The calls a window admits when it is counted in batches deviate from its limit as
/// documented: a standard deviation of at most 2.2 % of it, over 300 windows of a
/// simulated clock, with the operating system's random source (what a host's
/// `wasi:random` gives the component). The sample's σ has a relative standard error of
/// 1/√600 ≈ 4.1 %, so its bound is 2.2 % × (1 + 5 × 4.1 %) and the mean's 5 standard
/// errors: a counter as documented fails either less than once in a million runs.
#[test]
fn batched_counting_deviates_as_documented() {
    use crate::throttle::{Limit, LimitKind};
    const WINDOWS: usize = 300;
    const ALLOWED: u64 = 10_000;
    const WINDOW_MS: i64 = 60_000;
    let world = World::new();
    world.host.os_random.set(true);
    let limit = Limit {
        kind: LimitKind::SubscriptionTier,
        key: "deviation".into(),
        allowed: ALLOWED,
        window_ms: WINDOW_MS as u64,
    };
    let admitted: Vec<f64> = (0..WINDOWS as i64)
        .map(|window| {
            // Two windows apart, so that each starts with nothing from the one before.
            let now = (NOW_SECS * 1000).div_euclid(WINDOW_MS) * WINDOW_MS + window * 2 * WINDOW_MS;
            let counted = || admitted_in_batches(&world, &limit, now);
            std::iter::repeat_with(counted)
                .take_while(|admitted| *admitted)
                .count() as f64
        })
        .collect();
    let mean = admitted.iter().sum::<f64>() / WINDOWS as f64;
    let variance = admitted.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (WINDOWS - 1) as f64;
    eprintln!(
        "{WINDOWS} windows of {ALLOWED}: mean {mean:.1}, σ {:.1}",
        variance.sqrt()
    );
    let documented = 0.022 * ALLOWED as f64;
    let sigma_bound = documented * (1.0 + 5.0 / (2.0 * WINDOWS as f64).sqrt());
    assert!(
        variance.sqrt() <= sigma_bound,
        "σ {} > {sigma_bound}",
        variance.sqrt()
    );
    let mean_bound = 5.0 * documented / (WINDOWS as f64).sqrt();
    assert!(
        (mean - ALLOWED as f64).abs() <= mean_bound,
        "mean {mean} of {ALLOWED}"
    );
    assert!(
        variance > 0.0,
        "every window admitted exactly its limit: not batched"
    );
}

#[test]
fn websocket_apis_take_handshakes_with_a_header_or_query_token() {
    use crate::gateway::Decision;
    let mut world = World::new();
    let mut chat = dev_api_as("api-ws");
    (chat.name, chat.context) = ("Chat".into(), "/chat".into());
    chat.api_type = ApiType::Ws;
    chat.operations = websocket_operations();
    chat.production_url = Some("wss://backend:8443/echo".into());
    chat.cache_timeout_secs = Some(300);
    world.manifest.apis.push(DeployedApi {
        route: chat,
        environments: vec!["Production and Sandbox".into()],
    });
    let subscription =
        world.manifest.subscriptions[&("app-1".to_string(), "api-1".to_string())].clone();
    world
        .manifest
        .subscriptions
        .insert(("app-1".into(), "api-ws".into()), subscription);
    assert_eq!(world.publish().status, 200);
    let bearer = world.bearer("app-1");
    let token = bearer.trim_start_matches("Bearer ").to_string();
    let handshake = [
        ("connection", "Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("sec-websocket-version", "13"),
    ];
    let decide = |world: &mut World, path: &str, extra: &[(&str, &str)]| {
        let mut headers = handshake.to_vec();
        headers.extend_from_slice(extra);
        world
            .gateway
            .decide(&world.host, &request("GET", path, &headers, b""))
    };

    // The token in the query: admitted, and the backend's query is without it.
    let path = format!("/chat/v1/room?access_token={token}&lang=en");
    let verdict = decide(&mut world, &path, &[]);
    let Decision::Forward(forwarding) = verdict.decision else {
        panic!("a handshake with a query token is forwarded");
    };
    assert!(forwarding.backend.upgrade);
    assert!(forwarding.cache.is_none(), "a handshake is never cached");
    let target = &forwarding.backend.targets[0];
    assert_eq!(
        (target.scheme.as_str(), target.path_with_query.as_str()),
        ("https", "/echo/room?lang=en")
    );
    assert_eq!(forwarding.backend.replaced, Replaced::WebSocket);
    assert!(!verdict.limits.is_empty(), "the handshake counts");
    // The header works too; the query token is for WebSocket APIs only.
    let verdict = decide(&mut world, "/chat/v1", &[("authorization", &bearer)]);
    assert!(matches!(verdict.decision, Decision::Forward(f) if f.backend.upgrade));
    let plain = world.call("GET", &format!("/dev/v1/devs/a?access_token={token}"), &[]);
    assert_eq!((plain.status, code(&plain).as_str()), (401, "900902"));

    // Refusals: no token, a bogus one, a plain request, a broken handshake.
    let refused = |verdict: crate::gateway::Verdict| match verdict.decision {
        Decision::Respond(response) => (response.status, code(&response)),
        _ => panic!("refused"),
    };
    assert_eq!(
        refused(decide(&mut world, "/chat/v1", &[])),
        (401, "900902".into())
    );
    assert_eq!(
        refused(decide(&mut world, "/chat/v1?access_token=bogus", &[])).0,
        401
    );
    let plain = world.gateway.decide(
        &world.host,
        &request("GET", "/chat/v1", &[("authorization", &bearer)], b""),
    );
    assert_eq!(refused(plain).0, 400);
    let broken = world.gateway.decide(
        &world.host,
        &request(
            "GET",
            "/chat/v1",
            &[("upgrade", "websocket"), ("authorization", &bearer)],
            b"",
        ),
    );
    assert_eq!(refused(broken).0, 400);
    // A handshake to an HTTP API is refused, not sent on as a plain GET.
    let to_http = decide(&mut world, "/dev/v1/devs/a", &[("authorization", &bearer)]);
    let (status, _) = refused(to_http);
    assert_eq!(status, 400);
    // The wasi:http handler cannot upgrade: 501, whatever the token, handshake or not
    // (a host may drop `Upgrade`).
    let plain = world.call("GET", "/chat/v1", &[("authorization", &bearer)]);
    assert_eq!(plain.status, 501);
    let mut headers = handshake.to_vec();
    headers.push(("authorization", &bearer));
    let answered = world.call("GET", "/chat/v1", &headers);
    assert_eq!(answered.status, 501);
    assert!(
        String::from_utf8_lossy(&answered.body).contains("cannot upgrade"),
        "{}",
        String::from_utf8_lossy(&answered.body)
    );
}

mod backend_jwt;
mod input_schema;
mod mcp;
mod mediation;
mod oauth;
