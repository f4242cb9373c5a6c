//! Changing an application's keys after they are generated: their grants and callback URL
//! (`PUT /applications/{applicationId}/keys/{keyType}`) and their secret
//! (`POST /applications/regenerate-consumersecret`), WSO2 v0.14 store `Application Keys`.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::records::ApplicationKey;
use super::records::check_key_type;
use crate::applications::{StoreUser, owned_application};
use crate::clients::{self, OAuthClient};
use crate::error::{Error, Result};
use crate::http::STORE;
use crate::http::extract::JsonBody;
use crate::http::routes::{Routes, post};
use crate::manifest::Touches;
use crate::state::AppState;
use crate::tokens::Caller;

/// Grant types a key may allow: those of WSO2 2.6's key manager.
const KNOWN_GRANTS: &[&str] = &[
    "password",
    "client_credentials",
    "refresh_token",
    "authorization_code",
    "implicit",
    "urn:ietf:params:oauth:grant-type:saml2-bearer",
    "urn:ietf:params:oauth:grant-type:jwt-bearer",
    "iwa:ntlm",
];

/// Longest callback URL taken.
const MAX_CALLBACK_URL: usize = 2048;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{STORE}/applications/regenerate-consumersecret"),
        post(regenerate_secret),
    )
}

/// WSO2's `ApplicationKey` as a PUT body: only `supportedGrantTypes` and `callbackUrl`
/// change; the rest (echoed from a GET) is ignored, as the contract says.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct KeyUpdate {
    supported_grant_types: Option<Vec<String>>,
    callback_url: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    consumer_key: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    consumer_secret: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    key_state: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    key_type: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    group_id: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    token: Option<Value>,
}

impl KeyUpdate {
    /// The grants and callback URL the key gets: the given ones, checked, else its own.
    /// An empty list is refused rather than stored, since no grants means every grant.
    fn apply_to(&self, key: &OAuthClient) -> Result<(String, String)> {
        let grants = match &self.supported_grant_types {
            None => key.grant_types.clone(),
            Some(list) if list.is_empty() => {
                return Err(Error::Invalid(
                    "supportedGrantTypes must name at least one grant type".into(),
                ));
            }
            Some(list) => {
                if let Some(unknown) = list.iter().find(|g| !KNOWN_GRANTS.contains(&g.as_str())) {
                    return Err(Error::Invalid(format!(
                        "Invalid grant type '{unknown}'; allowed values are {}",
                        KNOWN_GRANTS.join(", ")
                    )));
                }
                let mut grants: Vec<&str> = Vec::new();
                for grant in list {
                    if !grants.contains(&grant.as_str()) {
                        grants.push(grant);
                    }
                }
                grants.join(" ")
            }
        };
        let callback_url = match &self.callback_url {
            None => key.callback_url.clone(),
            Some(url) => {
                check_callback_url(url)?;
                url.clone()
            }
        };
        let redirects = grants
            .split_whitespace()
            .any(|g| matches!(g, "authorization_code" | "implicit"));
        if redirects && callback_url.trim().is_empty() {
            return Err(Error::Invalid(
                "authorization_code and implicit need a callbackUrl".into(),
            ));
        }
        Ok((grants, callback_url))
    }
}

/// A callback URL: bounded, without whitespace or control characters, and never of a
/// scheme a browser would run or render in place (apps' own schemes stay allowed, as
/// WSO2 allows them for mobile clients).
fn check_callback_url(url: &str) -> Result<()> {
    if url.len() > MAX_CALLBACK_URL || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::Invalid(format!(
            "callbackUrl must be at most {MAX_CALLBACK_URL} characters without spaces"
        )));
    }
    let scheme = url
        .split_once(':')
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    if matches!(
        scheme.as_deref(),
        Some("javascript" | "data" | "vbscript" | "file")
    ) {
        return Err(Error::Invalid(
            "callbackUrl may not be a javascript:, data:, vbscript: or file: URL".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_callback_url;

    #[test]
    fn callback_urls_that_would_run_in_the_browser_are_refused() {
        for fine in [
            "https://app.example.com/cb",
            "myapp://callback",
            "http://localhost:8080/",
            "",
        ] {
            assert!(check_callback_url(fine).is_ok(), "{fine}");
        }
        for refused in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:text/html,x",
            "vbscript:x",
            "file:///etc/passwd",
            "https://a/ b",
        ] {
            assert!(check_callback_url(refused).is_err(), "{refused}");
        }
    }
}

/// `PUT /applications/{applicationId}/keys/{keyType}`: 200 with the key as it now is;
/// 404 when the application has no key of that type.
pub(super) async fn update_key(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path((application_id, key_type)): Path<(String, String)>,
    JsonBody(update): JsonBody<KeyUpdate>,
) -> Result<(Touches, Json<ApplicationKey>)> {
    let app = owned_application(&state, &caller, &application_id).await?;
    check_key_type(&key_type)?;
    let missing = || Error::NotFound("application key", format!("{application_id}/{key_type}"));
    let mut key = clients::find_application_key(&state.db, &state.data_keys, &app.id, &key_type)
        .await?
        .ok_or_else(missing)?;
    let (grants, callback_url) = update.apply_to(&key)?;
    clients::update_grants(&state.db, &key.client_id, &grants, &callback_url).await?;
    tracing::info!(application = %app.id, %key_type, grants = %grants, "application key updated");
    (key.grant_types, key.callback_url) = (grants, callback_url);
    // The token endpoint reads keys through its cache, cleared after every change.
    Ok((Touches::nothing(), Json(ApplicationKey::new(key, None))))
}

/// WSO2's `ApplicationKeyReGenerateRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RegenerateRequest {
    consumer_key: Option<String>,
}

/// WSO2's `ApplicationKeyReGenerateResponse`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RegeneratedSecret {
    consumer_key: String,
    consumer_secret: String,
}

/// The application key with this consumer key, if the caller owns its application: 404
/// for unknown keys, registered (non-application) clients and other tenants' keys, 403
/// for another user's of the caller's tenant (as for the application itself).
async fn owned_key(state: &AppState, caller: &Caller, consumer_key: &str) -> Result<OAuthClient> {
    let missing = || Error::NotFound("application key", consumer_key.to_string());
    let key = clients::find(&state.db, &state.data_keys, consumer_key)
        .await?
        .ok_or_else(missing)?;
    let application_id = key.application_id.clone().ok_or_else(missing)?;
    match owned_application(state, caller, &application_id).await {
        Ok(_) => Ok(key),
        Err(Error::NotFound(..)) => Err(missing()),
        Err(err) => Err(err),
    }
}

/// `POST /applications/regenerate-consumersecret`: 200 with the consumer key and its new
/// secret. The old secret stops working at the token endpoint at once; the consumer key
/// and the tokens already issued stay valid.
async fn regenerate_secret(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    JsonBody(request): JsonBody<RegenerateRequest>,
) -> Result<(Touches, Json<RegeneratedSecret>)> {
    let consumer_key = request
        .consumer_key
        .filter(|key| !key.is_empty())
        .ok_or_else(|| {
            Error::InvalidFields(vec![("consumerKey".into(), "may not be null".into())])
        })?;
    let key = owned_key(&state, &caller, &consumer_key).await?;
    let secret = clients::new_client_secret();
    clients::replace_application_secret(&state.db, &state.data_keys, &key.client_id, &secret)
        .await?;
    tracing::info!(client = %key.client_id, "consumer secret regenerated");
    Ok((
        Touches::nothing(),
        Json(RegeneratedSecret {
            consumer_key: key.client_id,
            consumer_secret: secret,
        }),
    ))
}
