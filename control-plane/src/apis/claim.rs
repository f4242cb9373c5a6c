//! The rules an API write checks in its transaction: WSO2's uniqueness of names and
//! contexts within a tenant, and the gateway routes it claims across the platform.

use super::queries;
use super::records::ApiRecord;
use super::routes;
use crate::error::{Error, Result};

/// An API's routes, as it claims them in a write's transaction.
pub(super) struct RouteClaim<'a> {
    pub api_id: &'a str,
    pub tenant: &'a str,
    pub name: &'a str,
    pub context: &'a str,
    pub version: &'a str,
}

impl RouteClaim<'_> {
    /// Claims the versioned route, and the bare context for a default version. Another
    /// version of the same API holding the bare context hands it over (an API has one
    /// default version, as in WSO2) and is returned, its flag cleared, to be recompiled;
    /// any other holder refuses the write with 409.
    pub(super) async fn claim(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        default_version: bool,
    ) -> Result<Vec<String>> {
        let versioned = routes::prefixes(self.context, self.version, false);
        if let Err(taken) = routes::claim(tx, self.api_id, &versioned).await? {
            return Err(route_taken(&taken.prefix));
        }
        if default_version {
            return self.claim_default(tx).await;
        }
        Ok(Vec::new())
    }

    /// Makes this the name's one default version: the bare context, handed over by a
    /// version at the same context, and any version that is the default at a context of
    /// its own gives up its bare context. The versions demoted, to be recompiled.
    pub(super) async fn claim_default(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    ) -> Result<Vec<String>> {
        let bare = [self.context.to_string()];
        let mut demoted = Vec::new();
        if let Err(taken) = routes::claim(tx, self.api_id, &bare).await? {
            let holder = queries::owner_of(tx, &taken.holder).await?;
            // Only another version's own bare context is handed over, never a versioned
            // route (a version may now sit at a context that is another's `/ctx/v1`).
            match holder {
                Some((tenant, name, context, record))
                    if tenant == self.tenant && name == self.name && context == taken.prefix =>
                {
                    routes::transfer(tx, self.context, self.api_id).await?;
                    demote(tx, &taken.holder, &record).await?;
                    demoted.push(taken.holder);
                }
                _ => return Err(route_taken(&taken.prefix)),
            }
        }
        for (id, context, record) in
            queries::versions_elsewhere(tx, self.tenant, self.name, self.context).await?
        {
            let stored: ApiRecord = parse_record(&id, &record)?;
            if stored.is_default_version == Some(true) {
                routes::release(tx, &id, &context).await?;
                demote(tx, &id, &record).await?;
                demoted.push(id);
            }
        }
        Ok(demoted)
    }

    /// Gives up the bare context (no longer the default version).
    pub(super) async fn release_default(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    ) -> Result<()> {
        routes::release(tx, self.api_id, self.context).await?;
        Ok(())
    }
}

fn parse_record(id: &str, record: &str) -> Result<ApiRecord> {
    serde_json::from_str(record)
        .map_err(|e| anyhow::anyhow!("stored record of API {id}: {e}").into())
}

/// Clears a version's default flag in its stored record.
async fn demote(tx: &mut sqlx::Transaction<'_, sqlx::Any>, id: &str, record: &str) -> Result<()> {
    let mut record = parse_record(id, record)?;
    record.is_default_version = Some(false);
    queries::save_record(&mut **tx, id, &record).await?;
    Ok(())
}

fn route_taken(prefix: &str) -> Error {
    Error::AlreadyExists(format!(
        "The gateway route {prefix} is already used by another API"
    ))
}

/// WSO2's name, version and context rules within a tenant, as its publisher's `POST
/// /apis` applies them: a name spelled in another case is taken; the same name and version
/// (in any case) is a duplicate at the same context and refused at another; a new version
/// of a name may have a context of its own; a context is another name's only once.
pub(super) async fn check_unique(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant: &str,
    name: &str,
    version: &str,
    context: &str,
) -> Result<()> {
    let others = queries::similar(tx, tenant, name, context).await?;
    for (other_name, other_version, other_context) in &others {
        let same_version = other_version.eq_ignore_ascii_case(version);
        if other_name == name && same_version && other_context == context {
            return Err(Error::AlreadyExists(format!(
                "A duplicate API already exists for {name}-{version}"
            )));
        }
        if other_name != name && other_name.eq_ignore_ascii_case(name) {
            return Err(Error::Invalid(format!(
                "API with name {other_name} already exists."
            )));
        }
        if other_name == name && same_version {
            return Err(Error::Invalid(format!(
                "API name {name} already exists with different context {other_context}"
            )));
        }
        if other_name != name {
            return Err(Error::Invalid(format!(
                "A duplicate API context already exists for {context}"
            )));
        }
    }
    Ok(())
}
