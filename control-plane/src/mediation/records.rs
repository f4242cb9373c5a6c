//! A mediation policy (WSO2's `Mediation`, listed as `MediationInfo`) and the
//! `api_mediation_policies` row that holds an API's own: a Synapse sequence, or a
//! tenant's WebAssembly policy named by digest (its bytes in `wasm_policies`).

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
    /// A WebAssembly policy's digest and sizes (our extension; `config` is then empty).
    /// Answered only; a body that sends it back has it ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<WasmInfo>,
}

/// What a WebAssembly policy is, as answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmInfo {
    /// The SHA-256 of its bytes, lower-case hex.
    pub digest: String,
    /// Its size, bytes.
    pub size: i64,
    /// The most body bytes it is given; 0: the request's head only.
    pub body_bytes: i64,
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
    /// A WebAssembly policy's digest, size and body bytes; all `None` for a sequence.
    pub wasm_digest: Option<String>,
    pub wasm_size: Option<i64>,
    pub body_bytes: Option<i64>,
}

/// The columns of [`MediationRow`], in its order.
pub const MEDIATION_COLUMNS: &str =
    "id, api_id, name, flow, config, wasm_digest, wasm_size, body_bytes";

impl MediationRow {
    /// The WebAssembly policy it is, if it is one.
    pub fn wasm(&self) -> Option<WasmInfo> {
        Some(WasmInfo {
            digest: self.wasm_digest.clone()?,
            size: self.wasm_size.unwrap_or_default(),
            body_bytes: self.body_bytes.unwrap_or_default(),
        })
    }
}

impl From<MediationRow> for Mediation {
    fn from(row: MediationRow) -> Self {
        Mediation {
            wasm: row.wasm(),
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
