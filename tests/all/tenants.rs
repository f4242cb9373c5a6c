//! Tenants: `name@domain` users, `/t/<domain>` contexts and `-AT-` unique names.

use harness::{PUBLISHER, STORE, spec_api_record};
use serde_json::json;

use crate::InProcess;

pub async fn tenant_users_and_unique_names(env: InProcess) {
    let api = &env.api;
    api.add_user(
        "alice@acme.com",
        "alice-pw",
        &["creator", "publisher", "subscriber"],
    )
    .await;
    api.add_user("bob@acme.com", "bob-pw", &["subscriber"])
        .await;
    let scopes = harness::stack::ALL_SCOPES;
    let alice = api.login("alice@acme.com", "alice-pw", scopes).await;
    // The spec's record names `admin` as its provider: a creator's API is the creator's
    // all the same (WSO2 2.6 overrides the provider of a user without the admin role).
    let created = api
        .post_json(&format!("{PUBLISHER}/apis"), &alice, &spec_api_record())
        .await
        .expect(201);
    assert_eq!(created.body["provider"], "alice@acme.com");
    let id = created.str("id");
    assert_eq!(created.body["context"], "/t/acme.com/dev-management");
    assert_eq!(created.body["provider"], "alice@acme.com");
    api.post_empty(
        &format!("{PUBLISHER}/apis/change-lifecycle?apiId={id}&action=Publish"),
        &alice,
    )
    .await
    .expect(200);
    // The same API in the super tenant does not collide with the tenant's.
    let admin = api.login("admin", harness::ADMIN_PASSWORD, scopes).await;
    api.post_json(&format!("{PUBLISHER}/apis"), &admin, &spec_api_record())
        .await
        .expect(201);
    // Another tenant's API is not found in the publisher, to read or to change: an update,
    // its Swagger, a lifecycle change and a delete answer as for an unknown id, and change
    // nothing.
    let theirs = format!("{PUBLISHER}/apis/{id}");
    api.get(&theirs, &admin).await.expect(404);
    let mut taken = created.body.clone();
    taken["description"] = json!("taken over");
    api.put_json(&theirs, &admin, &taken).await.expect(404);
    let swagger = json!({"swagger": "2.0", "info": {"title": "x", "version": "1"}, "paths": {}});
    api.put_json(&format!("{theirs}/swagger"), &admin, &swagger)
        .await
        .expect(404);
    api.get(&format!("{theirs}/swagger"), &admin)
        .await
        .expect(404);
    for action in ["Block", "Retire", "Demote to Created"] {
        let change = format!("{PUBLISHER}/apis/change-lifecycle?apiId={id}&action={action}");
        api.post_empty(&change, &admin).await.expect(404);
    }
    api.delete(&theirs, &admin).await.expect(404);
    let kept = api.get(&theirs, &alice).await.expect(200);
    assert_eq!(kept.body["status"], "PUBLISHED");
    assert_eq!(kept.body["description"], created.body["description"]);
    assert_eq!(kept.body["apiDefinition"], created.body["apiDefinition"]);
    // Its owner's own update goes through.
    let mut own = kept.body.clone();
    own["description"] = json!("still alice's");
    let updated = api.put_json(&theirs, &alice, &own).await.expect(200);
    assert_eq!(updated.body["description"], "still alice's");
    let listed = api
        .get(&format!("{PUBLISHER}/apis"), &alice)
        .await
        .expect(200);
    assert_eq!(listed.body["count"], 1);

    // A tenant user subscribes by the -AT- unique name (and by the @ form).
    let bob = api.login("bob@acme.com", "bob-pw", "mgr:subscribe").await;
    let app = api
        .post_json(
            &format!("{STORE}/applications"),
            &bob,
            &json!({"name": "BobApp", "throttlingTier": "Unlimited"}),
        )
        .await
        .expect(201)
        .str("applicationId");
    let subscribed = api
        .post_json(
            &format!("{STORE}/subscriptions"),
            &bob,
            &json!({"tier": "Unlimited", "apiIdentifier": "alice-AT-acme.com-DevManagementAPI-v1.0.0", "applicationId": app}),
        )
        .await
        .expect(201);
    assert_eq!(
        subscribed.body["apiIdentifier"],
        "alice@acme.com-DevManagementAPI-v1.0.0"
    );
    api.post_json(
        &format!("{STORE}/subscriptions"),
        &bob,
        &json!({"tier": "Unlimited", "apiIdentifier": "alice@acme.com-DevManagementAPI-v1.0.0", "applicationId": app}),
    )
    .await
    .expect(409);
    // A super-tenant user may not subscribe to the tenant's API (current_tenant
    // availability): it answers as an unknown API does.
    let admin_app = api
        .post_json(
            &format!("{STORE}/applications"),
            &admin,
            &json!({"name": "AdminApp", "throttlingTier": "Unlimited"}),
        )
        .await
        .expect(201)
        .str("applicationId");
    api.post_json(
        &format!("{STORE}/subscriptions"),
        &admin,
        &json!({"tier": "Unlimited", "apiIdentifier": id, "applicationId": admin_app}),
    )
    .await
    .expect(404);
}
