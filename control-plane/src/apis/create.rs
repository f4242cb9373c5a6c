//! A new API, as `POST /apis` and an import (`archives`) make one: the record checked
//! and completed for its creator ([`prepared`]), then written in the caller's
//! transaction ([`insert`]), so that an import writes the API and what it carries at
//! once. A new API is always CREATED.

use super::checks::{check_deployable_with, check_endpoints, check_tiers_exist, unique_name};
use super::claim::{self, RouteClaim};
use super::queries::{self, NewApi};
use super::records::ApiRecord;
use super::rules::{check_tenant_context, normalise_context};
use crate::error::{Error, OnDuplicate, Result};
use crate::mediation::records::MediationRow;
use crate::state::AppState;
use crate::users::{self, tenant_of};

/// Who creates an API.
#[derive(Debug, Clone, Copy)]
pub struct Creator<'a> {
    pub username: &'a str,
    pub tenant: &'a str,
}

/// `record` checked and completed as a new API of `creator`'s, its id new, its status
/// CREATED, its backend password sealed: ready for [`insert`]. Its `sequences` may name
/// `own`, the mediation policies written with it.
pub async fn prepared(
    state: &AppState,
    creator: Creator<'_>,
    mut record: ApiRecord,
    own: &[MediationRow],
) -> Result<ApiRecord> {
    record.read_as_wso2_does();
    record.validate()?;
    check_endpoints(state, &record)?;
    let provider = checked_provider(state, creator, record.provider.as_deref()).await?;
    let raw_context = record.context.as_deref().unwrap_or_default();
    check_tenant_context(raw_context, creator.tenant).map_err(Error::Invalid)?;
    let context = normalise_context(raw_context, creator.tenant);
    let id = uuid::Uuid::new_v4().to_string();
    record.id = Some(id.clone());
    record.provider = Some(provider);
    record.context = Some(context);
    record.status = Some("CREATED".to_string());
    record.seal_backend_password(&state.data_keys, &id, None)?;
    check_deployable_with(&record, None, own)?;
    check_tiers_exist(state, creator.tenant, &record).await?;
    Ok(record)
}

/// Writes a [`prepared`] record as a new API of `tenant`: its id, and the APIs that are
/// no longer their name's default version.
pub async fn insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant: &str,
    record: &ApiRecord,
) -> Result<(String, Vec<String>)> {
    let id = record.id.clone().unwrap_or_default();
    let name = record.name.clone().unwrap_or_default();
    let version = record.version.clone().unwrap_or_default();
    let context = record.context.clone().unwrap_or_default();
    let provider = record.provider.clone().unwrap_or_default();
    claim::check_unique(tx, tenant, &name, &version, &context).await?;
    let routes = RouteClaim {
        api_id: &id,
        tenant,
        name: &name,
        context: &context,
        version: &version,
    };
    let demoted = routes
        .claim(tx, record.is_default_version.unwrap_or(false))
        .await?;
    let new = NewApi {
        id: &id,
        tenant,
        provider: &provider,
        name: &name,
        version: &version,
        context: &context,
        status: "CREATED",
        unique_name: unique_name(&provider, &name, &version),
        record: serde_json::to_string(record).map_err(anyhow::Error::from)?,
    };
    queries::insert(tx, new)
        .await
        .on_duplicate(|| format!("A duplicate API already exists for {name}-{version}"))?;
    tracing::info!(api = %id, %name, %version, %provider, "API created");
    Ok((id, demoted))
}

/// The provider of a new API: the creator unless the record names another user of the
/// creator's tenant, which only an administrator may do (as in WSO2).
async fn checked_provider(
    state: &AppState,
    creator: Creator<'_>,
    named: Option<&str>,
) -> Result<String> {
    let Some(provider) = named.filter(|p| !p.is_empty() && *p != creator.username) else {
        return Ok(creator.username.to_string());
    };
    let is_admin = users::find(&state.db, creator.username)
        .await?
        .is_some_and(|user| user.has_role("admin"));
    if !is_admin {
        // WSO2 2.6: without the admin role the provider is the caller, whatever is named.
        tracing::debug!(
            caller = creator.username,
            named = provider,
            "provider overridden with the caller"
        );
        return Ok(creator.username.to_string());
    }
    if tenant_of(provider) != creator.tenant {
        return Err(Error::Invalid(format!(
            "Provider '{provider}' is not in the tenant of the logged in user"
        )));
    }
    if users::find(&state.db, provider).await?.is_none() {
        return Err(Error::Invalid(format!(
            "Specified provider {provider} not exist."
        )));
    }
    Ok(provider.to_string())
}

/// Puts an API just [`insert`]ed (CREATED) into lifecycle state `status`, as an import
/// restores what its project says; a state WSO2's lifecycle does not have is refused.
pub async fn restore_status(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    id: &str,
    status: &str,
) -> Result<()> {
    let Some(state) = super::lifecycle::STATES
        .iter()
        .find(|s| s.eq_ignore_ascii_case(status))
    else {
        return Err(Error::Invalid(format!(
            "Invalid status '{}': one of {}",
            status.escape_default(),
            super::lifecycle::STATES.join(", ")
        )));
    };
    if *state != "CREATED" {
        queries::change_status(&mut **tx, id, "CREATED", state).await?;
    }
    Ok(())
}
