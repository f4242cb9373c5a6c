//! WSO2's backend JWT through a real gateway: once a tenant administrator switches it on
//! (on a gateway started with `APIM_BACKEND_JWT=on`), the backend gets an
//! `X-JWT-Assertion` with WSO2's claims that verifies against the control plane's
//! published keys, for opaque and JWT tokens alike; a rotated key signs the next ones
//! while the old stays published; switched off, none is sent. A client's own assertion
//! never reaches the backend.

use harness::stack::Stack;
use harness::{ADMIN_PASSWORD, Backend, Client, Reply};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

const SWITCH: &str = "/api/am/admin/v0.14/backend-jwt";
const DIALECT: &str = "http://wso2.org/claims";

pub async fn backend_jwt_on_the_host_path(database: Backend) {
    the_backend_is_told_who_called(database, &[]).await;
}

pub async fn backend_jwt_on_the_component_path(database: Backend) {
    let component = [("APIM_HOST_FORWARDING", "false".into())];
    the_backend_is_told_who_called(database, &component).await;
}

/// A GET of `path` with `token` and a forged assertion, as the echoing backend got it.
async fn call(gw: &Client, path: &str, token: &str) -> Reply {
    let request = gw
        .request(reqwest::Method::GET, path, token)
        .header("x-jwt-assertion", "forged.by.the.client");
    gw.send(request).await.expect(200)
}

/// The assertion the backend got, if any.
fn assertion(reply: &Reply) -> Option<String> {
    let headers = &reply.body["headers"];
    headers["x-jwt-assertion"].as_str().map(str::to_string)
}

/// Calls until the backend's assertion satisfies `done` (within 15 s).
/// The key id in an assertion's header, unverified.
fn kid_of(assertion: &str) -> Option<String> {
    use base64::Engine as _;
    let header = assertion.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .ok()?;
    let header: Value = serde_json::from_slice(&bytes).ok()?;
    header["kid"].as_str().map(str::to_string)
}

async fn until_sent(
    gw: &Client,
    path: &str,
    token: &str,
    done: impl Fn(Option<&str>) -> bool,
) -> Option<String> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let sent = assertion(&call(gw, path, token).await);
        if done(sent.as_deref()) {
            return sent;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the gateway did not take the change: {sent:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The claims of `assertion`, verified with the control plane's published backend keys.
async fn verified(mgmt: &Client, assertion: &str) -> (String, Value) {
    let header = jsonwebtoken::decode_header(assertion).expect("a JWS");
    assert_eq!(header.alg, Algorithm::RS256);
    let kid = header.kid.expect("a key id");
    let published = mgmt.get("/oauth2/backend-jwks", "").await.expect(200).body;
    let keys: JwkSet = serde_json::from_value(published).expect("a JWKS");
    let jwk = keys.find(&kid).expect("the key is published");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&["wso2.org/products/am"]);
    validation.validate_aud = false;
    let data = jsonwebtoken::decode::<Value>(
        assertion,
        &DecodingKey::from_jwk(jwk).expect("an RSA key"),
        &validation,
    )
    .expect("verifies");
    (kid, data.claims)
}

/// The switch as the administrator sets it.
async fn switch(mgmt: &Client, enabled: bool) {
    let body = json!({ "enabled": enabled });
    let reply = mgmt
        .basic(
            reqwest::Method::PUT,
            SWITCH,
            ("admin", ADMIN_PASSWORD),
            Some(&body),
        )
        .await
        .expect(200);
    assert_eq!(reply.body, body);
}

async fn the_backend_is_told_who_called(database: Backend, settings: &[(&'static str, String)]) {
    let mut gateway = settings.to_vec();
    gateway.push(("APIM_BACKEND_JWT", "on".into()));
    let stack = Stack::start_on(&database, harness::temp_dir(), &[], &gateway, &[]).await;
    let (mgmt, gw) = (&stack.mgmt, &stack.gw);
    let api = stack.api("Told", json!({}), &["Publish"]).await;
    let (application, key, secret, _) = stack.application("Caller", "Unlimited", &[&api]).await;
    let user_token = stack.app_token(&key, &secret, &[]).await;
    let path = "/told/v1.0.0/devs/alice";

    // Off (WSO2's default): nothing, not even the client's.
    assert_eq!(assertion(&call(gw, path, &user_token).await), None);

    // Refusals change nothing: a subscriber, and a body that is not the switch.
    stack
        .mgmt
        .add_user("sub", "sub-password-1", &["subscriber"])
        .await;
    let body = json!({"enabled": true});
    mgmt.basic(
        reqwest::Method::PUT,
        SWITCH,
        ("sub", "sub-password-1"),
        Some(&body),
    )
    .await
    .expect(403);
    for bad in [
        json!({"enabled": "yes"}),
        json!({"enabled": true, "header": "X-Other"}),
        json!([]),
    ] {
        mgmt.basic(
            reqwest::Method::PUT,
            SWITCH,
            ("admin", ADMIN_PASSWORD),
            Some(&bad),
        )
        .await
        .expect(400);
    }
    let read = mgmt
        .basic(
            reqwest::Method::GET,
            SWITCH,
            ("admin", ADMIN_PASSWORD),
            None,
        )
        .await
        .expect(200);
    assert_eq!(read.body, json!({"enabled": false}));

    // On: the user's token (opaque, password grant) is told as WSO2 tells it.
    switch(mgmt, true).await;
    let first = until_sent(gw, path, &user_token, |a| a.is_some())
        .await
        .unwrap();
    let (first_kid, claims) = verified(mgmt, &first).await;
    let claim = |name: &str| format!("{DIALECT}/{name}");
    let expected = [
        ("subscriber", "admin"),
        ("applicationid", application.as_str()),
        ("applicationname", "Caller"),
        ("applicationtier", "Unlimited"),
        ("apicontext", "/told/v1.0.0"),
        ("version", "v1.0.0"),
        ("tier", "Unlimited"),
        ("keytype", "PRODUCTION"),
        ("usertype", "APPLICATION_USER"),
        ("enduser", "admin@carbon.super"),
        ("enduserTenantId", "-1234"),
    ];
    for (name, value) in expected {
        assert_eq!(claims[claim(name)], value, "{name}: {claims}");
    }
    let exp = claims["exp"].as_i64().expect("exp in seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now + 800..=now + 901).contains(&exp), "15 minutes: {exp}");
    assert_eq!(
        assertion(&call(gw, path, &user_token).await).as_deref(),
        Some(first.as_str()),
        "made once per token and API"
    );

    // An application's own token (client credentials) is WSO2's APPLICATION user.
    let app_token = gw
        .token_at(
            "/token",
            &key,
            &secret,
            &[("grant_type", "client_credentials")],
        )
        .await
        .expect(200)
        .str("access_token");
    let sent = assertion(&call(gw, path, &app_token).await).expect("sent");
    assert_eq!(
        verified(mgmt, &sent).await.1[claim("usertype")],
        "APPLICATION"
    );

    // A rotated key signs the next assertions; the old one stays published.
    let rotated = mgmt
        .basic(
            reqwest::Method::POST,
            &format!("{SWITCH}/rotate-key"),
            ("admin", ADMIN_PASSWORD),
            None,
        )
        .await
        .expect(201)
        .str("kid");
    // Instances holding an assertion signed before the rotation may send it a while more:
    // wait for one under the new key.
    let renewed = until_sent(gw, path, &user_token, |a| {
        a.and_then(kid_of).as_deref() == Some(rotated.as_str())
    })
    .await;
    assert_eq!(verified(mgmt, &renewed.unwrap()).await.0, rotated);
    assert_eq!(verified(mgmt, &first).await.0, first_kid);

    // Off again: nothing.
    switch(mgmt, false).await;
    until_sent(gw, path, &user_token, |a| a.is_none()).await;
}
