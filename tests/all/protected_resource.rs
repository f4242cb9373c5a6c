//! OAuth sign-in for agents through a real gateway: a call refused for its credentials
//! names the API's protected-resource metadata (RFC 9728) in `WWW-Authenticate`, and that
//! document names the control plane's token issuer as the authorization server, while
//! WSO2's fault bodies and the calls that work stay as they were; a token without an
//! operation's scope gets WSO2's 403 900910 and RFC 6750's `insufficient_scope`.

use harness::stack::Launch;
use harness::steps::TokenType;
use harness::{Reply, eventually};
use serde_json::{Value, json};

/// The `WWW-Authenticate` values of a reply, in order.
fn challenges(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("www-authenticate")
        .iter()
        .map(|value| value.to_str().expect("visible ASCII").to_string())
        .collect()
}

/// The spec's API definition with one operation needing a scope WSO2's way: `x-scope` on
/// the operation, the scope declared in `x-wso2-security`.
fn definition_with_a_scope() -> String {
    let record = harness::spec_api_record();
    let mut swagger: Value = serde_json::from_str(record["apiDefinition"].as_str().unwrap())
        .expect("the spec's definition");
    swagger["paths"]["/devs/{username}"]["get"]["x-scope"] = json!("pizza_read");
    swagger["x-wso2-security"] = json!({"apim": {"x-wso2-scopes": [
        {"name": "Read pizzas", "description": "", "key": "pizza_read", "roles": ""}]}});
    swagger.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_calls_name_the_apis_protected_resource_metadata() {
    let stack = Launch::default().start().await;
    let gw = &stack.gw;
    let get = reqwest::Method::GET;
    let api = stack
        .api(
            "Pizza",
            json!({"apiDefinition": definition_with_a_scope()}),
            &["Publish"],
        )
        .await;
    let (_, key, secret, _) = stack
        .typed_application("Agent", "Unlimited", TokenType::Jwt, &[&api])
        .await;
    let token = stack
        .app_token(&key, &secret, &[("scope", "default pizza_read")])
        .await;
    let path = "/pizza/v1.0.0/devs/alice";
    eventually(gw, get.clone(), path, &token, |r| r.status == 200).await;

    // No token: WSO2's 401 as before, with a challenge naming the metadata first.
    let metadata_url = format!(
        "{}/.well-known/oauth-protected-resource/pizza/v1.0.0",
        gw.base
    );
    let missing = gw.get(path, "").await;
    assert_eq!(
        (missing.status, missing.fault_code()),
        (401, "900902"),
        "{}",
        missing.body
    );
    assert_eq!(missing.headers["content-type"], "application/xml");
    let challenged = challenges(&missing);
    assert_eq!(
        challenged[0],
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    assert!(
        challenged[1].starts_with("OAuth2 realm=\"WSO2 API Manager\""),
        "{challenged:?}"
    );

    // The document, without a token, naming the control plane's issuer.
    let document = reqwest::get(&metadata_url).await.expect("GET the metadata");
    assert_eq!(document.status(), 200);
    let headers = document.headers().clone();
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert!(
        headers["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age=")
    );
    let document: Value = document.json().await.expect("JSON");
    let issuer = harness::jwt_claims(&token)["iss"].clone();
    assert!(issuer.as_str().is_some_and(|iss| iss.starts_with("http")));
    assert_eq!(
        document,
        json!({
            "resource": format!("{}/pizza/v1.0.0", gw.base),
            "authorization_servers": [issuer],
            "scopes_supported": ["pizza_read"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Pizza",
        })
    );
    let unknown = format!(
        "{}/.well-known/oauth-protected-resource/nothing/v1",
        gw.base
    );
    assert_eq!(reqwest::get(&unknown).await.unwrap().status(), 404);

    // A token that is no token: 900901, and the challenge says so.
    let garbage = gw.get(path, "garbage").await;
    assert_eq!((garbage.status, garbage.fault_code()), (401, "900901"));
    assert_eq!(
        challenges(&garbage)[0],
        format!("Bearer resource_metadata=\"{metadata_url}\", error=\"invalid_token\"")
    );

    // A token without the operation's scope: WSO2's 403 900910, and a challenge naming
    // the scope to ask for; the operations without one still take it.
    let unscoped = stack.app_token(&key, &secret, &[]).await;
    let refused = gw.get(path, &unscoped).await;
    assert_eq!(
        (refused.status, refused.fault_code()),
        (403, "900910"),
        "{}",
        refused.body
    );
    assert_eq!(
        challenges(&refused),
        [format!(
            "Bearer resource_metadata=\"{metadata_url}\", error=\"insufficient_scope\", scope=\"pizza_read\""
        )]
    );
    let open = gw.get("/pizza/v1.0.0/devs/alice/repos", &unscoped).await;
    assert_eq!(open.status, 200, "{}", open.body);

    // The call that works still works.
    let reply = gw.get(path, &token).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(challenges(&reply).is_empty());

    stack.gateway.stop().await;
    if let Some(control_plane) = stack.control_plane {
        control_plane.stop().await;
    }
    let _ = std::fs::remove_dir_all(&stack.data_dir);
}
