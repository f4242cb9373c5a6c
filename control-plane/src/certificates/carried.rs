//! Endpoint certificates as a WSO2 project carries them
//! (`Meta-information/endpoint_certificates.json`: each `{hostName, alias, certificate}`,
//! the certificate base64 of its DER): those of an API's endpoints for an export, and
//! one taken into a tenant on an import.

use apim_manifest::trust;
use serde::{Deserialize, Serialize};

use super::parse::{carried_form, parse_carried};
use super::queries;
use super::records::CertificateRow;
use super::rules::{check_alias, check_endpoint, check_room, row_of};
use crate::error::{Error, OnDuplicate, Result};
use crate::state::AppState;

/// One entry of `endpoint_certificates.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CarriedCertificate {
    /// The endpoint it is for: `scheme://host[:port]`.
    pub host_name: String,
    pub alias: String,
    pub certificate: String,
}

/// The tenant's certificates bound to the host and port of any of `urls`, by alias.
pub async fn carried_for(
    state: &AppState,
    tenant: &str,
    urls: &[String],
) -> Result<Vec<CarriedCertificate>> {
    let wanted: Vec<(String, u16)> = urls.iter().filter_map(|u| trust::endpoint_of(u)).collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let rows = queries::list(&state.db, tenant, None, None).await?;
    Ok(rows
        .into_iter()
        .filter(|row| trust::endpoint_of(&row.endpoint).is_some_and(|e| wanted.contains(&e)))
        .filter_map(|row| {
            Some(CarriedCertificate {
                certificate: carried_form(&row.pem)?,
                host_name: row.endpoint,
                alias: row.alias,
            })
        })
        .collect())
}

/// What a carried certificate comes to in a tenant.
#[derive(Debug)]
pub enum Checked {
    /// New to the tenant: to be added ([`add_carried`]).
    New(CertificateRow),
    /// The tenant has it already, under that alias.
    Kept,
    /// The alias is another certificate's in the tenant, or the same bound to another
    /// endpoint: left as it is (WSO2 leaves it too).
    AliasTaken,
}

/// Checks `carried` as an upload is checked: alias, endpoint, one valid certificate, room
/// at its endpoint beside the tenant's and those `pending` from the same project.
pub async fn check_carried(
    state: &AppState,
    tenant: &str,
    carried: &CarriedCertificate,
    pending: &[CertificateRow],
) -> Result<Checked> {
    check_alias(&carried.alias)?;
    check_endpoint(&carried.host_name)?;
    let now = crate::db::now();
    let parsed = parse_carried(&carried.certificate, now).map_err(|why| {
        Error::Invalid(format!("Endpoint certificate '{}': {why}", carried.alias))
    })?;
    if let Some(existing) = queries::find(&state.db, tenant, &carried.alias).await? {
        let same = existing.pem == parsed.pem && existing.endpoint == carried.host_name;
        return Ok(if same {
            Checked::Kept
        } else {
            Checked::AliasTaken
        });
    }
    if pending.iter().any(|row| row.alias == carried.alias) {
        return Ok(Checked::AliasTaken);
    }
    check_room(state, &carried.host_name, &parsed, pending).await?;
    Ok(Checked::New(row_of(
        tenant,
        &carried.alias,
        &carried.host_name,
        parsed,
        now,
    )))
}

/// Adds a [`Checked::New`] certificate in `tx`: the host and port gateways must trust it
/// for.
pub async fn add_carried(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    row: &CertificateRow,
) -> Result<Option<(String, u16)>> {
    queries::insert(&mut **tx, row)
        .await
        .on_duplicate(|| format!("The alias '{}' already exists", row.alias))?;
    Ok(trust::endpoint_of(&row.endpoint))
}
