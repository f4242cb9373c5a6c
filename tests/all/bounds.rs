//! The manifest's bounds end to end: an API past them is refused (400) at create and at
//! update, a large but realistic one beside it is published and served, and changes made
//! afterwards (an unsubscription, a revocation) still reach the gateway.

use harness::Backend;
use harness::stack::Launch;
use harness::{PUBLISHER, STORE};
use reqwest::Method;
use serde_json::{Value, json};

/// A Swagger 2.0 definition (as the record's string) whose paths each have `methods`.
fn definition(paths: impl IntoIterator<Item = String>, methods: &[&str]) -> Value {
    let operations: serde_json::Map<String, Value> =
        methods.iter().map(|m| (m.to_string(), json!({}))).collect();
    let paths: serde_json::Map<String, Value> = paths
        .into_iter()
        .map(|path| (path, Value::Object(operations.clone())))
        .collect();
    json!(json!({"swagger": "2.0", "paths": paths}).to_string())
}

const SEVEN_METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

/// Definitions past each bound, and the words the refusal says.
fn oversized_definitions() -> Vec<(Value, &'static str)> {
    let long_path = format!("/{}", "a".repeat(200 * 1024));
    let many_paths = (0..1_001).map(|i| format!("/r{i}"));
    // Within the counts and the path length, but compiling to an entry of megabytes.
    let long_paths = (0..280).map(|i| format!("/{i}/{}", "p".repeat(1_000)));
    vec![
        (definition([long_path], &SEVEN_METHODS), "at most 1024"),
        (definition(many_paths, &["get"]), "paths; at most"),
        (
            definition(long_paths, &SEVEN_METHODS),
            "compiles to a gateway entry",
        ),
    ]
}

pub async fn oversized_apis_are_refused_and_changes_keep_reaching_gateways(database: Backend) {
    let stack = Launch {
        database,
        ..Launch::default()
    }
    .start()
    .await;
    let (mgmt, gw, admin) = (&stack.mgmt, &stack.gw, stack.admin.as_str());

    // Refused at create, in WSO2's error body.
    let apis = format!("{PUBLISHER}/apis");
    for (definition, words) in oversized_definitions() {
        let mut record = harness::spec_api_record();
        record["name"] = json!("Oversized");
        record["context"] = json!("/oversized");
        record["apiDefinition"] = definition;
        mgmt.post_json(&apis, admin, &record)
            .await
            .expect_error(400, words);
    }

    // A large but realistic API beside it (400 resources, four methods each) is taken,
    // published and served.
    let resources = (0..400).map(|i| format!("/customers/{{customerId}}/orders{i}/{{orderId}}"));
    let large = definition(resources, &["get", "put", "post", "delete"]);
    let api = stack
        .api("Large", json!({"apiDefinition": large}), &["Publish"])
        .await;
    let (_, key, secret, subscriptions) = stack.application("Kept", "Unlimited", &[&api]).await;
    let (_, other_key, other_secret, _) = stack.application("Revoked", "Unlimited", &[&api]).await;
    let kept = stack.app_token(&key, &secret, &[]).await;
    let revoked = stack.app_token(&other_key, &other_secret, &[]).await;
    let path = "/large/v1.0.0/customers/c1/orders399/o1";
    harness::eventually(gw, Method::GET, path, &kept, |r| r.status == 200).await;
    harness::eventually(gw, Method::GET, path, &revoked, |r| r.status == 200).await;

    // Refused at update, whole record or definition alone; the API stays as it was.
    let api_path = format!("{apis}/{api}");
    let stored = mgmt.get(&api_path, admin).await.expect(200).body;
    for (definition, words) in oversized_definitions() {
        let mut record = stored.clone();
        record["apiDefinition"] = definition.clone();
        mgmt.put_json(&api_path, admin, &record)
            .await
            .expect_error(400, words);
        let swagger: Value = serde_json::from_str(definition.as_str().unwrap()).unwrap();
        mgmt.put_json(&format!("{api_path}/swagger"), admin, &swagger)
            .await
            .expect_error(400, words);
    }
    assert_eq!(mgmt.get(&api_path, admin).await.expect(200).body, stored);

    // Changes published afterwards reach the gateway: an unsubscription and a revocation.
    mgmt.delete(
        &format!("{STORE}/subscriptions/{}", subscriptions[0]),
        admin,
    )
    .await
    .expect(200);
    harness::eventually(gw, Method::GET, path, &kept, |r| r.status == 403).await;
    let revoke = reqwest::Client::new()
        .post(format!("{}/revoke", gw.base))
        .basic_auth(&other_key, Some(&other_secret))
        .form(&[("token", revoked.as_str())]);
    gw.send(revoke).await.expect(200);
    harness::eventually(gw, Method::GET, path, &revoked, |r| r.status == 401).await;

    stack.gateway.stop().await;
    if let Some(control_plane) = stack.control_plane {
        control_plane.stop().await;
    }
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}
