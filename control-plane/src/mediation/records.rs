//! A mediation policy (WSO2's `Mediation`, listed as `MediationInfo`) and the
//! `api_mediation_policies` row that holds an API's own.

use serde::{Deserialize, Serialize};

/// The flows a policy applies to: the request, the response, a fault.
pub const FLOWS: &[&str] = &["in", "out", "fault"];

/// WSO2's `Mediation`, as sent and as answered.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mediation {
    pub id: Option<String>,
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub flow: Option<String>,
    pub config: Option<String>,
}

/// WSO2's `MediationInfo`, the list item.
#[derive(Debug, Clone, Serialize)]
pub struct MediationInfo {
    pub name: String,
    pub id: String,
    #[serde(rename = "type")]
    pub flow: String,
}

/// A row of `api_mediation_policies`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MediationRow {
    pub id: String,
    pub api_id: String,
    pub name: String,
    pub flow: String,
    pub config: String,
}

/// The columns of [`MediationRow`], in its order.
pub const MEDIATION_COLUMNS: &str = "id, api_id, name, flow, config";

impl From<MediationRow> for Mediation {
    fn from(row: MediationRow) -> Self {
        Mediation {
            id: Some(row.id),
            name: Some(row.name),
            flow: Some(row.flow),
            config: Some(row.config),
        }
    }
}

impl From<&MediationRow> for MediationInfo {
    fn from(row: &MediationRow) -> Self {
        MediationInfo {
            name: row.name.clone(),
            id: row.id.clone(),
            flow: row.flow.clone(),
        }
    }
}
