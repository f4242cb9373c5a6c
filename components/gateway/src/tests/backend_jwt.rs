//! WSO2's backend JWT: the `X-JWT-Assertion` a backend gets when both this gateway and
//! the API's tenant switched it on, with WSO2's claims, verifiable with the public key;
//! made once per token and API; never the client's.

use std::sync::OnceLock;

use apim_manifest::sealed::GatewayKey;
use base64::Engine as _;
use jsonwebtoken::{DecodingKey, Validation};
use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
use serde_json::{Value, json};

use super::*;
use crate::backend_jwt::{DIALECT, HEADER, ISSUER as WSO2_ISSUER, LIFETIME_SECS};

/// One RSA key for every test (2048 bits, as the control plane makes them): its private
/// half as PKCS#1 DER, and the public half's.
fn rsa_key() -> &'static (Vec<u8>, Vec<u8>) {
    static KEY: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    KEY.get_or_init(|| {
        let private = rsa::RsaPrivateKey::new(&mut rand_core_06::OsRng, 2048).unwrap();
        let public = private.to_public_key().to_pkcs1_der().unwrap();
        let private = private.to_pkcs1_der().unwrap();
        (private.as_bytes().to_vec(), public.as_bytes().to_vec())
    })
}

/// The manifest's backend JWT for `tenants`, its key sealed for `secret`.
fn backend_jwt(tenants: &[&str], secret: &str) -> BackendJwt {
    let der = base64::engine::general_purpose::STANDARD.encode(&rsa_key().0);
    BackendJwt {
        kid: "bj1".into(),
        sealed_key: GatewayKey::derive(secret).seal(&BackendJwt::sealing_label("bj1"), &der),
        tenants: tenants.iter().map(|t| t.to_string()).collect(),
    }
}

/// A world whose gateway's switch is `switch` and whose manifest has `config`, with
/// `app-1` named and owned as the store has it.
fn world_with(switch: &str, config: Option<BackendJwt>) -> World {
    let mut world = World::new();
    world.host.settings.insert("backend_jwt", switch.into());
    world.manifest.meta.backend_jwt = config;
    let app = world.manifest.applications.get_mut("app-1").unwrap();
    app.name = "DefaultApplication".into();
    app.owner = "admin".into();
    assert_eq!(world.publish().status, 200);
    world
}

/// A token of `app-1` for production with `scope`.
fn token(world: &World, jti: &str, scope: &str) -> String {
    let claims = json!({"iss": ISSUER, "sub": "admin", "iat": NOW_SECS,
        "exp": NOW_SECS + 3600, "jti": jti, "scope": scope, "client_id": "c",
        "application_id": "app-1", "key_type": "PRODUCTION"});
    format!("Bearer {}", sign(&world.token_keys, "k1", &claims))
}

/// Every `X-JWT-Assertion` the backend got with the last call.
fn assertions_sent(world: &World) -> Vec<String> {
    let sent = world.host.sent.borrow();
    sent.last()
        .expect("the call reached the backend")
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case(HEADER))
        .map(|(_, value)| String::from_utf8(value.clone()).unwrap())
        .collect()
}

/// Calls `/dev/v1/devs/alice` with `authorization` (and a forged assertion), on the
/// handler; the assertions its backend got.
fn call_with(world: &mut World, authorization: &str) -> Vec<String> {
    let headers = [
        ("authorization", authorization),
        (HEADER, "forged.by.client"),
    ];
    let response = world.call("GET", "/dev/v1/devs/alice", &headers);
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assertions_sent(world)
}

/// The claims of an assertion, verified with the public key: RS256, the key id, WSO2's
/// issuer.
fn verified(assertion: &str) -> Value {
    let header = jsonwebtoken::decode_header(assertion).unwrap();
    assert_eq!(header.alg, Algorithm::RS256);
    assert_eq!(header.kid.as_deref(), Some("bj1"));
    assert_eq!(header.typ.as_deref(), Some("JWT"));
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[WSO2_ISSUER]);
    validation.validate_aud = false;
    let key = DecodingKey::from_rsa_der(&rsa_key().1);
    jsonwebtoken::decode::<Value>(assertion, &key, &validation)
        .unwrap()
        .claims
}

#[test]
fn the_backend_learns_who_called_in_wso2s_claims() {
    let mut world = world_with("on", Some(backend_jwt(&["carbon.super"], GATEWAY_SECRET)));
    let bearer = token(&world, "t-user", "default");
    let sent = call_with(&mut world, &bearer);
    assert_eq!(sent.len(), 1, "the gateway's only, never the client's");
    let claim = |name: &str| format!("{DIALECT}/{name}");
    assert_eq!(
        verified(&sent[0]),
        json!({
            "iss": "wso2.org/products/am",
            "exp": NOW_SECS + LIFETIME_SECS,
            claim("subscriber"): "admin",
            claim("applicationid"): "app-1",
            claim("applicationname"): "DefaultApplication",
            claim("applicationtier"): "Unlimited",
            claim("apicontext"): "/dev/v1",
            claim("version"): "v1",
            claim("tier"): "Unlimited",
            claim("keytype"): "PRODUCTION",
            claim("usertype"): "APPLICATION_USER",
            claim("enduser"): "admin@carbon.super",
            claim("enduserTenantId"): "-1234",
        })
    );

    // An application's own token (client credentials) is WSO2's APPLICATION user type.
    let bearer = token(&world, "t-app", "default am_application_scope");
    let sent = call_with(&mut world, &bearer);
    assert_eq!(verified(&sent[0])[claim("usertype")], "APPLICATION");
}

#[test]
fn the_policy_decision_adds_it_for_the_host_to_forward() {
    let mut world = world_with("on", Some(backend_jwt(&["carbon.super"], GATEWAY_SECRET)));
    let bearer = token(&world, "t-user", "default");
    let headers = [("authorization", bearer.as_str()), (HEADER, "forged")];
    let verdict = world.gateway.decide(
        &world.host,
        &request("GET", "/dev/v1/devs/alice", &headers, b""),
    );
    let Decision::Forward(forwarding) = verdict.decision else {
        panic!("forwarded");
    };
    let added: Vec<_> = forwarding
        .backend
        .added_headers
        .iter()
        .filter(|(name, _)| name == HEADER)
        .collect();
    assert_eq!(added.len(), 1);
    verified(std::str::from_utf8(&added[0].1).unwrap());
    assert!(
        forwarding.backend.replaced.names().contains(&HEADER),
        "the host drops the client's"
    );
}

#[test]
fn made_once_per_token_and_api_until_what_it_says_changes() {
    let mut world = world_with("on", Some(backend_jwt(&["carbon.super"], GATEWAY_SECRET)));
    let bearer = token(&world, "t-user", "default");
    let first = call_with(&mut world, &bearer);
    *world.host.now_ms.borrow_mut() += 10_000;
    assert_eq!(call_with(&mut world, &bearer), first, "a header copy");

    // Another token gets its own.
    let other_token = token(&world, "t-other", "default");
    let other = call_with(&mut world, &other_token);
    assert_ne!(other, first);

    // A changed subscription tier is told at once.
    world
        .manifest
        .subscriptions
        .get_mut(&("app-1".to_string(), "api-1".to_string()))
        .unwrap()
        .tier = "Gold".into();
    assert_eq!(world.publish().status, 200);
    let changed = call_with(&mut world, &bearer);
    assert_eq!(verified(&changed[0])[format!("{DIALECT}/tier")], "Gold");

    // Close to its expiry it is made again.
    let renewed_at = NOW_SECS + LIFETIME_SECS - 30;
    *world.host.now_ms.borrow_mut() = renewed_at * 1000;
    let renewed = call_with(&mut world, &bearer);
    assert_eq!(verified(&renewed[0])["exp"], renewed_at + LIFETIME_SECS);
}

#[test]
fn sent_only_where_the_gateway_and_the_tenant_both_switched_it_on() {
    // The gateway's switch off: the tenant's alone sends nothing.
    let mut world = world_with("off", Some(backend_jwt(&["carbon.super"], GATEWAY_SECRET)));
    let bearer = token(&world, "t-user", "default");
    assert!(
        call_with(&mut world, &bearer).is_empty(),
        "nor the client's"
    );

    // Another tenant's switch: not this API's.
    let mut world = world_with("on", Some(backend_jwt(&["acme.com"], GATEWAY_SECRET)));
    assert!(call_with(&mut world, &bearer).is_empty());

    // No tenant's.
    let mut world = world_with("on", None);
    assert!(call_with(&mut world, &bearer).is_empty());
}

#[test]
fn a_key_this_gateway_cannot_open_fails_the_call_unsent() {
    let mut world = world_with("on", Some(backend_jwt(&["carbon.super"], "another secret")));
    let bearer = token(&world, "t-user", "default");
    let response = world.call("GET", "/dev/v1/devs/alice", &[("authorization", &bearer)]);
    assert_eq!((response.status, code(&response).as_str()), (502, "101503"));
    assert!(
        world.host.sent.borrow().is_empty(),
        "never reached the backend"
    );
}
