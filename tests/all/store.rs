//! Store: applications, the DefaultApplication, subscriptions and keys.

use harness::stack::ALL_SCOPES;
use harness::{PUBLISHER, STORE, spec_api_record};
use serde_json::json;

use crate::InProcess;

/// Creates the spec's API (optionally changed) and publishes it unless `publish` is false.
async fn api_in_state(
    env: &InProcess,
    token: &str,
    name: &str,
    tiers: &[&str],
    publish: bool,
) -> String {
    let mut record = spec_api_record();
    record["name"] = json!(name);
    record["context"] = json!(format!("/{}", name.to_lowercase()));
    record["tiers"] = json!(tiers);
    let id = env
        .api
        .post_json(&format!("{PUBLISHER}/apis"), token, &record)
        .await
        .expect(201)
        .str("id");
    if publish {
        env.api
            .post_empty(
                &format!("{PUBLISHER}/apis/change-lifecycle?apiId={id}&action=Publish"),
                token,
            )
            .await
            .expect(200);
    }
    id
}

pub async fn applications_and_default_application(env: InProcess) {
    let api = &env.api;
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    let token = api.login("sam", "sam-pw", "mgr:subscribe").await;
    let apps = format!("{STORE}/applications");

    // The first store call finds a DefaultApplication with tier Unlimited.
    let list = api.get(&apps, &token).await.expect(200);
    assert_eq!(list.body["count"], 1);
    assert_eq!(list.body["list"][0]["name"], "DefaultApplication");
    assert_eq!(list.body["list"][0]["throttlingTier"], "Unlimited");
    assert_eq!(list.body["list"][0]["status"], "APPROVED");

    let created = api
        .post_json(&apps, &token, &json!({"name": "Mine", "throttlingTier": "10PerMin", "description": "d", "callbackUrl": "http://cb"}))
        .await
        .expect(201);
    let id = created.str("applicationId");
    assert_eq!(created.body["subscriber"], "sam");
    assert_eq!(created.body["throttlingTier"], "10PerMin");
    api.post_json(
        &apps,
        &token,
        &json!({"name": "Mine", "throttlingTier": "Unlimited"}),
    )
    .await
    .expect_error(409, "An application already exists with name Mine");
    api.post_json(
        &apps,
        &token,
        &json!({"name": "Other", "throttlingTier": "Gold"}),
    )
    .await
    .expect_error(400, "Specified tier Gold is invalid");
    api.post_json(&apps, &token, &json!({"name": "Other"}))
        .await
        .expect_error(400, "throttlingTier");
    api.post_json(
        &apps,
        &token,
        &json!({"name": " spaced ", "throttlingTier": "Unlimited"}),
    )
    .await
    .expect_error(400, "leading or trailing");
    api.post_json(
        &apps,
        &token,
        &json!({"name": "X", "throttlingTier": "Unlimited", "owner": "me"}),
    )
    .await
    .expect_error(400, "Unrecognized property 'owner'");

    // Update, including a rename onto a taken name.
    let updated = api
        .put_json(
            &format!("{apps}/{id}"),
            &token,
            &json!({"name": "Renamed", "throttlingTier": "50PerMin"}),
        )
        .await
        .expect(200);
    assert_eq!(updated.body["name"], "Renamed");
    assert_eq!(updated.body["description"], "d");
    api.put_json(
        &format!("{apps}/{id}"),
        &token,
        &json!({"name": "DefaultApplication", "throttlingTier": "Unlimited"}),
    )
    .await
    .expect(409);
    let page = api
        .get(&format!("{apps}?limit=1&offset=0"), &token)
        .await
        .expect(200);
    assert_eq!(page.body["count"], 1);
    assert!(page.body["next"].as_str().unwrap().contains("offset=1"));

    // Another user sees none of it.
    let admin = api
        .login(
            "admin",
            harness::ADMIN_PASSWORD,
            &format!("{ALL_SCOPES} mgr:tier_view"),
        )
        .await;
    api.get(&format!("{apps}/{id}"), &admin)
        .await
        .expect_error(403, "permission");
    api.delete(&format!("{apps}/{id}"), &admin)
        .await
        .expect(403);
    let admin_apps = api.get(&apps, &admin).await.expect(200);
    assert_eq!(admin_apps.body["count"], 1);

    // Delete; then it is gone.
    api.delete(&format!("{apps}/{id}"), &token)
        .await
        .expect(200);
    api.get(&format!("{apps}/{id}"), &token).await.expect_error(
        404,
        &format!("Requested application with Id '{id}' not found"),
    );
    api.delete(&format!("{apps}/{id}"), &token)
        .await
        .expect(404);

    // Tiers, anonymously in the store.
    let tiers = api.get(&format!("{STORE}/tiers/api"), "").await.expect(200);
    let names: Vec<&str> = tiers.body["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Gold", "Silver", "Bronze", "Unauthenticated", "Unlimited"]
    );
    assert_eq!(tiers.body["list"][0]["requestCount"], 5000);
    let app_tiers = api
        .get(&format!("{STORE}/tiers/application"), "")
        .await
        .expect(200);
    assert_eq!(app_tiers.body["count"], 4);
    api.get(&format!("{STORE}/tiers/application/20PerMin"), "")
        .await
        .expect(200);
    api.get(&format!("{STORE}/tiers/resource"), "")
        .await
        .expect(400);
    let resource = api
        .get(&format!("{PUBLISHER}/tiers/resource"), &admin)
        .await
        .expect(200);
    assert_eq!(resource.body["list"][0]["requestCount"], 50000);
}

pub async fn subscription_rules(env: InProcess) {
    let api = &env.api;
    let token = api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let subs = format!("{STORE}/subscriptions");
    let published = api_in_state(&env, &token, "Open", &["Gold", "Silver"], true).await;
    let created = api_in_state(&env, &token, "Draft", &["Unlimited"], false).await;
    let app = api
        .post_json(
            &format!("{STORE}/applications"),
            &token,
            &json!({"name": "Subscriber", "throttlingTier": "Unlimited"}),
        )
        .await
        .expect(201)
        .str("applicationId");
    let subscribe = |api_id: &str, tier: &str, app_id: &str| {
        let body = json!({"tier": tier, "apiIdentifier": api_id, "applicationId": app_id});
        let token = token.clone();
        async move {
            api.post_json(&format!("{STORE}/subscriptions"), &token, &body)
                .await
        }
    };

    subscribe(&created, "Unlimited", &app)
        .await
        .expect_error(404, "state: CREATED");
    subscribe(&published, "Unlimited", &app)
        .await
        .expect_error(403, "Tier Unlimited is not allowed");
    subscribe(&published, "Bronze", &app).await.expect(403);
    subscribe("admin-Nope-1.0", "Gold", &app)
        .await
        .expect_error(404, "Requested API with Id 'admin-Nope-1.0' not found");
    subscribe(&published, "Gold", "no-such-app")
        .await
        .expect(404);
    api.post_json(&subs, &token, &json!({"tier": "Gold"}))
        .await
        .expect_error(400, "apiIdentifier");
    let first = subscribe(&published, "Gold", &app).await.expect(201);
    assert_eq!(
        first.headers["location"],
        format!("{subs}/{}", first.str("subscriptionId")).as_str()
    );
    subscribe("admin-Open-v1.0.0", "Silver", &app)
        .await
        .expect_error(409, "Specified subscription already exists");

    // PROTOTYPED APIs take subscriptions; the DefaultApplication may subscribe.
    api.post_empty(
        &format!("{PUBLISHER}/apis/change-lifecycle?apiId={created}&action=Deploy+as+a+Prototype"),
        &token,
    )
    .await
    .expect(200);
    let apps = api
        .get(&format!("{STORE}/applications?query=Default"), &token)
        .await
        .expect(200);
    let default_app = apps.body["list"][0]["applicationId"]
        .as_str()
        .unwrap()
        .to_string();
    subscribe(&created, "Unlimited", &default_app)
        .await
        .expect(201);

    // Listing needs an application or an API.
    api.get(&subs, &token)
        .await
        .expect_error(400, "Either applicationId or apiId should be available");
    let by_api = api
        .get(&format!("{subs}?apiId={published}"), &token)
        .await
        .expect(200);
    assert_eq!(by_api.body["count"], 1);
    assert_eq!(by_api.body["list"][0]["tier"], "Gold");
    let one = api
        .get(&format!("{subs}/{}", first.str("subscriptionId")), &token)
        .await
        .expect(200);
    assert_eq!(one.body["apiIdentifier"], "admin-Open-v1.0.0");

    // Other users can neither see nor subscribe with this application.
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    let sam = api.login("sam", "sam-pw", "mgr:subscribe").await;
    api.get(&format!("{subs}/{}", first.str("subscriptionId")), &sam)
        .await
        .expect(403);
    api.post_json(
        &subs,
        &sam,
        &json!({"tier": "Gold", "apiIdentifier": published, "applicationId": app}),
    )
    .await
    .expect(403);

    // Unsubscribe.
    api.delete(&format!("{subs}/{}", first.str("subscriptionId")), &token)
        .await
        .expect(200);
    api.get(&format!("{subs}/{}", first.str("subscriptionId")), &token)
        .await
        .expect(404);
    api.delete(&format!("{subs}/no-such-subscription"), &token)
        .await
        .expect(404);
}

pub async fn key_generation(env: InProcess) {
    let api = &env.api;
    let token = api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let app = api
        .post_json(
            &format!("{STORE}/applications"),
            &token,
            &json!({"name": "Keyed", "throttlingTier": "Unlimited"}),
        )
        .await
        .expect(201)
        .str("applicationId");
    let generate = |app_id: &str, body: serde_json::Value| {
        let path = format!("{STORE}/applications/generate-keys?applicationId={app_id}");
        let token = token.clone();
        async move { api.post_json(&path, &token, &body).await }
    };
    let request = |key_type: &str| json!({"validityTime": "600", "keyType": key_type, "accessAllowDomains": ["ALL"]});

    generate(&app, json!({"keyType": "PRODUCTION"}))
        .await
        .expect_error(400, "validityTime");
    generate(&app, request("STAGING"))
        .await
        .expect_error(400, "keyType");
    generate("no-such-app", request("PRODUCTION"))
        .await
        .expect(404);
    let production = generate(&app, request("PRODUCTION")).await.expect(200);
    assert_eq!(production.body["token"]["validityTime"], 600);
    generate(&app, request("PRODUCTION")).await.expect_error(
        409,
        &format!("Keys already generated for the application {app}"),
    );
    let sandbox = generate(&app, request("SANDBOX")).await.expect(200);
    assert_ne!(production.str("consumerKey"), sandbox.str("consumerKey"));

    // A sandbox key's tokens say so; its validity is the key's.
    let reply = api
        .token(
            &sandbox.str("consumerKey"),
            &sandbox.str("consumerSecret"),
            &[("grant_type", "client_credentials")],
        )
        .await
        .expect(200);
    assert_eq!(reply.body["expires_in"], 600);
    let claims = harness::token_claims(api, &env.data_dir, &reply.str("access_token")).await;
    assert_eq!(claims["key_type"], "SANDBOX");
    assert_eq!(claims["application_id"], app.as_str());

    // Deleting the application retires its keys.
    api.delete(&format!("{STORE}/applications/{app}"), &token)
        .await
        .expect(200);
    api.token(
        &sandbox.str("consumerKey"),
        &sandbox.str("consumerSecret"),
        &[("grant_type", "client_credentials")],
    )
    .await
    .expect_oauth_error(401, "invalid_client");
}
