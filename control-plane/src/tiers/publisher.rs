//! Throttling tiers in the publisher: listed and read (`apim:tier_view`); created,
//! changed, deleted and permitted (`apim:tier_manage`), per tenant. A write gateways
//! enforce touches [`Touched::Tiers`], so the next compile sends the limits along.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::catalogue;
use super::levels::TierLevel;
use super::queries;
use super::records::{TierDto, TierSpec};
use super::rules::{ListQuery, PermissionBody, TierBody, list, parse_level};
use super::usage;
use crate::error::{Error, OnDuplicate, Result};
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::pagination::ListEnvelope;
use crate::http::routes::{Routes, get, post};
use crate::manifest::{Touched, Touches};
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;

const PUBLISHER: &str = "/api/am/publisher/v0.14/tiers";
/// Most tiers a tenant may add to a level (each is in every gateway's meta entry).
const MAX_OWN_TIERS: usize = 100;

pub fn router() -> Routes {
    Routes::new()
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
