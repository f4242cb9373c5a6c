//! The application's `tokenType`: `OAUTH`, WSO2's default, gets
//! 36-character opaque tokens that gateways introspect at the control plane (RFC 7662,
//! with the gateway secret) and remember; `JWT` gets self-contained tokens.

use harness::steps::{Steps, TokenType, keys_request};
use harness::{Backend, Client, STORE, gateway_secret, jwt_claims};
use reqwest::Method;
use serde_json::json;

use crate::InProcess;
use crate::credentials::revoke;
use crate::observability::{assert_grew, ops_setting, ops_url, scrape};

/// A token no one was issued, in the form of an opaque one.
const UNKNOWN: &str = "0b9ad3a4-2f6e-4c1e-9d7a-5a1f8c2e4b6d";

/// The control plane's series counting introspections of active tokens.
const ACTIVE: &str = r#"apim_token_introspections_total{active="true"}"#;
/// And of inactive ones.
const INACTIVE: &str = r#"apim_token_introspections_total{active="false"}"#;

/// A password grant for an application's consumer key.
fn password_form(validity: Option<&str>) -> Vec<(&str, &str)> {
    let mut form = vec![
        ("grant_type", "password"),
        ("username", "admin"),
        ("password", harness::ADMIN_PASSWORD),
        ("scope", "default"),
    ];
    form.extend(validity.map(|secs| ("validity_period", secs)));
    form
}

/// Whether the control plane calls `token` active.
async fn active(api: &Client, secret: &str, token: &str) -> bool {
    let answer = api.introspect(secret, token).await.expect(200);
    answer.body["active"] == true
}

pub async fn opaque_tokens_and_introspection(env: InProcess) {
    let api = &env.api;
    let secret = gateway_secret(&env.data_dir);
    let admin = api
        .login("admin", harness::ADMIN_PASSWORD, harness::stack::ALL_SCOPES)
        .await;
    let steps = Steps::new(api, &admin);

    // WSO2's default tokenType: an opaque access token, a UUID of 36 characters, which
    // introspection describes; the refresh token is opaque too, within the 100 characters
    // WSO2 clients keep.
    let app = steps
        .create_application("Opaque", "Unlimited")
        .await
        .unwrap();
    let shown = api
        .get(&format!("{STORE}/applications/{app}"), &admin)
        .await
        .expect(200);
    assert_eq!(shown.body["tokenType"], "OAUTH");
    let keys = steps.generate_keys(&app, &keys_request()).await.unwrap();
    let issued = api
        .token(&keys.key, &keys.secret, &password_form(None))
        .await
        .expect(200);
    let token = issued.str("access_token");
    assert_eq!(token.len(), 36);
    assert!(issued.str("refresh_token").len() <= 100);
    assert_eq!(issued.body["expires_in"], 3600);
    let answer = api.introspect(&secret, &token).await.expect(200);
    assert_eq!(answer.body["active"], true);
    assert_eq!(answer.body["application_id"], app.as_str());
    assert_eq!(answer.body["key_type"], "PRODUCTION");
    assert_eq!(answer.body["client_id"], keys.key.as_str());
    assert_eq!(answer.body["username"], "admin");
    assert_eq!(answer.body["scope"], "default");
    assert_eq!(answer.body["token_type"], "Bearer");
    let lifetime = answer.body["exp"].as_i64().unwrap() - answer.body["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 3600);
    assert_eq!(answer.headers["cache-control"], "no-store");
    // An opaque token opens nothing on the management API.
    api.get(&format!("{STORE}/applications"), &token)
        .await
        .expect(401);

    introspection_refuses_callers_without_the_gateway_secret(api, &secret, &admin, &token).await;
    introspection_takes_hostile_input(api, &secret).await;

    // A refresh replaces the access token: the old one is inactive at once.
    let refreshed = api
        .token(
            &keys.key,
            &keys.secret,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &issued.str("refresh_token")),
            ],
        )
        .await
        .expect(200);
    let renewed = refreshed.str("access_token");
    assert_eq!(renewed.len(), 36);
    assert!(!active(api, &secret, &token).await);
    assert!(active(api, &secret, &renewed).await);

    // Revocation (RFC 7009): another client's attempt changes nothing; the owner's ends it.
    let other = steps
        .create_application("Other", "Unlimited")
        .await
        .unwrap();
    let stranger = steps.generate_keys(&other, &keys_request()).await.unwrap();
    revoke(api, &(stranger.key, stranger.secret), &renewed)
        .await
        .expect(200);
    assert!(active(api, &secret, &renewed).await);
    let credentials = api
        .token(
            &keys.key,
            &keys.secret,
            &[("grant_type", "client_credentials")],
        )
        .await
        .expect(200)
        .str("access_token");
    revoke(api, &(keys.key.clone(), keys.secret.clone()), &renewed)
        .await
        .expect(200);
    assert!(!active(api, &secret, &renewed).await);
    assert!(active(api, &secret, &credentials).await);

    // Deleting the application ends its tokens.
    api.delete(&format!("{STORE}/applications/{app}"), &admin)
        .await
        .expect(200);
    assert!(!active(api, &secret, &credentials).await);

    // tokenType JWT: a self-contained token, which introspection describes too.
    let signed = steps
        .create_typed_application("Signed", "Unlimited", TokenType::Jwt)
        .await
        .unwrap();
    let signed_keys = steps.generate_keys(&signed, &keys_request()).await.unwrap();
    let jwt = api
        .token(&signed_keys.key, &signed_keys.secret, &password_form(None))
        .await
        .expect(200)
        .str("access_token");
    assert_eq!(jwt.split('.').count(), 3);
    assert_eq!(jwt_claims(&jwt)["application_id"], signed.as_str());
    let answer = api.introspect(&secret, &jwt).await.expect(200);
    assert_eq!(answer.body["application_id"], signed.as_str());
    // A tokenType nobody defined is refused; the legitimate ones are taken.
    api.post_json(
        &format!("{STORE}/applications"),
        &admin,
        &json!({"name": "Odd", "throttlingTier": "Unlimited", "tokenType": "SAML"}),
    )
    .await
    .expect_error(400, "tokenType");
}

/// Only gateways introspect: without the gateway secret as bearer token, 401 whatever
/// else is presented, and the token is not looked at.
async fn introspection_refuses_callers_without_the_gateway_secret(
    api: &Client,
    secret: &str,
    management_token: &str,
    token: &str,
) {
    let form = [("token", token)];
    let http = reqwest::Client::new();
    let url = format!("{}/oauth2/introspect", api.base);
    let refused = [
        http.post(&url).form(&form),
        http.post(&url).bearer_auth("").form(&form),
        http.post(&url)
            .bearer_auth(format!("{secret}x"))
            .form(&form),
        http.post(&url).bearer_auth(&secret[1..]).form(&form),
        http.post(&url).bearer_auth(management_token).form(&form),
        http.post(&url).bearer_auth(token).form(&form),
        http.post(&url)
            .basic_auth("gateway", Some(secret))
            .form(&form),
    ];
    for request in refused {
        let reply = api.send(request).await;
        assert_eq!(reply.status, 401, "{}", reply.body);
    }
    // The legitimate caller, for comparison.
    assert!(active(api, secret, token).await);
}

/// Whatever is sent, a clear answer: 400 for a malformed request, `{"active":false}` and
/// nothing else for anything that is not an active token.
async fn introspection_takes_hostile_input(api: &Client, secret: &str) {
    let inactive = [
        UNKNOWN.to_string(),
        UNKNOWN.to_uppercase(),
        "x".repeat(36),
        "eyJhbGciOiJFZERTQSJ9.e30.c2ln".to_string(),
        "' OR 1=1 --".to_string(),
        "\u{0}\u{7f}é🦀".to_string(),
        "a".repeat(200_000),
    ];
    for token in &inactive {
        let reply = api.introspect(secret, token).await.expect(200);
        assert_eq!(reply.body, json!({"active": false}));
    }
    let url = format!("{}/oauth2/introspect", api.base);
    let http = reqwest::Client::new();
    let not_utf8 = http
        .post(&url)
        .bearer_auth(secret)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(b"token=%FF%FE&token=%00".to_vec());
    assert_eq!(api.send(not_utf8).await.body, json!({"active": false}));
    let malformed = [
        http.post(&url).bearer_auth(secret).form(&[("token", "")]),
        http.post(&url)
            .bearer_auth(secret)
            .form(&[("other", UNKNOWN)]),
        http.post(&url)
            .bearer_auth(secret)
            .json(&json!({"token": UNKNOWN})),
    ];
    for request in malformed {
        let reply = api.send(request).await;
        assert_eq!(reply.status, 400, "{}", reply.body);
    }
    let reply = api.send(http.get(&url).bearer_auth(secret)).await;
    assert_eq!(reply.status, 405);
}

pub async fn token_types_at_the_gateway_on_the_host_path(database: Backend) {
    token_types_at_the_gateway(database, &[]).await;
}

pub async fn token_types_at_the_gateway_on_the_component_path(database: Backend) {
    token_types_at_the_gateway(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// The same with the component hosted as Spin hosts it: a fresh instance per request, a
/// SQLite store (tokens known through the store alone).
pub async fn token_types_at_the_gateway_in_the_spin_like_mode(database: Backend) {
    let settings = harness::stack::spin_like(&harness::temp_dir());
    token_types_at_the_gateway(database, &settings).await;
}

pub async fn token_types_at_the_gateway_on_the_p3_artefact(database: Backend) {
    token_types_at_the_gateway(database, &harness::p3_settings()).await;
}

/// Waits until a call with `token` answers `status` and, for refusals, `fault`.
async fn answers(gw: &Client, path: &str, token: &str, status: u16, fault: &str) {
    harness::eventually(gw, Method::GET, path, token, |reply| {
        reply.status == status && (fault.is_empty() || reply.fault_code() == fault)
    })
    .await;
}

/// An `OAUTH` application's opaque token calls an API through the gateway: one
/// introspection on first use, none after; a bogus one is refused with 900901, a revoked
/// one once the revocation arrives, an expired one; a `JWT` application's token costs no
/// introspection. With the control plane down, tokens already known still call and an
/// unknown one is answered WSO2's 900900, never admitted.
async fn token_types_at_the_gateway(database: Backend, settings: &[(&'static str, String)]) {
    let mut stack = harness::stack::Launch {
        database,
        gateway: settings,
        control_plane: &[ops_setting()],
        ..Default::default()
    }
    .start()
    .await;
    let ops = ops_url(stack.control_plane.as_ref().unwrap());
    let gw = &stack.gw;
    let api = stack.api("Typed", json!({}), &["Publish"]).await;
    let path = "/typed/v1.0.0/devs/alice";
    let steps = stack.steps();
    let signed = steps
        .subscribed_typed_application("Signed", "Unlimited", TokenType::Jwt, &[&api])
        .await
        .unwrap();
    let jwt = stack
        .app_token(&signed.keys.key, &signed.keys.secret, &[])
        .await;
    assert_eq!(jwt.split('.').count(), 3);
    let (_, key, secret, _) = stack.application("Opaque", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    assert_eq!(token.len(), 36);
    answers(gw, path, &jwt, 200, "").await;

    let before = scrape(&ops).await;
    answers(gw, path, &token, 200, "").await;
    for _ in 0..3 {
        assert_eq!(gw.get(path, &token).await.status, 200);
        assert_eq!(gw.get(path, &jwt).await.status, 200);
    }
    let bogus = gw.get(path, UNKNOWN).await;
    assert_eq!((bogus.status, bogus.fault_code()), (401, "900901"));
    let not_a_uuid = gw.get(path, &"x".repeat(36)).await;
    assert_eq!(
        (not_a_uuid.status, not_a_uuid.fault_code()),
        (401, "900901")
    );
    assert_grew(
        &before,
        &scrape(&ops).await,
        &[(ACTIVE, 1.0), (INACTIVE, 1.0)],
    );

    // Revoked through the gateway's /revoke: refused once the revocation arrives, as a
    // revoked JWT is.
    let revoked = stack
        .gw
        .send(
            reqwest::Client::new()
                .post(format!("{}/revoke", gw.base))
                .basic_auth(&key, Some(&secret))
                .form(&[("token", token.as_str())]),
        )
        .await;
    assert_eq!(revoked.status, 200);
    answers(gw, path, &token, 401, "900901").await;

    // Expired: one never used is unknown (900901); one known expires where it is kept.
    let unused = stack
        .app_token(&key, &secret, &[("validity_period", "1")])
        .await;
    let brief = stack
        .app_token(&key, &secret, &[("validity_period", "4")])
        .await;
    assert_eq!(gw.get(path, &brief).await.status, 200);
    tokio::time::sleep(std::time::Duration::from_millis(5100)).await;
    let reply = gw.get(path, &unused).await;
    assert_eq!((reply.status, reply.fault_code()), (401, "900901"));
    let reply = gw.get(path, &brief).await;
    assert_eq!(reply.status, 401, "{}", reply.body);
    assert!(["900901", "900903"].contains(&reply.fault_code()));

    // The control plane down: known tokens still call, an unknown one cannot be checked.
    let known = stack.app_token(&key, &secret, &[]).await;
    let unknown = stack.app_token(&key, &secret, &[]).await;
    assert_eq!(gw.get(path, &known).await.status, 200);
    stack.control_plane.take().unwrap().stop().await;
    let gw = &stack.gw;
    assert_eq!(gw.get(path, &known).await.status, 200);
    assert_eq!(gw.get(path, &jwt).await.status, 200);
    let reply = gw.get(path, &unknown).await;
    assert_eq!(
        (reply.status, reply.fault_code()),
        (500, "900900"),
        "{}",
        reply.body
    );
    let json = gw
        .send(
            gw.request(Method::GET, path, &unknown)
                .header("accept", "application/json"),
        )
        .await;
    assert_eq!(
        json.body["fault"]["message"],
        "Unclassified Authentication Failure"
    );
}

/// Made-up opaque tokens cannot drive the control plane one for one: a flood of them from
/// one client address costs at most its share of introspections a second (the rest are
/// 503 with `Retry-After` at once, or 401 once found inactive), while a real token's first
/// use from another address beside the flood is admitted, retried as `Retry-After` says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_made_up_tokens_is_bounded() {
    use futures_util::StreamExt as _;
    let stack = harness::stack::Launch {
        control_plane: &[ops_setting()],
        ..Default::default()
    }
    .start()
    .await;
    let ops = ops_url(stack.control_plane.as_ref().unwrap());
    let api = stack.api("Flooded", json!({}), &["Publish"]).await;
    let path = "/flooded/v1.0.0/devs/alice";
    let (_, key, secret, _) = stack.application("Real", "Unlimited", &[&api]).await;
    let warm = stack.app_token(&key, &secret, &[]).await;
    answers(&stack.gw, path, &warm, 200, "").await;
    let real = stack.app_token(&key, &secret, &[]).await;
    let from = |address: &str| {
        reqwest::Client::builder()
            .local_address(address.parse::<std::net::IpAddr>().unwrap())
            .build()
            .unwrap()
    };
    let (flooder, user) = (from("127.0.0.1"), from("127.0.0.2"));
    let url = format!("{}{path}", stack.gw.base);

    let before = scrape(&ops).await;
    let started = std::time::Instant::now();
    let flood = futures_util::stream::iter(0..2_000_u32)
        .map(|n| {
            let request = flooder
                .get(&url)
                .bearer_auth(format!("{n:08x}-1111-4111-8111-111111111111"));
            async move {
                let reply = request.send().await.expect("the gateway answers");
                let retry = reply.headers().contains_key("retry-after");
                (reply.status().as_u16(), retry)
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>();
    let first_use = async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        for _ in 0..10 {
            let reply = user.get(&url).bearer_auth(&real).send().await.unwrap();
            if reply.status() != 503 {
                return reply.status().as_u16();
            }
            let wait: u64 = reply.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
        }
        503
    };
    let (flooded, real_status) = tokio::join!(flood, first_use);
    // The windows are the clock's seconds: a flood within one second may touch two.
    let seconds = started.elapsed().as_secs() + 2;
    assert_eq!(
        real_status, 200,
        "a real token's first use beside the flood"
    );

    let after = scrape(&ops).await;
    let asked: f64 = [ACTIVE, INACTIVE]
        .iter()
        .map(|series| after.get(*series).unwrap_or(&0.0) - before.get(*series).unwrap_or(&0.0))
        .sum();
    let share = gateway::introspect::CLIENT_INTROSPECTIONS_PER_SEC as f64;
    assert!(
        asked <= share * seconds as f64 + 1.0,
        "{asked} introspections for 2,000 made-up tokens within {seconds} clock seconds"
    );
    let busy = flooded.iter().filter(|(status, _)| *status == 503).count();
    assert!(busy > 0, "the bound never engaged: {flooded:?}");
    assert!(flooded.iter().all(|(status, retry)| match status {
        401 => true,
        503 => *retry,
        _ => false,
    }));
    stack.gateway.stop().await;
}
