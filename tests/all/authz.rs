//! The management side tried as a hostile tenant, creator or subscriber would: each
//! refusal next to the legitimate request that must still work.

use harness::stack::ALL_SCOPES;
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, PUBLISHER, Reply, STORE, spec_api_record};
use reqwest::Method;
use serde_json::{Value, json};

use crate::InProcess;

const ADMIN_API: &str = "/api/am/admin/v0.14";
const ADMIN: (&str, &str) = ("admin", ADMIN_PASSWORD);

/// The spec's record with these fields replaced.
fn record(changes: Value) -> Value {
    let mut record = spec_api_record();
    record.as_object_mut().unwrap().remove("provider");
    for (key, value) in changes.as_object().unwrap() {
        record[key] = value.clone();
    }
    record
}

async fn create(env: &InProcess, token: &str, changes: Value) -> Reply {
    env.api
        .post_json(&format!("{PUBLISHER}/apis"), token, &record(changes))
        .await
}

async fn publish(env: &InProcess, token: &str, id: &str) {
    Steps::new(&env.api, token)
        .lifecycle(id, "Publish")
        .await
        .unwrap();
}

async fn new_application(env: &InProcess, token: &str, name: &str) -> String {
    let steps = Steps::new(&env.api, token);
    steps.create_application(name, "Unlimited").await.unwrap()
}

async fn subscribe(env: &InProcess, token: &str, api: &str, application: &str) -> Reply {
    env.api
        .post_json(
            &format!("{STORE}/subscriptions"),
            token,
            &json!({"tier": "Unlimited", "apiIdentifier": api, "applicationId": application}),
        )
        .await
}

/// Store API names a caller sees, with an optional `X-WSO2-Tenant`.
async fn store_names(env: &InProcess, token: &str, tenant: Option<&str>) -> Vec<String> {
    let mut request = env
        .api
        .request(Method::GET, &format!("{STORE}/apis?limit=100"), token);
    if let Some(tenant) = tenant {
        request = request.header("X-WSO2-Tenant", tenant);
    }
    let list = env.api.send(request).await.expect(200);
    let mut names: Vec<String> = list.body["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|api| api["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Contexts under `/t/<domain>/` are that tenant's alone, and a gateway route has one
/// owner across the platform.
pub async fn tenant_routes_cannot_be_squatted(env: InProcess) {
    let api = &env.api;
    api.add_user("alice@acme.com", "alice-pw", &["creator", "publisher"])
        .await;
    api.add_user("mallory", "mallory-pw", &["creator", "publisher"])
        .await;
    let alice = api.login("alice@acme.com", "alice-pw", ALL_SCOPES).await;
    let mallory = api.login("mallory", "mallory-pw", ALL_SCOPES).await;
    // Nor a user name that would stand for a tenant user in unique API names
    // (`alice-AT-acme.com-Pay-v1`).
    let squatter =
        json!({"username": "alice-AT-acme.com", "password": "x-pw", "roles": ["creator"]});
    api.basic(
        Method::POST,
        "/api/am/admin/v0.14/users",
        ("admin", ADMIN_PASSWORD),
        Some(&squatter),
    )
    .await
    .expect_error(400, "-AT-");

    // A super-tenant user cannot claim the tenant's space, in any spelling.
    for (context, version) in [
        ("/t/acme.com/pay", "v1"),
        ("t/acme.com/pay", "v1"),
        ("/T/acme.com/pay", "v1"),
        ("/t", "acme.com"),
        ("/t/acme.com", "v1"),
    ] {
        create(
            &env,
            &mallory,
            json!({"name": "Squat", "context": context, "version": version}),
        )
        .await
        .expect_error(400, "reserved");
    }
    // Nor can another tenant's user; the tenant's own user can, either way it is written.
    create(
        &env,
        &alice,
        json!({"name": "Other", "context": "/t/other.org/pay"}),
    )
    .await
    .expect_error(400, "reserved");
    let pay = create(&env, &alice, json!({"name": "Pay", "context": "/pay"}))
        .await
        .expect(201);
    assert_eq!(pay.body["context"], "/t/acme.com/pay");
    create(
        &env,
        &alice,
        json!({"name": "Ledger", "context": "/t/acme.com/ledger"}),
    )
    .await
    .expect(201);
    // The legitimate super-tenant API of the same context path is its own route.
    create(&env, &mallory, json!({"name": "Pay", "context": "/pay"}))
        .await
        .expect(201);

    // Routes collide across contexts too: `/shop/v1` is Shop's versioned route, so no
    // other API may take it as its default-version route.
    let shop = create(
        &env,
        &mallory,
        json!({"name": "Shop", "context": "/shop", "version": "v1"}),
    )
    .await
    .expect(201)
    .str("id");
    create(
        &env,
        &mallory,
        json!({"name": "ShopV1", "context": "/shop/v1", "version": "v2", "isDefaultVersion": true}),
    )
    .await
    .expect_error(409, "/shop/v1");
    let taker = create(
        &env,
        &mallory,
        json!({"name": "ShopV1", "context": "/shop/v1", "version": "v2"}),
    )
    .await
    .expect(201)
    .str("id");
    // An update cannot take it either; the refused update changed nothing.
    let path = format!("{PUBLISHER}/apis/{taker}");
    let mut stored = api.get(&path, &mallory).await.expect(200).body;
    stored["isDefaultVersion"] = json!(true);
    api.put_json(&path, &mallory, &stored)
        .await
        .expect_error(409, "/shop/v1");
    assert_eq!(
        api.get(&path, &mallory).await.expect(200).body["isDefaultVersion"],
        false
    );
    // Once Shop is gone, its route is free.
    api.delete(&format!("{PUBLISHER}/apis/{shop}"), &mallory)
        .await
        .expect(200);
    api.put_json(&path, &mallory, &stored).await.expect(200);

    // One default version per API: a new default version takes the bare context over.
    let v1 = create(
        &env,
        &mallory,
        json!({"name": "Cart", "context": "/cart", "version": "v1", "isDefaultVersion": true}),
    )
    .await
    .expect(201)
    .str("id");
    create(
        &env,
        &mallory,
        json!({"name": "Cart", "context": "/cart", "version": "v2", "isDefaultVersion": true}),
    )
    .await
    .expect(201);
    let old = api
        .get(&format!("{PUBLISHER}/apis/{v1}"), &mallory)
        .await
        .expect(200);
    assert_eq!(old.body["isDefaultVersion"], false);
}

/// A tenant's administrator manages that tenant's accounts only; platform operations
/// need the super tenant's. Accounts can be listed, changed, disabled, reset, deleted.
pub async fn tenant_admin_is_confined(env: InProcess) {
    let api = &env.api;
    let users = format!("{ADMIN_API}/users");
    let user = |name: &str| format!("{ADMIN_API}/users/{name}");
    api.add_user("root@acme.com", "root-pw", &["admin"]).await;
    api.add_user("bob@acme.com", "bob-pw", &["subscriber"])
        .await;
    api.add_user("carol@other.org", "carol-pw", &["subscriber"])
        .await;
    let tenant_admin = ("root@acme.com", "root-pw");

    // Listing shows the own tenant only; the platform's administrator sees all.
    let listed = api
        .basic(Method::GET, &users, tenant_admin, None)
        .await
        .expect(200);
    let names: Vec<&str> = listed
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bob@acme.com", "root@acme.com"]);
    let all = api
        .basic(Method::GET, &users, ADMIN, None)
        .await
        .expect(200);
    assert_eq!(all.body.as_array().unwrap().len(), 4);

    // Adding in another tenant is refused; in its own, allowed.
    let dave =
        |name: &str| json!({"username": name, "password": "dave-pw", "roles": ["subscriber"]});
    api.basic(
        Method::POST,
        &users,
        tenant_admin,
        Some(&dave("dave@other.org")),
    )
    .await
    .expect(403);
    api.basic(Method::POST, &users, tenant_admin, Some(&dave("dave")))
        .await
        .expect(403);
    api.basic(
        Method::POST,
        &users,
        tenant_admin,
        Some(&dave("dave@acme.com")),
    )
    .await
    .expect(201);
    // Other tenants' accounts answer as missing ones, whatever the operation.
    for target in ["carol@other.org", "admin", "nobody@acme.com"] {
        api.basic(Method::GET, &user(target), tenant_admin, None)
            .await
            .expect(404);
        api.basic(
            Method::PUT,
            &user(target),
            tenant_admin,
            Some(&json!({"roles": ["admin"]})),
        )
        .await
        .expect(404);
        api.basic(Method::DELETE, &user(target), tenant_admin, None)
            .await
            .expect(404);
        api.basic(
            Method::POST,
            &format!("{}/password", user(target)),
            tenant_admin,
            Some(&json!({"password": "taken"})),
        )
        .await
        .expect(404);
    }
    // Signing keys are the platform's.
    let rotate = format!("{ADMIN_API}/signing-keys/rotate");
    api.basic(Method::POST, &rotate, tenant_admin, None)
        .await
        .expect(403);
    api.basic(Method::POST, &rotate, ADMIN, None)
        .await
        .expect(201);
    // Not an administrator at all.
    api.basic(Method::GET, &users, ("bob@acme.com", "bob-pw"), None)
        .await
        .expect(403);

    // Roles change.
    let changed = api
        .basic(
            Method::PUT,
            &user("bob@acme.com"),
            tenant_admin,
            Some(&json!({"roles": ["subscriber", "creator"]})),
        )
        .await
        .expect(200);
    assert_eq!(changed.body["roles"], json!(["subscriber", "creator"]));
    // New roles end the tokens issued under the old ones: a demoted creator's token no
    // longer creates, and a new login carries only what the new roles give.
    // The token is issued and the roles change within one second of the clock: tokens
    // end to the millisecond, not to the second.
    let create_scopes = "mgr:api_create mgr:api_view mgr:subscribe";
    let into_second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .subsec_millis();
    if into_second > 200 {
        tokio::time::sleep(std::time::Duration::from_millis(u64::from(
            1000 - into_second,
        )))
        .await;
    }
    let bob_creator = api.login("bob@acme.com", "bob-pw", create_scopes).await;
    let apis = format!("{PUBLISHER}/apis");
    api.get(&apis, &bob_creator).await.expect(200);
    api.basic(
        Method::PUT,
        &user("bob@acme.com"),
        tenant_admin,
        Some(&json!({"roles": ["subscriber"]})),
    )
    .await
    .expect(200);
    api.get(&apis, &bob_creator).await.expect(401);
    let bob_subscriber = api.login("bob@acme.com", "bob-pw", create_scopes).await;
    assert_eq!(
        harness::jwt_claims(&bob_subscriber)["scope"],
        "mgr:subscribe",
        "only what the new roles give"
    );
    api.get(&format!("{STORE}/applications"), &bob_subscriber)
        .await
        .expect(200);
    api.basic(
        Method::PUT,
        &user("bob@acme.com"),
        tenant_admin,
        Some(&json!({"roles": ["subscriber", "creator"]})),
    )
    .await
    .expect(200);
    api.basic(
        Method::PUT,
        &user("bob@acme.com"),
        tenant_admin,
        Some(&json!({"roles": ["root"]})),
    )
    .await
    .expect(400);

    // Disabling ends logins and the sessions already open; enabling restores them.
    let bob = api.login("bob@acme.com", "bob-pw", "mgr:subscribe").await;
    let applications = format!("{STORE}/applications");
    api.get(&applications, &bob).await.expect(200);
    api.basic(
        Method::PUT,
        &user("bob@acme.com"),
        tenant_admin,
        Some(&json!({"disabled": true})),
    )
    .await
    .expect(200);
    api.get(&applications, &bob).await.expect(401);
    api.register("bob@acme.com", "bob-pw", "after_disable")
        .await
        .expect(401);
    api.basic(
        Method::PUT,
        &user("bob@acme.com"),
        tenant_admin,
        Some(&json!({"disabled": false})),
    )
    .await
    .expect(200);
    api.get(&applications, &bob).await.expect(200);

    // A reset password replaces the old one.
    api.basic(
        Method::POST,
        &format!("{}/password", user("bob@acme.com")),
        tenant_admin,
        Some(&json!({"password": "bob-new-pw"})),
    )
    .await
    .expect(200);
    api.register("bob@acme.com", "bob-pw", "old_password")
        .await
        .expect(401);
    api.login("bob@acme.com", "bob-new-pw", "mgr:subscribe")
        .await;

    // Deleted accounts are gone, and so are their sessions.
    api.basic(Method::DELETE, &user("bob@acme.com"), tenant_admin, None)
        .await
        .expect(200);
    api.get(&applications, &bob).await.expect(401);
    api.basic(Method::GET, &user("bob@acme.com"), tenant_admin, None)
        .await
        .expect(404);

    // The platform keeps an enabled administrator.
    api.basic(
        Method::PUT,
        &user("admin"),
        ADMIN,
        Some(&json!({"disabled": true})),
    )
    .await
    .expect_error(409, "at least one enabled administrator");
    api.basic(Method::DELETE, &user("admin"), ADMIN, None)
        .await
        .expect(409);
    api.basic(Method::GET, &users, ADMIN, None)
        .await
        .expect(200);
}

/// A creator cannot deploy (a new API is CREATED whatever the body says; lifecycle needs
/// api_publish) nor create APIs in another user's name.
pub async fn creator_cannot_deploy_or_impersonate(env: InProcess) {
    let api = &env.api;
    api.add_user("cathy", "cathy-pw", &["creator"]).await;
    let cathy = api.login("cathy", "cathy-pw", ALL_SCOPES).await;
    for (name, status) in [("Proto", "PROTOTYPED"), ("Live", "PUBLISHED")] {
        let context = format!("/{}", name.to_lowercase());
        let created = create(
            &env,
            &cathy,
            json!({"name": name, "context": context, "status": status}),
        )
        .await
        .expect(201);
        assert_eq!(created.body["status"], "CREATED");
        assert_eq!(created.body["provider"], "cathy");
        api.post_empty(
            &format!(
                "{PUBLISHER}/apis/change-lifecycle?apiId={}&action=Deploy+as+a+Prototype",
                created.str("id")
            ),
            &cathy,
        )
        .await
        .expect(401);
    }
    // Naming another provider: a creator's API is the creator's whatever it names (as
    // WSO2 2.6 overrides it), an administrator's may be any existing user's of its tenant.
    let overridden = create(
        &env,
        &cathy,
        json!({"name": "Impersonated", "context": "/imp", "provider": "admin"}),
    )
    .await
    .expect(201);
    assert_eq!(overridden.body["provider"], "cathy");
    // Nor does an update move it, or its state: both stay as stored (the contract's PUT).
    let path = format!("{PUBLISHER}/apis/{}", overridden.str("id"));
    let mut update = overridden.body.clone();
    update["provider"] = json!("admin");
    let kept = api.put_json(&path, &cathy, &update).await.expect(200);
    assert_eq!(kept.body["provider"], "cathy");
    update["provider"] = json!("cathy");
    update["status"] = json!("PUBLISHED");
    let updated = api.put_json(&path, &cathy, &update).await.expect(200);
    assert_eq!(updated.body["provider"], "cathy");
    assert_eq!(updated.body["status"], "CREATED");
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    for (provider, refusal) in [("nobody", "not exist"), ("x@acme.com", "tenant")] {
        create(
            &env,
            &admin,
            json!({"name": "Ghost", "context": "/ghost", "provider": provider}),
        )
        .await
        .expect_error(400, refusal);
    }
    let on_behalf = create(
        &env,
        &admin,
        json!({"name": "OnBehalf", "context": "/on-behalf", "provider": "cathy"}),
    )
    .await
    .expect(201);
    assert_eq!(on_behalf.body["provider"], "cathy");
    // A publisher deploys.
    publish(&env, &admin, &on_behalf.str("id")).await;
}

/// RESTRICTED and PRIVATE APIs are invisible and unsubscribable to those they are not
/// for; subscription availability governs other tenants.
pub async fn visibility_and_availability(env: InProcess) {
    let api = &env.api;
    api.add_user("sub", "sub-pw", &["subscriber"]).await;
    api.add_user("partner", "partner-pw", &["subscriber", "publisher"])
        .await;
    api.add_user("zed@acme.com", "zed-pw", &["subscriber"])
        .await;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let sub = api.login("sub", "sub-pw", "mgr:subscribe").await;
    let partner = api.login("partner", "partner-pw", "mgr:subscribe").await;
    let zed = api.login("zed@acme.com", "zed-pw", "mgr:subscribe").await;

    let mut ids = std::collections::HashMap::new();
    for (name, changes) in [
        ("Open", json!({"visibility": "PUBLIC"})),
        (
            "Partners",
            json!({"visibility": "RESTRICTED", "visibleRoles": ["publisher"]}),
        ),
        ("Internal", json!({"visibility": "PRIVATE"})),
        (
            "Everyone",
            json!({"visibility": "PUBLIC", "subscriptionAvailability": "all_tenants"}),
        ),
        (
            "Others",
            json!({"visibility": "PUBLIC", "subscriptionAvailability": "specific_tenants", "subscriptionAvailableTenants": ["other.org"]}),
        ),
    ] {
        let mut changes = changes;
        changes["name"] = json!(name);
        changes["context"] = json!(format!("/{}", name.to_lowercase()));
        let id = create(&env, &admin, changes).await.expect(201).str("id");
        publish(&env, &admin, &id).await;
        ids.insert(name, id);
    }
    // Not yet published: never in the store.
    create(&env, &admin, json!({"name": "Draft", "context": "/draft"}))
        .await
        .expect(201);

    // Who sees what.
    assert_eq!(
        store_names(&env, "", None).await,
        ["Everyone", "Open", "Others"]
    );
    assert_eq!(
        store_names(&env, &sub, None).await,
        ["Everyone", "Internal", "Open", "Others"]
    );
    assert_eq!(
        store_names(&env, &partner, None).await,
        ["Everyone", "Internal", "Open", "Others", "Partners"]
    );
    assert_eq!(store_names(&env, &zed, None).await, Vec::<String>::new());
    assert_eq!(
        store_names(&env, &zed, Some("carbon.super")).await,
        ["Everyone", "Open", "Others"]
    );
    let one = |id: &str| format!("{STORE}/apis/{id}");
    api.get(&one(&ids["Partners"]), &sub).await.expect(404);
    let seen = api.get(&one(&ids["Partners"]), &partner).await.expect(200);
    assert!(seen.body.get("endpointConfig").is_none());
    assert!(seen.body.get("endpointSecurity").is_none());
    api.get(&one(&ids["Internal"]), "").await.expect(404);
    api.get(&one(&ids["Open"]), "").await.expect(200);
    api.get(&one(&ids["Open"]), "not-a-token").await.expect(401);

    // Who subscribes to what: what one may not subscribe to answers as an unknown API.
    let sub_app = new_application(&env, &sub, "SubApp").await;
    let partner_app = new_application(&env, &partner, "PartnerApp").await;
    let zed_app = new_application(&env, &zed, "ZedApp").await;
    subscribe(&env, &sub, &ids["Partners"], &sub_app)
        .await
        .expect(404);
    api.get(
        &format!("{STORE}/subscriptions?apiId={}", ids["Partners"]),
        &sub,
    )
    .await
    .expect(404);
    subscribe(&env, &partner, &ids["Partners"], &partner_app)
        .await
        .expect(201);
    subscribe(&env, &sub, &ids["Internal"], &sub_app)
        .await
        .expect(201);
    subscribe(&env, &sub, "admin-Open-v1.0.0", &sub_app)
        .await
        .expect(201);
    let unknown = subscribe(&env, &zed, "00000000-0000-0000-0000-000000000000", &zed_app)
        .await
        .expect(404);
    for name in ["Open", "Internal", "Partners", "Others"] {
        let refused = subscribe(&env, &zed, &ids[name], &zed_app)
            .await
            .expect(404);
        assert_eq!(refused.body["code"], unknown.body["code"]);
    }
    let zed_subscription = subscribe(&env, &zed, &ids["Everyone"], &zed_app)
        .await
        .expect(201)
        .str("subscriptionId");
    // Another tenant's application answers as a missing one too.
    subscribe(&env, &sub, &ids["Open"], &zed_app)
        .await
        .expect(404);
    // specific_tenants opens the API to the tenants it names, and to them alone.
    api.add_user("ola@other.org", "ola-pw", &["subscriber"])
        .await;
    let ola = api.login("ola@other.org", "ola-pw", "mgr:subscribe").await;
    let ola_app = new_application(&env, &ola, "OlaApp").await;
    subscribe(&env, &ola, &ids["Others"], &ola_app)
        .await
        .expect(201);
    subscribe(&env, &ola, &ids["Open"], &ola_app)
        .await
        .expect(404);

    // Another tenant's subscription answers exactly as an unknown one, naming nothing of
    // it; the owner reads it.
    let subscription = |id: &str| format!("{STORE}/subscriptions/{id}");
    api.get(&subscription(&zed_subscription), &zed)
        .await
        .expect(200);
    let unknown = api
        .get(&subscription("00000000-0000-0000-0000-000000000000"), &sub)
        .await
        .expect(404);
    for reply in [
        api.get(&subscription(&zed_subscription), &sub).await,
        api.delete(&subscription(&zed_subscription), &sub).await,
    ] {
        let reply = reply.expect(404);
        assert_eq!(reply.body["code"], unknown.body["code"]);
        assert!(!reply.body.to_string().contains(&zed_app), "{}", reply.body);
    }
    api.get(&subscription(&zed_subscription), &zed)
        .await
        .expect(200);
}
