//! What every publisher write of an API checks and says: the caller's tenant holds it, the
//! gateways can take it, its unique name, and what it touches.

use super::queries;
use super::records::{ApiRecord, StoredApi};
use super::rules::{check_context_length, resource_tiers};
use crate::error::{Error, Result};
use crate::manifest::Touches;
use crate::manifest::{self, Touched};
use crate::mediation::records::MediationRow;
use crate::mediation::{self, sequences};
use crate::state::AppState;
use crate::tiers::{self, TierLevel};
use crate::tokens::Caller;
use crate::users::provider_key;

/// `<provider with -AT->-<name>-<version>`, the unique name subscriptions may use.
pub(super) fn unique_name(provider: &str, name: &str, version: &str) -> String {
    format!("{}-{name}-{version}", provider_key(provider))
}

/// The API if it exists in the caller's tenant; 404 otherwise (other tenants' APIs too).
/// Every publisher resource under `/apis/{apiId}` finds its API so.
pub async fn tenant_api(state: &AppState, caller: &Caller, api_id: &str) -> Result<StoredApi> {
    match queries::find(&state.db, api_id).await? {
        Some(api) if api.tenant == caller.tenant() => Ok(api),
        _ => Err(Error::NotFound("API", api_id.to_string())),
    }
}

/// Refuses (400) a record, as it is about to be stored, that gateways could not take: its
/// stored context too long, or an entry it compiles into past the bound. Checked on every
/// write of a record, whatever its state, so that deploying it later cannot fail.
/// Its `sequences` are checked too: each names one of the API's own mediation policies
/// (those of API `policies_of`, the one it is or is copied from; none for a new API) or a
/// global one, and runs at the gateway.
pub async fn check_deployable(
    state: &AppState,
    record: &ApiRecord,
    mcp: Option<&str>,
    policies_of: Option<&str>,
) -> Result<()> {
    let own: Vec<MediationRow> = match policies_of {
        Some(id) => mediation::queries::of_apis(&state.db, &[id]).await?,
        None => Vec::new(),
    };
    check_deployable_with(record, mcp, &own)
}

/// [`check_deployable`] with the API's own mediation policies as `own` (as a write of
/// one of them is about to leave them).
pub fn check_deployable_with(
    record: &ApiRecord,
    mcp: Option<&str>,
    own: &[MediationRow],
) -> Result<()> {
    check_context_length(record.context.as_deref().unwrap_or_default()).map_err(Error::Invalid)?;
    let mediation = sequences::plan(&record.sequence_names(), own).map_err(Error::Invalid)?;
    manifest::check_api_entries(record, mcp, mediation).map_err(Error::Invalid)
}

/// Refuses a record whose endpoints the gateways' egress policy would never reach.
pub(super) fn check_endpoints(state: &AppState, record: &ApiRecord) -> Result<()> {
    let config = record.endpoint_config.as_deref().unwrap_or_default();
    state
        .shared::<super::rules::EndpointPolicy>()
        .check(config)
        .map_err(Error::Invalid)
}

/// Touches for these APIs.
pub(super) fn touches_apis(ids: impl IntoIterator<Item = String>) -> Touches {
    Touches(ids.into_iter().map(Touched::Api).collect())
}

/// Refuses (400) tiers the tenant does not have: the API's subscription tiers
/// (`Specified tier(s) [..] are invalid`, as WSO2 says) and its operations' resource tiers.
/// An operation may name a subscription tier: WSO2 2.6 does not check `x-throttling-tier`
/// at all (`APIDefinitionFromOpenAPISpec.getURITemplates` copies it), and its own REST
/// tests name a tier made with `POST /tiers/api` there; a name the tenant has at no level
/// stays refused. With legacy throttling (`APIM_ADVANCED_THROTTLING=false`) an operation's
/// tier is a subscription tier, the only kind gateways then look up for it.
pub(super) async fn check_tiers_exist(
    state: &AppState,
    tenant: &str,
    record: &ApiRecord,
) -> Result<()> {
    let offered = record.tiers.iter().flatten().map(String::as_str);
    let unknown = tiers::unknown(&state.db, tenant, TierLevel::Subscription, offered).await?;
    if !unknown.is_empty() {
        return Err(Error::Invalid(format!(
            "Specified tier(s) [{}] are invalid",
            unknown.join(", ")
        )));
    }
    let named = resource_tiers(record.api_definition.as_deref().unwrap_or("{}"));
    let names = named.iter().map(|(_, _, tier)| tier.as_str());
    let (unknown, kind) = if state.config.advanced_throttling {
        let not_resource = tiers::unknown(&state.db, tenant, TierLevel::Resource, names).await?;
        let not_any = not_resource.iter().copied();
        let unknown = tiers::unknown(&state.db, tenant, TierLevel::Subscription, not_any).await?;
        (unknown, "resource tier")
    } else {
        let unknown = tiers::unknown(&state.db, tenant, TierLevel::Subscription, names).await?;
        (unknown, "subscription tier (advanced throttling is off)")
    };
    match named
        .iter()
        .find(|(_, _, tier)| unknown.contains(&tier.as_str()))
    {
        Some((method, path, _)) => Err(Error::Invalid(format!(
            "x-throttling-tier of {method} {path} is not a known {kind}"
        ))),
        None => Ok(()),
    }
}
