//! Publisher APIs, `/api/am/publisher/v0.14/apis` (spec 2.3, 3, 4.3).

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use sqlx::AnyPool;

use super::auth::Caller;
use super::extract::{JsonBody, QueryParams, parse_json, read_body};
use super::pagination::{ListEnvelope, Page};
use crate::apis::{
    ApiRecord, Invalid, check_context_length, check_tenant_context, normalise_context,
    validate_swagger,
};
use crate::db::now;
use crate::error::{Error, OnDuplicate, Result};
use crate::lifecycle;
use crate::manifest::{self, Touched};
use crate::routes;
use crate::scopes::Scope;
use crate::state::{AppState, Touches};
use crate::users::{self, provider_key, tenant_of};

const BASE: &str = "/api/am/publisher/v0.14";

pub fn router() -> Router<AppState> {
    Router::new()
        .route(&format!("{BASE}/apis"), get(list_apis).post(create_api))
        .route(
            &format!("{BASE}/apis/change-lifecycle"),
            post(change_lifecycle),
        )
        .route(
            &format!("{BASE}/apis/{{api_id}}"),
            get(get_api).put(update_api).delete(delete_api),
        )
        .route(
            &format!("{BASE}/apis/{{api_id}}/swagger"),
            get(get_swagger).put(put_swagger),
        )
}

/// An API as stored: indexed columns plus the record.
#[derive(Debug, Clone)]
pub struct StoredApi {
    pub id: String,
    pub tenant: String,
    pub provider: String,
    pub name: String,
    pub version: String,
    pub context: String,
    pub status: String,
    pub record: ApiRecord,
}

impl StoredApi {
    /// `provider-name-version`, as subscriptions show the API (`@` kept, `-` in parts as %2D).
    pub fn identifier(&self) -> String {
        let part = |s: &str| s.replace('-', "%2D");
        format!(
            "{}-{}-{}",
            part(&self.provider),
            part(&self.name),
            part(&self.version)
        )
    }

    /// The record with the authoritative id and status.
    fn full_record(&self) -> ApiRecord {
        let mut record = self.record.clone();
        record.id = Some(self.id.clone());
        record.status = Some(self.status.clone());
        record
    }
}

/// `<provider with -AT->-<name>-<version>`, the unique name subscriptions may use.
fn unique_name(provider: &str, name: &str, version: &str) -> String {
    format!("{}-{name}-{version}", provider_key(provider))
}

type ApiRow = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);

const API_COLUMNS: &str = "id, tenant, provider, name, version, context, status, record";

fn from_row(row: ApiRow) -> Result<StoredApi> {
    let (id, tenant, provider, name, version, context, status, record) = row;
    let record = serde_json::from_str(&record)
        .map_err(|e| anyhow::anyhow!("stored record of API {id} is unreadable: {e}"))?;
    Ok(StoredApi {
        id,
        tenant,
        provider,
        name,
        version,
        context,
        status,
        record,
    })
}

/// The API with this id or unique name (`provider-name-version`, `-AT-` or `@` for
/// tenants, `%2D` for dashes inside parts). `None` when missing.
pub async fn find_api(db: &AnyPool, id_or_name: &str) -> Result<Option<StoredApi>> {
    // language=SQL
    let by_id: Option<ApiRow> =
        sqlx::query_as(&format!("SELECT {API_COLUMNS} FROM apis WHERE id = $1"))
            .bind(id_or_name)
            .fetch_optional(db)
            .await?;
    let row = match by_id {
        Some(row) => Some(row),
        None => {
            let name = id_or_name
                .replace("%2D", "-")
                .replace("%2d", "-")
                .replace('@', "-AT-");
            // language=SQL
            sqlx::query_as(&format!(
                "SELECT {API_COLUMNS} FROM apis WHERE unique_name = $1"
            ))
            .bind(name)
            .fetch_optional(db)
            .await?
        }
    };
    row.map(from_row).transpose()
}

/// A tenant's APIs in these lifecycle states, by name and version.
pub async fn tenant_apis(db: &AnyPool, tenant: &str, states: &[&str]) -> Result<Vec<StoredApi>> {
    let placeholders: Vec<String> = (0..states.len()).map(|i| format!("${}", i + 2)).collect();
    // language=SQL
    let select = format!(
        "SELECT {API_COLUMNS} FROM apis WHERE tenant = $1 AND status IN ({}) ORDER BY name, version",
        placeholders.join(", ")
    );
    let mut query = sqlx::query_as::<_, ApiRow>(&select).bind(tenant);
    for state in states {
        query = query.bind(*state);
    }
    query
        .fetch_all(db)
        .await?
        .into_iter()
        .map(from_row)
        .collect()
}

/// The API if it exists in the caller's tenant; 404 otherwise (other tenants' APIs too).
async fn tenant_api(state: &AppState, caller: &Caller, api_id: &str) -> Result<StoredApi> {
    match find_api(&state.db, api_id).await? {
        Some(api) if api.tenant == caller.tenant() => Ok(api),
        _ => Err(Error::NotFound("API", api_id.to_string())),
    }
}

fn invalid(err: Invalid) -> Error {
    match err {
        Invalid::Fields(fields) => Error::InvalidFields(fields),
        Invalid::Message(message) => Error::Invalid(message),
    }
}

/// Refuses (400) a record, as it is about to be stored, that gateways could not take: its
/// stored context too long, or an entry it compiles into past the bound. Checked on every
/// write of a record, whatever its state, so that deploying it later cannot fail.
fn check_deployable(record: &ApiRecord) -> Result<()> {
    check_context_length(record.context.as_deref().unwrap_or_default()).map_err(Error::Invalid)?;
    manifest::check_api_entries(record).map_err(Error::Invalid)
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
    #[allow(dead_code)]
    expand: Option<bool>,
}

/// `GET /apis`: the tenant's APIs matching `query`, a page at a time.
async fn list_apis(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<ApiInfo>>> {
    caller.require(&state, Scope::ApiView)?;
    let page = Page::new(q.limit, q.offset)?;
    let query = q.query.unwrap_or_default();
    let criteria = search::parse(&query).map_err(Error::Invalid)?;
    let (total, apis) = search_apis(&state.db, caller.tenant(), &criteria, page).await?;
    let list = apis.iter().map(ApiInfo::from).collect();
    let link = |limit, offset| format!("/apis?limit={limit}&offset={offset}&query={query}");
    Ok(Json(
        ListEnvelope::new(list, total, page, link).with_pagination(total, page),
    ))
}

/// One page of the tenant's APIs matching every criterion, by name and version, and how
/// many match in all. Criteria on columns are checked by the database, which then counts
/// and pages; only searches on record fields (description, tags) read whole records.
async fn search_apis(
    db: &AnyPool,
    tenant: &str,
    criteria: &[search::Criterion],
    page: Page,
) -> Result<(i64, Vec<StoredApi>)> {
    let mut conditions = vec!["tenant = $1".to_string()];
    let mut values = vec![tenant.to_string()];
    let mut in_records = Vec::new();
    for criterion in criteria {
        match criterion.sql(values.len() + 1) {
            Some((condition, value)) => {
                conditions.push(condition);
                values.push(value);
            }
            None => in_records.push(criterion),
        }
    }
    let filter = conditions.join(" AND ");
    let select = |suffix: &str| {
        // language=SQL
        format!("SELECT {API_COLUMNS} FROM apis WHERE {filter} ORDER BY name, version{suffix}")
    };
    if !in_records.is_empty() {
        let rows: Vec<ApiRow> = bind_all(sqlx::query_as(&select("")), &values)
            .fetch_all(db)
            .await?;
        let mut matches = Vec::new();
        for row in rows {
            let api = from_row(row)?;
            if in_records.iter().all(|c| c.matches(&api)) {
                matches.push(api);
            }
        }
        return Ok((matches.len() as i64, page.slice(matches)));
    }
    // language=SQL
    let count = format!("SELECT COUNT(*) FROM apis WHERE {filter}");
    let (total,): (i64,) = bind_all(sqlx::query_as(&count), &values)
        .fetch_one(db)
        .await?;
    let paged = select(&format!(" LIMIT {} OFFSET {}", page.limit, page.offset));
    let rows: Vec<ApiRow> = bind_all(sqlx::query_as(&paged), &values)
        .fetch_all(db)
        .await?;
    Ok((
        total,
        rows.into_iter().map(from_row).collect::<Result<_>>()?,
    ))
}

/// Binds text values in order.
fn bind_all<'q, O>(
    mut query: sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>>,
    values: &'q [String],
) -> sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>> {
    for value in values {
        query = query.bind(value.as_str());
    }
    query
}

/// Refuses a record whose endpoints the gateways' egress policy would never reach.
fn check_endpoints(state: &AppState, record: &ApiRecord) -> Result<()> {
    let config = record.endpoint_config.as_deref().unwrap_or_default();
    state.endpoints.check(config).map_err(Error::Invalid)
}

/// `POST /apis`: 201 with `Location` and the full record. A new API is always CREATED,
/// whatever the body says: only `change-lifecycle`, with `api_publish`, deploys it.
async fn create_api(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(mut record): JsonBody<ApiRecord>,
) -> Result<Response> {
    caller.require(&state, Scope::ApiCreate)?;
    record.validate().map_err(invalid)?;
    check_endpoints(&state, &record)?;
    let provider = checked_provider(&state, &caller, record.provider.as_deref()).await?;
    let tenant = caller.tenant().to_string();
    let name = record.name.clone().unwrap_or_default();
    let version = record.version.clone().unwrap_or_default();
    let raw_context = record.context.as_deref().unwrap_or_default();
    check_tenant_context(raw_context, &tenant).map_err(Error::Invalid)?;
    let context = normalise_context(raw_context, &tenant);
    let status = "CREATED";
    let id = uuid::Uuid::new_v4().to_string();
    record.id = Some(id.clone());
    record.provider = Some(provider.clone());
    record.context = Some(context.clone());
    record.status = Some(status.to_string());
    record
        .seal_backend_password(&state.data_keys, &id, None)
        .map_err(invalid)?;
    check_deployable(&record)?;

    let mut tx = state.db.begin().await?;
    check_unique(&mut tx, &tenant, &name, &version, &context).await?;
    let routes = RouteClaim {
        api_id: &id,
        tenant: &tenant,
        name: &name,
        context: &context,
        version: &version,
    };
    let demoted = routes
        .claim(&mut tx, record.is_default_version.unwrap_or(false))
        .await?;
    // language=SQL
    sqlx::query(
        "INSERT INTO apis (id, tenant, provider, name, version, context, status, unique_name, record, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)",
    )
    .bind(&id)
    .bind(&tenant)
    .bind(&provider)
    .bind(&name)
    .bind(&version)
    .bind(&context)
    .bind(status)
    .bind(unique_name(&provider, &name, &version))
    .bind(serde_json::to_string(&record).map_err(anyhow::Error::from)?)
    .bind(now())
    .execute(&mut *tx)
    .await
    .on_duplicate(|| format!("A duplicate API already exists for {name}-{version}"))?;
    tx.commit().await?;
    tracing::info!(api = %id, %name, %version, %provider, "API created");
    let location = format!("{BASE}/apis/{id}");
    Ok((
        StatusCode::CREATED,
        touches_apis(std::iter::once(id).chain(demoted)),
        [(header::LOCATION, location)],
        Json(record.masked()),
    )
        .into_response())
}

/// The provider of a new API: the caller unless the body names another user of the
/// caller's tenant, which only an administrator may do (as in WSO2).
async fn checked_provider(
    state: &AppState,
    caller: &Caller,
    named: Option<&str>,
) -> Result<String> {
    let Some(provider) = named.filter(|p| !p.is_empty() && *p != caller.username()) else {
        return Ok(caller.username().to_string());
    };
    let is_admin = users::find(&state.db, caller.username())
        .await?
        .is_some_and(|user| user.has_role("admin"));
    if !is_admin {
        // WSO2 2.6: without the admin role the provider is the caller, whatever is named.
        tracing::debug!(
            caller = caller.username(),
            named = provider,
            "provider overridden with the caller"
        );
        return Ok(caller.username().to_string());
    }
    if tenant_of(provider) != caller.tenant() {
        return Err(Error::Invalid(format!(
            "Provider '{provider}' is not in the tenant of the logged in user"
        )));
    }
    if users::find(&state.db, provider).await?.is_none() {
        return Err(Error::Invalid(format!(
            "Specified provider {provider} not exist."
        )));
    }
    Ok(provider.to_string())
}

/// Touches for these APIs.
fn touches_apis(ids: impl IntoIterator<Item = String>) -> Touches {
    Touches(ids.into_iter().map(Touched::Api).collect())
}

/// An API's routes, as it claims them in a write's transaction.
struct RouteClaim<'a> {
    api_id: &'a str,
    tenant: &'a str,
    name: &'a str,
    context: &'a str,
    version: &'a str,
}

impl RouteClaim<'_> {
    /// Claims the versioned route, and the bare context for a default version. Another
    /// version of the same API holding the bare context hands it over (an API has one
    /// default version, as in WSO2) and is returned, its flag cleared, to be recompiled;
    /// any other holder refuses the write with 409.
    async fn claim(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        default_version: bool,
    ) -> Result<Option<String>> {
        let versioned = routes::prefixes(self.context, self.version, false);
        if let Err(taken) = routes::claim(tx, self.api_id, &versioned).await? {
            return Err(route_taken(&taken.prefix));
        }
        if default_version {
            return self.claim_default(tx).await;
        }
        Ok(None)
    }

    async fn claim_default(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    ) -> Result<Option<String>> {
        let bare = [self.context.to_string()];
        let Err(taken) = routes::claim(tx, self.api_id, &bare).await? else {
            return Ok(None);
        };
        // language=SQL
        let holder: Option<(String, String, String)> =
            sqlx::query_as("SELECT tenant, name, record FROM apis WHERE id = $1")
                .bind(&taken.holder)
                .fetch_optional(&mut **tx)
                .await?;
        match holder {
            Some((tenant, name, record)) if tenant == self.tenant && name == self.name => {
                routes::transfer(tx, self.context, self.api_id).await?;
                let mut record: ApiRecord = serde_json::from_str(&record)
                    .map_err(|e| anyhow::anyhow!("stored record of API {}: {e}", taken.holder))?;
                record.is_default_version = Some(false);
                save_record(&mut **tx, &taken.holder, &record).await?;
                Ok(Some(taken.holder))
            }
            _ => Err(route_taken(&taken.prefix)),
        }
    }

    /// Gives up the bare context (no longer the default version).
    async fn release_default(&self, tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> Result<()> {
        routes::release(tx, self.api_id, self.context).await?;
        Ok(())
    }
}

fn route_taken(prefix: &str) -> Error {
    Error::AlreadyExists(format!(
        "The gateway route {prefix} is already used by another API"
    ))
}

/// WSO2's name, version and context rules within a tenant.
async fn check_unique(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant: &str,
    name: &str,
    version: &str,
    context: &str,
) -> Result<()> {
    // Two indexed lookups rather than one OR, which would read every API of the tenant.
    // language=SQL
    let others: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT name, version, context FROM apis WHERE tenant = $1 AND LOWER(name) = LOWER($2)
         UNION ALL
         SELECT name, version, context FROM apis WHERE tenant = $1 AND context = $3",
    )
    .bind(tenant)
    .bind(name)
    .bind(context)
    .fetch_all(&mut **tx)
    .await?;
    for (other_name, other_version, other_context) in &others {
        if other_name == name && other_version == version {
            return Err(Error::AlreadyExists(format!(
                "A duplicate API already exists for {name}-{version}"
            )));
        }
        if other_name != name && other_name.eq_ignore_ascii_case(name) {
            return Err(Error::Invalid(format!(
                "API with name {other_name} already exists."
            )));
        }
        if other_name == name && other_context != context {
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

/// `PUT /apis/{apiId}`: replaces the record; name, version, provider and context stay.
async fn update_api(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_id): Path<String>,
    JsonBody(mut record): JsonBody<ApiRecord>,
) -> Result<(Touches, Json<ApiRecord>)> {
    caller.require(&state, Scope::ApiCreate)?;
    let api = tenant_api(&state, &caller, &api_id).await?;
    record.validate().map_err(invalid)?;
    check_endpoints(&state, &record)?;
    let context = normalise_context(record.context.as_deref().unwrap_or_default(), &api.tenant);
    let provider = record
        .provider
        .clone()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| api.provider.clone());
    if record.name.as_deref() != Some(api.name.as_str())
        || record.version.as_deref() != Some(api.version.as_str())
        || provider != api.provider
        || context != api.context
    {
        return Err(Error::Invalid(
            "The name, version, provider and context of an API cannot be changed".into(),
        ));
    }
    record.id = Some(api.id.clone());
    record.provider = Some(provider);
    record.context = Some(context);
    record.status = Some(api.status.clone());
    record
        .seal_backend_password(&state.data_keys, &api.id, Some(&api.record))
        .map_err(invalid)?;
    check_deployable(&record)?;
    let routes = RouteClaim {
        api_id: &api.id,
        tenant: &api.tenant,
        name: &api.name,
        context: &api.context,
        version: &api.version,
    };
    let was_default = api.record.is_default_version.unwrap_or(false);
    let is_default = record.is_default_version.unwrap_or(false);
    let mut tx = state.db.begin().await?;
    let demoted = match (was_default, is_default) {
        (false, true) => routes.claim_default(&mut tx).await?,
        (true, false) => {
            routes.release_default(&mut tx).await?;
            None
        }
        _ => None,
    };
    save_record(&mut *tx, &api.id, &record).await?;
    tx.commit().await?;
    tracing::info!(api = %api.id, "API updated");
    Ok((
        touches_apis(std::iter::once(api.id).chain(demoted)),
        Json(record.masked()),
    ))
}

async fn save_record<'e>(
    db: impl sqlx::Executor<'e, Database = sqlx::Any>,
    id: &str,
    record: &ApiRecord,
) -> Result<()> {
    // language=SQL
    sqlx::query(
        "UPDATE apis SET record = $1, updated_at = $2, revision = revision + 1 WHERE id = $3",
    )
    .bind(serde_json::to_string(record).map_err(anyhow::Error::from)?)
    .bind(now())
    .bind(id)
    .execute(db)
    .await?;
    Ok(())
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
    // language=SQL
    let (subscriptions,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM subscriptions WHERE api_id = $1")
            .bind(&api.id)
            .fetch_one(&mut *tx)
            .await?;
    if subscriptions > 0 {
        return Err(Error::Conflict(format!(
            "Cannot remove the API {} as active subscriptions exist",
            api.id
        )));
    }
    // language=SQL
    sqlx::query("DELETE FROM apis WHERE id = $1")
        .bind(&api.id)
        .execute(&mut *tx)
        .await?;
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
    let definition = swagger_from_request(&state, &headers, request).await?;
    validate_swagger(&definition).map_err(Error::Invalid)?;
    let mut record = api.full_record();
    record.api_definition = Some(definition.clone());
    check_deployable(&record)?;
    save_record(&state.db, &api.id, &record).await?;
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
    #[allow(dead_code)]
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
    // Compare-and-set, so two concurrent changes cannot both apply to the same state.
    // language=SQL
    let changed =
        sqlx::query(
            "UPDATE apis SET status = $1, updated_at = $2, revision = revision + 1 WHERE id = $3 AND status = $4",
        )
            .bind(next)
            .bind(now())
            .bind(&api.id)
            .bind(&api.status)
            .execute(&state.db)
            .await?;
    if changed.rows_affected() == 0 {
        return Err(Error::Conflict(format!(
            "The lifecycle state of API {} changed concurrently; try again",
            api.id
        )));
    }
    tracing::info!(api = %api.id, from = %api.status, to = next, %action, "API lifecycle changed");
    Ok((Touches::one(Touched::Api(api.id)), StatusCode::OK))
}

/// WSO2's API search: `attribute:value` criteria, ANDed; values match as substrings
/// (case-insensitive) unless double-quoted; no attribute means the name.
pub mod search {
    use super::StoredApi;

    /// One criterion of a search query.
    #[derive(Debug)]
    pub struct Criterion {
        attribute: String,
        value: String,
        exact: bool,
    }

    /// Parses a query string into criteria.
    pub fn parse(query: &str) -> Result<Vec<Criterion>, String> {
        query
            .split_whitespace()
            .map(|term| {
                let (attribute, value) = term.split_once(':').unwrap_or(("name", term));
                let attribute = match attribute.to_ascii_lowercase().as_str() {
                    "tag" => "tags".to_string(),
                    a @ ("name" | "version" | "context" | "status" | "description" | "provider"
                    | "tags" | "subcontext" | "doc" | "label") => a.to_string(),
                    other => return Err(format!("Invalid search attribute '{other}'")),
                };
                if value.is_empty() {
                    return Err("Search term is missing. Try again with valid search query.".into());
                }
                let exact = value.len() >= 2 && value.starts_with('"') && value.ends_with('"');
                let value = value.trim_matches('"').to_string();
                let value = if attribute == "provider" {
                    value.replace("-AT-", "@")
                } else {
                    value
                };
                Ok(Criterion {
                    attribute,
                    value,
                    exact,
                })
            })
            .collect()
    }

    /// `text` with LIKE's wildcards and the escape character taken literally.
    fn escape_like(text: &str) -> String {
        let mut escaped = String::with_capacity(text.len());
        for c in text.chars() {
            if matches!(c, '%' | '_' | '\\') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        escaped
    }

    impl Criterion {
        /// The condition on a column that checks this criterion in SQL, with `$n` for its
        /// value, and the value; `None` for criteria on the record's fields. Case is
        /// folded by the database's `LOWER`.
        pub fn sql(&self, n: usize) -> Option<(String, String)> {
            let column = match self.attribute.as_str() {
                "name" | "version" | "status" | "provider" => self.attribute.as_str(),
                "context" | "subcontext" => "context",
                _ => return None,
            };
            Some(if self.exact {
                (format!("LOWER({column}) = LOWER(${n})"), self.value.clone())
            } else {
                let pattern = format!("%{}%", escape_like(&self.value));
                (
                    format!("LOWER({column}) LIKE LOWER(${n}) ESCAPE '\\'"),
                    pattern,
                )
            })
        }

        /// Whether an API satisfies this criterion.
        pub fn matches(&self, api: &StoredApi) -> bool {
            let candidates: Vec<String> = match self.attribute.as_str() {
                "name" => vec![api.name.clone()],
                "version" => vec![api.version.clone()],
                "context" | "subcontext" => vec![api.context.clone()],
                "status" => vec![api.status.clone()],
                "description" => vec![api.record.description.clone().unwrap_or_default()],
                "provider" => vec![api.provider.clone()],
                "tags" => api.record.tags.clone().unwrap_or_default(),
                _ => vec![],
            };
            candidates.iter().any(|c| {
                if self.exact {
                    c.eq_ignore_ascii_case(&self.value)
                } else {
                    c.to_ascii_lowercase()
                        .contains(&self.value.to_ascii_lowercase())
                }
            })
        }
    }
}
