//! Store applications, `/api/am/store/v0.14/applications` (spec 2.4, 4.4).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::access::{StoreUser, owned_application};
use super::queries::{self, NewApplication};
use super::records::{APPROVED, CREATED, StoredApplication};
use crate::error::{Error, OnDuplicate, Result};
use crate::http::STORE;
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get};
use crate::keys::{ApplicationKey, application_keys};
use crate::manifest::Touched;
use crate::manifest::Touches;
use crate::state::AppState;
use crate::tiers::{self, TierLevel};
use crate::tokens::Caller;
use crate::workflows;

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{STORE}/applications"),
            get(list_applications).post(create_application),
        )
        .route(
            &format!("{STORE}/applications/{{application_id}}"),
            get(get_application)
                .put(update_application)
                .delete(delete_application),
        )
}

/// WSO2's `Application`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ApplicationDto {
    application_id: String,
    name: String,
    subscriber: String,
    throttling_tier: String,
    callback_url: String,
    description: String,
    status: String,
    group_id: String,
    token_type: String,
    keys: Vec<ApplicationKey>,
    attributes: Value,
}

/// WSO2's `ApplicationInfo`, the list item.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ApplicationInfo {
    application_id: String,
    name: String,
    subscriber: String,
    throttling_tier: String,
    description: String,
    status: String,
    group_id: String,
    attributes: Value,
}

fn attributes(app: &StoredApplication) -> Value {
    serde_json::from_str(&app.attributes).unwrap_or_else(|_| Value::Object(Map::new()))
}

async fn dto(state: &AppState, app: StoredApplication) -> Result<ApplicationDto> {
    let keys = application_keys(&state.db, &state.data_keys, &app.id).await?;
    Ok(ApplicationDto {
        attributes: attributes(&app),
        application_id: app.id,
        name: app.name,
        subscriber: app.owner,
        throttling_tier: app.throttling_tier,
        callback_url: app.callback_url,
        description: app.description,
        status: app.status,
        group_id: app.group_id,
        token_type: app.token_type,
        keys,
    })
}

/// The request body of create and update.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApplicationBody {
    name: Option<String>,
    throttling_tier: Option<String>,
    description: Option<String>,
    callback_url: Option<String>,
    group_id: Option<String>,
    token_type: Option<String>,
    attributes: Option<Map<String, Value>>,
    #[expect(dead_code, reason = "read-only; clients echo it back from a GET")]
    application_id: Option<String>,
    #[expect(dead_code, reason = "read-only; clients echo it back from a GET")]
    subscriber: Option<String>,
    #[expect(dead_code, reason = "read-only; clients echo it back from a GET")]
    status: Option<String>,
    #[expect(dead_code, reason = "read-only; clients echo it back from a GET")]
    keys: Option<Vec<Value>>,
}

/// Refuses (400, as WSO2 words it) an application tier the caller's tenant does not have
/// or the caller's roles may not use.
async fn check_tier(state: &AppState, caller: &Caller, tier: &str) -> Result<()> {
    let level = TierLevel::Application;
    let exists = tiers::find_tier(&state.db, caller.tenant(), level, tier)
        .await?
        .is_some();
    let roles = crate::users::find(&state.db, caller.username())
        .await?
        .map(|user| user.roles)
        .unwrap_or_default();
    let permissions = tiers::Permissions::of(&state.db, caller.tenant(), level).await?;
    if exists && permissions.allows(tier, Some(&roles)) {
        Ok(())
    } else {
        Err(Error::Invalid(format!("Specified tier {tier} is invalid")))
    }
}

impl ApplicationBody {
    /// Checks the body, returning the name and tier.
    fn validate(&self) -> Result<(String, String)> {
        let mut missing = Vec::new();
        if self.name.as_deref().is_none_or(|n| n.is_empty()) {
            missing.push(("name".to_string(), "may not be null".to_string()));
        }
        if self.throttling_tier.as_deref().is_none_or(|t| t.is_empty()) {
            missing.push(("throttlingTier".to_string(), "may not be null".to_string()));
        }
        if !missing.is_empty() {
            return Err(Error::InvalidFields(missing));
        }
        let name = self.name.clone().unwrap_or_default();
        let tier = self.throttling_tier.clone().unwrap_or_default();
        super::rules::check_name(&name)?;
        if let Some(token_type) = &self.token_type {
            super::rules::check_token_type(token_type)?;
        }
        Ok((name, tier))
    }

    fn attributes_json(&self) -> String {
        Value::Object(self.attributes.clone().unwrap_or_default()).to_string()
    }
}

fn already_exists(name: &str) -> String {
    format!("An application already exists with name {name}")
}

/// `POST /applications`: 201 with `Location` and the application.
async fn create_application(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    JsonBody(body): JsonBody<ApplicationBody>,
) -> Result<Response> {
    let (name, tier) = body.validate()?;
    check_tier(&state, &caller, &tier).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let kind = workflows::Kind::ApplicationCreation;
    let waits = workflows::required(&state.db, caller.tenant(), kind).await?;
    let status = if waits { CREATED } else { APPROVED };
    // The application and the workflow that approves it are made together, or neither.
    let mut tx = state.db.begin().await?;
    queries::insert(
        &mut *tx,
        NewApplication {
            id: &id,
            owner: caller.username(),
            name: &name,
            tier: &tier,
            description: body.description.clone().unwrap_or_default(),
            callback_url: body.callback_url.clone().unwrap_or_default(),
            group_id: body.group_id.clone().unwrap_or_default(),
            token_type: body.token_type.clone().unwrap_or_else(|| "OAUTH".into()),
            attributes: body.attributes_json(),
            status,
        },
    )
    .await
    .on_duplicate(|| already_exists(&name))?;
    if waits {
        workflows::open(&mut *tx, caller.tenant(), kind, &id, "{}").await?;
    }
    tx.commit().await?;
    tracing::info!(application = %id, %name, owner = caller.username(), %status, "application created");
    let app = owned_application(&state, &caller, &id).await?;
    let location = format!("{STORE}/applications/{id}");
    Ok((
        StatusCode::CREATED,
        Touches::one(Touched::Application(id.clone())),
        [(header::LOCATION, location)],
        Json(dto(&state, app).await?),
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
    query: Option<String>,
    group_id: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    sort_by: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    sort_order: Option<String>,
}

/// `GET /applications`: the caller's applications, optionally filtered by name.
async fn list_applications(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<ApplicationInfo>>> {
    let page = Page::new(q.limit, q.offset)?;
    let apps = queries::owned_by(&state.db, caller.username()).await?;
    let needle = q.query.unwrap_or_default().to_ascii_lowercase();
    let matching: Vec<StoredApplication> = apps
        .into_iter()
        .filter(|a| a.name.to_ascii_lowercase().contains(&needle))
        .collect();
    let total = matching.len() as i64;
    let list = page
        .slice(matching)
        .into_iter()
        .map(|app| ApplicationInfo {
            attributes: attributes(&app),
            application_id: app.id,
            name: app.name,
            subscriber: app.owner,
            throttling_tier: app.throttling_tier,
            description: app.description,
            status: app.status,
            group_id: app.group_id,
        })
        .collect();
    let group = q.group_id.unwrap_or_default();
    let link =
        |limit, offset| format!("/applications?limit={limit}&offset={offset}&groupId={group}");
    Ok(Json(ListEnvelope::new(list, total, page, link)))
}

/// `GET /applications/{applicationId}`.
async fn get_application(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path(application_id): Path<String>,
) -> Result<Json<ApplicationDto>> {
    let app = owned_application(&state, &caller, &application_id).await?;
    Ok(Json(dto(&state, app).await?))
}

/// `PUT /applications/{applicationId}`.
async fn update_application(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path(application_id): Path<String>,
    JsonBody(body): JsonBody<ApplicationBody>,
) -> Result<(Touches, Json<ApplicationDto>)> {
    let app = owned_application(&state, &caller, &application_id).await?;
    let (name, tier) = body.validate()?;
    check_tier(&state, &caller, &tier).await?;
    let attributes = if body.attributes.is_some() {
        body.attributes_json()
    } else {
        app.attributes
    };
    let changed = StoredApplication {
        id: application_id.clone(),
        owner: app.owner,
        name: name.clone(),
        throttling_tier: tier,
        description: body.description.clone().unwrap_or(app.description),
        callback_url: body.callback_url.clone().unwrap_or(app.callback_url),
        group_id: body.group_id.clone().unwrap_or(app.group_id),
        token_type: body.token_type.clone().unwrap_or(app.token_type),
        status: app.status,
        attributes,
    };
    queries::update(&state.db, &changed)
        .await
        .on_duplicate(|| already_exists(&name))?;
    let app = owned_application(&state, &caller, &application_id).await?;
    let touched = Touches::one(Touched::Application(application_id));
    Ok((touched, Json(dto(&state, app).await?)))
}

/// `DELETE /applications/{applicationId}`: the application, its subscriptions and keys.
async fn delete_application(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path(application_id): Path<String>,
) -> Result<(Touches, StatusCode)> {
    let app = owned_application(&state, &caller, &application_id).await?;
    queries::delete(&state.db, &app.id).await?;
    tracing::info!(application = %app.id, "application deleted");
    Ok((Touches::one(Touched::Application(app.id)), StatusCode::OK))
}
