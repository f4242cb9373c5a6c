//! OAuth sign-in for agents at the gateway: tokens' audiences (RFC 8707), the APIs'
//! protected-resource metadata (RFC 9728), the `WWW-Authenticate` challenge of every 401
//! (RFC 6750), and issuers accepted beside the current one; each on the `wasi:http`
//! handler and on the `policy` decision.

use serde_json::{Value, json};

use super::*;
use crate::faults::Fault;

/// The gateways' public URLs the tests' manifests carry.
const GATEWAY_URLS: [&str; 2] = ["http://gw.example.com:8280", "https://gw.example.com:8243"];

/// Where `/dev/v1`'s metadata is, for a client on plain HTTP.
const DEV_METADATA: &str = "http://gw.example.com:8280/.well-known/oauth-protected-resource/dev/v1";

/// WSO2's own challenge, sent on every 401 after ours.
const WSO2_CHALLENGE: &str = "OAuth2 realm=\"WSO2 API Manager\", error=\"invalid token\", error_description=\"The access token expired\"";

/// A world whose manifest names the gateways' URLs.
fn world_with_gateway_urls() -> World {
    let mut world = World::new();
    world.manifest.meta.gateway_urls = GATEWAY_URLS.map(String::from).to_vec();
    assert_eq!(world.publish().status, 200);
    world
}

/// A token of `app-1` for production, with `extra` claims (`null` removes one).
fn token_with(world: &World, extra: Value) -> String {
    let mut claims = json!({"iss": ISSUER, "sub": "admin", "iat": NOW_SECS,
        "exp": NOW_SECS + 3600, "jti": "t-aud", "scope": "default", "client_id": "c",
        "application_id": "app-1", "key_type": "PRODUCTION"});
    for (name, value) in extra.as_object().unwrap() {
        match value {
            Value::Null => claims.as_object_mut().unwrap().remove(name),
            value => claims
                .as_object_mut()
                .unwrap()
                .insert(name.clone(), value.clone()),
        };
    }
    format!("Bearer {}", sign(&world.token_keys, "k1", &claims))
}

/// The status and fault code of a GET of `path` with `authorization`, on the handler
/// and on a decision, which must agree; a decision to forward is a 200.
fn outcome(world: &mut World, path: &str, authorization: &str) -> (u16, String) {
    let headers = [("authorization", authorization)];
    let handled = world.call("GET", path, &headers);
    let decided = match world
        .gateway
        .decide(&world.host, &request("GET", path, &headers, b""))
        .decision
    {
        Decision::Forward(_) => (200, String::new()),
        Decision::Respond(response) => (response.status, code(&response)),
        Decision::Handle | Decision::ReadBody(_) => panic!("an API call is never handed over"),
    };
    let handled = (handled.status, code(&handled));
    assert_eq!(handled, decided, "{path} {authorization}");
    handled
}

/// Every value of `name` in `response`, in order.
fn header_values(response: &Response, name: &str) -> Vec<String> {
    response
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .collect()
}

/// The response of a decision to answer.
fn answered(verdict: Verdict) -> Response {
    match verdict.decision {
        Decision::Respond(response) => response,
        _ => panic!("answered by the component"),
    }
}

#[test]
fn a_token_with_an_audience_is_admitted_only_to_the_api_it_names() {
    let mut world = world_with_gateway_urls();
    let refused = (401, "900901".to_string());
    let cases = [
        // Without aud, as every token issued without `resource`: as before.
        (json!({}), (200, String::new())),
        (json!({"aud": null}), (200, String::new())),
        // The API's root or below it, as a string or among others in a list; scheme and
        // host in any case, a default port written out.
        (
            json!({"aud": "http://gw.example.com:8280/dev/v1"}),
            (200, String::new()),
        ),
        (
            json!({"aud": "HTTPS://GW.example.com:8243/dev/v1/mcp"}),
            (200, String::new()),
        ),
        (
            json!({"aud": ["http://elsewhere.example/x", "http://gw.example.com:8280/dev/v1/"]}),
            (200, String::new()),
        ),
        // Another API, another origin, a prefix that is not a segment, garbage.
        (
            json!({"aud": "http://gw.example.com:8280/other/v1"}),
            refused.clone(),
        ),
        (
            json!({"aud": "http://gw.example.com:8280/dev/v2"}),
            refused.clone(),
        ),
        (
            json!({"aud": "http://evil.example.com:8280/dev/v1"}),
            refused.clone(),
        ),
        (
            json!({"aud": "http://gw.example.com/dev/v1"}),
            refused.clone(),
        ),
        (
            json!({"aud": "https://gw.example.com:8280/dev/v1"}),
            refused.clone(),
        ),
        (
            json!({"aud": "http://gw.example.com:8280/dev/v11"}),
            refused.clone(),
        ),
        (
            json!({"aud": "http://gw.example.com:8280/dev"}),
            refused.clone(),
        ),
        (
            json!({"aud": "http://gw.example.com:8280/dev/v1/../../other/v1"}),
            refused.clone(),
        ),
        (
            json!({"aud": "http://gw.example.com:8280/dev/v1?x=1"}),
            refused.clone(),
        ),
        (json!({"aud": "dev/v1"}), refused.clone()),
        (json!({"aud": ""}), refused.clone()),
        (json!({"aud": []}), refused.clone()),
        (json!({"aud": 7}), refused.clone()),
        (
            json!({"aud": {"url": "http://gw.example.com:8280/dev/v1"}}),
            refused.clone(),
        ),
    ];
    for (extra, expected) in cases {
        let bearer = token_with(&world, extra.clone());
        assert_eq!(
            outcome(&mut world, "/dev/v1/devs/a", &bearer),
            expected,
            "{extra}"
        );
    }
}

#[test]
fn an_audience_names_a_default_version_by_its_context_only_when_called_so() {
    let mut world = world_with_gateway_urls();
    world.manifest.apis[0].route.default_version = true;
    assert_eq!(world.publish().status, 200);
    let context = token_with(&world, json!({"aud": "http://gw.example.com:8280/dev"}));
    let versioned = token_with(&world, json!({"aud": "http://gw.example.com:8280/dev/v1"}));
    assert_eq!(outcome(&mut world, "/dev/devs/a", &context).0, 200);
    assert_eq!(outcome(&mut world, "/dev/devs/a", &versioned).0, 200);
    assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &versioned).0, 200);
    assert_eq!(
        outcome(&mut world, "/dev/v1/devs/a", &context),
        (401, "900901".into())
    );
    // Not the default version any more: the context names nothing.
    world.manifest.apis[0].route.default_version = false;
    assert_eq!(world.publish().status, 200);
    assert_eq!(
        outcome(&mut world, "/dev/v1/devs/a", &context),
        (401, "900901".into())
    );
}

#[test]
fn a_token_with_an_audience_is_refused_where_no_gateway_url_is_known() {
    let mut world = World::new();
    let named = token_with(&world, json!({"aud": "http://gw.example.com:8280/dev/v1"}));
    assert_eq!(
        outcome(&mut world, "/dev/v1/devs/a", &named),
        (401, "900901".into())
    );
    let plain = token_with(&world, json!({}));
    assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &plain).0, 200);
}

/// Answers introspections: `OPAQUE` without an audience, its variants ending in 1 with
/// `/dev/v1`'s as a list, ending in 2 with another API's as a string.
fn introspecting_with_audiences() -> Box<Backend> {
    Box::new(|request: &Outbound| {
        if !request.path_with_query.ends_with("/oauth2/introspect") {
            return Ok(Response::new(200, "application/json", "{\"ok\":true}"));
        }
        let body = String::from_utf8_lossy(&request.body);
        let token = body.trim_start_matches("token=");
        let mut answer = json!({"active": true, "jti": token, "exp": NOW_SECS + 60,
            "sub": "admin", "application_id": "app-1", "key_type": "PRODUCTION"});
        match token.chars().last() {
            Some('1') => answer["aud"] = json!(["http://gw.example.com:8280/dev/v1"]),
            Some('2') => answer["aud"] = json!("http://gw.example.com:8280/other/v1"),
            _ => {}
        }
        Ok(Response::json(200, &answer))
    })
}

#[test]
fn an_opaque_tokens_audience_comes_from_its_introspection() {
    let mut world = world_with_gateway_urls();
    world.host.backend = introspecting_with_audiences();
    let without = format!("Bearer {OPAQUE}");
    let naming_dev = format!("Bearer {}", OPAQUE.replace("4b6d", "4b61"));
    let naming_other = format!("Bearer {}", OPAQUE.replace("4b6d", "4b62"));
    for _ in 0..2 {
        // Asked, then remembered by the instance and the store: the same either way.
        assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &without).0, 200);
        assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &naming_dev).0, 200);
        assert_eq!(
            outcome(&mut world, "/dev/v1/devs/a", &naming_other),
            (401, "900901".into())
        );
        world.gateway = Gateway::default();
    }
}

#[test]
fn every_401_of_an_api_call_challenges_with_the_metadata_url() {
    let mut world = world_with_gateway_urls();
    let wso2_body = Fault::missing_credentials().render(&Headers::new()).body;
    let expired = token_with(&world, json!({"exp": NOW_SECS - 1}));
    let cases: [(&str, &str, String); 4] = [
        (
            "",
            "900902",
            format!("Bearer resource_metadata=\"{DEV_METADATA}\""),
        ),
        (
            "Bearer nonsense",
            "900901",
            format!("Bearer resource_metadata=\"{DEV_METADATA}\", error=\"invalid_token\""),
        ),
        (
            &expired,
            "900903",
            format!("Bearer resource_metadata=\"{DEV_METADATA}\", error=\"invalid_token\""),
        ),
        // Not a bearer token: no credentials as far as the API goes.
        (
            "Basic dTpw",
            "900902",
            format!("Bearer resource_metadata=\"{DEV_METADATA}\""),
        ),
    ];
    for (authorization, fault_code, challenge) in cases {
        let headers: Vec<(&str, &str)> = [("authorization", authorization)]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let head = request("GET", "/dev/v1/devs/a", &headers, b"");
        let handled = world.gateway.handle(&world.host, head.clone());
        let decided = answered(world.gateway.decide(&world.host, &head));
        for response in [handled, decided] {
            assert_eq!(
                (response.status, code(&response).as_str()),
                (401, fault_code)
            );
            assert_eq!(
                header_values(&response, "www-authenticate"),
                [challenge.as_str(), WSO2_CHALLENGE],
                "{authorization}"
            );
            if fault_code == "900902" {
                assert_eq!(response.body, wso2_body, "WSO2's body as it was");
            }
        }
    }
    // On HTTPS the metadata is at the HTTPS gateway URL.
    let over_tls = Request {
        scheme: apim_http::Scheme::Https,
        ..request("GET", "/dev/v1/devs/a", &[], b"")
    };
    let response = world.gateway.handle(&world.host, over_tls);
    assert_eq!(
        header_values(&response, "www-authenticate")[0],
        "Bearer resource_metadata=\"https://gw.example.com:8243/.well-known/oauth-protected-resource/dev/v1\""
    );
    // What is no 401 of an API call gets no challenge of ours: a 403, the gateway's own
    // endpoints.
    let stranger = world.token("app-9", "PRODUCTION", "t9", NOW_SECS + 60);
    let forbidden = world.call(
        "GET",
        "/dev/v1/devs/a",
        &[("authorization", &format!("Bearer {stranger}"))],
    );
    assert_eq!(forbidden.status, 403);
    assert!(header_values(&forbidden, "www-authenticate").is_empty());
    let internal = world.call("GET", "/_apim/manifest", &[]);
    assert_eq!(internal.status, 401);
    assert_eq!(
        header_values(&internal, "www-authenticate"),
        [WSO2_CHALLENGE]
    );
    // The call that works still works.
    let bearer = world.bearer("app-1");
    assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &bearer).0, 200);
}

#[test]
fn challenges_name_the_unversioned_metadata_for_a_call_without_the_version() {
    let mut world = World::new();
    world.manifest.apis[0].route.default_version = true;
    assert_eq!(world.publish().status, 200);
    // No gateway URL in the manifest: the request's own scheme and Host.
    let response = world.call("GET", "/dev/devs/a", &[("host", "gw.local:8280")]);
    assert_eq!(response.status, 401);
    assert_eq!(
        header_values(&response, "www-authenticate")[0],
        "Bearer resource_metadata=\"http://gw.local:8280/.well-known/oauth-protected-resource/dev\""
    );
    // A Host that is no authority makes no URL; the challenge still says Bearer.
    let response = world.call(
        "GET",
        "/dev/v1/devs/a",
        &[("host", "gw\"local"), ("authorization", "Bearer x")],
    );
    assert_eq!(
        header_values(&response, "www-authenticate")[0],
        "Bearer error=\"invalid_token\""
    );
}

#[test]
fn websocket_handshakes_refused_for_credentials_are_challenged() {
    let mut world = world_with_gateway_urls();
    let mut chat = dev_api_as("api-ws");
    (chat.name, chat.context) = ("Chat".into(), "/chat".into());
    chat.api_type = ApiType::Ws;
    chat.operations = websocket_operations();
    chat.production_url = Some("ws://backend:8080/echo".into());
    world.manifest.apis.push(DeployedApi {
        route: chat,
        environments: Vec::new(),
    });
    assert_eq!(world.publish().status, 200);
    let handshake = |query: &str| {
        request(
            "GET",
            &format!("/chat/v1{query}"),
            &[
                ("connection", "Upgrade"),
                ("upgrade", "websocket"),
                ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("sec-websocket-version", "13"),
            ],
            b"",
        )
    };
    let metadata = "http://gw.example.com:8280/.well-known/oauth-protected-resource/chat/v1";
    let missing = answered(world.gateway.decide(&world.host, &handshake("")));
    assert_eq!((missing.status, code(&missing).as_str()), (401, "900902"));
    assert_eq!(
        header_values(&missing, "www-authenticate")[0],
        format!("Bearer resource_metadata=\"{metadata}\"")
    );
    let bogus = answered(
        world
            .gateway
            .decide(&world.host, &handshake("?access_token=bogus")),
    );
    assert_eq!((bogus.status, code(&bogus).as_str()), (401, "900901"));
    assert_eq!(
        header_values(&bogus, "www-authenticate")[0],
        format!("Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\"")
    );
}

/// The metadata document of `path` on both paths, which must answer alike.
fn metadata_of(world: &mut World, method: &str, path: &str, scheme: apim_http::Scheme) -> Response {
    let head = Request {
        scheme,
        ..request(method, path, &[("host", "gw.local:8280")], b"")
    };
    let handled = world.gateway.handle(&world.host, head.clone());
    let decided = answered(world.gateway.decide(&world.host, &head));
    assert_eq!(handled, decided, "{method} {path}");
    handled
}

#[test]
fn each_api_serves_its_protected_resource_metadata_without_a_token() {
    let mut world = world_with_gateway_urls();
    let http = apim_http::Scheme::Http;
    let path = "/.well-known/oauth-protected-resource/dev/v1";
    let response = metadata_of(&mut world, "GET", path, http);
    assert_eq!(response.status, 200);
    assert_eq!(
        header(&response.headers, "content-type"),
        Some("application/json")
    );
    assert_eq!(
        header(&response.headers, "cache-control"),
        Some("public, max-age=300")
    );
    assert_eq!(
        header(&response.headers, "access-control-allow-origin"),
        Some("*")
    );
    let document: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        document,
        json!({"resource": "http://gw.example.com:8280/dev/v1",
            "authorization_servers": [ISSUER], "bearer_methods_supported": ["header"],
            "resource_name": "Dev"})
    );
    // Its resource is what the challenge's URL says, at the HTTPS URL over TLS; scopes
    // once the API names some.
    world.manifest.apis[0].route.scopes = vec!["dev_read".into(), "dev_write".into()];
    assert_eq!(world.publish().status, 200);
    let response = metadata_of(&mut world, "HEAD", path, apim_http::Scheme::Https);
    assert_eq!(response.status, 200);
    let document: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(document["resource"], "https://gw.example.com:8243/dev/v1");
    assert_eq!(
        document["scopes_supported"],
        json!(["dev_read", "dev_write"])
    );
    // Below the API's root, its root's document.
    let below = metadata_of(&mut world, "GET", &format!("{path}/devs/mcp"), http);
    assert_eq!(below.body, metadata_of(&mut world, "GET", path, http).body);

    // Refused as any unknown path is: another method, an unknown API or version, the
    // prefix alone or run on, a default version's context while it is not the default.
    for (method, refused) in [
        ("POST", path),
        ("DELETE", path),
        ("GET", "/.well-known/oauth-protected-resource/dev/v2"),
        ("GET", "/.well-known/oauth-protected-resource/nothing"),
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-protected-resource/"),
        ("GET", "/.well-known/oauth-protected-resourcedev/v1"),
        ("GET", "/.well-known/oauth-protected-resource/dev"),
    ] {
        let response = metadata_of(&mut world, method, refused, http);
        assert_eq!(
            (response.status, code(&response).as_str()),
            (404, "404"),
            "{method} {refused}"
        );
    }
}

#[test]
fn a_default_versions_context_has_metadata_of_its_own() {
    let mut world = World::new();
    world.manifest.apis[0].route.default_version = true;
    assert_eq!(world.publish().status, 200);
    let http = apim_http::Scheme::Http;
    // No gateway URL in the manifest: the request's own scheme and Host.
    let response = metadata_of(
        &mut world,
        "GET",
        "/.well-known/oauth-protected-resource/dev",
        http,
    );
    assert_eq!(response.status, 200);
    let document: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(document["resource"], "http://gw.local:8280/dev");
    let response = metadata_of(
        &mut world,
        "GET",
        "/.well-known/oauth-protected-resource/dev/v1",
        http,
    );
    let document: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(document["resource"], "http://gw.local:8280/dev/v1");
    // An API taken on HTTPS only has none on plain HTTP.
    world.manifest.apis[0].route.transports = Transports::Https;
    assert_eq!(world.publish().status, 200);
    let response = metadata_of(
        &mut world,
        "GET",
        "/.well-known/oauth-protected-resource/dev/v1",
        http,
    );
    assert_eq!(response.status, 404);
}

#[test]
fn tokens_of_an_accepted_issuer_verify_until_it_is_no_longer_accepted() {
    let mut world = World::new();
    let old_issuer = ISSUER;
    let new_issuer = "http://cp";
    let old = token_with(&world, json!({"iss": old_issuer}));
    let new = token_with(&world, json!({"iss": new_issuer, "jti": "t-new"}));
    let other = token_with(&world, json!({"iss": "http://elsewhere", "jti": "t-other"}));
    assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &old).0, 200);
    assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &new).0, 401);

    // The issuer changes; the old one is still accepted.
    world.manifest.meta.token_issuer = new_issuer.into();
    world.manifest.meta.accepted_issuers = vec![old_issuer.into()];
    assert_eq!(world.publish().status, 200);
    for _ in 0..2 {
        assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &old).0, 200);
        assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &new).0, 200);
        assert_eq!(
            outcome(&mut world, "/dev/v1/devs/a", &other),
            (401, "900901".into())
        );
        // A fresh instance takes them from the shared store's memo as well.
        world.gateway = Gateway::default();
    }

    // The old issuer is no longer accepted: refused by this instance and by fresh ones,
    // whatever the store remembers.
    world.manifest.meta.accepted_issuers.clear();
    assert_eq!(world.publish().status, 200);
    for _ in 0..2 {
        assert_eq!(
            outcome(&mut world, "/dev/v1/devs/a", &old),
            (401, "900901".into())
        );
        assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &new).0, 200);
        world.gateway = Gateway::default();
    }
}

#[test]
fn memos_keep_a_tokens_audience() {
    let mut world = world_with_gateway_urls();
    let other = token_with(
        &world,
        json!({"aud": ["http://gw.example.com:8280/other/v1"]}),
    );
    let dev = token_with(
        &world,
        json!({"aud": ["http://gw.example.com:8280/dev/v1"]}),
    );
    for _ in 0..2 {
        assert_eq!(
            outcome(&mut world, "/dev/v1/devs/a", &other),
            (401, "900901".into())
        );
        assert_eq!(outcome(&mut world, "/dev/v1/devs/a", &dev).0, 200);
        // A fresh instance reads the claims back from the store's memo, audience and all.
        world.gateway = Gateway::default();
    }
}
