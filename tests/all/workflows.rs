//! Approval workflows: a tenant's administrator switches on approval for application
//! creation, subscriptions and key generation (off by default); what waits is `CREATED`
//! (applications, keys) or `ON_HOLD` (subscriptions) until the publisher's
//! `update-workflow-status` approves or rejects it, within the approver's tenant only.
//! Through a gateway, a subscription on hold is refused (WSO2's 900909) until approved.

use harness::steps::{Keys, Steps, client_credentials_token, keys_request};
use harness::{ADMIN_PASSWORD, Backend, Client, PUBLISHER, Reply, STORE, spec_api_record};
use reqwest::Method;
use serde_json::{Value, json};

use crate::InProcess;

const SETTINGS: &str = "/api/am/admin/v0.14/workflows/settings";
const WAITING: &str = "/api/am/admin/v0.14/workflows";

/// What an approver asks for: the store's scopes, the publisher's and `api_workflow`.
const APPROVER_SCOPES: &str = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe \
     mgr:subscription_view mgr:subscription_block mgr:api_workflow";

fn decide_path(reference: &str) -> String {
    format!("{PUBLISHER}/workflows/update-workflow-status?workflowReferenceId={reference}")
}

/// Changes the switches of `who`'s tenant.
async fn switch(api: &Client, who: (&str, &str), change: Value) -> Reply {
    api.basic(Method::PUT, SETTINGS, who, Some(&change)).await
}

/// The references of `who`'s tenant's waiting workflows of `kind` about `subject`.
async fn waiting(api: &Client, who: (&str, &str), kind: &str, subject: &str) -> Vec<String> {
    let path = format!("{WAITING}?workflowType={kind}&limit=100");
    let reply = api.basic(Method::GET, &path, who, None).await.expect(200);
    reply.body["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w["workflowStatus"] == "CREATED"
                && w["properties"]
                    .as_object()
                    .unwrap()
                    .values()
                    .any(|v| v == subject)
        })
        .map(|w| w["referenceId"].as_str().unwrap().to_string())
        .collect()
}

/// The one waiting workflow of `kind` about `subject` in the super tenant.
async fn reference(api: &Client, kind: &str, subject: &str) -> String {
    let found = waiting(api, ("admin", ADMIN_PASSWORD), kind, subject).await;
    assert_eq!(found.len(), 1, "{kind} of {subject}: {found:?}");
    found[0].clone()
}

async fn decide(api: &Client, token: &str, reference: &str, status: &str) -> Reply {
    let body = json!({"status": status, "description": "checked", "attributes": {"by": "test"}});
    api.post_json(&decide_path(reference), token, &body).await
}

async fn app_status(api: &Client, token: &str, app: &str) -> Value {
    let reply = api
        .get(&format!("{STORE}/applications/{app}"), token)
        .await
        .expect(200);
    reply.body["status"].clone()
}

async fn subscription_status(api: &Client, token: &str, id: &str) -> Value {
    let reply = api
        .get(&format!("{STORE}/subscriptions/{id}"), token)
        .await
        .expect(200);
    reply.body["status"].clone()
}

async fn create_app(api: &Client, token: &str, name: &str) -> Reply {
    let body = json!({"name": name, "throttlingTier": "Unlimited"});
    api.post_json(&format!("{STORE}/applications"), token, &body)
        .await
        .expect(201)
}

async fn subscribe(api: &Client, token: &str, app: &str, api_id: &str) -> Reply {
    let body = json!({"tier": "Unlimited", "apiIdentifier": api_id, "applicationId": app});
    api.post_json(&format!("{STORE}/subscriptions"), token, &body)
        .await
}

async fn generate(api: &Client, token: &str, app: &str, key_type: &str) -> Reply {
    let mut request = keys_request();
    request["keyType"] = json!(key_type);
    let path = format!("{STORE}/applications/generate-keys?applicationId={app}");
    api.post_json(&path, token, &request).await
}

/// The spec's API renamed `name`, published by `token`'s user.
async fn published(api: &Client, token: &str, name: &str) -> String {
    let mut record = spec_api_record();
    record["name"] = json!(name);
    record["context"] = json!(format!("/{}", name.to_lowercase()));
    Steps::new(api, token).publish_api(&record).await.unwrap()
}

pub async fn approvals_per_tenant(env: InProcess) {
    let api = &env.api;
    let admin_basic = ("admin", ADMIN_PASSWORD);
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    api.add_user("alice@acme.com", "alice-pw", &["admin", "subscriber"])
        .await;
    let admin = api.login("admin", ADMIN_PASSWORD, APPROVER_SCOPES).await;
    // Asks for api_workflow too: the subscriber role does not get it.
    let sam = api.login("sam", "sam-pw", APPROVER_SCOPES).await;
    let alice = api
        .login("alice@acme.com", "alice-pw", APPROVER_SCOPES)
        .await;
    let weather = published(api, &admin, "Weather").await;
    let news = published(api, &admin, "News").await;

    // Off by default: nothing waits.
    let settings = api
        .basic(Method::GET, SETTINGS, admin_basic, None)
        .await
        .expect(200);
    assert_eq!(
        settings.body,
        json!({"applicationCreation": false, "subscriptionCreation": false,
               "productionKeyGeneration": false, "sandboxKeyGeneration": false})
    );
    // The administration operations take a bearer token with the admin scope too; a token
    // without it, or a user whose roles do not grant it, is refused; a tenant's
    // administrator by token sees their own tenant, as by Basic.
    let admin_token = api.login("admin", ADMIN_PASSWORD, "mgr:admin").await;
    let by_token = api.get(SETTINGS, &admin_token).await.expect(200);
    assert_eq!(by_token.body, settings.body);
    api.get(SETTINGS, &admin).await.expect(401);
    let sam_admin = api.login("sam", "sam-pw", "mgr:admin mgr:subscribe").await;
    api.get(SETTINGS, &sam_admin).await.expect(401);
    api.get(SETTINGS, "not-a-token").await.expect(401);
    let alice_admin = api.login("alice@acme.com", "alice-pw", "mgr:admin").await;
    api.put_json(
        SETTINGS,
        &alice_admin,
        &json!({"applicationCreation": true}),
    )
    .await
    .expect(200);
    let acme = api.get(SETTINGS, &alice_admin).await.expect(200);
    assert_eq!(acme.body["applicationCreation"], true);
    assert_eq!(
        api.get(SETTINGS, &admin_token).await.expect(200).body,
        settings.body,
        "another tenant's switch changes nothing here"
    );
    api.put_json(
        SETTINGS,
        &alice_admin,
        &json!({"applicationCreation": false}),
    )
    .await
    .expect(200);
    let before = create_app(api, &sam, "Before").await;
    assert_eq!(before.body["status"], "APPROVED");

    // Only a tenant's administrator switches, with a well-formed body.
    switch(api, ("sam", "sam-pw"), json!({"applicationCreation": true}))
        .await
        .expect_error(403, "administrators");
    switch(
        api,
        ("admin", "wrong"),
        json!({"applicationCreation": true}),
    )
    .await
    .expect(401);
    switch(api, admin_basic, json!({"applicationCreation": "yes"}))
        .await
        .expect(400);
    switch(api, admin_basic, json!({"everything": true}))
        .await
        .expect(400);
    api.basic(Method::GET, SETTINGS, admin_basic, None)
        .await
        .expect(200);
    let on = json!({"applicationCreation": true, "subscriptionCreation": true,
                    "productionKeyGeneration": true});
    let switched = switch(api, admin_basic, on).await.expect(200);
    assert_eq!(switched.body["sandboxKeyGeneration"], false);
    assert_eq!(switched.body["subscriptionCreation"], true);

    // An application waits in CREATED: no subscription, no keys until approved.
    let pending = create_app(api, &sam, "Pending").await;
    assert_eq!(pending.body["status"], "CREATED");
    let app = pending.str("applicationId");
    subscribe(api, &sam, &app, &weather)
        .await
        .expect_error(400, "not approved");
    generate(api, &sam, &app, "PRODUCTION")
        .await
        .expect_error(400, "not approved");
    // Other tenants' administrators neither see nor decide it.
    assert!(
        waiting(
            api,
            ("alice@acme.com", "alice-pw"),
            "AM_APPLICATION_CREATION",
            &app
        )
        .await
        .is_empty()
    );
    let app_flow = reference(api, "AM_APPLICATION_CREATION", &app).await;
    decide(api, &alice, &app_flow, "APPROVED")
        .await
        .expect_error(404, &app_flow);
    // Without the api_workflow scope, a bad decision, no reference, an unknown one.
    decide(api, &sam, &app_flow, "APPROVED").await.expect(401);
    decide(api, &admin, &app_flow, "MAYBE")
        .await
        .expect_error(400, "APPROVED, REJECTED");
    api.post_json(
        &decide_path(&app_flow),
        &admin,
        &json!({"description": "x"}),
    )
    .await
    .expect_error(400, "status");
    api.post_json(
        &format!("{PUBLISHER}/workflows/update-workflow-status"),
        &admin,
        &json!({"status": "APPROVED"}),
    )
    .await
    .expect_error(400, "workflowReferenceId");
    decide(api, &admin, "no-such-workflow", "APPROVED")
        .await
        .expect(404);
    assert_eq!(app_status(api, &sam, &app).await, "CREATED");
    let approved = decide(api, &admin, &app_flow, "APPROVED").await.expect(200);
    assert_eq!(
        approved.body,
        json!({"status": "APPROVED", "description": "checked", "attributes": {"by": "test"}})
    );
    assert_eq!(app_status(api, &sam, &app).await, "APPROVED");
    decide(api, &admin, &app_flow, "REJECTED")
        .await
        .expect_error(400, "already in complete state");
    assert_eq!(app_status(api, &sam, &app).await, "APPROVED");

    // A subscription waits ON_HOLD; the publisher can neither block nor unblock it.
    let held = subscribe(api, &sam, &app, &weather).await.expect(201);
    assert_eq!(held.body["status"], "ON_HOLD");
    let subscription = held.str("subscriptionId");
    assert_eq!(
        subscription_status(api, &sam, &subscription).await,
        "ON_HOLD"
    );
    let extended = api
        .get(&format!("{PUBLISHER}/subscriptions/{subscription}"), &admin)
        .await
        .expect(200);
    let sub_flow = extended.str("workflowId");
    assert_eq!(
        sub_flow,
        reference(api, "AM_SUBSCRIPTION_CREATION", &subscription).await
    );
    let unblock =
        format!("{PUBLISHER}/subscriptions/unblock-subscription?subscriptionId={subscription}");
    api.post_empty(&unblock, &admin)
        .await
        .expect_error(400, "not approved");
    decide(api, &alice, &sub_flow, "APPROVED").await.expect(404);
    decide(api, &admin, &sub_flow, "APPROVED").await.expect(200);
    assert_eq!(
        subscription_status(api, &sam, &subscription).await,
        "UNBLOCKED"
    );
    // Once approved, it is blocked and unblocked as any other.
    api.post_empty(&unblock, &admin).await.expect(200);

    // A batch waits as single subscriptions do, each with its workflow; a batch with an
    // application that waits itself is refused whole.
    let before_app = before.str("applicationId");
    let waiting_app = create_app(api, &sam, "StillWaiting")
        .await
        .str("applicationId");
    let item = |app: &str, api_id: &str| json!({"tier": "Unlimited", "apiIdentifier": api_id, "applicationId": app});
    let multiple = format!("{STORE}/subscriptions/multiple");
    let mixed = json!([item(&before_app, &weather), item(&waiting_app, &news)]);
    api.post_json(&multiple, &sam, &mixed)
        .await
        .expect_error(400, "not approved");
    let batch = json!([item(&before_app, &weather), item(&before_app, &news)]);
    let made = api.post_json(&multiple, &sam, &batch).await.expect(200);
    for subscription in made.body.as_array().unwrap() {
        assert_eq!(subscription["status"], "ON_HOLD");
        let id = subscription["subscriptionId"].as_str().unwrap();
        reference(api, "AM_SUBSCRIPTION_CREATION", id).await;
    }

    // A rejected subscription stays REJECTED.
    let rejected = subscribe(api, &sam, &app, &news).await.expect(201);
    let rejected_id = rejected.str("subscriptionId");
    let flow = reference(api, "AM_SUBSCRIPTION_CREATION", &rejected_id).await;
    decide(api, &admin, &flow, "REJECTED").await.expect(200);
    assert_eq!(
        subscription_status(api, &sam, &rejected_id).await,
        "REJECTED"
    );

    // Production keys wait in CREATED without a key, secret or token; sandbox keys (not
    // switched on) are made at once.
    let held_keys = generate(api, &sam, &app, "PRODUCTION").await.expect(200);
    assert_eq!(held_keys.body["keyState"], "CREATED");
    for absent in ["consumerKey", "consumerSecret", "token"] {
        assert!(
            held_keys.body.get(absent).is_none_or(Value::is_null),
            "{absent}"
        );
    }
    generate(api, &sam, &app, "PRODUCTION").await.expect(409);
    let key_path = format!("{STORE}/applications/{app}/keys/PRODUCTION");
    let shown = api.get(&key_path, &sam).await.expect(200);
    assert_eq!(shown.body["keyState"], "CREATED");
    let sandbox = generate(api, &sam, &app, "SANDBOX").await.expect(200);
    assert_eq!(sandbox.body["keyState"], "COMPLETED");
    assert!(sandbox.body["consumerKey"].is_string());
    let keys_flow = reference(api, "AM_APPLICATION_REGISTRATION_PRODUCTION", &app).await;
    decide(api, &alice, &keys_flow, "APPROVED")
        .await
        .expect(404);
    decide(api, &admin, &keys_flow, "APPROVED")
        .await
        .expect(200);
    let made = api.get(&key_path, &sam).await.expect(200);
    assert_eq!(made.body["keyState"], "COMPLETED");
    let keys = Keys {
        key: made.str("consumerKey"),
        secret: made.str("consumerSecret"),
    };
    client_credentials_token(api, "/oauth2/token", &keys)
        .await
        .unwrap();
    let listed = api
        .get(&format!("{STORE}/applications/{app}"), &sam)
        .await
        .expect(200);
    assert_eq!(listed.body["keys"].as_array().unwrap().len(), 2);

    // A rejected application stays REJECTED and can do nothing.
    let doomed = create_app(api, &sam, "Doomed").await.str("applicationId");
    let flow = reference(api, "AM_APPLICATION_CREATION", &doomed).await;
    decide(api, &admin, &flow, "REJECTED").await.expect(200);
    assert_eq!(app_status(api, &sam, &doomed).await, "REJECTED");
    subscribe(api, &sam, &doomed, &weather)
        .await
        .expect_error(400, "not approved");
    // Rejected key requests make no keys, and may be asked again.
    let other = api
        .get(&format!("{STORE}/applications"), &sam)
        .await
        .expect(200);
    let default_app = other.body["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "DefaultApplication")
        .map(|a| a["applicationId"].as_str().unwrap().to_string())
        .unwrap();
    generate(api, &sam, &default_app, "PRODUCTION")
        .await
        .expect(200);
    let flow = reference(api, "AM_APPLICATION_REGISTRATION_PRODUCTION", &default_app).await;
    decide(api, &admin, &flow, "REJECTED").await.expect(200);
    api.get(
        &format!("{STORE}/applications/{default_app}/keys/PRODUCTION"),
        &sam,
    )
    .await
    .expect(404);
    let again = generate(api, &sam, &default_app, "PRODUCTION")
        .await
        .expect(200);
    assert_eq!(again.body["keyState"], "CREATED");

    // What is gone no longer waits: an unsubscribed subscription, a deleted application.
    let dropped = subscribe(api, &sam, &default_app, &weather)
        .await
        .expect(201)
        .str("subscriptionId");
    reference(api, "AM_SUBSCRIPTION_CREATION", &dropped).await;
    api.delete(&format!("{STORE}/subscriptions/{dropped}"), &sam)
        .await
        .expect(200);
    assert!(
        waiting(api, admin_basic, "AM_SUBSCRIPTION_CREATION", &dropped)
            .await
            .is_empty()
    );
    let gone = create_app(api, &sam, "Gone").await.str("applicationId");
    reference(api, "AM_APPLICATION_CREATION", &gone).await;
    api.delete(&format!("{STORE}/applications/{gone}"), &sam)
        .await
        .expect(200);
    assert!(
        waiting(api, admin_basic, "AM_APPLICATION_CREATION", &gone)
            .await
            .is_empty()
    );
    api.basic(
        Method::GET,
        &format!("{WAITING}?workflowType=NOPE"),
        admin_basic,
        None,
    )
    .await
    .expect_error(400, "workflowType");
    api.basic(Method::GET, WAITING, ("sam", "sam-pw"), None)
        .await
        .expect(403);

    // Switches are per tenant: acme's are off.
    let acme_app = create_app(api, &alice, "AcmeApp").await;
    assert_eq!(acme_app.body["status"], "APPROVED");
    // Switched off again, new applications are approved at once.
    let off = json!({"applicationCreation": false, "subscriptionCreation": false,
                     "productionKeyGeneration": false});
    switch(api, admin_basic, off).await.expect(200);
    assert_eq!(
        create_app(api, &sam, "After").await.body["status"],
        "APPROVED"
    );
}

/// A subscription waiting for its approval is refused by the gateway with WSO2's 900909,
/// and admitted once approved.
pub async fn a_subscription_on_hold_is_refused_until_approved(database: Backend) {
    let stack = harness::stack::Launch {
        database,
        ..Default::default()
    }
    .start()
    .await;
    let (mgmt, gw) = (&stack.mgmt, &stack.gw);
    switch(
        mgmt,
        ("admin", ADMIN_PASSWORD),
        json!({"subscriptionCreation": true}),
    )
    .await
    .expect(200);
    let api = stack.api("Held", json!({}), &["Publish"]).await;
    let (_, key, secret, subscriptions) = stack.application("Waits", "Unlimited", &[&api]).await;
    let subscription = &subscriptions[0];
    assert_eq!(
        subscription_status(mgmt, &stack.admin, subscription).await,
        "ON_HOLD"
    );
    let token = stack.app_token(&key, &secret, &[]).await;
    let path = "/held/v1.0.0/devs/alice";
    let answers = |status: u16, fault: &'static str| {
        harness::eventually(gw, Method::GET, path, &token, move |reply| {
            reply.status == status && (fault.is_empty() || reply.fault_code() == fault)
        })
    };
    answers(401, "900909").await;

    let approver = mgmt.login("admin", ADMIN_PASSWORD, APPROVER_SCOPES).await;
    let flow = reference(mgmt, "AM_SUBSCRIPTION_CREATION", subscription).await;
    decide(mgmt, &approver, &flow, "APPROVED").await.expect(200);
    answers(200, "").await;
}
