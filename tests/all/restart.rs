//! A restart keeps every record, key and signing key; rotation keeps old tokens valid.

use harness::{PUBLISHER, STORE, jwt_header, spec_api_record};
use serde_json::json;

use crate::Env;

pub async fn restart_keeps_records_and_keys(mut env: Env) {
    let token = env
        .api
        .login("admin", harness::ADMIN_PASSWORD, harness::stack::ALL_SCOPES)
        .await;
    let api_id = env
        .api
        .post_json(&format!("{PUBLISHER}/apis"), &token, &spec_api_record())
        .await
        .expect(201)
        .str("id");
    env.api
        .post_empty(
            &format!("{PUBLISHER}/apis/change-lifecycle?apiId={api_id}&action=Publish"),
            &token,
        )
        .await
        .expect(200);
    let app = env
        .api
        .post_json(
            &format!("{STORE}/applications"),
            &token,
            &json!({"name": "Durable", "throttlingTier": "Unlimited", "tokenType": "JWT"}),
        )
        .await
        .expect(201)
        .str("applicationId");
    env.api
        .post_json(
            &format!("{STORE}/subscriptions"),
            &token,
            &json!({"tier": "Unlimited", "apiIdentifier": api_id, "applicationId": app}),
        )
        .await
        .expect(201);
    let keys = env
        .api
        .post_json(
            &format!("{STORE}/applications/generate-keys?applicationId={app}"),
            &token,
            &json!({"validityTime": "3600", "keyType": "PRODUCTION", "accessAllowDomains": ["ALL"]}),
        )
        .await
        .expect(200);
    let kid = jwt_header(&token)["kid"].as_str().unwrap().to_string();
    let client = env
        .api
        .register("admin", harness::ADMIN_PASSWORD, "durable")
        .await
        .expect(200);

    env.restart().await;

    // The old token still verifies: the signing key survived.
    let fetched = env
        .api
        .get(&format!("{PUBLISHER}/apis/{api_id}"), &token)
        .await
        .expect(200);
    assert_eq!(fetched.body["status"], "PUBLISHED");
    assert_eq!(
        fetched.body["endpointConfig"],
        spec_api_record()["endpointConfig"]
    );
    let subs = env
        .api
        .get(
            &format!("{STORE}/subscriptions?applicationId={app}"),
            &token,
        )
        .await
        .expect(200);
    assert_eq!(subs.body["count"], 1);
    let again = env
        .api
        .register("admin", harness::ADMIN_PASSWORD, "durable")
        .await
        .expect(200);
    assert_eq!(again.str("clientId"), client.str("clientId"));
    let app_token = env
        .api
        .token(
            &keys.str("consumerKey"),
            &keys.str("consumerSecret"),
            &[("grant_type", "client_credentials")],
        )
        .await
        .expect(200)
        .str("access_token");
    assert_eq!(jwt_header(&app_token)["kid"], kid.as_str());

    // Rotation: new tokens carry the new key; old ones still verify; both are in the JWKS.
    let rotate = reqwest::Client::new()
        .post(format!(
            "{}/api/am/admin/v0.14/signing-keys/rotate",
            env.api.base
        ))
        .basic_auth("admin", Some(harness::ADMIN_PASSWORD));
    let new_kid = env.api.send(rotate).await.expect(201).str("kid");
    let fresh = env
        .api
        .login("admin", harness::ADMIN_PASSWORD, "mgr:api_view")
        .await;
    assert_eq!(jwt_header(&fresh)["kid"], new_kid.as_str());
    env.api
        .get(&format!("{PUBLISHER}/apis"), &fresh)
        .await
        .expect(200);
    env.api
        .get(&format!("{PUBLISHER}/apis"), &token)
        .await
        .expect(200);
    let jwks = env.api.get("/oauth2/jwks", "").await.expect(200);
    let access_token_keys = jwks.body["keys"].as_array().unwrap().iter();
    assert_eq!(access_token_keys.filter(|k| k["kty"] == "OKP").count(), 2);
    // Only administrators rotate.
    env.api.add_user("sam", "sam-pw", &["subscriber"]).await;
    let denied = reqwest::Client::new()
        .post(format!(
            "{}/api/am/admin/v0.14/signing-keys/rotate",
            env.api.base
        ))
        .basic_auth("sam", Some("sam-pw"));
    env.api.send(denied).await.expect(403);

    // And the rotated key survives another restart.
    env.restart().await;
    env.api
        .get(&format!("{PUBLISHER}/apis"), &fresh)
        .await
        .expect(200);
}
