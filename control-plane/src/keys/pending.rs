//! Key generation that waits for an approval (the tenant's `productionKeyGeneration` or
//! `sandboxKeyGeneration` switch): what was asked is kept with the workflow
//! ([`KeyRequest`]), and the keys are made only once it is approved
//! ([`approve_key_request`]).

use serde::{Deserialize, Serialize};
use sqlx::{Any, AnyPool, Transaction};

use crate::applications::StoredApplication;
use crate::clients::{self, OAuthClient};
use crate::error::{Error, Result};
use crate::secrets::DataKeys;
use crate::workflows::{self, Kind};

/// What a key generation asked for, kept until it is decided.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyRequest {
    pub callback_url: String,
    pub grant_types: String,
    pub validity_secs: i64,
    pub scopes: String,
    pub allow_domains: String,
}

impl KeyRequest {
    /// The application's new key of `key_type`, as this request asked for it.
    pub fn client(&self, app: &StoredApplication, key_type: &str) -> OAuthClient {
        OAuthClient {
            client_id: clients::new_client_id(),
            client_secret: clients::new_client_secret(),
            client_name: format!("{}_{}_{key_type}", app.owner, app.name),
            owner: app.owner.clone(),
            callback_url: self.callback_url.clone(),
            grant_types: self.grant_types.clone(),
            saas_app: 0,
            application_id: Some(app.id.clone()),
            key_type: Some(key_type.to_string()),
            validity_secs: Some(self.validity_secs),
            scopes: self.scopes.clone(),
            allow_domains: self.allow_domains.clone(),
            public_client: 0,
            redirect_uris: String::new(),
        }
    }
}

/// The request for the application's keys of `key_type` waiting for an approval, if any.
pub async fn waiting_request(
    db: &AnyPool,
    application_id: &str,
    key_type: &str,
) -> Result<Option<KeyRequest>> {
    let Some(workflow) = workflows::pending(db, application_id, Kind::keys(key_type)).await? else {
        return Ok(None);
    };
    let request = serde_json::from_str(&workflow.payload)
        .map_err(|err| anyhow::anyhow!("workflow {}: {err}", workflow.reference_id))?;
    Ok(Some(request))
}

/// Opens the workflow of a key generation that waits for an approval; 409 when one
/// already waits for this key type.
pub(super) async fn hold(
    db: &AnyPool,
    app: &StoredApplication,
    key_type: &str,
    request: &KeyRequest,
) -> Result<()> {
    let kind = Kind::keys(key_type);
    let waits = || {
        Error::Conflict(format!(
            "Keys of type {key_type} for the application {} are waiting for an approval",
            app.id
        ))
    };
    if workflows::pending(db, &app.id, kind).await?.is_some() {
        return Err(waits());
    }
    let tenant = crate::users::tenant_of(&app.owner);
    let payload = serde_json::to_string(request).map_err(anyhow::Error::from)?;
    // A request racing this one past the check above meets the unique index.
    let reference = workflows::open(db, tenant, kind, &app.id, &payload)
        .await
        .map_err(|err| {
            if crate::db::is_unique_violation(&err) {
                waits()
            } else {
                err.into()
            }
        })?;
    tracing::info!(application = %app.id, %key_type, workflow = %reference, "key generation waits for an approval");
    Ok(())
}

/// Makes the keys an approved workflow asked for (none if the application went, or got
/// keys of that type meanwhile), in the transaction that records the approval.
pub async fn approve_key_request(
    tx: &mut Transaction<'_, Any>,
    data_keys: &DataKeys,
    app: Option<StoredApplication>,
    key_type: &str,
    payload: &str,
) -> Result<()> {
    let Some(app) = app else {
        return Ok(());
    };
    if clients::find_application_key(&mut **tx, data_keys, &app.id, key_type)
        .await?
        .is_some()
    {
        return Ok(());
    }
    let request: KeyRequest = serde_json::from_str(payload).map_err(anyhow::Error::from)?;
    clients::insert(&mut **tx, data_keys, &request.client(&app, key_type)).await?;
    tracing::info!(application = %app.id, %key_type, "approved keys generated");
    Ok(())
}
