//! Throttling tiers: listed and read in the publisher (`apim:tier_view`) and in the store
//! (anonymously, only those the caller's roles may use); created, changed, deleted and
//! permitted in the publisher (`apim:tier_manage`), per tenant. A write gateways enforce
//! touches [`Touched::Tiers`], so the next compile sends the limits along.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use super::catalogue::{self, Permissions};
use super::levels::TierLevel;
use super::queries;
use super::records::{TierDto, TierSpec};
use super::rules::{PermissionBody, TierBody};
use super::usage;
use crate::error::{Error, OnDuplicate, Result};
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::pagination::{ListEnvelope, Page};
use crate::manifest::Touched;
use crate::manifest::Touches;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;
use crate::tokens::MaybeCaller;
use crate::users::SUPER_TENANT;

const PUBLISHER: &str = "/api/am/publisher/v0.14/tiers";
const STORE: &str = "/api/am/store/v0.14/tiers";
/// Most tiers a tenant may add to a level (each is in every gateway's meta entry).
const MAX_OWN_TIERS: usize = 100;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{PUBLISHER}/{{level}}"),
            get(publisher_list).post(create),
        )
        .route(
            &format!("{PUBLISHER}/{{level}}/{{name}}"),
            get(publisher_get).put(update).delete(remove),
        )
        .route(
            &format!("{PUBLISHER}/update-permission"),
            post(update_permission),
        )
        .route(&format!("{STORE}/{{level}}"), get(store_list))
        .route(&format!("{STORE}/{{level}}/{{name}}"), get(store_get))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<i64>,
    offset: Option<i64>,
}

async fn publisher_list(
    State(state): State<AppState>,
    caller: Caller,
    Path(level): Path<String>,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<TierDto>>> {
    caller.require(&state, Scope::TierView)?;
    let level = parse_level(&level, true)?;
    let tiers = catalogue::of_tenant(&state.db, caller.tenant(), level).await?;
    list(level, tiers, q)
}

async fn publisher_get(
    State(state): State<AppState>,
    caller: Caller,
    Path((level, name)): Path<(String, String)>,
) -> Result<Json<TierDto>> {
    caller.require(&state, Scope::TierView)?;
    let level = parse_level(&level, true)?;
    let tier = existing(&state, caller.tenant(), level, &name).await?;
    Ok(Json(TierDto::new(level, &tier)))
}

/// The store's tenant (`X-WSO2-Tenant`, else the caller's, else the super tenant's), and
/// the roles of the caller (`None`: anonymous).
async fn store_view(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
) -> Result<(String, Option<Vec<String>>)> {
    let tenant = headers
        .get("x-wso2-tenant")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .or_else(|| caller.map(|c| c.tenant().to_string()))
        .unwrap_or_else(|| SUPER_TENANT.to_string());
    let roles = match caller {
        Some(caller) => Some(
            crate::users::find(&state.db, caller.username())
                .await?
                .map(|user| user.roles)
                .unwrap_or_default(),
        ),
        None => None,
    };
    Ok((tenant, roles))
}

/// The tiers of a level the store shows this caller: those its roles may use.
async fn usable(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
    level: TierLevel,
) -> Result<Vec<TierSpec>> {
    let (tenant, roles) = store_view(state, caller, headers).await?;
    let permissions = Permissions::of(&state.db, &tenant, level).await?;
    let tiers = catalogue::of_tenant(&state.db, &tenant, level).await?;
    Ok(tiers
        .into_iter()
        .filter(|tier| permissions.allows(&tier.name, roles.as_deref()))
        .collect())
}

async fn store_list(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    headers: HeaderMap,
    Path(level): Path<String>,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<TierDto>>> {
    let level = parse_level(&level, false)?;
    let tiers = usable(&state, caller.as_ref(), &headers, level).await?;
    list(level, tiers, q)
}

async fn store_get(
    State(state): State<AppState>,
    MaybeCaller(caller): MaybeCaller,
    headers: HeaderMap,
    Path((level, name)): Path<(String, String)>,
) -> Result<Json<TierDto>> {
    let level = parse_level(&level, false)?;
    let tiers = usable(&state, caller.as_ref(), &headers, level).await?;
    tiers
        .iter()
        .find(|t| t.name == name)
        .map(|t| Json(TierDto::new(level, t)))
        .ok_or_else(|| Error::NotFound("Tier", name))
}

/// The store knows `api` and `application`; the publisher also `resource`.
fn parse_level(level: &str, publisher: bool) -> Result<TierLevel> {
    match TierLevel::from_path(level) {
        Some(TierLevel::Resource) if !publisher => Err(unknown_level(level)),
        Some(parsed) => Ok(parsed),
        None => Err(unknown_level(level)),
    }
}

fn unknown_level(level: &str) -> Error {
    Error::Invalid(format!(
        "tierLevel '{level}' is not one of api, application, resource"
    ))
}

fn list(level: TierLevel, all: Vec<TierSpec>, q: ListQuery) -> Result<Json<ListEnvelope<TierDto>>> {
    let page = Page::new(q.limit, q.offset)?;
    let total = all.len() as i64;
    let list = page.slice(all.iter().map(|t| TierDto::new(level, t)).collect());
    let link =
        |limit, offset| format!("/tiers/{}?limit={limit}&offset={offset}", level.path_name());
    Ok(Json(ListEnvelope::new(list, total, page, link)))
}

/// The tenant's tier of a level; 404 otherwise.
async fn existing(
    state: &AppState,
    tenant: &str,
    level: TierLevel,
    name: &str,
) -> Result<TierSpec> {
    catalogue::find(&state.db, tenant, level, name)
        .await?
        .ok_or_else(|| Error::NotFound("Tier", name.to_string()))
}

/// What a tier write touches: the meta entry, where tenants' tiers go to gateways.
fn touches_tiers() -> Touches {
    Touches::one(Touched::Tiers)
}

/// `POST /tiers/{tierLevel}`: 201 with `Location` and the tier; 409 when the tenant has a
/// tier of that name at that level (a default's included).
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(level): Path<String>,
    JsonBody(body): JsonBody<TierBody>,
) -> Result<Response> {
    caller.require(&state, Scope::TierManage)?;
    let level = parse_level(&level, true)?;
    let row = body.row(caller.tenant(), level)?;
    let tiers = catalogue::of_tenant(&state.db, caller.tenant(), level).await?;
    let duplicate = || format!("A tier with name {} already exists", row.name);
    if tiers.iter().any(|t| t.name == row.name) {
        return Err(Error::AlreadyExists(duplicate()));
    }
    if tiers.iter().filter(|t| !t.default).count() >= MAX_OWN_TIERS {
        return Err(Error::Invalid(format!(
            "A tenant may add at most {MAX_OWN_TIERS} tiers to a level"
        )));
    }
    queries::insert(&state.db, &row)
        .await
        .on_duplicate(duplicate)?;
    tracing::info!(tenant = caller.tenant(), level = level.path_name(), tier = %row.name, "tier created");
    let location = format!("{PUBLISHER}/{}/{}", level.path_name(), row.name);
    let tier = TierSpec::of_row(row, false);
    Ok((
        StatusCode::CREATED,
        touches_tiers(),
        [(header::LOCATION, location)],
        Json(TierDto::new(level, &tier)),
    )
        .into_response())
}

/// `PUT /tiers/{tierLevel}/{tierName}`: the tier replaced (a default changed for this
/// tenant); 404 for no such tier, 409 for `Unlimited`, which stays unlimited.
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path((level, name)): Path<(String, String)>,
    JsonBody(body): JsonBody<TierBody>,
) -> Result<(Touches, Json<TierDto>)> {
    caller.require(&state, Scope::TierManage)?;
    let level = parse_level(&level, true)?;
    let current = existing(&state, caller.tenant(), level, &name).await?;
    let row = body.row(caller.tenant(), level)?;
    if row.name != name {
        return Err(Error::Invalid(
            "The name of a tier cannot be changed".into(),
        ));
    }
    if current.default && name == "Unlimited" {
        return Err(Error::Conflict(
            "The tier Unlimited cannot be changed".into(),
        ));
    }
    queries::upsert(&state.db, &row).await?;
    tracing::info!(tenant = caller.tenant(), level = level.path_name(), tier = %name, "tier changed");
    let tier = TierSpec::of_row(row, current.default);
    Ok((touches_tiers(), Json(TierDto::new(level, &tier))))
}

/// `DELETE /tiers/{tierLevel}/{tierName}`: 200 with no body; 404 for no such tier, 409
/// for a default tier (the platform and DefaultApplication rely on them) and for a tier
/// in use.
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path((level, name)): Path<(String, String)>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::TierManage)?;
    let level = parse_level(&level, true)?;
    let tier = existing(&state, caller.tenant(), level, &name).await?;
    if tier.default {
        return Err(Error::Conflict(format!(
            "The tier {name} is a default tier and cannot be deleted"
        )));
    }
    if let Some(user) = usage::in_use(&state.db, caller.tenant(), level, &name).await? {
        return Err(Error::Conflict(format!(
            "The tier {name} cannot be deleted: {user}"
        )));
    }
    queries::delete(&state.db, caller.tenant(), level.path_name(), &name).await?;
    tracing::info!(tenant = caller.tenant(), level = level.path_name(), tier = %name, "tier deleted");
    Ok((touches_tiers(), StatusCode::OK))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PermissionQuery {
    tier_name: Option<String>,
    tier_level: Option<String>,
}

/// `POST /tiers/update-permission?tierName&tierLevel`: which roles may use the tier in the
/// store; 200 with the level's tiers. Gateways are not concerned.
async fn update_permission(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<PermissionQuery>,
    JsonBody(body): JsonBody<PermissionBody>,
) -> Result<(Touches, Json<Vec<TierDto>>)> {
    caller.require(&state, Scope::TierManage)?;
    let (Some(name), Some(level)) = (q.tier_name, q.tier_level) else {
        return Err(Error::Invalid(
            "Query parameters tierName and tierLevel are required".into(),
        ));
    };
    let level = parse_level(&level, true)?;
    existing(&state, caller.tenant(), level, &name).await?;
    let (kind, roles) = body.checked()?;
    queries::set_permission(
        &state.db,
        caller.tenant(),
        level.path_name(),
        &name,
        &kind,
        &roles,
    )
    .await?;
    tracing::info!(tenant = caller.tenant(), level = level.path_name(), tier = %name, %kind, "tier permission changed");
    let tiers = catalogue::of_tenant(&state.db, caller.tenant(), level).await?;
    Ok((
        Touches::nothing(),
        Json(tiers.iter().map(|t| TierDto::new(level, t)).collect()),
    ))
}
