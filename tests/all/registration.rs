//! Dynamic client registration as WSO2's v0.14 does it.

use serde_json::json;

use crate::InProcess;

pub async fn registration_follows_wso2(env: InProcess) {
    let api = &env.api;
    let first = api
        .register("admin", harness::ADMIN_PASSWORD, "cli")
        .await
        .expect(200);
    // The same owner and client name: the same client, and nothing new.
    let again = api
        .register("admin", harness::ADMIN_PASSWORD, "cli")
        .await
        .expect(200);
    assert_eq!(first.str("clientId"), again.str("clientId"));
    assert_eq!(first.str("clientSecret"), again.str("clientSecret"));
    assert!(again.body["appOwner"].is_null());
    let other = api
        .register("admin", harness::ADMIN_PASSWORD, "other")
        .await
        .expect(200);
    assert_ne!(first.str("clientId"), other.str("clientId"));

    // Bad or missing credentials: 401 with WSO2's body.
    api.register("admin", "wrong", "cli")
        .await
        .expect_error(401, "Unauthenticated request");
    let no_auth = reqwest::Client::new()
        .post(format!("{}/client-registration/v0.14/register", api.base))
        .json(&json!({"clientName": "x", "owner": "admin"}));
    api.send(no_auth)
        .await
        .expect_error(401, "Unauthenticated request");

    // The owner must be the authenticated user.
    let mismatch = reqwest::Client::new()
        .post(format!("{}/client-registration/v0.14/register", api.base))
        .basic_auth("admin", Some(harness::ADMIN_PASSWORD))
        .json(&json!({"clientName": "x", "owner": "someone", "grantType": "password", "saasApp": true}));
    api.send(mismatch).await.expect_error(
        400,
        "Logged in user 'admin' and application owner 'someone' should be same.",
    );

    // Missing name, malformed JSON, unknown property.
    let post = |body: &'static str| {
        reqwest::Client::new()
            .post(format!("{}/client-registration/v0.14/register", api.base))
            .basic_auth("admin", Some(harness::ADMIN_PASSWORD))
            .header("content-type", "application/json")
            .body(body)
    };
    api.send(post(r#"{"owner":"admin"}"#))
        .await
        .expect_error(400, "clientName");
    api.send(post(r#"{"owner":"admin","#))
        .await
        .expect_error(400, "Malformed request body.");
    api.send(post(r#"{"owner":"admin","clientName":"c","colour":"red"}"#))
        .await
        .expect_error(400, "Unrecognized property 'colour'");

    // A tenant user registers too, under the name WSO2 gives.
    api.add_user("alice@acme.com", "alice-pw", &["subscriber"])
        .await;
    let tenant = api
        .register("alice@acme.com", "alice-pw", "cli")
        .await
        .expect(200);
    assert_eq!(tenant.body["clientName"], "alice_cli");
    assert_ne!(tenant.str("clientId"), first.str("clientId"));
    // A user without any role may not register.
    api.add_user("nobody", "nobody-pw", &[]).await;
    api.register("nobody", "nobody-pw", "cli")
        .await
        .expect_error(403, "enough privileges");
}
