//! The domain steps every flow takes, as a WSO2 client takes them (spec §4.3, §4.4, §5):
//! create and publish an API, create an application, subscribe it, generate its keys and
//! get its token; endpoint certificates. The tests, the benchmark, the fault command and the local stack all
//! take them from here; a test of a step's refusals calls the endpoint itself.

use serde_json::{Value, json};

use crate::{Client, PUBLISHER, Reply, STORE};

/// A step the platform did not take: which, and what it answered.
#[derive(Debug, Clone)]
pub struct Refused {
    /// The step, e.g. "create the API".
    pub step: &'static str,
    /// The status it answered.
    pub status: u16,
    /// Its body.
    pub body: Value,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} {}", self.step, self.status, self.body)
    }
}

impl std::error::Error for Refused {}

/// What a step gives, or why it was refused.
pub type StepResult<T> = Result<T, Refused>;

/// A consumer's credentials for an application's keys.
#[derive(Debug, Clone)]
pub struct Keys {
    /// The consumer key.
    pub key: String,
    /// The consumer secret.
    pub secret: String,
}

/// An application subscribed to APIs, with PRODUCTION keys.
#[derive(Debug, Clone)]
pub struct SubscribedApplication {
    /// The application's id.
    pub id: String,
    /// Its PRODUCTION keys.
    pub keys: Keys,
    /// Its subscriptions' ids, in the order of the APIs.
    pub subscriptions: Vec<String>,
}

/// The access tokens an application's keys get (WSO2's application `tokenType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenType {
    /// `OAUTH`, WSO2's default: 36-character opaque tokens the gateway introspects.
    Opaque,
    /// `JWT`: self-contained tokens the gateway verifies offline.
    Jwt,
}

impl TokenType {
    /// Its name in WSO2's application model.
    pub fn wso2_name(self) -> &'static str {
        match self {
            TokenType::Opaque => "OAUTH",
            TokenType::Jwt => "JWT",
        }
    }
}

/// The body of a key generation (spec 2.6) for PRODUCTION keys.
pub fn keys_request() -> Value {
    json!({
        "validityTime": "3600",
        "keyType": "PRODUCTION",
        "accessAllowDomains": ["ALL"],
        "scopes": ["am_application_scope", "default"],
        "supportedGrantTypes": ["refresh_token", "client_credentials", "password"],
    })
}

/// The body of a tier of `requests` per `unit_ms` that stops at its quota, for
/// `POST /tiers/{level}` or its `PUT`.
pub fn tier_record(name: &str, requests: i64, unit_ms: i64) -> Value {
    json!({"name": name, "description": format!("Allows {requests} requests"),
           "tierPlan": "FREE", "requestCount": requests, "unitTime": unit_ms,
           "stopOnQuotaReach": true, "attributes": {"plan": 1}})
}

/// The steps, taken on a management listener with a user's token.
#[derive(Clone, Copy)]
pub struct Steps<'a> {
    mgmt: &'a Client,
    token: &'a str,
}

impl<'a> Steps<'a> {
    /// Steps on `mgmt` with the bearer `token`.
    pub fn new(mgmt: &'a Client, token: &'a str) -> Self {
        Self { mgmt, token }
    }

    /// The bearer token the steps are taken with.
    pub fn token(&self) -> &'a str {
        self.token
    }

    /// Creates an API from its record (spec 2.3); its id.
    pub async fn create_api(&self, record: &Value) -> StepResult<String> {
        let reply = self
            .mgmt
            .post_json(&format!("{PUBLISHER}/apis"), self.token, record)
            .await;
        Ok(accepted("create the API", reply, 201)?.str("id"))
    }

    /// Applies a lifecycle action (`Publish`, `Deploy as a Prototype`, ...).
    pub async fn lifecycle(&self, id: &str, action: &str) -> StepResult<()> {
        let path = format!(
            "{PUBLISHER}/apis/change-lifecycle?apiId={id}&action={}",
            action.replace(' ', "+")
        );
        let reply = self.mgmt.post_empty(&path, self.token).await;
        accepted("change the API's lifecycle", reply, 200).map(drop)
    }

    /// Creates an API and publishes it; its id.
    pub async fn publish_api(&self, record: &Value) -> StepResult<String> {
        let id = self.create_api(record).await?;
        self.lifecycle(&id, "Publish").await?;
        Ok(id)
    }

    /// Creates an application of `tier`, with WSO2's default token type (`OAUTH`); its id.
    pub async fn create_application(&self, name: &str, tier: &str) -> StepResult<String> {
        self.create_application_with(&json!({"name": name, "throttlingTier": tier}))
            .await
    }

    /// Creates an application of `tier` whose keys get `token_type` tokens; its id.
    pub async fn create_typed_application(
        &self,
        name: &str,
        tier: &str,
        token_type: TokenType,
    ) -> StepResult<String> {
        let body =
            json!({"name": name, "throttlingTier": tier, "tokenType": token_type.wso2_name()});
        self.create_application_with(&body).await
    }

    /// Creates an application from WSO2's `Application` body; its id.
    async fn create_application_with(&self, body: &Value) -> StepResult<String> {
        let reply = self
            .mgmt
            .post_json(&format!("{STORE}/applications"), self.token, body)
            .await;
        Ok(accepted("create the application", reply, 201)?.str("applicationId"))
    }

    /// Subscribes `application` to `api` (an id or a unique name) on `tier`; the
    /// subscription's id.
    pub async fn subscribe(&self, application: &str, api: &str, tier: &str) -> StepResult<String> {
        let body = json!({"tier": tier, "apiIdentifier": api, "applicationId": application});
        let reply = self
            .mgmt
            .post_json(&format!("{STORE}/subscriptions"), self.token, &body)
            .await;
        Ok(accepted("subscribe", reply, 201)?.str("subscriptionId"))
    }

    /// Generates `application`'s keys with `request` (see [`keys_request`]).
    pub async fn generate_keys(&self, application: &str, request: &Value) -> StepResult<Keys> {
        let path = format!("{STORE}/applications/generate-keys?applicationId={application}");
        let reply = self.mgmt.post_json(&path, self.token, request).await;
        let keys = accepted("generate keys", reply, 200)?;
        Ok(Keys {
            key: keys.str("consumerKey"),
            secret: keys.str("consumerSecret"),
        })
    }

    /// An application of `tier` subscribed to `apis` on Unlimited, with PRODUCTION keys
    /// whose tokens are WSO2's default (opaque).
    pub async fn subscribed_application(
        &self,
        name: &str,
        tier: &str,
        apis: &[&str],
    ) -> StepResult<SubscribedApplication> {
        self.subscribed_typed_application(name, tier, TokenType::Opaque, apis)
            .await
    }

    /// An application of `tier` whose keys get `token_type` tokens, subscribed to `apis`
    /// on Unlimited, with PRODUCTION keys.
    pub async fn subscribed_typed_application(
        &self,
        name: &str,
        tier: &str,
        token_type: TokenType,
        apis: &[&str],
    ) -> StepResult<SubscribedApplication> {
        let id = self
            .create_typed_application(name, tier, token_type)
            .await?;
        let mut subscriptions = Vec::with_capacity(apis.len());
        for api in apis {
            subscriptions.push(self.subscribe(&id, api, "Unlimited").await?);
        }
        let keys = self.generate_keys(&id, &keys_request()).await?;
        Ok(SubscribedApplication {
            id,
            keys,
            subscriptions,
        })
    }

    /// Uploads an endpoint certificate (PEM) under `alias`, bound to `endpoint` (a URL);
    /// the answer (WSO2's `CertMetadata`, with how the certificate is trusted).
    pub async fn add_certificate(
        &self,
        alias: &str,
        endpoint: &str,
        pem: &str,
    ) -> StepResult<serde_json::Value> {
        let part = reqwest::multipart::Part::bytes(pem.as_bytes().to_vec()).file_name("cert.pem");
        let form = reqwest::multipart::Form::new()
            .part("certificate", part)
            .text("alias", alias.to_string())
            .text("endpoint", endpoint.to_string());
        let path = format!("{PUBLISHER}/certificates");
        let request = self
            .mgmt
            .request(reqwest::Method::POST, &path, self.token)
            .multipart(form);
        let reply = self.mgmt.send(request).await;
        accepted("add the certificate", reply, 200).map(|reply| reply.body)
    }

    /// Deletes the endpoint certificate of `alias`.
    pub async fn delete_certificate(&self, alias: &str) -> StepResult<()> {
        let path = format!("{PUBLISHER}/certificates/{alias}");
        let reply = self.mgmt.delete(&path, self.token).await;
        accepted("delete the certificate", reply, 200).map(drop)
    }
}

/// A client_credentials token of an application's keys from `token_service` (a control
/// plane, or a gateway's `/token` relay at `path`).
pub async fn client_credentials_token(
    token_service: &Client,
    path: &str,
    keys: &Keys,
) -> StepResult<String> {
    let form = [("grant_type", "client_credentials")];
    let reply = token_service
        .token_at(path, &keys.key, &keys.secret, &form)
        .await;
    Ok(accepted("get a token", reply, 200)?.str("access_token"))
}

/// `reply` when it has `status`, else the refusal of `step`.
fn accepted(step: &'static str, reply: Reply, status: u16) -> StepResult<Reply> {
    if reply.status == status {
        Ok(reply)
    } else {
        Err(Refused {
            step,
            status: reply.status,
            body: reply.body,
        })
    }
}
