//! The token service: grants, RFC 6749 §5.2 errors, refresh, revocation and scopes.

use harness::{PUBLISHER, STORE, jwt_claims};

use crate::InProcess;

async fn registered(env: &InProcess) -> (String, String) {
    let client = env
        .api
        .register("admin", harness::ADMIN_PASSWORD, "tokens")
        .await
        .expect(200);
    (client.str("clientId"), client.str("clientSecret"))
}

fn password_form<'a>(password: &'a str, scope: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("grant_type", "password"),
        ("username", "admin"),
        ("password", password),
        ("scope", scope),
    ]
}

pub async fn token_service_grants_and_errors(env: InProcess) {
    let api = &env.api;
    let (id, secret) = registered(&env).await;
    let good = password_form(harness::ADMIN_PASSWORD, "mgr:api_view");

    api.token(&id, "wrong", &good)
        .await
        .expect_oauth_error(401, "invalid_client");
    api.token("nobody", &secret, &good)
        .await
        .expect_oauth_error(401, "invalid_client");
    api.token(&id, &secret, &password_form("wrong", "mgr:api_view"))
        .await
        .expect_oauth_error(400, "invalid_grant");
    api.token(&id, &secret, &[("grant_type", "authorization_magic")])
        .await
        .expect_oauth_error(400, "unsupported_grant_type");
    api.token(&id, &secret, &[("username", "admin")])
        .await
        .expect_oauth_error(400, "invalid_request");
    api.token(
        &id,
        &secret,
        &[("grant_type", "password"), ("username", "admin")],
    )
    .await
    .expect_oauth_error(400, "invalid_request");
    // Registered for password and refresh_token only.
    api.token(&id, &secret, &[("grant_type", "client_credentials")])
        .await
        .expect_oauth_error(400, "unauthorized_client");

    // Client credentials in the form instead of HTTP Basic.
    let mut form = good.clone();
    form.extend([
        ("client_id", id.as_str()),
        ("client_secret", secret.as_str()),
    ]);
    let reply = api
        .send(
            reqwest::Client::new()
                .post(format!("{}/oauth2/token", api.base))
                .form(&form),
        )
        .await
        .expect(200);
    assert_eq!(reply.body["scope"], "mgr:api_view");

    // validity_period sets the lifetime; a nonsense one is refused.
    let mut short = good.clone();
    short.push(("validity_period", "120"));
    let reply = api.token(&id, &secret, &short).await.expect(200);
    assert_eq!(reply.body["expires_in"], 120);
    let claims = jwt_claims(&reply.str("access_token"));
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        120
    );
    let mut bad = good.clone();
    bad.push(("validity_period", "soon"));
    api.token(&id, &secret, &bad)
        .await
        .expect_oauth_error(400, "invalid_request");

    // An expired token no longer opens the publisher.
    let mut brief = good.clone();
    brief.push(("validity_period", "1"));
    let expiring = api
        .token(&id, &secret, &brief)
        .await
        .expect(200)
        .str("access_token");
    api.get(&format!("{PUBLISHER}/apis"), &expiring)
        .await
        .expect(200);
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    api.get(&format!("{PUBLISHER}/apis"), &expiring)
        .await
        .expect_error(401, "Unauthenticated request");

    // Not a form: invalid_request, not a 500.
    let json = reqwest::Client::new()
        .post(format!("{}/oauth2/token", api.base))
        .basic_auth(&id, Some(&secret))
        .json(&serde_json::json!({"grant_type": "password"}));
    assert_eq!(api.send(json).await.status / 100, 4);
}

pub async fn refresh_and_revocation(env: InProcess) {
    let api = &env.api;
    let (id, secret) = registered(&env).await;
    let first = api
        .token(
            &id,
            &secret,
            &password_form(harness::ADMIN_PASSWORD, "mgr:api_view mgr:api_create"),
        )
        .await
        .expect(200);
    let refresh = first.str("refresh_token");

    // Refresh: new tokens, same scopes; the used refresh token and its access token are spent.
    let refreshed = api
        .token(
            &id,
            &secret,
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await
        .expect(200);
    assert_eq!(refreshed.body["scope"], "mgr:api_view mgr:api_create");
    api.token(
        &id,
        &secret,
        &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
    )
    .await
    .expect_oauth_error(400, "invalid_grant");
    api.get(&format!("{PUBLISHER}/apis"), &first.str("access_token"))
        .await
        .expect(401);
    let access = refreshed.str("access_token");
    api.get(&format!("{PUBLISHER}/apis"), &access)
        .await
        .expect(200);

    // Another client cannot use or revoke this client's tokens.
    let other = api
        .register("admin", harness::ADMIN_PASSWORD, "other")
        .await
        .expect(200);
    let (other_id, other_secret) = (other.str("clientId"), other.str("clientSecret"));
    let revoke = |client_id: &str, client_secret: &str, token: &str| {
        reqwest::Client::new()
            .post(format!("{}/oauth2/revoke", api.base))
            .basic_auth(client_id, Some(client_secret))
            .form(&[("token", token)])
    };
    api.send(revoke(&other_id, &other_secret, &access))
        .await
        .expect(200);
    api.get(&format!("{PUBLISHER}/apis"), &access)
        .await
        .expect(200);
    api.token(
        &other_id,
        &other_secret,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refreshed.str("refresh_token")),
        ],
    )
    .await
    .expect_oauth_error(400, "invalid_grant");

    // RFC 7009: revoking the access token takes effect at once.
    api.send(revoke(&id, &secret, &access)).await.expect(200);
    api.get(&format!("{PUBLISHER}/apis"), &access)
        .await
        .expect_error(401, "Unauthenticated request");
    // Revoking a refresh token spends it and its access token.
    let next = api
        .token(
            &id,
            &secret,
            &password_form(harness::ADMIN_PASSWORD, "mgr:api_view"),
        )
        .await
        .expect(200);
    api.send(revoke(&id, &secret, &next.str("refresh_token")))
        .await
        .expect(200);
    api.get(&format!("{PUBLISHER}/apis"), &next.str("access_token"))
        .await
        .expect(401);
    api.token(
        &id,
        &secret,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &next.str("refresh_token")),
        ],
    )
    .await
    .expect_oauth_error(400, "invalid_grant");
    // Unknown tokens are answered 200; bad client credentials 401; no token 400.
    api.send(revoke(&id, &secret, "no-such-token"))
        .await
        .expect(200);
    api.send(revoke(&id, "wrong", &access))
        .await
        .expect_oauth_error(401, "invalid_client");
    api.send(
        reqwest::Client::new()
            .post(format!("{}/oauth2/revoke", api.base))
            .basic_auth(&id, Some(&secret))
            .form(&[("token_type_hint", "access_token")]),
    )
    .await
    .expect_oauth_error(400, "invalid_request");
}

pub async fn scopes_follow_roles(env: InProcess) {
    let api = &env.api;
    let all = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe mgr:tier_view";
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    api.add_user("cora", "cora-pw", &["creator"]).await;
    api.add_user("pete", "pete-pw", &["publisher"]).await;

    let login = |user: &'static str, password: &'static str| async move {
        let client = api.register(user, password, "scopes").await.expect(200);
        api.password_token(&client, user, password, all)
            .await
            .expect(200)
    };
    // Scopes a role lacks are dropped silently.
    let sam = login("sam", "sam-pw").await;
    assert_eq!(sam.body["scope"], "mgr:subscribe");
    let cora = login("cora", "cora-pw").await;
    assert_eq!(
        cora.body["scope"],
        "mgr:api_view mgr:api_create mgr:tier_view"
    );
    let pete = login("pete", "pete-pw").await;
    assert_eq!(
        pete.body["scope"],
        "mgr:api_view mgr:api_publish mgr:tier_view"
    );
    // Nothing grantable, or nothing asked: default.
    let client = api.register("sam", "sam-pw", "scopes").await.expect(200);
    let none = api
        .password_token(&client, "sam", "sam-pw", "mgr:api_publish")
        .await
        .expect(200);
    assert_eq!(none.body["scope"], "default");
    // WSO2's apim: prefix is not ours: dropped.
    let wrong_prefix = api
        .password_token(&client, "sam", "sam-pw", "apim:subscribe")
        .await
        .expect(200);
    assert_eq!(wrong_prefix.body["scope"], "default");

    // Every management call checks its scope: WSO2 answers 401 for a missing scope.
    let sam_token = sam.str("access_token");
    // Without the fixture's provider (admin): only an administrator names another one.
    let mut record = harness::spec_api_record();
    record.as_object_mut().unwrap().remove("provider");
    api.post_json(&format!("{PUBLISHER}/apis"), &sam_token, &record)
        .await
        .expect_error(401, "Unauthenticated request");
    api.get(&format!("{PUBLISHER}/apis"), &sam_token)
        .await
        .expect(401);
    api.get(&format!("{STORE}/applications"), &sam_token)
        .await
        .expect(200);
    let cora_token = cora.str("access_token");
    api.get(&format!("{STORE}/applications"), &cora_token)
        .await
        .expect(401);
    let id = api
        .post_json(&format!("{PUBLISHER}/apis"), &cora_token, &record)
        .await
        .expect(201)
        .str("id");
    api.post_empty(
        &format!("{PUBLISHER}/apis/change-lifecycle?apiId={id}&action=Publish"),
        &cora_token,
    )
    .await
    .expect(401);
    api.post_empty(
        &format!("{PUBLISHER}/apis/change-lifecycle?apiId={id}&action=Publish"),
        &pete.str("access_token"),
    )
    .await
    .expect(200);
    api.get(&format!("{PUBLISHER}/tiers/api"), &cora_token)
        .await
        .expect(200);
    api.get(&format!("{PUBLISHER}/tiers/api"), &sam_token)
        .await
        .expect(401);
    // No token, a malformed one, one signed by someone else.
    api.get(&format!("{PUBLISHER}/apis"), "")
        .await
        .expect_error(401, "Unauthenticated request");
    api.get(&format!("{PUBLISHER}/apis"), "not-a-jwt")
        .await
        .expect(401);
    let forged = format!("{}x", cora_token);
    api.get(&format!("{PUBLISHER}/apis"), &forged)
        .await
        .expect(401);
}
