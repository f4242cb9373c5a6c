//! Application keys (spec 2.6, 4.4): consumer key and secret per key type, usable as
//! client credentials at the token service.

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::Value;

use super::pending::{KeyRequest, hold, waiting_request};
use super::records::check_key_type;
use super::records::{ApplicationKey, TokenInfo};
use crate::applications::{StoreUser, StoredApplication, owned_application, require_approved};
use crate::clients::{self, OAuthClient};
use crate::error::{Error, OnDuplicate, Result};
use crate::http::STORE;
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::routes::{Routes, get, post};
use crate::manifest::Touches;
use crate::state::AppState;
use crate::tokens::issue::issue;
use crate::users;
use crate::workflows::{self, Kind};

/// Grants a key gets when the request names none.
const DEFAULT_GRANTS: &str = "password client_credentials refresh_token";

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{STORE}/applications/generate-keys"),
            post(generate_keys),
        )
        .route(
            &format!("{STORE}/applications/{{application_id}}/keys/{{key_type}}"),
            get(get_key).put(super::store_api_updates::update_key),
        )
        .merge(super::store_api_updates::router())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GenerateQuery {
    application_id: Option<String>,
}

/// WSO2's `ApplicationKeyGenerateRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GenerateRequest {
    key_type: Option<String>,
    /// A string of seconds in WSO2's swagger; a number is taken too.
    validity_time: Option<Value>,
    /// Absent: none, as WSO2's DTO starts it as an empty list (so its `@NotNull` only
    /// refuses an explicit null).
    #[serde(default = "no_domains")]
    access_allow_domains: Option<Vec<String>>,
    supported_grant_types: Option<Vec<String>>,
    callback_url: Option<String>,
    scopes: Option<Vec<String>>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    client_id: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    client_secret: Option<String>,
}

fn no_domains() -> Option<Vec<String>> {
    Some(Vec::new())
}

impl GenerateRequest {
    /// Checks the request, returning key type and validity in seconds (1 to `max`).
    fn validate(&self, max: i64) -> Result<(String, i64)> {
        let mut missing = Vec::new();
        for (property, present) in [
            ("keyType", self.key_type.is_some()),
            ("validityTime", self.validity_time.is_some()),
            ("accessAllowDomains", self.access_allow_domains.is_some()),
        ] {
            if !present {
                missing.push((property.to_string(), "may not be null".to_string()));
            }
        }
        if !missing.is_empty() {
            return Err(Error::InvalidFields(missing));
        }
        let key_type = self.key_type.clone().unwrap_or_default();
        if !matches!(key_type.as_str(), "PRODUCTION" | "SANDBOX") {
            return Err(Error::Invalid(format!(
                "Invalid keyType '{key_type}'; allowed values are PRODUCTION, SANDBOX"
            )));
        }
        let validity = match &self.validity_time {
            Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
            Some(Value::Number(n)) => n.as_i64(),
            _ => None,
        }
        .filter(|v| (1..=max).contains(v))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "validityTime must be a whole number of seconds from 1 to {max}"
            ))
        })?;
        Ok((key_type, validity))
    }

    /// What the request asks for, the application's callback URL and WSO2's grants by
    /// default.
    fn key_request(&self, app: &StoredApplication, validity_secs: i64) -> KeyRequest {
        let grant_types = match &self.supported_grant_types {
            Some(list) if !list.is_empty() => list.join(" "),
            _ => DEFAULT_GRANTS.to_string(),
        };
        KeyRequest {
            callback_url: self
                .callback_url
                .clone()
                .unwrap_or_else(|| app.callback_url.clone()),
            grant_types,
            validity_secs,
            scopes: self.scopes.clone().unwrap_or_default().join(" "),
            allow_domains: self
                .access_allow_domains
                .clone()
                .unwrap_or_default()
                .join(" "),
        }
    }
}

/// `POST /applications/generate-keys?applicationId=`: 200 with the new key and an
/// application token; 409 if the key type already has keys.
async fn generate_keys(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    QueryParams(q): QueryParams<GenerateQuery>,
    JsonBody(request): JsonBody<GenerateRequest>,
) -> Result<(Touches, Json<ApplicationKey>)> {
    let application_id = q
        .application_id
        .ok_or_else(|| Error::Invalid("Query parameter applicationId is required".into()))?;
    let app = owned_application(&state, &caller, &application_id).await?;
    require_approved(&app)?;
    let (key_type, validity) = request.validate(state.config.max_token_validity_secs)?;
    let asked = request.key_request(&app, validity);
    let conflict = || format!("Keys already generated for the application {}", app.id);
    if clients::find_application_key(&state.db, &state.data_keys, &app.id, &key_type)
        .await?
        .is_some()
    {
        return Err(Error::Conflict(conflict()));
    }
    if workflows::required(&state.db, caller.tenant(), Kind::keys(&key_type)).await? {
        hold(&state.db, &app, &key_type, &asked).await?;
        let waiting = ApplicationKey::waiting(&key_type, &asked);
        return Ok((Touches::nothing(), Json(waiting)));
    }
    let client = asked.client(&app, &key_type);
    clients::insert(&state.db, &state.data_keys, &client)
        .await
        .on_duplicate(conflict)
        .map_err(|err| match err {
            Error::AlreadyExists(message) => Error::Conflict(message),
            other => other,
        })?;
    tracing::info!(application = %app.id, %key_type, "application keys generated");
    let token = application_token(&state, &client, validity).await?;
    // Keys are the token service's business; gateways see only the tokens.
    Ok((Touches::nothing(), Json(ApplicationKey::new(client, token))))
}

/// The client_credentials token WSO2 hands out with new keys, when the key allows that grant.
async fn application_token(
    state: &AppState,
    client: &OAuthClient,
    validity: i64,
) -> Result<Option<TokenInfo>> {
    if !client.allows_grant("client_credentials") {
        return Ok(None);
    }
    let owner = users::find(&state.db, &client.owner)
        .await?
        .ok_or_else(|| anyhow::anyhow!("owner {} of a new key is missing", client.owner))?;
    let scope = if client.scopes.is_empty() {
        "default"
    } else {
        client.scopes.as_str()
    };
    let issued = issue(state, client, &owner, scope, validity, false)
        .await
        .map_err(|_| anyhow::anyhow!("could not issue the application token"))?;
    Ok(Some(TokenInfo {
        access_token: issued.access_token,
        token_scopes: issued
            .scope
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        validity_time: issued.expires_in,
    }))
}

/// `GET /applications/{applicationId}/keys/{keyType}`.
async fn get_key(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path((application_id, key_type)): Path<(String, String)>,
) -> Result<Json<ApplicationKey>> {
    let app = owned_application(&state, &caller, &application_id).await?;
    check_key_type(&key_type)?;
    if let Some(client) =
        clients::find_application_key(&state.db, &state.data_keys, &app.id, &key_type).await?
    {
        return Ok(Json(ApplicationKey::new(client, None)));
    }
    match waiting_request(&state.db, &app.id, &key_type).await? {
        Some(request) => Ok(Json(ApplicationKey::waiting(&key_type, &request))),
        None => Err(Error::NotFound(
            "application key",
            format!("{application_id}/{key_type}"),
        )),
    }
}
