//! Throttling tiers in the store: listed and read anonymously too, only those the
//! caller's roles may use, of the store's tenant.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;

use super::catalogue::{self, Permissions};
use super::levels::TierLevel;
use super::records::{TierDto, TierSpec};
use super::rules::{ListQuery, list, parse_level};
use crate::error::{Error, Result};
use crate::http::extract::QueryParams;
use crate::http::pagination::ListEnvelope;
use crate::http::routes::{Routes, get};
use crate::state::AppState;
use crate::tokens::{Caller, MaybeCaller, store_tenant};

const STORE: &str = "/api/am/store/v0.14/tiers";

pub fn router() -> Routes {
    Routes::new()
        .route(&format!("{STORE}/{{level}}"), get(store_list))
        .route(&format!("{STORE}/{{level}}/{{name}}"), get(store_get))
}

/// The store's tenant (`X-WSO2-Tenant`, else the caller's, else the super tenant's), and
/// the roles of the caller (`None`: anonymous).
async fn store_view(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
) -> Result<(String, Option<Vec<String>>)> {
    let tenant = store_tenant(headers, caller);
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
