//! APIs served as MCP tools at the gateway, as agents reach them: the official Python
//! SDK's clients of the stateless revision (2026-07-28) and of the handshake one
//! (2025-11-25) discover, list and call through edge-gateway's host path, its component
//! path and the Spin-like mode; the provider's switch; what a caller without a token or
//! with a blocked subscription gets.

use harness::mcp::{Sdk, call_tool};
use harness::stack::ALL_SCOPES;
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, Backend, Client, spec_api_record};
use reqwest::Method;
use serde_json::{Value, json};

use crate::InProcess;

const PUBLISHER: &str = "/api/am/publisher/v0.14";
const STORE: &str = "/api/am/store/v0.14";

/// The provider's switch: who may read and set it, what it refuses (naming why) while
/// what it holds stays, and the store's view of it, none while it is off.
pub async fn mcp_settings_are_checked_and_stored(env: InProcess) {
    let api = &env.api;
    api.add_user("paula", "paula-pw", &["publisher"]).await;
    api.add_user("sam", "sam-pw", &["subscriber"]).await;
    api.add_user("tina@acme.com", "tina-pw", &["creator"]).await;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let viewer = api.login("paula", "paula-pw", ALL_SCOPES).await;
    let subscriber = api.login("sam", "sam-pw", ALL_SCOPES).await;
    let other_tenant = api.login("tina@acme.com", "tina-pw", ALL_SCOPES).await;
    let steps = Steps::new(api, &admin);
    let mut record = spec_api_record();
    record["name"] = json!("Tools");
    record["context"] = json!("/tools");
    let id = steps.create_api(&record).await.unwrap();
    steps.lifecycle(&id, "Publish").await.unwrap();
    let switch = format!("{PUBLISHER}/apis/{id}/mcp");
    let store = format!("{STORE}/apis/{id}/mcp");

    let off = api.get(&switch, &viewer).await.expect(200);
    assert_eq!(off.body["enabled"], false);
    assert_eq!(
        off.body["tools"].as_array().unwrap().len(),
        5,
        "{}",
        off.body
    );
    api.get(&store, "")
        .await
        .expect_error(404, "not served as MCP");

    let refusals = [
        (
            json!({"enabled": true, "tools": [{"operation": "GET /nowhere"}]}),
            "no operation",
        ),
        (
            json!({"enabled": true, "tools": [{"operation": "GET /devs/{username}", "name": "a b"}]}),
            "not 'a b'",
        ),
        (
            json!({"enabled": true, "tools": [
                {"operation": "GET /devs/{username}", "name": "same"},
                {"operation": "DELETE /devs/{username}", "name": "same"}]}),
            "Two tools would be named 'same'",
        ),
        (
            json!({"enabled": true, "sessions": true}),
            "Unrecognized property 'sessions'",
        ),
        (json!({"enabled": "yes"}), "expected a boolean"),
    ];
    for (body, why) in refusals {
        api.put_json(&switch, &admin, &body)
            .await
            .expect_error(400, why);
    }
    // A token without the scope to create is refused as WSO2 refuses it, 401.
    api.put_json(&switch, &viewer, &json!({"enabled": true}))
        .await
        .expect_error(401, "Unauthenticated");
    api.put_json(&switch, &subscriber, &json!({"enabled": true}))
        .await
        .expect(401);
    api.put_json(&switch, &other_tenant, &json!({"enabled": true}))
        .await
        .expect(404);
    api.get(&store, "").await.expect(404);

    let on = json!({"enabled": true, "tools": [
        {"operation": "delete /devs/{username}", "enabled": false},
        {"operation": "GET /devs/{username}", "name": "get_developer", "description": "Who"}]});
    let set = api.put_json(&switch, &admin, &on).await.expect(200);
    assert_eq!(set.body["enabled"], true);
    let read = api.get(&switch, &viewer).await.expect(200);
    assert_eq!(read.body, set.body, "what is answered is what is stored");
    let developer = read.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["operation"] == "GET /devs/{username}")
        .unwrap()
        .clone();
    assert_eq!(developer["name"], "get_developer");
    assert_eq!(developer["inputSchema"]["required"], json!(["username"]));
    // Sent back as read (schemas and all), it is taken as it is.
    api.put_json(&switch, &admin, &read.body).await.expect(200);

    let shown = api.get(&store, "").await.expect(200);
    let names: Vec<&str> = shown.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "post_devs",
            "get_developer",
            "get_devs_username_repos",
            "post_repos"
        ]
    );
}

pub async fn agents_call_tools_on_the_host_path(database: Backend) {
    agents_call_tools(database, &[], &[Sdk::Stateless, Sdk::Handshake]).await;
}

pub async fn agents_call_tools_on_the_component_path(database: Backend) {
    let settings = [("APIM_HOST_FORWARDING", "false".to_string())];
    agents_call_tools(database, &settings, &[Sdk::Stateless, Sdk::Handshake]).await;
}

/// A fresh instance for every message, as Spin hosts the component.
pub async fn agents_call_tools_in_the_spin_like_mode(database: Backend) {
    let settings = harness::stack::spin_like(&harness::temp_dir());
    agents_call_tools(database, &settings, &[Sdk::Stateless]).await;
}

/// The provider serves the seed's API as MCP with one operation left out; each SDK's
/// client lists the others and calls one, getting the backend's answer as structured
/// content; without a token the endpoint challenges with its metadata's URL, and a
/// blocked subscription is refused with WSO2's 900907.
async fn agents_call_tools(database: Backend, settings: &[(&'static str, String)], sdks: &[Sdk]) {
    let stack = harness::stack::Launch {
        database,
        gateway: settings,
        ..Default::default()
    }
    .start()
    .await;
    let api = stack.api("Agents", json!({}), &["Publish"]).await;
    let switch = json!({"enabled": true, "tools": [
        {"operation": "DELETE /devs/{username}", "enabled": false},
        {"operation": "GET /devs/{username}", "name": "get_developer",
         "description": "A developer of the legacy service"}]});
    let set = stack
        .mgmt
        .put_json(
            &format!("{PUBLISHER}/apis/{api}/mcp"),
            &stack.admin,
            &switch,
        )
        .await
        .expect(200);
    let url = set.body["url"].as_str().unwrap_or_default().to_string();
    assert!(url.ends_with("/agents/v1.0.0/mcp"), "{}", set.body);
    let (_, key, secret, subscriptions) = stack.application("Agents", "Unlimited", &[&api]).await;
    let token = stack.app_token(&key, &secret, &[]).await;
    let endpoint = "/agents/v1.0.0/mcp";
    // Served once the change reaches the gateway: a GET there is then MCP's 405.
    harness::eventually(&stack.gw, Method::GET, endpoint, &token, |r| {
        r.status == 405
    })
    .await;

    // The portal shows consumers where it is served, and its tools.
    let page = stack
        .mgmt
        .get(&format!("/devportal/apis/{api}"), "")
        .await
        .expect(200);
    let page = page.body.as_str().unwrap_or_default();
    assert!(page.contains("MCP server"), "{page}");
    assert!(page.contains(&format!("{url}</code>")), "{page}");
    assert!(page.contains("A developer of the legacy service"), "{page}");

    let url = stack.gw.url(endpoint);
    let arguments = json!({"username": "alice"});
    for sdk in sdks {
        let seen = call_tool(*sdk, &url, &token, "get_developer", &arguments)
            .await
            .unwrap_or_else(|why| panic!("{sdk:?}: {why}"));
        let protocol = match sdk {
            Sdk::Stateless => "2026-07-28",
            Sdk::Handshake => "2025-11-25",
        };
        assert_eq!(seen["protocol"], protocol, "{seen}");
        assert_eq!(
            seen["tools"],
            json!([
                "post_devs",
                "get_developer",
                "get_devs_username_repos",
                "post_repos"
            ]),
            "{seen}"
        );
        let call = &seen["call"];
        assert_eq!(call["isError"], false, "{seen}");
        assert_eq!(call["structured"]["path"], "/devs/alice", "{seen}");
        assert_eq!(call["structured"]["method"], "GET", "{seen}");
    }

    let unauthenticated = post(&stack.gw, endpoint, "", &list_message()).await;
    assert_eq!(unauthenticated.status, 401);
    let challenge = unauthenticated
        .headers
        .get("www-authenticate")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    assert!(challenge.contains("resource_metadata="), "{challenge}");

    let block = format!(
        "{PUBLISHER}/subscriptions/block-subscription?subscriptionId={}&blockState=BLOCKED",
        subscriptions[0]
    );
    let blocker = stack
        .mgmt
        .login("admin", harness::ADMIN_PASSWORD, "mgr:subscription_block")
        .await;
    stack.mgmt.post_empty(&block, &blocker).await.expect(200);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let refused = post(&stack.gw, endpoint, &token, &list_message()).await;
        if refused.status == 401 && refused.fault_code() == "900907" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{refused:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A `tools/list` of the handshake revision (no `_meta`, no routing headers).
fn list_message() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

async fn post(gw: &Client, path: &str, token: &str, message: &Value) -> harness::Reply {
    gw.send(
        gw.request(Method::POST, path, token)
            .header("accept", "application/json, text/event-stream")
            .json(message),
    )
    .await
}
