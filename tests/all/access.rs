//! Subscriptions and keys after they are made: the publisher lists, blocks and unblocks
//! subscriptions to its APIs and reads the applications behind them; the store updates a
//! key's grants, regenerates its secret, lists an application's scopes and subscribes in
//! batches, all or nothing. The gateway scenarios check that a block and a new secret
//! take effect where API calls and tokens are served.

use harness::steps::{Keys, Steps, client_credentials_token, keys_request};
use harness::{Backend, Client, PUBLISHER, Reply, STORE, spec_api_record};
use serde_json::{Value, json};

use crate::InProcess;

/// The management scopes plus the publisher's subscription scopes.
const PUBLISHER_SCOPES: &str = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe \
     mgr:subscription_view mgr:subscription_block";

/// The spec's API renamed `name` (context `/<name>`), declaring `scopes`, published.
async fn published_api(api: &Client, token: &str, name: &str, scopes: Value) -> String {
    let mut record = spec_api_record();
    record["name"] = json!(name);
    record["context"] = json!(format!("/{}", name.to_lowercase()));
    let mut definition: Value =
        serde_json::from_str(record["apiDefinition"].as_str().unwrap()).unwrap();
    definition["x-wso2-security"] = json!({"apim": {"x-wso2-scopes": scopes}});
    record["apiDefinition"] = json!(definition.to_string());
    Steps::new(api, token).publish_api(&record).await.unwrap()
}

/// The users of these scenarios: the administrator (every publisher scope), `sam` (a
/// subscriber), `cora` (a creator) and `alice@acme.com` (every role, another tenant).
struct Users {
    admin: String,
    sam: String,
    cora: String,
    alice: String,
}

async fn users(api: &Client) -> Users {
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    api.add_user("cora", "cora-pw", &["creator"]).await;
    let every_role = ["admin", "creator", "publisher", "subscriber"];
    api.add_user("alice@acme.com", "alice-pw", &every_role)
        .await;
    Users {
        admin: api
            .login("admin", harness::ADMIN_PASSWORD, PUBLISHER_SCOPES)
            .await,
        // Asks for the block scope too: the subscriber role does not get it.
        sam: api.login("sam", "sam-pw", PUBLISHER_SCOPES).await,
        cora: api.login("cora", "cora-pw", PUBLISHER_SCOPES).await,
        alice: api
            .login("alice@acme.com", "alice-pw", PUBLISHER_SCOPES)
            .await,
    }
}

fn block(id: &str, state: &str) -> String {
    format!("{PUBLISHER}/subscriptions/block-subscription?subscriptionId={id}&blockState={state}")
}

fn unblock(id: &str) -> String {
    format!("{PUBLISHER}/subscriptions/unblock-subscription?subscriptionId={id}")
}

/// The status of a subscription as its subscriber sees it in the store.
async fn store_status(api: &Client, token: &str, id: &str) -> Value {
    let reply = api
        .get(&format!("{STORE}/subscriptions/{id}"), token)
        .await
        .expect(200);
    reply.body["status"].clone()
}

pub async fn publisher_lists_blocks_and_unblocks_subscriptions(env: InProcess) {
    let api = &env.api;
    let u = users(api).await;
    let weather = published_api(api, &u.admin, "Weather", json!([])).await;
    let news = published_api(api, &u.admin, "News", json!([])).await;
    let sam = Steps::new(api, &u.sam);
    let app = sam.create_application("SamApp", "Unlimited").await.unwrap();
    let on_weather = sam.subscribe(&app, &weather, "Unlimited").await.unwrap();
    let on_news = sam.subscribe(&app, &news, "Unlimited").await.unwrap();

    // The provider side lists them: by API, and all of the tenant's, a page at a time.
    let by_api = api
        .get(
            &format!("{PUBLISHER}/subscriptions?apiId={weather}"),
            &u.admin,
        )
        .await
        .expect(200);
    assert_eq!(by_api.body["count"], 1);
    let listed = &by_api.body["list"][0];
    assert_eq!(listed["subscriptionId"], on_weather.as_str());
    assert_eq!(listed["applicationId"], app.as_str());
    assert_eq!(listed["apiIdentifier"], "admin-Weather-v1.0.0");
    assert_eq!(listed["status"], "UNBLOCKED");
    let page = api
        .get(&format!("{PUBLISHER}/subscriptions?limit=1"), &u.admin)
        .await
        .expect(200);
    assert_eq!(page.body["count"], 1);
    assert!(
        page.body["next"]
            .as_str()
            .unwrap()
            .starts_with("/subscriptions?limit=1&offset=1")
    );
    let second = api
        .get(
            &format!("{PUBLISHER}/subscriptions?limit=1&offset=1"),
            &u.admin,
        )
        .await
        .expect(200);
    assert_eq!(second.body["next"], "");
    assert!(
        second.body["previous"]
            .as_str()
            .unwrap()
            .contains("offset=0")
    );
    // The two pages hold both subscriptions (made in the same second: in either order).
    let mut paged = [&page, &second].map(|p| p.body["list"][0]["subscriptionId"].to_string());
    paged.sort();
    let mut made = [on_weather.clone(), on_news.clone()].map(|id| json!(id).to_string());
    made.sort();
    assert_eq!(paged, made);
    // A creator may view (subscription_view), as WSO2's roles say.
    let one = api
        .get(&format!("{PUBLISHER}/subscriptions/{on_weather}"), &u.cora)
        .await
        .expect(200);
    assert_eq!(one.body["status"], "UNBLOCKED");
    assert_eq!(one.body["workflowId"], "");

    // Block, for every key and then for production keys only: both views show it.
    api.post_empty(&block(&on_weather, "BLOCKED"), &u.admin)
        .await
        .expect(200);
    assert_eq!(store_status(api, &u.sam, &on_weather).await, "BLOCKED");
    api.post_empty(&block(&on_weather, "PROD_ONLY_BLOCKED"), &u.admin)
        .await
        .expect(200);
    assert_eq!(
        store_status(api, &u.sam, &on_weather).await,
        "PROD_ONLY_BLOCKED"
    );
    let by_api = api
        .get(
            &format!("{PUBLISHER}/subscriptions?apiId={weather}"),
            &u.admin,
        )
        .await
        .expect(200);
    assert_eq!(by_api.body["list"][0]["status"], "PROD_ONLY_BLOCKED");

    // Refusals, none of which changes the status.
    for bad in ["UNBLOCKED", "blocked", "ON_HOLD", ""] {
        api.post_empty(&block(&on_weather, bad), &u.admin)
            .await
            .expect_error(400, "blockState");
    }
    let no_state =
        format!("{PUBLISHER}/subscriptions/block-subscription?subscriptionId={on_weather}");
    api.post_empty(&no_state, &u.admin)
        .await
        .expect_error(400, "blockState is required");
    api.post_empty(
        &format!("{PUBLISHER}/subscriptions/block-subscription?blockState=BLOCKED"),
        &u.admin,
    )
    .await
    .expect_error(400, "subscriptionId is required");
    api.post_empty(
        &format!("{PUBLISHER}/subscriptions/unblock-subscription"),
        &u.admin,
    )
    .await
    .expect_error(400, "subscriptionId is required");
    let unknown = "00000000-0000-0000-0000-000000000000";
    api.post_empty(&block(unknown, "BLOCKED"), &u.admin)
        .await
        .expect_error(404, unknown);
    api.post_empty(&unblock(unknown), &u.admin)
        .await
        .expect(404);
    api.get(&format!("{PUBLISHER}/subscriptions/{unknown}"), &u.admin)
        .await
        .expect(404);
    api.get(
        &format!("{PUBLISHER}/subscriptions?apiId={unknown}"),
        &u.admin,
    )
    .await
    .expect(404);
    // The subscriber, and a creator, lack subscription_block: 401 as WSO2 answers a token
    // without the scope; the subscriber lacks subscription_view too.
    api.post_empty(&unblock(&on_weather), &u.sam)
        .await
        .expect_error(401, "Unauthenticated");
    api.post_empty(&block(&on_news, "BLOCKED"), &u.sam)
        .await
        .expect(401);
    api.post_empty(&unblock(&on_weather), &u.cora)
        .await
        .expect(401);
    api.get(
        &format!("{PUBLISHER}/subscriptions?apiId={weather}"),
        &u.sam,
    )
    .await
    .expect(401);
    // Another tenant's publisher finds nothing of ours.
    api.post_empty(&unblock(&on_weather), &u.alice)
        .await
        .expect(404);
    api.post_empty(&block(&on_news, "BLOCKED"), &u.alice)
        .await
        .expect(404);
    api.get(&format!("{PUBLISHER}/subscriptions/{on_weather}"), &u.alice)
        .await
        .expect(404);
    api.get(
        &format!("{PUBLISHER}/subscriptions?apiId={weather}"),
        &u.alice,
    )
    .await
    .expect(404);
    let theirs = api
        .get(&format!("{PUBLISHER}/subscriptions"), &u.alice)
        .await
        .expect(200);
    assert_eq!(theirs.body["count"], 0);
    api.get(
        &format!("{PUBLISHER}/subscriptions?apiId={weather}&x=1"),
        &u.admin,
    )
    .await
    .expect(400);
    assert_eq!(
        store_status(api, &u.sam, &on_weather).await,
        "PROD_ONLY_BLOCKED"
    );
    assert_eq!(store_status(api, &u.sam, &on_news).await, "UNBLOCKED");

    // Unblocking admits again.
    api.post_empty(&unblock(&on_weather), &u.admin)
        .await
        .expect(200);
    assert_eq!(store_status(api, &u.sam, &on_weather).await, "UNBLOCKED");
}

pub async fn publisher_reads_applications_of_its_tenant(env: InProcess) {
    let api = &env.api;
    let u = users(api).await;
    let sam = Steps::new(api, &u.sam);
    let app = sam
        .create_application("Readable", "10PerMin")
        .await
        .unwrap();
    sam.generate_keys(&app, &keys_request()).await.unwrap();
    let path = format!("{PUBLISHER}/applications/{app}");

    let read = api.get(&path, &u.admin).await.expect(200);
    assert_eq!(read.body["applicationId"], app.as_str());
    assert_eq!(read.body["name"], "Readable");
    assert_eq!(read.body["subscriber"], "sam");
    assert_eq!(read.body["throttlingTier"], "10PerMin");
    assert_eq!(read.body["groupId"], "");
    // The publisher's Application carries no keys: their secrets are the subscriber's.
    assert!(read.body.get("keys").is_none(), "{}", read.body);
    assert!(!read.body.to_string().contains("consumerSecret"));
    // A creator has api_create, as the contract asks; the subscriber has not (401).
    api.get(&path, &u.cora).await.expect(200);
    api.get(&path, &u.sam)
        .await
        .expect_error(401, "Unauthenticated");
    // Another tenant's publisher, and an unknown id: 404.
    api.get(&path, &u.alice).await.expect_error(404, &app);
    api.get(&format!("{PUBLISHER}/applications/nope"), &u.admin)
        .await
        .expect_error(404, "nope");
}

fn key_path(app: &str, key_type: &str) -> String {
    format!("{STORE}/applications/{app}/keys/{key_type}")
}

/// A password grant of `user` through an application's keys, at the control plane.
async fn user_token(api: &Client, keys: &Keys, user: &str, password: &str) -> Reply {
    let form = [
        ("grant_type", "password"),
        ("username", user),
        ("password", password),
        ("scope", "default"),
    ];
    api.token(&keys.key, &keys.secret, &form).await
}

pub async fn key_grants_and_secrets_change(env: InProcess) {
    let api = &env.api;
    let u = users(api).await;
    let sam = Steps::new(api, &u.sam);
    let app = sam.create_application("Keyed", "Unlimited").await.unwrap();
    let keys = sam.generate_keys(&app, &keys_request()).await.unwrap();
    let production = key_path(&app, "PRODUCTION");

    // Grants and callback URL change; the rest of the body (echoed from a GET) is ignored.
    let mut body = api.get(&production, &u.sam).await.expect(200).body;
    body["supportedGrantTypes"] = json!(["client_credentials", "authorization_code"]);
    body["callbackUrl"] = json!("https://app.example/cb");
    body["consumerSecret"] = json!("chosen-by-the-client");
    let updated = api.put_json(&production, &u.sam, &body).await.expect(200);
    assert_eq!(
        updated.body["supportedGrantTypes"],
        json!(["client_credentials", "authorization_code"])
    );
    assert_eq!(updated.body["callbackUrl"], "https://app.example/cb");
    assert_eq!(updated.body["consumerKey"], keys.key.as_str());
    assert_eq!(updated.body["consumerSecret"], keys.secret.as_str());
    // The token endpoint follows at once: the password grant is gone, client_credentials stays.
    user_token(api, &keys, "sam", "sam-pw")
        .await
        .expect_oauth_error(400, "unauthorized_client");
    client_credentials_token(api, "/oauth2/token", &keys)
        .await
        .unwrap();

    // Refusals leave the key as it is.
    let refusals = [
        (json!({"supportedGrantTypes": []}), "at least one"),
        (
            json!({"supportedGrantTypes": ["password", "magic"]}),
            "Invalid grant type 'magic'",
        ),
        (json!({"supportedGrantTypes": "password"}), "Malformed"),
        (
            json!({"callbackUrl": "https://a.example/ b"}),
            "callbackUrl",
        ),
        (json!({"callbackUrl": "x".repeat(3000)}), "callbackUrl"),
        (
            json!({"supportedGrantTypes": ["implicit"], "callbackUrl": ""}),
            "callbackUrl",
        ),
        (json!({"owner": "sam"}), "Unrecognized property 'owner'"),
    ];
    for (body, text) in refusals {
        api.put_json(&production, &u.sam, &body)
            .await
            .expect_error(400, text);
    }
    let bad_type = json!({"supportedGrantTypes": ["password"]});
    api.put_json(&key_path(&app, "DEVELOPMENT"), &u.sam, &bad_type)
        .await
        .expect_error(400, "keyType");
    api.put_json(&key_path(&app, "SANDBOX"), &u.sam, &bad_type)
        .await
        .expect(404);
    api.put_json(&key_path("nope", "PRODUCTION"), &u.sam, &bad_type)
        .await
        .expect(404);
    // The administrator is another user of the tenant: 403; alice is of another: 404.
    api.put_json(&production, &u.admin, &bad_type)
        .await
        .expect(403);
    api.put_json(&production, &u.alice, &bad_type)
        .await
        .expect(404);
    let unchanged = api.get(&production, &u.sam).await.expect(200);
    assert_eq!(unchanged.body, updated.body);

    // The secret is regenerated: the old one stops working at once, the key and the
    // tokens already issued stay.
    let issued = client_credentials_token(api, "/oauth2/token", &keys)
        .await
        .unwrap();
    let regenerate = format!("{STORE}/applications/regenerate-consumersecret");
    let renewed = api
        .post_json(&regenerate, &u.sam, &json!({"consumerKey": keys.key}))
        .await
        .expect(200);
    assert_eq!(renewed.body["consumerKey"], keys.key.as_str());
    let new_secret = renewed.str("consumerSecret");
    assert_ne!(new_secret, keys.secret);
    api.token(
        &keys.key,
        &keys.secret,
        &[("grant_type", "client_credentials")],
    )
    .await
    .expect_oauth_error(401, "invalid_client");
    let new_keys = Keys {
        key: keys.key.clone(),
        secret: new_secret.clone(),
    };
    client_credentials_token(api, "/oauth2/token", &new_keys)
        .await
        .unwrap();
    let shown = api.get(&production, &u.sam).await.expect(200);
    assert_eq!(shown.body["consumerSecret"], new_secret.as_str());
    // The token issued before is still a valid one of the application (the gateway
    // scenario calls an API with it).
    let claims = harness::token_claims(api, &env.data_dir, &issued).await;
    assert_eq!(claims["application_id"], app.as_str());

    // Refusals: none of them changes the secret.
    for (body, status, text) in [
        (json!({}), 400, "consumerKey"),
        (json!({"consumerKey": ""}), 400, "consumerKey"),
        (json!({"consumerKey": "unknown"}), 404, "unknown"),
        (
            json!({"consumerKey": keys.key, "x": 1}),
            400,
            "Unrecognized property 'x'",
        ),
    ] {
        api.post_json(&regenerate, &u.sam, &body)
            .await
            .expect_error(status, text);
    }
    let theirs = json!({"consumerKey": keys.key});
    api.post_json(&regenerate, &u.admin, &theirs)
        .await
        .expect(403);
    api.post_json(&regenerate, &u.alice, &theirs)
        .await
        .expect(404);
    // A registered (management) client is no application key.
    let registered = api
        .register("sam", "sam-pw", "sams_client")
        .await
        .expect(200);
    let registered_key = json!({"consumerKey": registered.str("clientId")});
    api.post_json(&regenerate, &u.sam, &registered_key)
        .await
        .expect(404);
    api.password_token(&registered, "sam", "sam-pw", "mgr:subscribe")
        .await
        .expect(200);
    client_credentials_token(api, "/oauth2/token", &new_keys)
        .await
        .unwrap();
}

pub async fn application_scopes_and_batch_subscriptions(env: InProcess) {
    let api = &env.api;
    let u = users(api).await;
    let declared = json!([
        {"key": "weather_read", "name": "Read weather", "roles": "subscriber", "description": "reads"},
        {"key": "weather_admin", "name": "Administer", "roles": "admin"},
    ]);
    let weather = published_api(api, &u.admin, "Weather", declared).await;
    let news_scopes = json!([{"key": "weather_read", "name": "Again", "roles": ""}]);
    let news = published_api(api, &u.admin, "News", news_scopes).await;
    let sports = published_api(api, &u.admin, "Sports", json!([])).await;
    let sam = Steps::new(api, &u.sam);
    let app = sam
        .create_application("Batched", "Unlimited")
        .await
        .unwrap();
    let multiple = format!("{STORE}/subscriptions/multiple");
    let subscriptions_of = async |app: &str, token: &str| {
        api.get(&format!("{STORE}/subscriptions?applicationId={app}"), token)
            .await
            .expect(200)
            .body["count"]
            .clone()
    };
    let item = |api_id: &str, tier: &str| json!({"tier": tier, "apiIdentifier": api_id, "applicationId": app});

    // One refused item stores none of the batch.
    let unknown = "00000000-0000-0000-0000-000000000000";
    for (batch, status) in [
        (
            json!([item(&weather, "Unlimited"), item(&news, "Gold")]),
            403,
        ),
        (
            json!([item(&weather, "Unlimited"), item(unknown, "Unlimited")]),
            404,
        ),
        (
            json!([item(&weather, "Unlimited"), item(&weather, "Unlimited")]),
            409,
        ),
        (
            json!([item(&weather, "Unlimited"), {"tier": "Unlimited"}]),
            400,
        ),
        (
            json!([item(&weather, "Unlimited"), item(&news, "Unlimited"), {"tier": "Unlimited", "apiIdentifier": news, "applicationId": "nope"}]),
            404,
        ),
    ] {
        api.post_json(&multiple, &u.sam, &batch)
            .await
            .expect(status);
        assert_eq!(
            subscriptions_of(&app, &u.sam).await,
            0,
            "after a refused {batch}"
        );
    }
    api.post_json(&multiple, &u.sam, &item(&weather, "Unlimited"))
        .await
        .expect_error(400, "Malformed");
    let too_many: Vec<Value> = (0..101).map(|_| item(&weather, "Unlimited")).collect();
    api.post_json(&multiple, &u.sam, &json!(too_many))
        .await
        .expect_error(400, "At most 100");
    // Another user's application (403), another tenant's (404).
    let admins = Steps::new(api, &u.admin)
        .create_application("AdminApp", "Unlimited")
        .await
        .unwrap();
    let foreign = json!([{"tier": "Unlimited", "apiIdentifier": weather, "applicationId": admins}]);
    api.post_json(&multiple, &u.sam, &foreign).await.expect(403);
    api.post_json(&multiple, &u.alice, &json!([item(&weather, "Unlimited")]))
        .await
        .expect(404);
    assert_eq!(subscriptions_of(&admins, &u.admin).await, 0);

    // The legitimate batch: 200 with each subscription.
    let made = api
        .post_json(
            &multiple,
            &u.sam,
            &json!([
                item(&weather, "Unlimited"),
                item("admin-News-v1.0.0", "Unlimited")
            ]),
        )
        .await
        .expect(200);
    let list = made.body.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["apiIdentifier"], "admin-Weather-v1.0.0");
    assert_eq!(list[1]["apiIdentifier"], "admin-News-v1.0.0");
    assert!(list.iter().all(|s| s["status"] == "UNBLOCKED"));
    let first = list[0]["subscriptionId"].as_str().unwrap();
    api.get(&format!("{STORE}/subscriptions/{first}"), &u.sam)
        .await
        .expect(200);
    assert_eq!(subscriptions_of(&app, &u.sam).await, 2);
    // A batch repeating a stored subscription stores none of it.
    api.post_json(
        &multiple,
        &u.sam,
        &json!([item(&sports, "Unlimited"), item(&news, "Unlimited")]),
    )
    .await
    .expect_error(409, "already exists");
    assert_eq!(subscriptions_of(&app, &u.sam).await, 2);
    api.post_json(&multiple, &u.sam, &json!([]))
        .await
        .expect(200);

    // The application's scopes: those its APIs declare, each key once (named by the API
    // first subscribed, here either: both came in one batch), on both paths.
    let scopes = api
        .get(&format!("{STORE}/applications/{app}/scopes"), &u.sam)
        .await
        .expect(200);
    let listed = scopes.body["list"].as_array().unwrap();
    let keys: Vec<&str> = listed.iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 2, "{}", scopes.body);
    assert!(keys.contains(&"weather_read") && keys.contains(&"weather_admin"));
    let admin_scope = listed.iter().find(|s| s["key"] == "weather_admin").unwrap();
    assert_eq!(
        admin_scope,
        &json!({"key": "weather_admin", "name": "Administer", "roles": "admin", "description": ""})
    );
    let deprecated = api
        .get(&format!("{STORE}/applications/scopes/{app}"), &u.sam)
        .await
        .expect(200);
    assert_eq!(deprecated.body, scopes.body);
    let mine = api
        .get(
            &format!("{STORE}/applications/{app}/scopes?filterByUserRoles=true"),
            &u.sam,
        )
        .await
        .expect(200);
    // weather_read is open to any role as News declares it, to subscribers as Weather does.
    assert_eq!(mine.body["list"].as_array().unwrap().len(), 1);
    assert_eq!(mine.body["list"][0]["key"], "weather_read");
    let empty = api
        .get(&format!("{STORE}/applications/{admins}/scopes"), &u.admin)
        .await
        .expect(200);
    assert_eq!(empty.body, json!({"list": []}));
    api.get(&format!("{STORE}/applications/{app}/scopes"), &u.admin)
        .await
        .expect(403);
    api.get(&format!("{STORE}/applications/{app}/scopes"), &u.alice)
        .await
        .expect(404);
    api.get(&format!("{STORE}/applications/nope/scopes"), &u.sam)
        .await
        .expect(404);
    api.get(
        &format!("{STORE}/applications/{app}/scopes?filterByUserRoles=maybe"),
        &u.sam,
    )
    .await
    .expect(400);
    api.get(&format!("{STORE}/applications/{app}/scopes"), &u.cora)
        .await
        .expect(401);
}

pub async fn blocks_and_new_secrets_reach_the_host_path(database: Backend) {
    blocks_and_new_secrets(database, &[]).await;
}

pub async fn blocks_and_new_secrets_reach_the_component_path(database: Backend) {
    blocks_and_new_secrets(database, &[("APIM_HOST_FORWARDING", "false".into())]).await;
}

/// The same with the component hosted as Spin hosts it (a fresh instance per request, a
/// SQLite store): a block reaches tokens the store remembers as verified.
pub async fn blocks_and_new_secrets_reach_the_spin_like_mode(database: Backend) {
    let settings = harness::stack::spin_like(&harness::temp_dir());
    blocks_and_new_secrets(database, &settings).await;
}

pub async fn blocks_and_new_secrets_reach_the_p3_artefact(database: Backend) {
    blocks_and_new_secrets(database, &harness::p3_settings()).await;
}

/// Waits until a call with `token` answers `status` and, for refusals, `fault`.
async fn answers(gw: &Client, path: &str, token: &str, status: u16, fault: &str) {
    harness::eventually(gw, reqwest::Method::GET, path, token, |reply| {
        reply.status == status && (fault.is_empty() || reply.fault_code() == fault)
    })
    .await;
}

/// A block refuses the subscription's calls (WSO2's 401 900907; `PROD_ONLY_BLOCKED`
/// production keys only), an unblock admits them again; a regenerated secret gets
/// `invalid_client` at the gateway's token endpoint while the tokens issued before still
/// call the API.
async fn blocks_and_new_secrets(database: Backend, settings: &[(&'static str, String)]) {
    let stack = harness::stack::Launch {
        database,
        gateway: settings,
        ..Default::default()
    }
    .start()
    .await;
    let (mgmt, gw) = (&stack.mgmt, &stack.gw);
    let api = stack.api("Blockable", json!({}), &["Publish"]).await;
    let (app, key, secret, subscriptions) = stack.application("Calls", "Unlimited", &[&api]).await;
    let mut sandbox_request = keys_request();
    sandbox_request["keyType"] = json!("SANDBOX");
    let sandbox = stack
        .steps()
        .generate_keys(&app, &sandbox_request)
        .await
        .unwrap();
    let production = stack.app_token(&key, &secret, &[]).await;
    let sandboxed = stack.app_token(&sandbox.key, &sandbox.secret, &[]).await;
    let path = "/blockable/v1.0.0/devs/alice";
    answers(gw, path, &production, 200, "").await;
    answers(gw, path, &sandboxed, 200, "").await;

    let admin = mgmt
        .login("admin", harness::ADMIN_PASSWORD, PUBLISHER_SCOPES)
        .await;
    let subscription = &subscriptions[0];
    mgmt.post_empty(&block(subscription, "BLOCKED"), &admin)
        .await
        .expect(200);
    answers(gw, path, &production, 401, "900907").await;
    answers(gw, path, &sandboxed, 401, "900907").await;
    let reply = gw.get(path, &production).await;
    assert!(
        reply
            .body
            .as_str()
            .unwrap_or_default()
            .contains("temporarily blocked"),
        "{}",
        reply.body
    );

    mgmt.post_empty(&block(subscription, "PROD_ONLY_BLOCKED"), &admin)
        .await
        .expect(200);
    answers(gw, path, &sandboxed, 200, "").await;
    answers(gw, path, &production, 401, "900907").await;

    mgmt.post_empty(&unblock(subscription), &admin)
        .await
        .expect(200);
    answers(gw, path, &production, 200, "").await;
    answers(gw, path, &sandboxed, 200, "").await;

    // A new secret: the old one is refused at the gateway's token endpoint at once.
    let renewed = mgmt
        .post_json(
            &format!("{STORE}/applications/regenerate-consumersecret"),
            &stack.admin,
            &json!({"consumerKey": key}),
        )
        .await
        .expect(200)
        .str("consumerSecret");
    gw.token_at(
        "/token",
        &key,
        &secret,
        &[("grant_type", "client_credentials")],
    )
    .await
    .expect_oauth_error(401, "invalid_client");
    let fresh = stack.app_token(&key, &renewed, &[]).await;
    answers(gw, path, &fresh, 200, "").await;
    gw.get(path, &production).await.expect(200);
}
