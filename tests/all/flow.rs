//! The whole flow of spec §5 steps 1-3, with the status codes WSO2 gives.

use harness::stack::ALL_SCOPES;
use harness::{PUBLISHER, STORE, jwt_claims, jwt_header, spec_api_record};
use serde_json::json;

use crate::Env;

pub async fn spec_flow_end_to_end(env: Env) {
    let api = &env.api;
    // Step 1: register a client with Basic admin.
    let client = api
        .register("admin", harness::ADMIN_PASSWORD, "rest_api_publisher")
        .await
        .expect(200);
    assert_eq!(client.body["clientName"], "admin_rest_api_publisher");
    assert_eq!(client.body["callBackURL"], "www.google.lk");
    assert_eq!(client.body["isSaasApplication"], true);
    assert_eq!(client.body["appOwner"], "admin");
    assert!(
        client.body["jsonString"]
            .as_str()
            .unwrap()
            .contains("password refresh_token")
    );

    // Step 2: a password-grant token with the management scopes.
    let reply = api
        .password_token(&client, "admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await
        .expect(200);
    assert_eq!(reply.body["token_type"], "Bearer");
    assert_eq!(reply.body["expires_in"], 3600);
    assert_eq!(reply.body["scope"], ALL_SCOPES);
    assert!(reply.body["refresh_token"].is_string());
    assert_eq!(reply.headers["cache-control"], "no-store");
    let token = reply.str("access_token");
    assert_eq!(jwt_header(&token)["alg"], "EdDSA");
    let kid = jwt_header(&token)["kid"].as_str().unwrap().to_string();
    let claims = jwt_claims(&token);
    for claim in ["iss", "sub", "iat", "exp", "jti", "scope", "client_id"] {
        assert!(
            !claims[claim].is_null(),
            "claim {claim} missing in {claims}"
        );
    }
    assert_eq!(claims["sub"], "admin");
    let jwks = api.get("/oauth2/jwks", "").await.expect(200);
    assert!(
        jwks.body["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["kid"] == kid.as_str() && k["kty"] == "OKP" && k["crv"] == "Ed25519")
    );

    // Publisher: create exactly the record of spec 2.3, then publish it.
    let record = spec_api_record();
    let created = api
        .post_json(&format!("{PUBLISHER}/apis"), &token, &record)
        .await
        .expect(201);
    let id = created.str("id");
    assert_eq!(
        created.headers["location"],
        format!("{PUBLISHER}/apis/{id}").as_str()
    );
    // Every field as given, but the backend password: write-only, answered masked.
    let mut expected = record.clone();
    expected["endpointSecurity"]["password"] = json!("********");
    for (field, value) in expected.as_object().unwrap() {
        assert_eq!(
            &created.body[field], value,
            "field {field} not returned as given"
        );
    }
    assert_eq!(created.body["status"], "CREATED");
    let fetched = api
        .get(&format!("{PUBLISHER}/apis/{id}"), &token)
        .await
        .expect(200);
    assert_eq!(fetched.body, created.body);
    let published = api
        .post_empty(
            &format!("{PUBLISHER}/apis/change-lifecycle?apiId={id}&action=Publish"),
            &token,
        )
        .await
        .expect(200);
    assert!(
        published.body.is_null(),
        "change-lifecycle answers with no body"
    );
    let fetched = api
        .get(&format!("{PUBLISHER}/apis/{id}"), &token)
        .await
        .expect(200);
    assert_eq!(fetched.body["status"], "PUBLISHED");

    // A second published API, to subscribe to by unique name.
    let mut second = record.clone();
    second["name"] = json!("RepoStatsAPI");
    second["context"] = json!("/repo-stats");
    second["version"] = json!("1.0.0");
    let second_id = api
        .post_json(&format!("{PUBLISHER}/apis"), &token, &second)
        .await
        .expect(201)
        .str("id");
    api.post_empty(
        &format!("{PUBLISHER}/apis/change-lifecycle?apiId={second_id}&action=Publish"),
        &token,
    )
    .await
    .expect(200);

    // Store: an application, subscribed by id and by unique name.
    let app = api
        .post_json(
            &format!("{STORE}/applications"),
            &token,
            &json!({"name": "DevPortalApp", "description": "spec flow", "throttlingTier": "Unlimited", "callbackUrl": ""}),
        )
        .await
        .expect(201);
    let app_id = app.str("applicationId");
    assert_eq!(
        app.headers["location"],
        format!("{STORE}/applications/{app_id}").as_str()
    );
    let by_id = api
        .post_json(
            &format!("{STORE}/subscriptions"),
            &token,
            &json!({"tier": "Unlimited", "apiIdentifier": id, "applicationId": app_id}),
        )
        .await
        .expect(201);
    assert!(by_id.body["subscriptionId"].is_string());
    assert_eq!(by_id.body["apiIdentifier"], "admin-DevManagementAPI-v1.0.0");
    assert_eq!(by_id.body["status"], "UNBLOCKED");
    api.post_json(
        &format!("{STORE}/subscriptions"),
        &token,
        &json!({"tier": "Unlimited", "apiIdentifier": "admin-RepoStatsAPI-1.0.0", "applicationId": app_id}),
    )
    .await
    .expect(201);
    let subscriptions = api
        .get(
            &format!("{STORE}/subscriptions?applicationId={app_id}"),
            &token,
        )
        .await
        .expect(200);
    assert_eq!(subscriptions.body["count"], 2);

    // Keys, then step 3: a token from the consumer key and secret with scope default.
    let keys = api
        .post_json(
            &format!("{STORE}/applications/generate-keys?applicationId={app_id}"),
            &token,
            &json!({
                "validityTime": "3600",
                "keyType": "PRODUCTION",
                "accessAllowDomains": ["ALL"],
                "scopes": ["am_application_scope", "default"],
                "supportedGrantTypes": ["urn:ietf:params:oauth:grant-type:saml2-bearer", "iwa:ntlm", "refresh_token", "client_credentials", "password"]
            }),
        )
        .await
        .expect(200);
    assert_eq!(keys.body["keyType"], "PRODUCTION");
    let (key, secret) = (keys.str("consumerKey"), keys.str("consumerSecret"));
    assert!(keys.body["token"]["accessToken"].is_string());
    let app_token = api
        .token(
            &key,
            &secret,
            &[
                ("grant_type", "password"),
                ("username", "admin"),
                ("password", harness::ADMIN_PASSWORD),
                ("scope", "default"),
            ],
        )
        .await
        .expect(200);
    assert_eq!(app_token.body["scope"], "default");
    // The application's tokenType is WSO2's default, OAUTH: opaque tokens of 36
    // characters (a UUID, as WSO2 2.6 issues).
    let access_token = app_token.str("access_token");
    assert_eq!(access_token.len(), 36, "{access_token}");
    let claims = harness::token_claims(api, &env.data_dir, &access_token).await;
    assert_eq!(claims["application_id"], app_id.as_str());
    assert_eq!(claims["key_type"], "PRODUCTION");
    assert_eq!(claims["client_id"], key.as_str());

    // The consumer key works with client_credentials too: no refresh token, application scope.
    let credentials = api
        .token(
            &key,
            &secret,
            &[("grant_type", "client_credentials"), ("scope", "default")],
        )
        .await
        .expect(200);
    assert!(credentials.body.get("refresh_token").is_none());
    assert!(credentials.str("scope").contains("am_application_scope"));

    // The key can be read back, and the application lists it.
    let read = api
        .get(
            &format!("{STORE}/applications/{app_id}/keys/PRODUCTION"),
            &token,
        )
        .await
        .expect(200);
    assert_eq!(read.str("consumerKey"), key);
    let app = api
        .get(&format!("{STORE}/applications/{app_id}"), &token)
        .await
        .expect(200);
    assert_eq!(app.body["keys"][0]["consumerKey"], key.as_str());
}
