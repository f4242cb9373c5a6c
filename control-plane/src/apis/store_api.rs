//! The store's APIs, `/api/am/store/v0.14/apis`: the list and each API as a consumer sees it
//! (who sees which: `visibility`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::publisher::ApiInfo;
use super::records::StoredApi;
use super::search;
use super::visibility::{visible_api, visible_apis};
use crate::error::{Error, Result};
use crate::http::STORE;
use crate::http::extract::QueryParams;
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::tokens::MaybeCaller;

pub fn router() -> Routes {
    Routes::new()
        .route(&format!("{STORE}/apis"), get(list_apis))
        .route(&format!("{STORE}/apis/{{api_id}}"), get(get_api))
        .merge(super::store_api_swagger::router())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
    query: Option<String>,
}

/// `GET /apis`: the store's published and prototyped APIs the caller sees; anonymous
/// callers see public ones.
async fn list_apis(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    headers: HeaderMap,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<ApiInfo>>> {
    let page = Page::new(q.limit, q.offset)?;
    let query = q.query.unwrap_or_default();
    let mut criteria = search::parse(&query).map_err(Error::Invalid)?;
    let tenant = crate::tokens::store_tenant(&headers, caller.as_ref());
    search::look_up_documents(&state.db, &mut criteria, &tenant, true).await?;
    let seen: Vec<_> = visible_apis(&state, caller.as_ref(), &headers)
        .await?
        .into_iter()
        .filter(|api| criteria.iter().all(|c| c.matches(api)))
        .collect();
    let total = seen.len() as i64;
    let list = page
        .slice(seen)
        .iter()
        .map(|api| ApiInfo::from(&**api))
        .collect();
    let link = |limit, offset| format!("/apis?limit={limit}&offset={offset}&query={query}");
    Ok(Json(
        ListEnvelope::new(list, total, page, link).with_pagination(total, page),
    ))
}

/// WSO2's store `API`: what a consumer needs, never endpoints or their credentials.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StoreApi {
    id: String,
    name: String,
    description: Option<String>,
    context: String,
    version: String,
    provider: String,
    api_definition: Option<String>,
    status: String,
    is_default_version: bool,
    transport: Vec<String>,
    authorization_header: Option<String>,
    tags: Vec<String>,
    tiers: Vec<String>,
    thumbnail_url: Option<String>,
    additional_properties: Map<String, Value>,
    business_information: Option<Value>,
}

impl From<StoredApi> for StoreApi {
    fn from(api: StoredApi) -> Self {
        let record = api.record;
        StoreApi {
            id: api.id,
            name: api.name,
            description: record.description,
            context: api.context,
            version: api.version,
            provider: api.provider,
            api_definition: record.api_definition,
            status: api.status,
            is_default_version: record.is_default_version.unwrap_or(false),
            transport: record.transport.unwrap_or_default(),
            authorization_header: record.authorization_header,
            tags: record.tags.unwrap_or_default(),
            tiers: record.tiers.unwrap_or_default(),
            thumbnail_url: record.thumbnail_uri,
            additional_properties: record.additional_properties.unwrap_or_default(),
            business_information: record.business_information,
        }
    }
}

/// `GET /apis/{apiId}`: 404 unless the caller sees it in the store.
async fn get_api(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    Path(api_id): Path<String>,
) -> Result<Json<StoreApi>> {
    Ok(Json(
        visible_api(&state, caller.as_ref(), &api_id).await?.into(),
    ))
}
