//! What the publisher API answers, as the console's templates show it.

use serde::Deserialize;
use serde_json::Value;

/// A page of `GET /apis`.
#[derive(Deserialize)]
pub(super) struct ApiList {
    #[serde(default)]
    pub list: Vec<ApiRow>,
    #[serde(default)]
    pub pagination: Option<Pagination>,
    #[serde(default)]
    pub count: usize,
}

#[derive(Deserialize)]
pub(super) struct Pagination {
    pub total: i64,
}

/// An API in the list.
#[derive(Deserialize)]
pub(super) struct ApiRow {
    pub id: String,
    pub name: String,
    pub version: String,
    pub context: String,
    pub provider: String,
    pub status: String,
}

/// An API as `GET /apis/{apiId}` answers it, what the console shows of it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PublisherApi {
    pub id: String,
    pub name: String,
    pub version: String,
    pub context: String,
    pub provider: String,
    pub status: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub tiers: Vec<String>,
    #[serde(default)]
    pub visibility: Option<String>,
    #[serde(default)]
    pub endpoint_config: Option<String>,
    #[serde(default)]
    pub api_definition: Option<String>,
}

impl PublisherApi {
    /// The production endpoint's URL, when the endpoint configuration names one.
    pub fn production_url(&self) -> Option<String> {
        let config: Value = serde_json::from_str(self.endpoint_config.as_deref()?).ok()?;
        let endpoints = &config["production_endpoints"];
        let first = if endpoints.is_array() {
            &endpoints[0]
        } else {
            endpoints
        };
        first["url"].as_str().map(str::to_string)
    }

    /// Every endpoint URL gateways may send its calls to (production and sandbox, their
    /// failovers when it fails over), each once, as the endpoint configuration is read for
    /// the gateways; none when it does not read.
    pub fn endpoint_urls(&self) -> Vec<String> {
        let config: Value = self
            .endpoint_config
            .as_deref()
            .and_then(|c| serde_json::from_str(c).ok())
            .unwrap_or_default();
        let mut urls: Vec<String> = Vec::new();
        if let Ok(endpoints) = apim_http::endpoints::Endpoints::from_wso2(&config) {
            for url in endpoints.urls() {
                if !urls.iter().any(|known| known == url) {
                    urls.push(url.to_string());
                }
            }
        }
        urls
    }

    /// Its definition as JSON (`Null` when it has none or it does not read).
    pub fn definition(&self) -> Value {
        self.api_definition
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or_default()
    }
}

/// A subscription to the API, as the console lists it.
pub(super) struct SubscriptionRow {
    pub id: String,
    pub application: String,
    pub subscriber: String,
    pub tier: String,
    pub status: String,
}

/// A subscription as `GET /subscriptions` lists it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Subscription {
    pub subscription_id: String,
    pub application_id: String,
    pub tier: String,
    pub status: String,
}

/// A page of `GET /subscriptions`.
#[derive(Deserialize)]
pub(super) struct SubscriptionList {
    #[serde(default)]
    pub list: Vec<Subscription>,
}

/// What `GET /applications/{applicationId}` tells of a subscribed application.
#[derive(Deserialize)]
pub(super) struct Application {
    pub name: String,
    #[serde(default)]
    pub subscriber: String,
}
