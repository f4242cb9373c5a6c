//! Mediation policies in the publisher (WSO2 v0.14): an API's own under
//! `/apis/{apiId}/policies/mediation` (`apim:api_view` reads, `apim:api_create` writes,
//! in the caller's tenant) and the global ones at `/policies/mediation`
//! (`apim:mediation_policy_view`). A change to a policy the API's `sequences` name is
//! checked as they would run and compiled for gateways; any other is stored only.
//!
//! A policy is WSO2's JSON `Mediation` (a Synapse sequence), or, our extension, a
//! tenant's WebAssembly policy: the component's bytes with `Content-Type:
//! application/wasm`, its name, `type` (`in`) and `bodyBytes` in the query.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::defaults::GLOBAL_POLICIES;
use super::queries;
use super::records::{Mediation, MediationInfo, MediationRow};
use super::rules::{self, CheckedPolicy, WasmUpload};
use super::sequences;
use crate::apis::records::StoredApi;
use crate::apis::{check_deployable_with, tenant_api};
use crate::error::{Error, Result};
use crate::http::PUBLISHER;
use crate::http::extract::{JsonBody, QueryParams, read_body};
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get};
use crate::manifest::{Touched, Touches};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{PUBLISHER}/apis/{{api_id}}/policies/mediation"),
            get(list_policies).post(create_policy),
        )
        .route(
            &format!("{PUBLISHER}/apis/{{api_id}}/policies/mediation/{{policy_id}}"),
            get(get_policy).put(update_policy).delete(delete_policy),
        )
        .route(
            &format!("{PUBLISHER}/policies/mediation"),
            get(list_global_policies),
        )
}

/// `limit`, `offset`, and `query` (which WSO2 declares "not supported yet" and ignores).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    query: Option<String>,
}

/// `GET /apis/{apiId}/policies/mediation`: the API's own, by type and name.
async fn list_policies(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<MediationInfo>>> {
    caller.require(&state, Scope::ApiView)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let page = Page::new(q.limit, q.offset)?;
    let (total, rows) = queries::page(&state.db, &api.id, page).await?;
    let list = rows.iter().map(MediationInfo::from).collect();
    let link = |limit, offset| {
        format!(
            "/apis/{}/policies/mediation?limit={limit}&offset={offset}",
            api.id
        )
    };
    Ok(Json(ListEnvelope::new(list, total, page, link)))
}

/// `GET /policies/mediation`: the global policies.
async fn list_global_policies(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<MediationInfo>>> {
    caller.require(&state, Scope::MediationPolicyView)?;
    let page = Page::new(q.limit, q.offset)?;
    let all: Vec<MediationInfo> = GLOBAL_POLICIES.iter().map(|p| p.info()).collect();
    let total = all.len() as i64;
    let link = |limit, offset| format!("/policies/mediation?limit={limit}&offset={offset}");
    Ok(Json(ListEnvelope::new(page.slice(all), total, page, link)))
}

/// A policy as sent, not checked yet (the caller's scope is checked first).
enum Upload {
    /// WSO2's `Mediation`.
    Sequence(Mediation),
    /// A WebAssembly component and its query.
    Wasm(WasmQuery, Bytes),
}

/// The query of a WebAssembly policy's upload.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WasmQuery {
    name: Option<String>,
    #[serde(rename = "type")]
    flow: Option<String>,
    /// The most body bytes the policy is given; absent: none.
    body_bytes: Option<u64>,
}

impl FromRequest<AppState> for Upload {
    type Rejection = Error;

    async fn from_request(request: Request, state: &AppState) -> Result<Self> {
        if !is_wasm(request.headers().get(header::CONTENT_TYPE)) {
            let JsonBody(body) = JsonBody::from_request(request, state).await?;
            return Ok(Self::Sequence(body));
        }
        let (mut parts, body) = request.into_parts();
        let QueryParams(query) = QueryParams::from_request_parts(&mut parts, state).await?;
        let bytes = read_body(Request::from_parts(parts, body), state).await?;
        Ok(Self::Wasm(query, bytes))
    }
}

fn is_wasm(content_type: Option<&HeaderValue>) -> bool {
    content_type
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/wasm"))
}

impl Upload {
    /// The policy, checked.
    fn check(self) -> Result<CheckedPolicy> {
        match self {
            Self::Sequence(body) => rules::check(body),
            Self::Wasm(query, bytes) => {
                crate::error::require_present(&[
                    ("name", query.name.is_none()),
                    ("type", query.flow.is_none()),
                ])?;
                rules::check_wasm(
                    query.name.as_deref().unwrap_or_default(),
                    query.flow.as_deref().unwrap_or_default(),
                    query.body_bytes.unwrap_or(0),
                    bytes.to_vec(),
                )
            }
        }
    }
}

/// The row of a checked policy, and the WebAssembly it keeps, if any.
fn row(id: String, api_id: String, policy: CheckedPolicy) -> (MediationRow, Option<WasmUpload>) {
    let wasm = policy.wasm;
    let row = MediationRow {
        id,
        api_id,
        name: policy.name,
        flow: policy.flow,
        config: policy.config,
        wasm_digest: wasm.as_ref().map(|w| w.digest.clone()),
        wasm_size: wasm.as_ref().map(|w| w.bytes.len() as i64),
        body_bytes: wasm.as_ref().map(|w| w.body_bytes as i64),
    };
    (row, wasm)
}

/// Keeps a policy's WebAssembly, in the write's transaction.
async fn keep(db: &mut sqlx::AnyConnection, wasm: Option<&WasmUpload>) -> Result<()> {
    match wasm {
        Some(wasm) => queries::keep_wasm(db, &wasm.digest, &wasm.bytes).await,
        None => Ok(()),
    }
}

/// `POST /apis/{apiId}/policies/mediation`: 200 (the contract's status) with `Location`
/// and the policy; 409 when the API has one of that name and type.
async fn create_policy(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    upload: Upload,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let policy = upload.check()?;
    let (row, wasm) = row(uuid::Uuid::new_v4().to_string(), api.id.clone(), policy);
    let mut after = own_policies(&state, &api).await?;
    after.push(row.clone());
    let named = named_in_sequences(&api, &[&row], &after)?;
    let mut tx = state.db.begin().await?;
    keep(&mut tx, wasm.as_ref()).await?;
    queries::insert(&mut tx, &row).await?;
    let touches = recompiled(&mut tx, &api, named).await?;
    tx.commit().await?;
    tracing::info!(api = %api.id, policy = %row.id, name = %row.name, "mediation policy created");
    let location = format!("{PUBLISHER}/apis/{}/policies/mediation/{}", api.id, row.id);
    Ok((
        touches,
        [(header::LOCATION, location)],
        Json(Mediation::from(row)),
    )
        .into_response())
}

/// `GET /apis/{apiId}/policies/mediation/{mediationPolicyId}`.
async fn get_policy(
    State(state): State<AppState>,
    caller: Caller,
    Path((api_id, policy_id)): Path<(String, String)>,
) -> Result<Json<Mediation>> {
    caller.require(&state, Scope::ApiView)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    queries::find(&state.db, &api.id, &policy_id)
        .await?
        .map(|row| Json(row.into()))
        .ok_or(Error::NotFound("Mediation Policy", policy_id))
}

/// `PUT /apis/{apiId}/policies/mediation/{mediationPolicyId}`: replaces it.
async fn update_policy(
    State(state): State<AppState>,
    caller: Caller,
    Path((api_id, policy_id)): Path<(String, String)>,
    upload: Upload,
) -> Result<(Touches, Json<Mediation>)> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let policy = upload.check()?;
    let (row, wasm) = row(policy_id.clone(), api.id.clone(), policy);
    let mut after = own_policies(&state, &api).await?;
    let Some(before) = after.iter().position(|p| p.id == policy_id) else {
        return Err(Error::NotFound("Mediation Policy", policy_id));
    };
    let before = std::mem::replace(&mut after[before], row.clone());
    let named = named_in_sequences(&api, &[&before, &row], &after)?;
    let mut tx = state.db.begin().await?;
    keep(&mut tx, wasm.as_ref()).await?;
    if !queries::update(&mut tx, &row).await? {
        return Err(Error::NotFound("Mediation Policy", policy_id));
    }
    let touches = recompiled(&mut tx, &api, named).await?;
    queries::forget_unused_wasm(&mut tx).await?;
    tx.commit().await?;
    Ok((touches, Json(row.into())))
}

/// `DELETE /apis/{apiId}/policies/mediation/{mediationPolicyId}`: 200 with no body.
async fn delete_policy(
    State(state): State<AppState>,
    caller: Caller,
    Path((api_id, policy_id)): Path<(String, String)>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let mut after = own_policies(&state, &api).await?;
    if let Some(at) = after.iter().position(|p| p.id == policy_id) {
        let before = after.remove(at);
        named_in_sequences(&api, &[&before], &after)?;
    }
    let mut db = state.db.acquire().await?;
    if !queries::delete(&mut db, &api.id, &policy_id).await? {
        return Err(Error::NotFound("Mediation Policy", policy_id));
    }
    queries::forget_unused_wasm(&mut db).await?;
    tracing::info!(api = %api.id, policy = %policy_id, "mediation policy deleted");
    Ok((Touches::nothing(), StatusCode::OK))
}

async fn own_policies(state: &AppState, api: &StoredApi) -> Result<Vec<MediationRow>> {
    Ok(queries::of_apis(&state.db, &[&api.id]).await?)
}

/// Whether the API's `sequences` name one of `changed` (a policy as it was or will be),
/// checked with its own policies as the write leaves them (`after`): a 409 when a policy
/// they name would be gone, a 400 when they would not run.
fn named_in_sequences(
    api: &StoredApi,
    changed: &[&MediationRow],
    after: &[MediationRow],
) -> Result<bool> {
    let named = api.record.sequence_names();
    let names = |p: &MediationRow| sequences::names(&named, &p.name, &p.flow);
    if !changed.iter().any(|p| names(p)) {
        return Ok(false);
    }
    for gone in changed.iter().filter(|p| names(p)) {
        if !after
            .iter()
            .any(|p| p.name == gone.name && p.flow == gone.flow)
        {
            return Err(Error::Conflict(format!(
                "The API's sequences name mediation policy '{}' of type '{}'; take it out of them first",
                gone.name, gone.flow
            )));
        }
    }
    check_deployable_with(&api.full_record(), api.mcp.as_deref(), after)?;
    Ok(true)
}

/// What a write compiles for gateways: the API again, in a new revision written with the
/// write, when its sequences name the policy.
async fn recompiled(db: &mut sqlx::AnyConnection, api: &StoredApi, named: bool) -> Result<Touches> {
    if !named {
        return Ok(Touches::nothing());
    }
    queries::touch_api(db, &api.id).await?;
    Ok(Touches::one(Touched::Api(api.id.clone())))
}
