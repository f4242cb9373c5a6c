//! Publishing the developer-management facade through the platform, as spec §1 and §5
//! describe, using nothing but the public REST interface: register a client, get a
//! token, create (or update) the API `DevManagement` /dev-management v1.0.0 with the facade
//! as its production and sandbox endpoint, publish it, subscribe DefaultApplication on
//! Unlimited, generate (or fetch) its keys, and get a bearer token for calling it.
//!
//! Every step tolerates having been done before, so it can run on every start.

use anyhow::{Context as _, bail};
use harness::stack::ALL_SCOPES;
use harness::steps::{Keys, Steps, keys_request};
use harness::{Client, PUBLISHER, Reply, STORE};
use serde_json::{Value, json};

/// The facade's Swagger 2.0 definition.
pub const SWAGGER: &str = include_str!("../fixtures/dev-management/swagger.json");
/// The API's name, context and version.
pub const NAME: &str = "DevManagement";
/// Context of the API.
pub const CONTEXT: &str = "/dev-management";
/// Version of the API.
pub const VERSION: &str = "v1.0.0";

/// Where the platform is and who publishes.
#[derive(Debug, Clone)]
pub struct Target {
    /// `{registration_url}`: the control plane's management listener.
    pub management_url: String,
    /// `{gateway_url}`: the gateway (token endpoint and APIs).
    pub gateway_url: String,
    /// An administrative user.
    pub user: String,
    /// Their password.
    pub password: String,
    /// `{dev_backend_url}`: where the facade runs.
    pub facade_url: String,
}

/// The published API and a consumer's credentials for it.
#[derive(Debug, Clone)]
pub struct Published {
    /// The API's id.
    pub api_id: String,
    /// DefaultApplication's id.
    pub application_id: String,
    /// DefaultApplication's PRODUCTION consumer key.
    pub consumer_key: String,
    /// Its consumer secret.
    pub consumer_secret: String,
    /// A bearer token for calling the API (scope `default`).
    pub access_token: String,
    /// `{gateway_url}/dev-management/v1.0.0`.
    pub base_url: String,
}

/// Runs every step; see the module documentation.
pub async fn publish(target: &Target) -> anyhow::Result<Published> {
    let (mgmt, gateway) = (
        Client::new(&target.management_url),
        Client::new(&target.gateway_url),
    );
    harness::http_client()
        .get(&target.management_url)
        .send()
        .await
        .context("the platform cannot be reached")?;
    let registered = expect(
        "register a client",
        mgmt.register(&target.user, &target.password, "dev_management_publisher")
            .await,
        200,
    )?;
    let client = (
        text(&registered, "clientId")?,
        text(&registered, "clientSecret")?,
    );
    let token = password_token(&gateway, target, &client, ALL_SCOPES).await?;
    let steps = Steps::new(&mgmt, &token);
    let api_id = create_or_update_api(&mgmt, steps, &target.facade_url).await?;
    let api = expect(
        "read the API",
        mgmt.get(&format!("{PUBLISHER}/apis/{api_id}"), &token)
            .await,
        200,
    )?;
    if api.body["status"] != "PUBLISHED" {
        steps.lifecycle(&api_id, "Publish").await?;
    }
    let application_id = default_application(&mgmt, &token).await?;
    match steps.subscribe(&application_id, &api_id, "Unlimited").await {
        Err(refused) if refused.status != 409 => return Err(refused.into()),
        _ => {} // 409: subscribed already.
    }
    let keys = match steps.generate_keys(&application_id, &keys_request()).await {
        Err(refused) if refused.status == 409 => {
            let path = format!("{STORE}/applications/{application_id}/keys/PRODUCTION");
            let held = expect("read the keys", mgmt.get(&path, &token).await, 200)?;
            Keys {
                key: text(&held, "consumerKey")?,
                secret: text(&held, "consumerSecret")?,
            }
        }
        generated => generated?,
    };
    let access_token = password_token(
        &gateway,
        target,
        &(keys.key.clone(), keys.secret.clone()),
        "default",
    )
    .await?;
    Ok(Published {
        api_id,
        application_id,
        consumer_key: keys.key,
        consumer_secret: keys.secret,
        access_token,
        base_url: format!("{}{CONTEXT}/{VERSION}", target.gateway_url),
    })
}

/// The API record: the spec 2.3 fields, the facade as both endpoints.
pub fn api_record(facade_url: &str) -> Value {
    let endpoint = json!({"url": facade_url, "config": null});
    json!({
        "name": NAME,
        "description": "Developers and their repositories: a REST facade over the legacy SOAP developer service",
        "context": CONTEXT,
        "version": VERSION,
        "apiDefinition": SWAGGER,
        "isDefaultVersion": false,
        "type": "HTTP",
        "transport": ["http", "https"],
        "tags": ["developers", "repositories"],
        "tiers": ["Unlimited"],
        "visibility": "PUBLIC",
        "endpointConfig": json!({
            "production_endpoints": endpoint,
            "sandbox_endpoints": endpoint,
            "endpoint_type": "http",
        }).to_string(),
        "gatewayEnvironments": "Production and Sandbox",
    })
}

/// `reply` when it has `status`, else why `step` failed.
fn expect(step: &str, reply: Reply, status: u16) -> anyhow::Result<Reply> {
    if reply.status != status {
        bail!("{step}: HTTP {}: {}", reply.status, reply.body);
    }
    Ok(reply)
}

fn text(reply: &Reply, field: &str) -> anyhow::Result<String> {
    reply.body[field]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("no {field} in {}", reply.body))
}

/// A password grant of the target's user, for `client`, from the gateway's `/token`.
async fn password_token(
    gateway: &Client,
    target: &Target,
    (id, secret): &(String, String),
    scope: &str,
) -> anyhow::Result<String> {
    let form = [
        ("grant_type", "password"),
        ("username", target.user.as_str()),
        ("password", target.password.as_str()),
        ("scope", scope),
    ];
    let reply = expect(
        "get a token",
        gateway.token_at("/token", id, secret, &form).await,
        200,
    )?;
    text(&reply, "access_token")
}

/// The existing API of that name and version, updated to point at the facade, or a new one.
async fn create_or_update_api(
    mgmt: &Client,
    steps: Steps<'_>,
    facade_url: &str,
) -> anyhow::Result<String> {
    let token = steps.token();
    let search = format!("{PUBLISHER}/apis?query=name:%22{NAME}%22");
    let found = expect("search the API", mgmt.get(&search, token).await, 200)?;
    let existing = found.body["list"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|api| api["name"] == NAME && api["version"] == VERSION)
        .and_then(|api| api["id"].as_str().map(str::to_string));
    let record = api_record(facade_url);
    match existing {
        Some(id) => {
            let update = mgmt
                .put_json(&format!("{PUBLISHER}/apis/{id}"), token, &record)
                .await;
            expect("update the API", update, 200)?;
            Ok(id)
        }
        None => Ok(steps.create_api(&record).await?),
    }
}

/// DefaultApplication's id.
async fn default_application(mgmt: &Client, token: &str) -> anyhow::Result<String> {
    let path = format!("{STORE}/applications?query=DefaultApplication");
    let list = expect("list applications", mgmt.get(&path, token).await, 200)?;
    list.body["list"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|app| app["name"] == "DefaultApplication")
        .and_then(|app| app["applicationId"].as_str().map(str::to_string))
        .context("DefaultApplication is missing")
}

/// What was published, the consumer's credentials, and how to call the API.
pub fn summary(published: &Published) -> String {
    summary_verifying(published, None)
}

/// [`summary`], the curl lines verifying the gateway's certificate against the authority
/// in `ca_file` (`--cacert`) when there is one.
pub fn summary_verifying(published: &Published, ca_file: Option<&str>) -> String {
    format!(
        "Published {NAME} ({CONTEXT}/{VERSION}) as {}; DefaultApplication is subscribed (Unlimited).\n\
         Consumer key / secret: {} / {}\n\n\
         Try it through the gateway:\n\
         export TOKEN={}\n{}",
        published.api_id,
        published.consumer_key,
        published.consumer_secret,
        published.access_token,
        curl_examples(published, ca_file)
    )
}

/// Example calls of the five operations through the gateway, for a shell where `TOKEN`
/// holds the bearer token.
fn curl_examples(published: &Published, ca_file: Option<&str>) -> String {
    let base = &published.base_url;
    let auth = match ca_file {
        Some(ca) => format!("--cacert {ca} -H \"Authorization: Bearer $TOKEN\""),
        None => "-H \"Authorization: Bearer $TOKEN\"".to_string(),
    };
    let json = "-H 'Content-Type: application/json'";
    [
        format!("curl -s {auth} {base}/devs/athiththan11"),
        format!("curl -s {auth} {base}/devs/athiththan11/repos"),
        format!(
            "curl -s {auth} {json} -d '{{\"username\":\"johndoe\",\"name\":\"John Doe\",\"email\":\"john@doe.usr\"}}' {base}/devs"
        ),
        format!(
            "curl -s {auth} {json} -d '{{\"name\":\"repodews\",\"username\":\"johndoe\",\"forks\":0}}' {base}/repos"
        ),
        format!("curl -s -X DELETE {auth} {base}/devs/johndoe"),
    ]
    .join("\n")
}
