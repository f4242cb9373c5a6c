//! A block holds as WSO2 keeps it: a subscriber who deletes a blocked subscription cannot
//! subscribe again to lift it, and an application's tokens get none of the scopes of an
//! API whose subscription is blocked; after the publisher unblocks it, the application
//! subscribes again and calls the API. Through a gateway, on both databases.

use harness::stack::Stack;
use harness::steps::keys_request;
use harness::{Backend, Client, PUBLISHER, STORE, spec_api_record};
use serde_json::{Value, json};

/// The publisher's scopes, subscriptions included.
const PUBLISHER_SCOPES: &str = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe \
     mgr:subscription_view mgr:subscription_block";

/// The scope the API declares, open to every role.
const API_SCOPE: &str = "remembered_read";

const PATH: &str = "/remembered/v1.0.0/devs/alice";

/// The spec's definition declaring [`API_SCOPE`].
fn definition_with_scope() -> String {
    let record = spec_api_record();
    let mut definition: Value =
        serde_json::from_str(record["apiDefinition"].as_str().unwrap()).unwrap();
    definition["x-wso2-security"] = json!({"apim": {"x-wso2-scopes": [
        {"key": API_SCOPE, "name": "read", "roles": ""}
    ]}});
    definition.to_string()
}

/// The scopes a client-credentials token for `key` gets when it asks for [`API_SCOPE`].
async fn granted(stack: &Stack, key: &str, secret: &str) -> String {
    let form = [("grant_type", "client_credentials"), ("scope", API_SCOPE)];
    stack
        .gw
        .token_at("/token", key, secret, &form)
        .await
        .expect(200)
        .str("scope")
}

/// Waits until a call with `token` answers `status` and, for refusals, `fault`.
async fn answers(gw: &Client, token: &str, status: u16, fault: &str) {
    harness::eventually(gw, reqwest::Method::GET, PATH, token, |reply| {
        reply.status == status && (fault.is_empty() || reply.fault_code() == fault)
    })
    .await;
}

fn subscription_request(api: &str, app: &str) -> Value {
    json!({"tier": "Unlimited", "apiIdentifier": api, "applicationId": app})
}

/// How many subscriptions the store lists for an application.
async fn listed(mgmt: &Client, token: &str, app: &str) -> Value {
    mgmt.get(&format!("{STORE}/subscriptions?applicationId={app}"), token)
        .await
        .expect(200)
        .body["count"]
        .clone()
}

pub async fn a_block_outlives_the_deleted_subscription(database: Backend) {
    let stack = harness::stack::Launch {
        database,
        ..Default::default()
    }
    .start()
    .await;
    let (mgmt, gw, store_user) = (&stack.mgmt, &stack.gw, &stack.admin);
    let changes = json!({"apiDefinition": definition_with_scope()});
    let api = stack.api("Remembered", changes, &["Publish"]).await;
    let (app, key, secret, subscriptions) =
        stack.application("Remembering", "Unlimited", &[&api]).await;
    let subscription = &subscriptions[0];
    let token = stack.app_token(&key, &secret, &[]).await;
    answers(gw, &token, 200, "").await;
    assert!(granted(&stack, &key, &secret).await.contains(API_SCOPE));

    // Blocked: refused at the gateway, and new tokens lack the API's scope.
    let publisher = mgmt
        .login("admin", harness::ADMIN_PASSWORD, PUBLISHER_SCOPES)
        .await;
    let block = format!(
        "{PUBLISHER}/subscriptions/block-subscription?subscriptionId={subscription}&blockState=BLOCKED"
    );
    mgmt.post_empty(&block, &publisher).await.expect(200);
    answers(gw, &token, 401, "900907").await;
    assert!(!granted(&stack, &key, &secret).await.contains(API_SCOPE));

    // The subscriber deletes it: gone from the store, the block remembered.
    let own = format!("{STORE}/subscriptions/{subscription}");
    mgmt.delete(&own, store_user).await.expect(200);
    mgmt.get(&own, store_user).await.expect(404);
    mgmt.delete(&own, store_user).await.expect(404);
    assert_eq!(listed(mgmt, store_user, &app).await, 0);
    let subscribe = format!("{STORE}/subscriptions");
    mgmt.post_json(&subscribe, store_user, &subscription_request(&api, &app))
        .await
        .expect_error(403, "was blocked");
    mgmt.post_json(
        &format!("{subscribe}/multiple"),
        store_user,
        &json!([subscription_request(&api, &app)]),
    )
    .await
    .expect_error(403, "was blocked");
    assert_eq!(
        listed(mgmt, store_user, &app).await,
        0,
        "nothing subscribed"
    );
    answers(gw, &token, 401, "900907").await;
    assert!(!granted(&stack, &key, &secret).await.contains(API_SCOPE));
    // The publisher still sees it, blocked.
    let publishers_view = format!("{PUBLISHER}/subscriptions/{subscription}");
    let seen = mgmt.get(&publishers_view, &publisher).await.expect(200);
    assert_eq!(seen.body["status"], "BLOCKED");

    // Beside it, another application subscribes to the API and calls it.
    let other = stack
        .steps()
        .create_application("Other", "Unlimited")
        .await
        .unwrap();
    mgmt.post_json(&subscribe, store_user, &subscription_request(&api, &other))
        .await
        .expect(201);
    let other_keys = stack
        .steps()
        .generate_keys(&other, &keys_request())
        .await
        .unwrap();
    let other_token = stack
        .app_token(&other_keys.key, &other_keys.secret, &[])
        .await;
    answers(gw, &other_token, 200, "").await;

    // Unblocked: the deleted subscription ends, so the application is not subscribed
    // (900908) until it subscribes again; then its calls and scopes come back.
    let unblock =
        format!("{PUBLISHER}/subscriptions/unblock-subscription?subscriptionId={subscription}");
    mgmt.post_empty(&unblock, &publisher).await.expect(200);
    mgmt.get(&publishers_view, &publisher).await.expect(404);
    answers(gw, &token, 403, "900908").await;
    mgmt.post_json(&subscribe, store_user, &subscription_request(&api, &app))
        .await
        .expect(201);
    answers(gw, &token, 200, "").await;
    assert!(granted(&stack, &key, &secret).await.contains(API_SCOPE));
    assert_eq!(listed(mgmt, store_user, &app).await, 1);
}
