//! Publishing the developer-management facade through the platform, as spec §1 and §5
//! describe, using nothing but the public REST interface: register a client, get a
//! token, create (or update) the API `DevManagement` /dev-management v1.0.0 with the facade
//! as its production and sandbox endpoint, publish it, subscribe DefaultApplication on
//! Unlimited, generate (or fetch) its keys, and get a bearer token for calling it.
//!
//! Every step tolerates having been done before, so it can run on every start.

use anyhow::{Context as _, bail};
use reqwest::{RequestBuilder, StatusCode};
use serde_json::{Value, json};

/// The facade's Swagger 2.0 definition.
pub const SWAGGER: &str = include_str!("../fixtures/dev-management/swagger.json");
/// The API's name, context and version.
pub const NAME: &str = "DevManagement";
/// Context of the API.
pub const CONTEXT: &str = "/dev-management";
/// Version of the API.
pub const VERSION: &str = "v1.0.0";

const PUBLISHER: &str = "/api/am/publisher/v0.14";
const STORE: &str = "/api/am/store/v0.14";
const MANAGEMENT_SCOPES: &str = "mgr:api_view mgr:api_create mgr:api_publish mgr:subscribe";

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
    let http = reqwest::Client::new();
    let (client_id, client_secret) = register_client(&http, target).await?;
    let token = password_token(
        &http,
        target,
        (&client_id, &client_secret),
        MANAGEMENT_SCOPES,
    )
    .await?;
    let api_id = create_or_update_api(&http, target, &token).await?;
    publish_api(&http, target, &token, &api_id).await?;
    let application_id = default_application(&http, target, &token).await?;
    subscribe(&http, target, &token, &api_id, &application_id).await?;
    let (consumer_key, consumer_secret) = keys(&http, target, &token, &application_id).await?;
    let access_token =
        password_token(&http, target, (&consumer_key, &consumer_secret), "default").await?;
    Ok(Published {
        api_id,
        application_id,
        consumer_key,
        consumer_secret,
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

/// Sends a request and returns status and JSON body (Null when there is none).
async fn send(request: RequestBuilder) -> anyhow::Result<(StatusCode, Value)> {
    let response = request
        .send()
        .await
        .context("the platform cannot be reached")?;
    let status = response.status();
    let text = response.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// Fails unless the status is one of `expected`.
fn expect(
    step: &str,
    (status, body): (StatusCode, Value),
    expected: &[u16],
) -> anyhow::Result<Value> {
    if !expected.contains(&status.as_u16()) {
        bail!("{step}: HTTP {status}: {body}");
    }
    Ok(body)
}

fn text(body: &Value, field: &str) -> anyhow::Result<String> {
    body[field]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("no {field} in {body}"))
}

async fn register_client(
    http: &reqwest::Client,
    target: &Target,
) -> anyhow::Result<(String, String)> {
    let request = http
        .post(format!(
            "{}/client-registration/v0.14/register",
            target.management_url
        ))
        .basic_auth(&target.user, Some(&target.password))
        .json(&json!({
            "callbackUrl": "www.google.lk",
            "clientName": "dev_management_publisher",
            "owner": target.user,
            "grantType": "password refresh_token",
            "saasApp": true,
        }));
    let body = expect("register a client", send(request).await?, &[200])?;
    Ok((text(&body, "clientId")?, text(&body, "clientSecret")?))
}

async fn password_token(
    http: &reqwest::Client,
    target: &Target,
    (id, secret): (&str, &str),
    scope: &str,
) -> anyhow::Result<String> {
    let request = http
        .post(format!("{}/token", target.gateway_url))
        .basic_auth(id, Some(secret))
        .form(&[
            ("grant_type", "password"),
            ("username", target.user.as_str()),
            ("password", target.password.as_str()),
            ("scope", scope),
        ]);
    let body = expect("get a token", send(request).await?, &[200])?;
    text(&body, "access_token")
}

/// The existing API of that name and version, updated to point at the facade, or a new one.
async fn create_or_update_api(
    http: &reqwest::Client,
    target: &Target,
    token: &str,
) -> anyhow::Result<String> {
    let apis = format!("{}{PUBLISHER}/apis", target.management_url);
    let search = http
        .get(&apis)
        .bearer_auth(token)
        .query(&[("query", format!("name:\"{NAME}\""))]);
    let found = expect("search the API", send(search).await?, &[200])?;
    let existing = found["list"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|api| api["name"] == NAME && api["version"] == VERSION);
    let record = api_record(&target.facade_url);
    match existing {
        Some(api) => {
            let id = text(api, "id")?;
            let update = http
                .put(format!("{apis}/{id}"))
                .bearer_auth(token)
                .json(&record);
            expect("update the API", send(update).await?, &[200])?;
            Ok(id)
        }
        None => {
            let create = http.post(&apis).bearer_auth(token).json(&record);
            let body = expect("create the API", send(create).await?, &[201])?;
            text(&body, "id")
        }
    }
}

async fn publish_api(
    http: &reqwest::Client,
    target: &Target,
    token: &str,
    api_id: &str,
) -> anyhow::Result<()> {
    let api = http
        .get(format!(
            "{}{PUBLISHER}/apis/{api_id}",
            target.management_url
        ))
        .bearer_auth(token);
    let api = expect("read the API", send(api).await?, &[200])?;
    if api["status"] == "PUBLISHED" {
        return Ok(());
    }
    let publish = http
        .post(format!(
            "{}{PUBLISHER}/apis/change-lifecycle",
            target.management_url
        ))
        .bearer_auth(token)
        .query(&[("apiId", api_id), ("action", "Publish")]);
    expect("publish the API", send(publish).await?, &[200])?;
    Ok(())
}

async fn default_application(
    http: &reqwest::Client,
    target: &Target,
    token: &str,
) -> anyhow::Result<String> {
    let list = http
        .get(format!("{}{STORE}/applications", target.management_url))
        .bearer_auth(token)
        .query(&[("query", "DefaultApplication")]);
    let list = expect("list applications", send(list).await?, &[200])?;
    let app = list["list"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|app| app["name"] == "DefaultApplication")
        .context("DefaultApplication is missing")?;
    text(app, "applicationId")
}

async fn subscribe(
    http: &reqwest::Client,
    target: &Target,
    token: &str,
    api_id: &str,
    application_id: &str,
) -> anyhow::Result<()> {
    let request = http
        .post(format!("{}{STORE}/subscriptions", target.management_url))
        .bearer_auth(token)
        .json(
            &json!({"tier": "Unlimited", "apiIdentifier": api_id, "applicationId": application_id}),
        );
    // 409: subscribed already.
    expect(
        "subscribe DefaultApplication",
        send(request).await?,
        &[201, 409],
    )?;
    Ok(())
}

async fn keys(
    http: &reqwest::Client,
    target: &Target,
    token: &str,
    application_id: &str,
) -> anyhow::Result<(String, String)> {
    let generate = http
        .post(format!(
            "{}{STORE}/applications/generate-keys",
            target.management_url
        ))
        .bearer_auth(token)
        .query(&[("applicationId", application_id)])
        .json(&json!({
            "validityTime": "3600",
            "keyType": "PRODUCTION",
            "accessAllowDomains": ["ALL"],
            "scopes": ["am_application_scope", "default"],
            "supportedGrantTypes": ["refresh_token", "client_credentials", "password"],
        }));
    let (status, body) = send(generate).await?;
    let body = if status == StatusCode::CONFLICT {
        let existing = http
            .get(format!(
                "{}{STORE}/applications/{application_id}/keys/PRODUCTION",
                target.management_url
            ))
            .bearer_auth(token);
        expect("read the keys", send(existing).await?, &[200])?
    } else {
        expect("generate keys", (status, body), &[200])?
    };
    Ok((text(&body, "consumerKey")?, text(&body, "consumerSecret")?))
}

/// What was published, the consumer's credentials, and how to call the API.
pub fn summary(published: &Published) -> String {
    format!(
        "Published {NAME} ({CONTEXT}/{VERSION}) as {}; DefaultApplication is subscribed (Unlimited).\n\
         Consumer key / secret: {} / {}\n\n\
         Try it through the gateway:\n\
         export TOKEN={}\n{}",
        published.api_id,
        published.consumer_key,
        published.consumer_secret,
        published.access_token,
        curl_examples(published)
    )
}

/// Example calls of the five operations through the gateway, for a shell where `TOKEN`
/// holds the bearer token.
fn curl_examples(published: &Published) -> String {
    let base = &published.base_url;
    let auth = "-H \"Authorization: Bearer $TOKEN\"";
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
