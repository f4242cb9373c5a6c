//! The whole pipeline against an in-memory host: manifests, tokens, subscriptions,
//! throttling, CORS, caching, forwarding and faults.

use std::cell::RefCell;
use std::collections::HashMap;

use apim_manifest::*;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{EncodePrivateKey, spki::der::pem::LineEnding};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

use crate::gateway::Gateway;
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

/// An in-memory host; `backend` answers outbound requests and records them.
struct FakeHost {
    kv: RefCell<HashMap<String, Vec<u8>>>,
    settings: HashMap<&'static str, String>,
    sent: RefCell<Vec<Outbound>>,
    backend: Box<Backend>,
    now_ms: RefCell<i64>,
}

impl Host for FakeHost {
    fn kv_get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
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
        let mut kv = self.kv.borrow_mut();
        let current: i64 = kv
            .get(key)
            .and_then(|v| String::from_utf8(v.clone()).ok()?.parse().ok())
            .unwrap_or(0);
        kv.insert(key.into(), (current + delta).to_string().into_bytes());
        Ok(current + delta)
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
}

const ISSUER: &str = "http://cp/oauth2/token";
const NOW_SECS: i64 = 1_900_000_000;

struct World {
    host: FakeHost,
    gateway: Gateway,
    manifest_keys: Keys,
    token_keys: Keys,
    manifest: Manifest,
}

fn operation(method: &str, template: &str, auth: AuthType, tier: Option<&str>) -> Operation {
    Operation {
        method: method.into(),
        template: template.into(),
        segments: compile_template(template),
        auth,
        throttling_tier: tier.map(str::to_string),
    }
}

fn manifest(token_x: &str, version: u64) -> Manifest {
    let mut tiers = Tiers::default();
    tiers.subscription.insert("Gold".into(), Some(3));
    tiers.subscription.insert("Unlimited".into(), None);
    tiers.application.insert("10PerMin".into(), Some(2));
    tiers.application.insert("Unlimited".into(), None);
    tiers.resource.insert("10KPerMin".into(), Some(10000));
    Manifest {
        version,
        issued_at: 0,
        token_issuer: ISSUER.into(),
        token_keys: vec![TokenKey {
            kid: "k1".into(),
            x: token_x.into(),
        }],
        apis: vec![ApiRoute {
            id: "api-1".into(),
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
            backend_authorization: Some("Basic dTpw".into()),
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
            environments: vec!["Production and Sandbox".into()],
        }],
        applications: vec![
            ApplicationEntry {
                id: "app-1".into(),
                tier: "Unlimited".into(),
            },
            ApplicationEntry {
                id: "app-2".into(),
                tier: "10PerMin".into(),
            },
        ],
        subscriptions: vec![
            SubscriptionEntry {
                application_id: "app-1".into(),
                api_id: "api-1".into(),
                tier: "Unlimited".into(),
                status: "UNBLOCKED".into(),
            },
            SubscriptionEntry {
                application_id: "app-2".into(),
                api_id: "api-1".into(),
                tier: "Unlimited".into(),
                status: "UNBLOCKED".into(),
            },
        ],
        revoked_tokens: vec![RevokedToken {
            jti: "revoked".into(),
            exp: NOW_SECS + 100,
        }],
        tiers,
    }
}

impl World {
    fn new() -> Self {
        let manifest_keys = keys(1);
        let token_keys = keys(2);
        let settings = HashMap::from([
            ("manifest_public_key", manifest_keys.x.clone()),
            ("control_plane_url", "http://cp:9763".to_string()),
            ("gateway_secret", "s3cret".to_string()),
        ]);
        let manifest = manifest(&token_keys.x, 5);
        let world = World {
            host: FakeHost {
                kv: RefCell::new(HashMap::new()),
                settings,
                sent: RefCell::new(vec![]),
                backend: Box::new(|_| Ok(Response::new(200, "application/json", "{\"ok\":true}"))),
                now_ms: RefCell::new(NOW_SECS * 1000),
            },
            gateway: Gateway::default(),
            manifest_keys,
            token_keys,
            manifest,
        };
        let pushed = world.push(&world.manifest.clone());
        assert_eq!(pushed.status, 200);
        world
    }

    fn push(&self, manifest: &Manifest) -> Response {
        let jws = sign(&self.manifest_keys, "m1", manifest);
        Gateway::default().handle(
            &self.host,
            request("POST", "/_apim/manifest", &[], jws.as_bytes()),
        )
    }

    fn token(&self, application: &str, key_type: &str, jti: &str, exp: i64) -> String {
        sign(
            &self.token_keys,
            "k1",
            &json!({"iss": ISSUER, "sub": "admin", "iat": NOW_SECS, "exp": exp, "jti": jti, "scope": "default",
                    "client_id": "c", "application_id": application, "key_type": key_type}),
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
    // The next minute starts afresh.
    *world.host.now_ms.borrow_mut() += 60_000;
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &limited)])
            .status,
        200
    );

    // maxTps counts per second: start a fresh second.
    *world.host.now_ms.borrow_mut() += 1000;
    let mut strict = world.manifest.clone();
    strict.version = 6;
    strict.apis[0].max_tps.production = Some(1);
    assert_eq!(world.push(&strict).status, 200);
    assert_eq!(world.call("GET", "/dev/v1/open", &[]).status, 200);
    let over = world.call("GET", "/dev/v1/open", &[]);
    assert_eq!((over.status, code(&over).as_str()), (503, "900801"));
}

#[test]
fn manifests_apply_only_when_newer_and_signed() {
    let mut world = World::new();
    let stale = world.push(&world.manifest.clone());
    assert_eq!(stale.status, 409);
    let forged = sign(&keys(9), "m1", &manifest(&world.token_keys.x, 50));
    let refused = Gateway::default().handle(
        &world.host,
        request("POST", "/_apim/manifest", &[], forged.as_bytes()),
    );
    assert_eq!(refused.status, 400);
    // A blocked API answers 503 700700 once the newer manifest lands, in the same instance.
    let token = format!(
        "Bearer {}",
        world.token("app-1", "PRODUCTION", "t1", NOW_SECS + 60)
    );
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &token)])
            .status,
        200
    );
    let mut blocked = world.manifest.clone();
    blocked.version = 7;
    blocked.apis[0].state = ApiState::Blocked;
    assert_eq!(world.push(&blocked).status, 200);
    let response = world.call("GET", "/dev/v1/devs/a", &[("authorization", &token)]);
    assert_eq!((response.status, code(&response).as_str()), (503, "700700"));
    // Unsubscribed: 403 900908.
    let mut unsubscribed = world.manifest.clone();
    unsubscribed.version = 8;
    unsubscribed.subscriptions.clear();
    world.push(&unsubscribed);
    assert_eq!(
        world
            .call("GET", "/dev/v1/devs/a", &[("authorization", &token)])
            .status,
        403
    );
}

#[test]
fn pulls_the_manifest_when_the_store_has_none() {
    let manifest_keys = keys(1);
    let token_keys = keys(2);
    let jws = sign(&manifest_keys, "m1", &manifest(&token_keys.x, 3));
    let host = FakeHost {
        kv: RefCell::new(HashMap::new()),
        settings: HashMap::from([
            ("manifest_public_key", manifest_keys.x.clone()),
            ("control_plane_url", "http://cp:9763".to_string()),
            ("gateway_secret", "s3cret".to_string()),
        ]),
        sent: RefCell::new(vec![]),
        backend: Box::new(move |request| {
            if request.path_with_query == paths::CONTROL_PLANE_MANIFEST {
                assert_eq!(
                    header(&request.headers, "authorization"),
                    Some("Bearer s3cret")
                );
                Ok(Response::new(200, "application/jwt", jws.clone()))
            } else {
                Err(SendError::Timeout("slow".into()))
            }
        }),
        now_ms: RefCell::new(NOW_SECS * 1000),
    };
    let response = Gateway::default().handle(&host, request("GET", "/dev/v1/open", &[], b""));
    assert_eq!(response.status, 504, "a timed-out backend is 504");
    assert_eq!(crate::state::stored_version(&host), Some(3));
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
    let mut cached = world.manifest.clone();
    cached.version = 9;
    cached.apis[0].cache_timeout_secs = Some(60);
    assert_eq!(world.push(&cached).status, 200);
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
