//! An environment's public interfaces as apimctl calls them: dynamic client registration
//! and the token endpoint (login, refresh), the publisher API (lists, deletes, backend
//! passwords) and the import/export service (projects), every call with the kept token.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::cli::Login;
use crate::config::{Folder, Token};
use crate::output::Output;

const PUBLISHER: &str = "/api/am/publisher/v0.14";
const ADMIN: &str = "/api/am/admin/v0.14";
const IMPORT_EXPORT: &str = "/api-import-export-2.6.0-v0";
/// Tokens are refreshed this long before they expire, seconds.
const REFRESH_MARGIN: u64 = 60;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn http() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()?)
}

/// An answer's body when its status is one of `ok`; the status and body otherwise.
async fn expect(what: &str, answer: reqwest::Response, ok: &[u16]) -> anyhow::Result<Vec<u8>> {
    let status = answer.status().as_u16();
    let body = answer.bytes().await?.to_vec();
    if !ok.contains(&status) {
        let said = String::from_utf8_lossy(&body);
        bail!("{what}: {status} {}", said.trim());
    }
    Ok(body)
}

/// `login`: registers apimctl as a client for the user (or takes the given client) and
/// keeps the token it gets.
pub async fn login(folder: &Folder, login: Login, output: &Output) -> anyhow::Result<ExitCode> {
    let env = folder.environment(&login.env)?;
    let http = http()?;
    let (client_id, client_secret, form) = if login.client_credentials {
        let id = std::env::var("APIMCTL_CLIENT_ID").context("APIMCTL_CLIENT_ID is not set")?;
        let secret =
            std::env::var("APIMCTL_CLIENT_SECRET").context("APIMCTL_CLIENT_SECRET is not set")?;
        let form = vec![
            ("grant_type", "client_credentials".to_string()),
            ("scope", env.scopes()),
        ];
        (id, secret, form)
    } else {
        let Some(username) = login.username.clone() else {
            bail!("--username is required, or --client-credentials");
        };
        let password = password(login.password_stdin)?;
        let registration = json!({
            "callbackUrl": "www.google.lk",
            "clientName": "apimctl",
            "owner": username,
            "grantType": "password refresh_token",
            "saasApp": true,
        });
        let answer = http
            .post(format!("{}/client-registration/v0.14/register", env.url))
            .basic_auth(&username, Some(&password))
            .json(&registration)
            .send()
            .await?;
        let client: Value =
            serde_json::from_slice(&expect("register", answer, &[200, 201]).await?)?;
        let field = |name: &str| client[name].as_str().map(str::to_string);
        let (Some(id), Some(secret)) = (field("clientId"), field("clientSecret")) else {
            bail!("register: no client id and secret in the answer");
        };
        let form = vec![
            ("grant_type", "password".to_string()),
            ("username", username),
            ("password", password),
            ("scope", env.scopes()),
        ];
        (id, secret, form)
    };
    let token = token(&http, &env.url, &client_id, &client_secret, &form).await?;
    folder.keep_token(&login.env, &token)?;
    output.done(&format!("Logged in to {}", login.env));
    Ok(ExitCode::SUCCESS)
}

/// The password: from standard input with `--password-stdin`, else APIMCTL_PASSWORD.
fn password(from_stdin: bool) -> anyhow::Result<String> {
    if from_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_string());
    }
    std::env::var("APIMCTL_PASSWORD")
        .context("give the password on standard input (--password-stdin) or in APIMCTL_PASSWORD")
}

async fn token(
    http: &reqwest::Client,
    url: &str,
    client_id: &str,
    client_secret: &str,
    form: &[(&str, String)],
) -> anyhow::Result<Token> {
    let answer = http
        .post(format!("{url}/oauth2/token"))
        .basic_auth(client_id, Some(client_secret))
        .form(form)
        .send()
        .await?;
    let granted: Value = serde_json::from_slice(&expect("get a token", answer, &[200]).await?)?;
    let access_token = granted["access_token"]
        .as_str()
        .context("no access_token in the token answer")?
        .to_string();
    Ok(Token {
        client_id: client_id.into(),
        client_secret: client_secret.into(),
        access_token,
        refresh_token: granted["refresh_token"].as_str().map(str::to_string),
        expires_at: now() + granted["expires_in"].as_u64().unwrap_or(3600),
    })
}

/// A member of a listed item as text (empty when it is not).
fn text(item: &Value, key: &str) -> String {
    item[key].as_str().unwrap_or_default().to_string()
}

/// An API as the publisher lists it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: String,
    pub name: String,
    pub version: String,
    pub provider: String,
}

/// An environment, called with its kept token.
pub struct Api {
    url: String,
    token: String,
    http: reqwest::Client,
}

impl Api {
    /// The environment `env` with its token, refreshed when it is about to expire.
    pub async fn connect(folder: &Folder, env: &str) -> anyhow::Result<Self> {
        let environment = folder.environment(env)?;
        let http = http()?;
        let mut kept = folder.token(env)?;
        if kept.expires_at <= now() + REFRESH_MARGIN {
            let Some(refresh) = kept.refresh_token.clone() else {
                bail!("The token for {env} has expired: run `apimctl login {env}`");
            };
            let form = [
                ("grant_type", "refresh_token".to_string()),
                ("refresh_token", refresh),
            ];
            kept = token(
                &http,
                &environment.url,
                &kept.client_id,
                &kept.client_secret,
                &form,
            )
            .await
            .with_context(|| format!("refresh the token for {env}; run `apimctl login {env}`"))?;
            folder.keep_token(env, &kept)?;
        }
        Ok(Self {
            url: environment.url,
            token: kept.access_token,
            http,
        })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token)
    }

    /// Every item of a list the REST API pages (`limit`, `offset`, `pagination.total`).
    async fn every_item(&self, list: &str, what: &str) -> anyhow::Result<Vec<Value>> {
        let mut items: Vec<Value> = Vec::new();
        loop {
            let path = format!("{list}?limit=100&offset={}", items.len());
            let answer = self.request(reqwest::Method::GET, &path).send().await?;
            let page: Value = serde_json::from_slice(&expect(what, answer, &[200]).await?)?;
            let found = page["list"].as_array().cloned().unwrap_or_default();
            let total = page["pagination"]["total"].as_u64().unwrap_or_default() as usize;
            let last = found.is_empty();
            items.extend(found);
            if last || items.len() >= total {
                return Ok(items);
            }
        }
    }

    /// Every API of the tenant.
    pub async fn list(&self) -> anyhow::Result<Vec<Listed>> {
        let items = self
            .every_item(&format!("{PUBLISHER}/apis"), "list APIs")
            .await?;
        Ok(items
            .iter()
            .map(|item| Listed {
                id: text(item, "id"),
                name: text(item, "name"),
                version: text(item, "version"),
                provider: text(item, "provider"),
            })
            .collect())
    }

    /// The project of an API, zipped.
    pub async fn export(&self, api: &Listed) -> anyhow::Result<Vec<u8>> {
        let answer = self
            .request(reqwest::Method::GET, &format!("{IMPORT_EXPORT}/export-api"))
            .query(&[
                ("name", api.name.as_str()),
                ("version", api.version.as_str()),
                ("provider", api.provider.as_str()),
            ])
            .header("accept", "application/zip")
            .send()
            .await?;
        expect(
            &format!("export {} {}", api.name, api.version),
            answer,
            &[200],
        )
        .await
    }

    /// Imports a project's zip as a new API: its id, and what the service said.
    pub async fn import(
        &self,
        zip: Vec<u8>,
        preserve_provider: bool,
    ) -> anyhow::Result<(String, String)> {
        let path = format!("{IMPORT_EXPORT}/import-api?preserveProvider={preserve_provider}");
        self.upload(reqwest::Method::POST, &path, zip).await
    }

    /// Imports a project's zip over API `id`.
    pub async fn update(
        &self,
        id: &str,
        zip: Vec<u8>,
        preserve_provider: bool,
    ) -> anyhow::Result<(String, String)> {
        let path = format!("{IMPORT_EXPORT}/{id}?preserveProvider={preserve_provider}");
        self.upload(reqwest::Method::PUT, &path, zip).await
    }

    async fn upload(
        &self,
        method: reqwest::Method,
        path: &str,
        zip: Vec<u8>,
    ) -> anyhow::Result<(String, String)> {
        let part = reqwest::multipart::Part::bytes(zip)
            .file_name("project.zip")
            .mime_str("application/zip")?;
        let answer = self
            .request(method, path)
            .multipart(reqwest::multipart::Form::new().part("file", part))
            .send()
            .await?;
        let location = answer
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let said = expect("import", answer, &[200, 201]).await?;
        let id = location.rsplit('/').next().unwrap_or_default().to_string();
        Ok((id, String::from_utf8_lossy(&said).trim().to_string()))
    }

    /// The tenant's applications, as `(owner, name)` (administrators only).
    pub async fn list_applications(&self) -> anyhow::Result<Vec<(String, String)>> {
        let what = "list applications (administrators only: log in as one)";
        let items = self
            .every_item(&format!("{ADMIN}/applications"), what)
            .await?;
        Ok(items
            .iter()
            .map(|item| (text(item, "subscriber"), text(item, "name")))
            .collect())
    }

    /// An application's zip, as the admin API exports it.
    pub async fn export_application(&self, owner: &str, name: &str) -> anyhow::Result<Vec<u8>> {
        let answer = self
            .request(
                reqwest::Method::GET,
                &format!("{ADMIN}/export/applications"),
            )
            .query(&[("appName", name), ("appOwner", owner)])
            .send()
            .await?;
        expect(
            &format!("export application {name} of {owner}"),
            answer,
            &[200],
        )
        .await
    }

    /// Imports an application's zip for the owner it names: what the admin API said
    /// (207: the APIs whose subscriptions were skipped); none when the owner has an
    /// application of that name already.
    pub async fn import_application(&self, zip: Vec<u8>) -> anyhow::Result<Option<Value>> {
        let part = reqwest::multipart::Part::bytes(zip)
            .file_name("exported-application.zip")
            .mime_str("application/zip")?;
        let answer = self
            .request(
                reqwest::Method::POST,
                &format!("{ADMIN}/import/applications?preserveOwner=true"),
            )
            .multipart(reqwest::multipart::Form::new().part("file", part))
            .send()
            .await?;
        if answer.status() == reqwest::StatusCode::CONFLICT {
            return Ok(None);
        }
        let said = expect("import the application", answer, &[201, 207]).await?;
        Ok(Some(serde_json::from_slice(&said)?))
    }

    /// Deletes API `id`.
    pub async fn delete(&self, id: &str) -> anyhow::Result<()> {
        let answer = self
            .request(reqwest::Method::DELETE, &format!("{PUBLISHER}/apis/{id}"))
            .send()
            .await?;
        expect(&format!("delete API {id}"), answer, &[200, 204])
            .await
            .map(drop)
    }

    /// Sets API `id`'s backend password (never part of a project).
    pub async fn set_backend_password(&self, id: &str, password: &str) -> anyhow::Result<()> {
        let path = format!("{PUBLISHER}/apis/{id}");
        let answer = self.request(reqwest::Method::GET, &path).send().await?;
        let mut record: Value =
            serde_json::from_slice(&expect("read the API", answer, &[200]).await?)?;
        if !record["endpointSecurity"].is_object() {
            bail!("API {id} has no endpoint security to set a password for");
        }
        record["endpointSecurity"]["password"] = Value::from(password);
        let answer = self
            .request(reqwest::Method::PUT, &path)
            .json(&record)
            .send()
            .await?;
        expect("set the backend password", answer, &[200])
            .await
            .map(drop)
    }
}
