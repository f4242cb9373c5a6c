//! An application's keys as WSO2 shows them: consumer key and secret per key type, held
//! as OAuth clients of the application (the `clients` room stores them).

use serde::Serialize;
use sqlx::AnyPool;

use super::pending::{KeyRequest, waiting_request};
use crate::clients::{self, OAuthClient};
use crate::error::{Error, Result};
use crate::secrets::DataKeys;

/// WSO2's `ApplicationKey`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationKey {
    /// None while the key's generation waits for an approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer_secret: Option<String>,
    supported_grant_types: Vec<String>,
    callback_url: String,
    key_state: &'static str,
    key_type: String,
    group_id: Option<String>,
    token: Option<TokenInfo>,
}

/// WSO2's `Token`: the application access token issued with the keys.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    pub access_token: String,
    pub token_scopes: Vec<String>,
    pub validity_time: i64,
}

impl ApplicationKey {
    pub fn new(client: OAuthClient, token: Option<TokenInfo>) -> Self {
        ApplicationKey {
            supported_grant_types: client
                .grant_types
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            consumer_key: Some(client.client_id),
            consumer_secret: Some(client.client_secret),
            callback_url: client.callback_url,
            key_state: "COMPLETED",
            key_type: client.key_type.unwrap_or_default(),
            group_id: None,
            token,
        }
    }

    /// A key whose generation waits for an approval: WSO2's keyState `CREATED`, without
    /// a consumer key, secret or token until it is approved.
    pub fn waiting(key_type: &str, request: &KeyRequest) -> Self {
        ApplicationKey {
            consumer_key: None,
            consumer_secret: None,
            supported_grant_types: request
                .grant_types
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            callback_url: request.callback_url.clone(),
            key_state: "CREATED",
            key_type: key_type.to_string(),
            group_id: None,
            token: None,
        }
    }
}

/// The keys an application has, production first (their secrets decrypted, as WSO2
/// v0.14 answers them); a key whose generation waits for an approval is shown waiting.
pub async fn application_keys(
    db: &AnyPool,
    data_keys: &DataKeys,
    application_id: &str,
) -> Result<Vec<ApplicationKey>> {
    let mut keys = Vec::new();
    for key_type in ["PRODUCTION", "SANDBOX"] {
        if let Some(client) =
            clients::find_application_key(db, data_keys, application_id, key_type).await?
        {
            keys.push(ApplicationKey::new(client, None));
        } else if let Some(request) = waiting_request(db, application_id, key_type).await? {
            keys.push(ApplicationKey::waiting(key_type, &request));
        }
    }
    Ok(keys)
}

/// Refuses (400) a key type other than WSO2's two.
pub(super) fn check_key_type(key_type: &str) -> Result<()> {
    if matches!(key_type, "PRODUCTION" | "SANDBOX") {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "Invalid keyType '{key_type}'; allowed values are PRODUCTION, SANDBOX"
        )))
    }
}
