//! OAuth sign-in for agents at the gateway: tokens' audiences (RFC 8707) and issuers
//! accepted beside the current one; each on the `wasi:http` handler and on the `policy`
//! decision.

use serde_json::{Value, json};

use super::*;

/// The gateways' public URLs the tests' manifests carry.
const GATEWAY_URLS: [&str; 2] = ["http://gw.example.com:8280", "https://gw.example.com:8243"];

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
        Decision::Handle => panic!("an API call is never handed over"),
    };
    let handled = (handled.status, code(&handled));
    assert_eq!(handled, decided, "{path} {authorization}");
    handled
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
