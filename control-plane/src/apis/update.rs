//! An API's record replaced, as `PUT /apis/{apiId}` and an import over an existing API
//! (`archives`) do: the record checked for the stored API, its identity kept
//! ([`prepared`]), then written in the caller's transaction with the default version's
//! claim moved if it changed ([`save`]).

use super::checks::{check_deployable_with, check_endpoints, check_tiers_exist};
use super::claim::RouteClaim;
use super::queries;
use super::records::{ApiRecord, StoredApi};
use crate::error::Result;
use crate::mediation::records::MediationRow;
use crate::state::AppState;

/// `record` checked and completed as the new record of `api`: name, version, context,
/// provider and status are the stored ones whatever it says of them (as WSO2's contract
/// has it), a masked backend password keeps the stored one. Its `sequences` may name
/// `own`, the API's own mediation policies as they will be.
pub async fn prepared(
    state: &AppState,
    api: &StoredApi,
    mut record: ApiRecord,
    own: &[MediationRow],
) -> Result<ApiRecord> {
    keep_identity(&mut record, api);
    record.read_as_wso2_does();
    record.validate()?;
    check_endpoints(state, &record)?;
    record.seal_backend_password(&state.data_keys, &api.id, Some(&api.record))?;
    check_deployable_with(&record, api.mcp.as_deref(), own)?;
    check_tiers_exist(state, &api.tenant, &record).await?;
    Ok(record)
}

/// Writes a [`prepared`] record over `api`'s: the APIs that are no longer their name's
/// default version.
pub async fn save(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    api: &StoredApi,
    record: &ApiRecord,
) -> Result<Vec<String>> {
    let routes = RouteClaim {
        api_id: &api.id,
        tenant: &api.tenant,
        name: &api.name,
        context: &api.context,
        version: &api.version,
    };
    let was_default = api.record.is_default_version.unwrap_or(false);
    let is_default = record.is_default_version.unwrap_or(false);
    let demoted = match (was_default, is_default) {
        (false, true) => routes.claim_default(tx).await?,
        (true, false) => {
            routes.release_default(tx).await?;
            Vec::new()
        }
        _ => Vec::new(),
    };
    queries::save_record(&mut **tx, &api.id, record).await?;
    tracing::info!(api = %api.id, "API updated");
    Ok(demoted)
}

/// Puts the stored API's id, name, version, context, provider and status into `record`,
/// whatever it said of them.
fn keep_identity(record: &mut ApiRecord, api: &StoredApi) {
    let ignored = [
        ("name", record.name.as_deref(), api.name.as_str()),
        ("version", record.version.as_deref(), api.version.as_str()),
        ("context", record.context.as_deref(), api.context.as_str()),
        (
            "provider",
            record.provider.as_deref(),
            api.provider.as_str(),
        ),
    ];
    for (property, given, stored) in ignored {
        if given.is_some_and(|given| given != stored) {
            tracing::debug!(api = %api.id, property, "identity change in an update ignored");
        }
    }
    record.id = Some(api.id.clone());
    record.name = Some(api.name.clone());
    record.version = Some(api.version.clone());
    record.context = Some(api.context.clone());
    record.provider = Some(api.provider.clone());
    record.status = Some(api.status.clone());
}
