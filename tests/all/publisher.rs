//! Publisher validation, conflicts, lifecycle, updates, lists and deletes.

use harness::stack::ALL_SCOPES;
use harness::{PUBLISHER, STORE, spec_api_record};
use serde_json::{Value, json};

use crate::{Env, InProcess};

async fn admin_token(env: &InProcess) -> String {
    env.api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await
}

fn with(mut record: Value, changes: Value) -> Value {
    for (key, value) in changes.as_object().unwrap() {
        if value.is_null() {
            record.as_object_mut().unwrap().remove(key);
        } else {
            record[key] = value.clone();
        }
    }
    record
}

async fn api_count(api: &harness::Client, token: &str) -> i64 {
    let list = api
        .get(&format!("{PUBLISHER}/apis"), token)
        .await
        .expect(200);
    list.body["pagination"]["total"].as_i64().unwrap()
}

pub async fn api_validation_and_conflicts(env: InProcess) {
    let api = &env.api;
    let token = admin_token(&env).await;
    let apis = format!("{PUBLISHER}/apis");
    let record = spec_api_record();
    let swagger_with = |operation: Value| {
        json!({"swagger": "2.0", "paths": {"/x": {"get": operation}}}).to_string()
    };
    let refused: Vec<(Value, &str)> = vec![
        (
            with(record.clone(), json!({"name": null, "tiers": null})),
            "400_name",
        ),
        (
            with(record.clone(), json!({"apiDefinition": null})),
            "apiDefinition: may not be null",
        ),
        (
            with(record.clone(), json!({"context": "/dev-management/"})),
            "Context cannot end with '/' character",
        ),
        (
            with(record.clone(), json!({"tiers": []})),
            "No tier defined for the API",
        ),
        (
            with(record.clone(), json!({"tiers": ["Gold", "Platinum"]})),
            "Specified tier(s) [Platinum] are invalid",
        ),
        (
            with(
                record.clone(),
                json!({"apiDefinition": "{\"swagger\":\"2.0\"}"}),
            ),
            "paths",
        ),
        (
            with(record.clone(), json!({"apiDefinition": "not json"})),
            "apiDefinition is not a valid JSON",
        ),
        (
            with(
                record.clone(),
                json!({"apiDefinition": "{\"openapi\":\"3.0.0\",\"paths\":{}}"}),
            ),
            "Swagger 2.0",
        ),
        (
            with(
                record.clone(),
                json!({"apiDefinition": swagger_with(json!({"x-auth-type": "Whoever"}))}),
            ),
            "x-auth-type",
        ),
        (
            with(
                record.clone(),
                json!({"apiDefinition": swagger_with(json!({"x-throttling-tier": "NoSuchTier"}))}),
            ),
            "x-throttling-tier",
        ),
        (
            with(record.clone(), json!({"endpointConfig": "{"})),
            "endpointConfig is not a valid JSON",
        ),
        (
            with(
                record.clone(),
                json!({"endpointConfig": "{\"endpoint_type\":\"http\"}"}),
            ),
            "production_endpoints",
        ),
        (
            with(record.clone(), json!({"visibility": "EVERYONE"})),
            "visibility",
        ),
        (
            with(record.clone(), json!({"transport": ["ftp"]})),
            "transport",
        ),
        (
            with(record.clone(), json!({"cacheTimeout": "soon"})),
            "Malformed request body",
        ),
        (
            with(record.clone(), json!({"colour": "blue"})),
            "Unrecognized property 'colour'",
        ),
        (
            with(record.clone(), json!({"name": "Dev/Management"})),
            "illegal character",
        ),
    ];
    for (body, message) in refused {
        api.post_json(&apis, &token, &body)
            .await
            .expect_error(400, message);
    }
    // Raw bodies: malformed, empty, not JSON, too large.
    let raw = |body: String, content_type: &str| {
        api.request(reqwest::Method::POST, &apis, &token)
            .header("content-type", content_type)
            .body(body)
    };
    api.send(raw("{\"name\":".into(), "application/json"))
        .await
        .expect_error(400, "Malformed request body.");
    api.send(raw(String::new(), "application/json"))
        .await
        .expect_error(400, "Request payload cannot be empty.");
    api.send(raw(record.to_string(), "text/plain"))
        .await
        .expect_error(415, "application/json");
    assert_eq!(
        api_count(&env.api, &token).await,
        0,
        "refused requests must create nothing"
    );

    // Conflicts, as WSO2 words them.
    let id = api
        .post_json(&apis, &token, &record)
        .await
        .expect(201)
        .str("id");
    api.post_json(&apis, &token, &record)
        .await
        .expect_error(409, "A duplicate API already exists");
    api.post_json(
        &apis,
        &token,
        &with(
            record.clone(),
            json!({"name": "devmanagementapi", "context": "/other"}),
        ),
    )
    .await
    .expect_error(400, "API with name DevManagementAPI already exists.");
    // The same name and version at another context is refused; a new version may take a
    // context of its own, as WSO2's apisPost checks the context only against an equal
    // version (its REST tests add NewAPI at /test v2, then at /test1 v3).
    let version = record["version"].as_str().unwrap().to_uppercase();
    api.post_json(
        &apis,
        &token,
        &with(
            record.clone(),
            json!({"version": version, "context": "/elsewhere"}),
        ),
    )
    .await
    .expect_error(400, "already exists with different context");
    let elsewhere = api
        .post_json(
            &apis,
            &token,
            &with(
                record.clone(),
                json!({"version": "v9.0.0", "context": "/elsewhere"}),
            ),
        )
        .await
        .expect(201);
    assert_eq!(elsewhere.body["context"], "/elsewhere");
    // A name has one default version, whatever the contexts of its versions.
    let at = |context: &str, version: &str| {
        with(
            record.clone(),
            json!({"version": version, "context": context, "isDefaultVersion": true}),
        )
    };
    let first = api
        .post_json(&apis, &token, &at("/first", "v10.0.0"))
        .await
        .expect(201)
        .str("id");
    let second = api
        .post_json(&apis, &token, &at("/second", "v11.0.0"))
        .await
        .expect(201)
        .str("id");
    let flag = api
        .get(&format!("{apis}/{second}"), &token)
        .await
        .expect(200);
    assert_eq!(flag.body["isDefaultVersion"], true);
    let flag = api
        .get(&format!("{apis}/{first}"), &token)
        .await
        .expect(200);
    assert_eq!(
        flag.body["isDefaultVersion"], false,
        "demoted at its own context"
    );
    // A context that is another version's versioned route is not handed over by
    // making the new API the default: its route stays its own.
    api.post_json(&apis, &token, &at("/first/v10.0.0", "v12.0.0"))
        .await
        .expect_error(409, "already used by another API");
    let flag = api
        .get(&format!("{apis}/{first}"), &token)
        .await
        .expect(200);
    assert_eq!(flag.body["context"], "/first");
    for id in [elsewhere.str("id"), first, second] {
        api.delete(&format!("{apis}/{id}"), &token)
            .await
            .expect(200);
    }
    api.post_json(
        &apis,
        &token,
        &with(record.clone(), json!({"name": "OtherAPI"})),
    )
    .await
    .expect_error(
        400,
        "A duplicate API context already exists for /dev-management",
    );
    // A new version under the same context is fine; a context without '/' gets one.
    let v2 = api
        .post_json(
            &apis,
            &token,
            &with(
                record.clone(),
                json!({"version": "v2.0.0", "context": "dev-management"}),
            ),
        )
        .await
        .expect(201);
    assert_eq!(v2.body["context"], "/dev-management");
    // A new API is CREATED whatever status the body asks for: only change-lifecycle, with
    // api_publish, deploys it.
    let proto = api
        .post_json(
            &apis,
            &token,
            &with(
                record.clone(),
                json!({"name": "Proto", "context": "/proto", "status": "PROTOTYPED"}),
            ),
        )
        .await
        .expect(201);
    assert_eq!(proto.body["status"], "CREATED");
    let forced = api
        .post_json(
            &apis,
            &token,
            &with(
                record.clone(),
                json!({"name": "Forced", "context": "/forced", "status": "PUBLISHED"}),
            ),
        )
        .await
        .expect(201);
    assert_eq!(forced.body["status"], "CREATED");

    // Unknown ids: 404 with WSO2's description.
    let missing = "00000000-0000-0000-0000-000000000000";
    api.get(&format!("{apis}/{missing}"), &token)
        .await
        .expect_error(404, &format!("Requested API with Id '{missing}' not found"));
    api.put_json(&format!("{apis}/{missing}"), &token, &record)
        .await
        .expect(404);
    api.delete(&format!("{apis}/{missing}"), &token)
        .await
        .expect(404);
    api.get(&format!("{apis}/{missing}/swagger"), &token)
        .await
        .expect(404);
    api.post_empty(
        &format!("{apis}/change-lifecycle?apiId={missing}&action=Publish"),
        &token,
    )
    .await
    .expect(404);
    // The unique name works wherever an id does.
    let by_name = api
        .get(&format!("{apis}/admin-DevManagementAPI-v1.0.0"), &token)
        .await
        .expect(200);
    assert_eq!(by_name.str("id"), id);
    // Unknown routes and methods answer in the same format.
    api.get("/api/am/publisher/v0.14/nothing-here", &token)
        .await
        .expect_error(404, "No resource");
    api.send(api.request(reqwest::Method::PATCH, &apis, &token))
        .await
        .expect_error(405, "");
}

pub async fn lifecycle_state_machine(env: InProcess) {
    let api = &env.api;
    let token = admin_token(&env).await;
    let id = api
        .post_json(&format!("{PUBLISHER}/apis"), &token, &spec_api_record())
        .await
        .expect(201)
        .str("id");
    let change = |action: &str| {
        let path = format!(
            "{PUBLISHER}/apis/change-lifecycle?apiId={id}&action={}",
            action.replace(' ', "+")
        );
        let token = token.clone();
        async move { api.post_empty(&path, &token).await }
    };
    let status = || async {
        api.get(&format!("{PUBLISHER}/apis/{id}"), &token)
            .await
            .expect(200)
            .str("status")
    };
    change("Retire").await.expect_error(
        400,
        "Action 'Retire' is not allowed. Allowed actions are [Publish, Deploy as a Prototype]",
    );
    assert_eq!(
        status().await,
        "CREATED",
        "a refused action changes nothing"
    );
    for (action, expected) in [
        ("Deploy as a Prototype", "PROTOTYPED"),
        ("Demote to Created", "CREATED"),
        ("Publish", "PUBLISHED"),
        ("Publish", "PUBLISHED"),
        ("Block", "BLOCKED"),
        ("Re-Publish", "PUBLISHED"),
        ("Deprecate", "DEPRECATED"),
        ("Retire", "RETIRED"),
    ] {
        change(action).await.expect(200);
        assert_eq!(status().await, expected, "after {action}");
    }
    change("Publish")
        .await
        .expect_error(400, "Allowed actions are []");
    change("Demote to Prototyped").await.expect(400);
    // Missing parameters.
    api.post_empty(
        &format!("{PUBLISHER}/apis/change-lifecycle?apiId={id}"),
        &token,
    )
    .await
    .expect(400);
    api.post_empty(
        &format!("{PUBLISHER}/apis/change-lifecycle?action=Publish"),
        &token,
    )
    .await
    .expect(400);
}

pub async fn update_list_search_and_delete(env: InProcess) {
    let api = &env.api;
    let token = admin_token(&env).await;
    let apis = format!("{PUBLISHER}/apis");
    let record = spec_api_record();
    let id = api
        .post_json(&apis, &token, &record)
        .await
        .expect(201)
        .str("id");

    // Update keeps identity and status, replaces the rest.
    let updated = with(
        record.clone(),
        json!({"description": "new words", "tags": ["x"], "cacheTimeout": 60}),
    );
    let reply = api
        .put_json(&format!("{apis}/{id}"), &token, &updated)
        .await
        .expect(200);
    assert_eq!(reply.body["description"], "new words");
    assert_eq!(reply.body["id"], id.as_str());
    assert_eq!(reply.body["status"], "CREATED");
    let fetched = api.get(&format!("{apis}/{id}"), &token).await.expect(200);
    assert_eq!(fetched.body["cacheTimeout"], 60);
    // `expand=true` lists whole APIs (secrets masked as a read masks them); without it,
    // or with `false`, summaries.
    let expanded = api
        .get(&format!("{apis}?expand=true"), &token)
        .await
        .expect(200);
    assert_eq!(expanded.body["list"][0], fetched.body);
    assert_eq!(
        expanded.body["list"][0]["endpointSecurity"]["password"],
        "********"
    );
    for plain in ["", "?expand=false"] {
        let listed = api.get(&format!("{apis}{plain}"), &token).await.expect(200);
        assert!(
            listed.body["list"][0].get("apiDefinition").is_none(),
            "{}",
            listed.body
        );
    }
    // The version is the stored one whatever the body says (tests/all/leniency.rs).
    let kept = api
        .put_json(
            &format!("{apis}/{id}"),
            &token,
            &with(updated.clone(), json!({"version": "v9"})),
        )
        .await
        .expect(200);
    assert_eq!(kept.body["version"], record["version"]);
    api.put_json(
        &format!("{apis}/{id}"),
        &token,
        &with(updated.clone(), json!({"tiers": ["Nope"]})),
    )
    .await
    .expect(400);
    assert_eq!(
        api.get(&format!("{apis}/{id}"), &token).await.body["description"],
        "new words"
    );

    // Swagger read and replace (JSON body, and multipart as WSO2 clients send it).
    let swagger = api
        .get(&format!("{apis}/{id}/swagger"), &token)
        .await
        .expect(200);
    assert_eq!(swagger.body["swagger"], "2.0");
    let new_swagger =
        json!({"swagger": "2.0", "paths": {"/ping": {"get": {"x-auth-type": "None"}}}});
    api.put_json(&format!("{apis}/{id}/swagger"), &token, &new_swagger)
        .await
        .expect(200);
    let form = reqwest::multipart::Form::new().text("apiDefinition", new_swagger.to_string());
    api.send(
        api.request(
            reqwest::Method::PUT,
            &format!("{apis}/{id}/swagger"),
            &token,
        )
        .multipart(form),
    )
    .await
    .expect(200);
    let swagger = api
        .get(&format!("{apis}/{id}/swagger"), &token)
        .await
        .expect(200);
    assert!(swagger.body["paths"]["/ping"].is_object());
    api.put_json(
        &format!("{apis}/{id}/swagger"),
        &token,
        &json!({"swagger": "1.2"}),
    )
    .await
    .expect(400);

    // Lists: paging and search.
    for n in 0..4 {
        api.post_json(
            &apis,
            &token,
            &with(
                record.clone(),
                json!({"name": format!("Pager{n}"), "context": format!("/pager{n}")}),
            ),
        )
        .await
        .expect(201);
    }
    let page = api
        .get(&format!("{apis}?limit=2&offset=1"), &token)
        .await
        .expect(200);
    assert_eq!(page.body["count"], 2);
    assert_eq!(page.body["pagination"]["total"], 5);
    assert!(page.body["next"].as_str().unwrap().contains("offset=3"));
    assert!(page.body["previous"].as_str().unwrap().contains("offset=0"));
    let found = api
        .get(&format!("{apis}?query=name:pager"), &token)
        .await
        .expect(200);
    assert_eq!(found.body["count"], 4);
    let found = api
        .get(&format!("{apis}?query=context:pager2"), &token)
        .await
        .expect(200);
    assert_eq!(found.body["list"][0]["name"], "Pager2");
    let exact = api
        .get(&format!("{apis}?query=name:%22Pager%22"), &token)
        .await
        .expect(200);
    assert_eq!(exact.body["count"], 0);
    let exact = api
        .get(&format!("{apis}?query=name:%22pager1%22"), &token)
        .await
        .expect(200);
    assert_eq!(exact.body["list"][0]["name"], "Pager1");
    assert_eq!(exact.body["count"], 1);
    // LIKE's wildcards are searched for as they are.
    let literal = api
        .get(&format!("{apis}?query=name:pager_"), &token)
        .await
        .expect(200);
    assert_eq!(literal.body["count"], 0);
    let paged = api
        .get(&format!("{apis}?query=name:pager&limit=2&offset=2"), &token)
        .await
        .expect(200);
    assert_eq!(paged.body["pagination"]["total"], 4);
    assert_eq!(paged.body["list"][0]["name"], "Pager2");
    assert_eq!(paged.body["count"], 2);
    api.get(&format!("{apis}?limit=lots"), &token)
        .await
        .expect_error(400, "Invalid query parameters");
    api.get(&format!("{apis}?limit=-1"), &token)
        .await
        .expect(400);
    api.get(&format!("{apis}?query=name:"), &token)
        .await
        .expect_error(400, "Search term is missing");

    // Delete: refused while subscribed, allowed after.
    api.post_empty(
        &format!("{apis}/change-lifecycle?apiId={id}&action=Publish"),
        &token,
    )
    .await
    .expect(200);
    let app = api
        .post_json(
            &format!("{STORE}/applications"),
            &token,
            &json!({"name": "Holder", "throttlingTier": "Unlimited"}),
        )
        .await
        .expect(201)
        .str("applicationId");
    let subscription = api
        .post_json(
            &format!("{STORE}/subscriptions"),
            &token,
            &json!({"tier": "Unlimited", "apiIdentifier": id, "applicationId": app}),
        )
        .await
        .expect(201)
        .str("subscriptionId");
    api.delete(&format!("{apis}/{id}"), &token)
        .await
        .expect_error(409, "Cannot remove the API");
    api.get(&format!("{apis}/{id}"), &token).await.expect(200);
    api.delete(&format!("{STORE}/subscriptions/{subscription}"), &token)
        .await
        .expect(200);
    let deleted = api
        .delete(&format!("{apis}/{id}"), &token)
        .await
        .expect(200);
    assert!(deleted.body.is_null());
    api.get(&format!("{apis}/{id}"), &token).await.expect(404);
}

/// What WSO2 2.6 lets a client get away with: paths joined with `//` (its own Java clients
/// do) reach the same resources, and a record without `type` is an HTTP API; an explicit
/// `"type": null` is still refused, as WSO2 refuses it.
pub async fn wso2_clients_leniency(env: InProcess) {
    let api = &env.api;
    let token = admin_token(&env).await;
    let mut untyped = spec_api_record();
    untyped.as_object_mut().unwrap().remove("type");
    let created = api
        .post_json(&format!("{PUBLISHER}//apis"), &token, &untyped)
        .await
        .expect(201);
    assert_eq!(created.body["type"], "HTTP");
    let id = created.str("id");
    let read = api
        .get(&format!("/api/am//publisher/v0.14///apis/{id}"), &token)
        .await
        .expect(200);
    assert_eq!(
        (read.str("id"), read.str("type")),
        (id.clone(), "HTTP".into())
    );
    // The query survives the collapse.
    let publish = format!("{PUBLISHER}//apis/change-lifecycle?apiId={id}&action=Publish");
    api.post_empty(&publish, &token).await.expect(200);
    let found = api
        .get(
            &format!("{STORE}//apis?query=name:{}", read.str("name")),
            &token,
        )
        .await
        .expect(200);
    assert_eq!(found.body["count"], 1, "{}", found.body);

    // Refused beside them: an explicit null, and a slash doubled inside a query value is
    // the client's own value, not a path.
    let mut null_type = spec_api_record();
    null_type["type"] = Value::Null;
    null_type["context"] = json!("/other");
    api.post_json(&format!("{PUBLISHER}//apis"), &token, &null_type)
        .await
        .expect_error(400, "type: may not be null");
    let wrong = api
        .get(
            &format!("{PUBLISHER}/apis?query=name://{}", read.str("name")),
            &token,
        )
        .await
        .expect(200);
    assert_eq!(wrong.body["count"], 0, "{}", wrong.body);
    assert_eq!(api_count(&env.api, &token).await, 1);
}

/// A body over the limit is refused on the socket before it is read, and creates nothing.
pub async fn oversized_bodies_are_refused_on_the_socket(env: Env) {
    let token = env
        .api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let apis = format!("{PUBLISHER}/apis");
    let (status, body) =
        harness::oversized_post(&env.api.base, &apis, &token, 6 * 1024 * 1024).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("\"code\":413"), "{body}");
    assert_eq!(
        api_count(&env.api, &token).await,
        0,
        "a refused body creates nothing"
    );
}

/// The spec's API record at `v`.
fn version(v: &str) -> Value {
    with(spec_api_record(), json!({"version": v}))
}

/// An administrator's token that may also view subscriptions, the spec's API published at
/// v1.0.0, and an application `name` subscribed to it on Unlimited: (token, API, application).
async fn subscribed_first_version(api: &harness::Client, name: &str) -> (String, String, String) {
    let scopes = format!("{ALL_SCOPES} mgr:subscription_view");
    let token = api.login("admin", harness::ADMIN_PASSWORD, &scopes).await;
    let steps = harness::steps::Steps::new(api, &token);
    let v1 = steps.publish_api(&version("v1.0.0")).await.unwrap();
    let app = steps.create_application(name, "Unlimited").await.unwrap();
    steps.subscribe(&app, &v1, "Unlimited").await.unwrap();
    (token, v1, app)
}

/// A first publish applies WSO2's lifecycle checklist to the API's older versions: by
/// default the new version gets their subscriptions (tier and status kept); "Deprecate
/// Old Versions" deprecates the published ones, which then take no new subscription;
/// "Require Re-Subscription" leaves the subscriptions behind. Beside them: a publish
/// that is not the first, or an unknown item, changes no other version.
pub async fn first_publish_applies_the_checklist(env: InProcess) {
    let api = &env.api;
    let (token, v1, _) = subscribed_first_version(api, "Forwarded").await;
    let steps = harness::steps::Steps::new(api, &token);
    let publish = |id: &str, checklist: &str| {
        let path = format!(
            "{PUBLISHER}/apis/change-lifecycle?apiId={id}&action=Publish&lifecycleChecklist={}",
            checklist.replace(' ', "%20")
        );
        let token = token.clone();
        async move { api.post_empty(&path, &token).await.expect(200) }
    };
    let status = |id: String| {
        let token = token.clone();
        async move {
            api.get(&format!("{PUBLISHER}/apis/{id}"), &token)
                .await
                .expect(200)
                .str("status")
        }
    };
    let subscribers = |id: String| {
        let token = token.clone();
        async move {
            api.get(&format!("{PUBLISHER}/subscriptions?apiId={id}"), &token)
                .await
                .expect(200)
                .body["count"]
                .as_i64()
                .unwrap()
        }
    };

    // An unknown item and a second publish of v1 touch no other version.
    publish(&v1, "Something Else:true").await;
    assert_eq!(status(v1.clone()).await, "PUBLISHED");

    let v2 = steps.create_api(&version("v2.0.0")).await.unwrap();
    publish(&v2, "Deprecate Old Versions:true").await;
    assert_eq!(status(v2.clone()).await, "PUBLISHED");
    assert_eq!(status(v1.clone()).await, "DEPRECATED");
    let in_store = api
        .get(&format!("{STORE}/apis/{v1}"), &token)
        .await
        .expect(200);
    assert_eq!(in_store.body["status"], "DEPRECATED");
    let listed = api.get(&format!("{STORE}/apis"), &token).await.expect(200);
    assert_eq!(
        listed.body["count"], 1,
        "the store lists the published version only"
    );
    assert_eq!(
        subscribers(v2.clone()).await,
        1,
        "v1's subscription forwarded"
    );
    let other = steps.create_application("Late", "Unlimited").await.unwrap();
    let late = json!({"tier": "Unlimited", "apiIdentifier": v1, "applicationId": other});
    api.post_json(&format!("{STORE}/subscriptions"), &token, &late)
        .await
        .expect_error(404, "DEPRECATED");

    let v3 = steps.create_api(&version("v3.0.0")).await.unwrap();
    publish(
        &v3,
        "Require Re-Subscription:true,Deprecate Old Versions:false",
    )
    .await;
    assert_eq!(subscribers(v3.clone()).await, 0, "re-subscription required");
    assert_eq!(
        status(v2.clone()).await,
        "PUBLISHED",
        "not asked to deprecate"
    );
    assert_eq!(subscribers(v2.clone()).await, 1);

    // A version shown to other callers gets no subscriptions without their checks.
    let restricted = with(
        version("v4.0.0"),
        json!({"visibility": "RESTRICTED", "visibleRoles": ["admin"]}),
    );
    let v4 = steps.create_api(&restricted).await.unwrap();
    publish(&v4, "").await;
    assert_eq!(subscribers(v4).await, 0, "another audience");
}

/// A first publish forwards the older version's subscriptions while an application
/// subscribes to the prototype itself: the subscription made meanwhile is kept and the
/// publish succeeds. Only PostgreSQL lets the two transactions meet (SQLite takes writers
/// in turn), so there the subscription is held uncommitted until the publish waits on it.
pub async fn forwarding_keeps_a_subscription_made_meanwhile(env: InProcess) {
    let api = &env.api;
    let (token, _, app) = subscribed_first_version(api, "Both").await;
    let steps = harness::steps::Steps::new(api, &token);
    let v2 = steps.create_api(&version("v2.0.0")).await.unwrap();
    let lifecycle = |action: &str| {
        format!(
            "{PUBLISHER}/apis/change-lifecycle?apiId={v2}&action={}",
            action.replace(' ', "%20")
        )
    };
    api.post_empty(&lifecycle("Deploy as a Prototype"), &token)
        .await
        .expect(200);

    let url = env.backend.database_url();
    let own = uuid::Uuid::new_v4().to_string();
    let publish = if url.is_empty() {
        let own = json!({"tier": "Unlimited", "apiIdentifier": v2, "applicationId": app});
        let subscriptions = format!("{STORE}/subscriptions");
        api.post_json(&subscriptions, &token, &own)
            .await
            .expect(201);
        api.post_empty(&lifecycle("Publish"), &token).await
    } else {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        let mut subscribing = pool.begin().await.unwrap();
        // language=SQL
        sqlx::query(
            "INSERT INTO subscriptions (id, application_id, api_id, tier, status, created_at)
             VALUES ($1, $2, $3, 'Unlimited', 'UNBLOCKED', 0)",
        )
        .bind(&own)
        .bind(&app)
        .bind(&v2)
        .execute(&mut *subscribing)
        .await
        .unwrap();
        let (client, path, token) = (api.clone(), lifecycle("Publish"), token.clone());
        let publishing = tokio::spawn(async move { client.post_empty(&path, &token).await });
        wait_for_a_lock_wait(&pool).await;
        subscribing.commit().await.unwrap();
        publishing.await.unwrap()
    };
    publish.expect(200);
    let forwarded = api
        .get(&format!("{PUBLISHER}/subscriptions?apiId={v2}"), &token)
        .await
        .expect(200);
    assert_eq!(forwarded.body["count"], 1, "{}", forwarded.body);
    if !url.is_empty() {
        assert_eq!(forwarded.body["list"][0]["subscriptionId"], own.as_str());
    }
}

/// Returns once some statement on this database waits on a lock another holds.
async fn wait_for_a_lock_wait(db: &sqlx::PgPool) {
    for _ in 0..200 {
        // language=SQL
        let (waiting,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(db)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the publish never waited on the subscription being made");
}
