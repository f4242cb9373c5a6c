//! An API's WSDL, publisher `/api/am/publisher/v0.14/apis/{apiId}/wsdl` (WSO2 v0.14):
//! `GET` answers WSO2's `Wsdl` `{name, wsdlDefinition}`; `POST` (the contract's method;
//! `PUT` is taken as the same) stores one from a `Wsdl` body, 200 with no body. The
//! definition must be a WSDL 1.1 document: well-formed XML whose root is `definitions`,
//! without a DOCTYPE (see `crate::xml`). Storing one changes nothing gateways see.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::queries;
use super::rules::check;
use crate::apis::tenant_api;
use crate::error::{Error, Result};
use crate::http::PUBLISHER;
use crate::http::extract::JsonBody;
use crate::http::routes::{Routes, get};
use crate::manifest::Touches;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

pub fn router() -> Routes {
    Routes::new().route(
        &format!("{PUBLISHER}/apis/{{api_id}}/wsdl"),
        get(get_wsdl).post(put_wsdl).put(put_wsdl),
    )
}

/// WSO2's `Wsdl`.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Wsdl {
    name: Option<String>,
    wsdl_definition: Option<String>,
}

/// `GET /apis/{apiId}/wsdl`: 404 when the API has none.
async fn get_wsdl(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
) -> Result<Json<Wsdl>> {
    caller.require(&state, Scope::ApiView)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let Some(row) = queries::find(&state.db, &api.id).await? else {
        return Err(Error::NotFoundWhy(format!(
            "The API {} has no WSDL",
            api.id
        )));
    };
    Ok(Json(Wsdl {
        name: Some(row.name),
        wsdl_definition: Some(row.definition),
    }))
}

/// `POST` (or `PUT`) `/apis/{apiId}/wsdl`: replaces the API's WSDL.
#[utoipa::path(
    put,
    path = "/api/am/publisher/v0.14/apis/{apiId}/wsdl",
    tag = "API (Individual)",
    params(("apiId" = String, Path, description = "The API's id")),
    request_body = Wsdl,
    responses((status = 200, description = "The WSDL is stored")),
    security(("bearer" = []))
)]
async fn put_wsdl(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    JsonBody(body): JsonBody<Wsdl>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let row = check(body.name, body.wsdl_definition)?;
    queries::put(&state.db, &api.id, &row).await?;
    tracing::info!(api = %api.id, name = %row.name, "WSDL stored");
    Ok((Touches::nothing(), StatusCode::OK))
}

/// This operation in the control plane's OpenAPI document (`PUT`, beside WSO2's `GET` and
/// `POST`, described by its contract).
#[derive(utoipa::OpenApi)]
#[openapi(paths(put_wsdl))]
pub struct Api;
