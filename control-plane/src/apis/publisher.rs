//! Publisher APIs, `/api/am/publisher/v0.14/apis` (spec 2.3, 3, 4.3).

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::checks::{check_deployable, check_tiers_exist, tenant_api, touches_apis};
use super::create::{self, Creator};
use super::lifecycle;
use super::queries;
use super::records::{ApiRecord, StoredApi};
use super::routes;
use super::rules::validate_swagger;
use super::search;
use super::swagger_json;
use super::update;
use crate::error::{Error, Result};
use crate::http::PUBLISHER;
use crate::http::extract::{JsonBody, QueryParams, parse_json, read_body};
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get, post};
use crate::manifest::Touched;
use crate::manifest::Touches;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{PUBLISHER}/apis"),
            get(list_apis).post(create_api),
        )
        .route(
            &format!("{PUBLISHER}/apis/change-lifecycle"),
            post(change_lifecycle),
        )
        .route(
            &format!("{PUBLISHER}/apis/{{api_id}}"),
            get(get_api).put(update_api).delete(delete_api),
        )
        .route(
            &format!("{PUBLISHER}/apis/{{api_id}}/swagger"),
            get(get_swagger).put(put_swagger),
        )
        .merge(super::publisher_copy::router())
}

/// WSO2's `APIInfo`, the list item.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiInfo {
    id: String,
    name: String,
    description: Option<String>,
    context: String,
    version: String,
    provider: String,
    status: String,
    thumbnail_uri: Option<String>,
}

impl From<&StoredApi> for ApiInfo {
    fn from(api: &StoredApi) -> Self {
        ApiInfo {
            id: api.id.clone(),
            name: api.name.clone(),
            description: api.record.description.clone(),
            context: api.context.clone(),
            version: api.version.clone(),
            provider: api.provider.clone(),
            status: api.status.clone(),
            thumbnail_uri: api.record.thumbnail_uri.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
    query: Option<String>,
    expand: Option<bool>,
}

/// `GET /apis`: the tenant's APIs matching `query`, a page at a time; with `expand=true`
/// each as the whole API (`APIMappingUtil.fromAPIListToDTO` in WSO2), else its summary.
async fn list_apis(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiView)?;
    let page = Page::new(q.limit, q.offset)?;
    let query = q.query.unwrap_or_default();
    let mut criteria = search::parse(&query).map_err(Error::Invalid)?;
    search::look_up_documents(&state.db, &mut criteria, caller.tenant(), false).await?;
    let (total, apis) = queries::search(&state.db, caller.tenant(), &criteria, page).await?;
    let link = |limit, offset| format!("/apis?limit={limit}&offset={offset}&query={query}");
    if q.expand == Some(true) {
        let list: Vec<ApiRecord> = apis.iter().map(|api| api.full_record().masked()).collect();
        let envelope = ListEnvelope::new(list, total, page, link).with_pagination(total, page);
        return Ok(Json(envelope).into_response());
    }
    let list: Vec<ApiInfo> = apis.iter().map(ApiInfo::from).collect();
    let envelope = ListEnvelope::new(list, total, page, link).with_pagination(total, page);
    Ok(Json(envelope).into_response())
}

/// `POST /apis`: 201 with `Location` and the full record. A new API is always CREATED,
/// whatever the body says: only `change-lifecycle`, with `api_publish`, deploys it.
async fn create_api(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(record): JsonBody<ApiRecord>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let creator = Creator {
        username: caller.username(),
        tenant: caller.tenant(),
    };
    let record = create::prepared(&state, creator, record, &[]).await?;
    let mut tx = state.db.begin().await?;
    let (id, demoted) = create::insert(&mut tx, creator.tenant, &record).await?;
    tx.commit().await?;
    let location = format!("{PUBLISHER}/apis/{id}");
    Ok((
        StatusCode::CREATED,
        touches_apis(std::iter::once(id).chain(demoted)),
        [(header::LOCATION, location)],
        Json(record.masked()),
    )
        .into_response())
}

/// `GET /apis/{apiId}`: the backend password masked.
async fn get_api(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
) -> Result<Json<ApiRecord>> {
    caller.require(&state, Scope::ApiView)?;
    Ok(Json(
        tenant_api(&state, &caller, &api_id)
            .await?
            .full_record()
            .masked(),
    ))
}

/// `PUT /apis/{apiId}`: replaces the record but for its identity. As the contract says,
/// "name, version, context, provider, state will not be changed by this operation": what
/// the body says of them (or leaves out) is replaced by what is stored, and the rest applies.
async fn update_api(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    JsonBody(record): JsonBody<ApiRecord>,
) -> Result<(Touches, Json<ApiRecord>)> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let own = crate::mediation::queries::of_apis(&state.db, &[&api.id]).await?;
    let record = update::prepared(&state, &api, record, &own).await?;
    let mut tx = state.db.begin().await?;
    let demoted = update::save(&mut tx, &api, &record).await?;
    tx.commit().await?;
    Ok((
        touches_apis(std::iter::once(api.id).chain(demoted)),
        Json(record.masked()),
    ))
}

/// `DELETE /apis/{apiId}`: 200 with no body; 409 while any application is subscribed.
async fn delete_api(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let mut tx = state.db.begin().await?;
    let subscriptions = crate::subscriptions::count_for_api(&mut tx, &api.id).await?;
    if subscriptions > 0 {
        return Err(Error::Conflict(format!(
            "Cannot remove the API {} as active subscriptions exist",
            api.id
        )));
    }
    crate::subscriptions::delete_unsubscribed_of_api(&mut tx, &api.id).await?;
    queries::delete(&mut tx, &api.id).await?;
    routes::release_all(&mut tx, &api.id).await?;
    tx.commit().await?;
    tracing::info!(api = %api.id, "API deleted");
    Ok((Touches::one(Touched::Api(api.id)), StatusCode::OK))
}

/// `GET /apis/{apiId}/swagger`: the definition as a JSON document.
async fn get_swagger(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiView)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let definition = api.record.api_definition.unwrap_or_default();
    Ok(([(header::CONTENT_TYPE, "application/json")], definition).into_response())
}

/// `PUT /apis/{apiId}/swagger`: the form field `apiDefinition` (multipart, as WSO2 takes
/// it) or the definition itself as a JSON body.
async fn put_swagger(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    let definition = swagger_json::forgiven(swagger_from_request(&state, &headers, request).await?);
    validate_swagger(&definition).map_err(Error::Invalid)?;
    let mut record = api.full_record();
    record.api_definition = Some(definition.clone());
    check_deployable(&state, &record, api.mcp.as_deref(), Some(&api.id)).await?;
    check_tiers_exist(&state, &api.tenant, &record).await?;
    queries::save_record(&state.db, &api.id, &record).await?;
    Ok((
        Touches::one(Touched::Api(api.id)),
        [(header::CONTENT_TYPE, "application/json")],
        definition,
    )
        .into_response())
}

async fn swagger_from_request(
    state: &AppState,
    headers: &HeaderMap,
    request: Request,
) -> Result<String> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.starts_with("multipart/form-data") {
        use axum::extract::FromRequest;
        let mut form = axum::extract::Multipart::from_request(request, state)
            .await
            .map_err(|e| Error::Invalid(e.body_text()))?;
        while let Some(field) = form
            .next_field()
            .await
            .map_err(|e| Error::Invalid(e.body_text()))?
        {
            if field.name() == Some("apiDefinition") {
                return field
                    .text()
                    .await
                    .map_err(|e| Error::Invalid(e.body_text()));
            }
        }
        return Err(Error::InvalidFields(vec![(
            "apiDefinition".into(),
            "may not be null".into(),
        )]));
    }
    let body = read_body(request, state).await?;
    let doc: serde_json::Value = parse_json(&body)?;
    Ok(doc.to_string())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LifecycleQuery {
    api_id: Option<String>,
    action: Option<String>,
    lifecycle_checklist: Option<String>,
}

/// `POST /apis/change-lifecycle?apiId&action`: 200 with no body, or 400 naming the
/// actions the current state allows.
async fn change_lifecycle(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<LifecycleQuery>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::ApiPublish)?;
    let (Some(api_id), Some(action)) = (q.api_id, q.action) else {
        return Err(Error::Invalid(
            "Query parameters apiId and action are required".into(),
        ));
    };
    let api = tenant_api(&state, &caller, &api_id).await?;
    let next = lifecycle::next_state(&api.status, &action).map_err(|allowed| {
        Error::Invalid(format!(
            "Action '{action}' is not allowed. Allowed actions are [{}]",
            allowed.join(", ")
        ))
    })?;
    let checklist = lifecycle::Checklist::parse(q.lifecycle_checklist.as_deref());
    let mut tx = state.db.begin().await?;
    if !queries::change_status(&mut *tx, &api.id, &api.status, next).await? {
        return Err(Error::Conflict(format!(
            "The lifecycle state of API {} changed concurrently; try again",
            api.id
        )));
    }
    let mut touched = vec![Touched::Api(api.id.clone())];
    if lifecycle::is_first_publish(&api.status, next) {
        touched.extend(apply_checklist(&mut tx, &api, checklist).await?);
    }
    tx.commit().await?;
    tracing::info!(api = %api.id, from = %api.status, to = next, %action, "API lifecycle changed");
    if api.record.api_type.as_deref() == Some("WS")
        && apim_manifest::ApiState::deployed(next).is_some()
    {
        // WSO2's lifecycle answer has no room for it: the operator's log says it.
        tracing::warn!(
            api = %api.id,
            "WebSocket API deployed: edge-gateway with host forwarding relays its connections; gateways that serve through wasi:http (Spin) cannot upgrade and answer its handshakes 501"
        );
    }
    Ok((Touches(touched), StatusCode::OK))
}

/// Whether two versions are shown to, and may be subscribed by, the same callers: the
/// same visibility, roles and tenants, and the same subscription availability. Only then
/// may a subscription pass from one to the other without the checks a new one gets.
fn same_audience(old: &ApiRecord, new: &ApiRecord) -> bool {
    old.visibility == new.visibility
        && old.visible_roles == new.visible_roles
        && old.visible_tenants == new.visible_tenants
        && old.subscription_availability == new.subscription_availability
        && old.subscription_available_tenants == new.subscription_available_tenants
}

/// What a first publish of `api` does to its older versions (same tenant, name and
/// provider, as WSO2's `APIExecutor`): unless the checklist requires re-subscription,
/// the subscriptions of each that is not RETIRED are forwarded to it, newest version
/// first (so its block, if any, is the one kept), from versions shown to the same
/// subscribers ([`same_audience`]) and on tiers the new version offers; with "Deprecate
/// old versions", each that is PUBLISHED becomes DEPRECATED. What changed, to recompile.
async fn apply_checklist(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    api: &StoredApi,
    checklist: lifecycle::Checklist,
) -> Result<Vec<Touched>> {
    let mut older: Vec<(String, String, String, String)> =
        queries::versions_of(tx, &api.tenant, &api.name, &api.provider)
            .await?
            .into_iter()
            .filter(|(_, version, _, _)| lifecycle::compare_versions(version, &api.version).is_lt())
            .collect();
    older.sort_by(|a, b| lifecycle::compare_versions(&b.1, &a.1));
    let mut touched = Vec::new();
    if !checklist.require_resubscription {
        let from: Vec<String> = older
            .iter()
            .filter(|(_, _, status, record)| {
                status != "RETIRED"
                    && serde_json::from_str::<ApiRecord>(record)
                        .is_ok_and(|old| same_audience(&old, &api.record))
            })
            .map(|(id, _, _, _)| id.clone())
            .collect();
        let offered = api.record.tiers.clone().unwrap_or_default();
        for application in
            crate::subscriptions::forward_to_version(tx, &from, &api.id, &offered).await?
        {
            touched.push(Touched::Subscription {
                application,
                api: api.id.clone(),
            });
        }
    }
    if checklist.deprecate_old_versions {
        for (id, _, status, _) in older.iter().filter(|(_, _, s, _)| s == "PUBLISHED") {
            if queries::change_status(&mut **tx, id, status, "DEPRECATED").await? {
                touched.push(Touched::Api(id.clone()));
            }
        }
    }
    Ok(touched)
}
