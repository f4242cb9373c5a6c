//! Throttling tiers, listable in the publisher (`mgr:tier_view`) and, anonymously, in the store.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use super::levels::{self as tiers, TierDto, TierLevel};
use crate::error::{Error, Result};
use crate::http::auth::Caller;
use crate::http::extract::QueryParams;
use crate::http::pagination::{ListEnvelope, Page};
use crate::scopes::Scope;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/am/publisher/v0.14/tiers/{level}", get(publisher_list))
        .route(
            "/api/am/publisher/v0.14/tiers/{level}/{name}",
            get(publisher_get),
        )
        .route("/api/am/store/v0.14/tiers/{level}", get(store_list))
        .route("/api/am/store/v0.14/tiers/{level}/{name}", get(store_get))
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
    list(parse_level(&level, true)?, q)
}

async fn publisher_get(
    State(state): State<AppState>,
    caller: Caller,
    Path((level, name)): Path<(String, String)>,
) -> Result<Json<TierDto>> {
    caller.require(&state, Scope::TierView)?;
    one(parse_level(&level, true)?, &name)
}

async fn store_list(
    Path(level): Path<String>,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<TierDto>>> {
    list(parse_level(&level, false)?, q)
}

async fn store_get(Path((level, name)): Path<(String, String)>) -> Result<Json<TierDto>> {
    one(parse_level(&level, false)?, &name)
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

fn list(level: TierLevel, q: ListQuery) -> Result<Json<ListEnvelope<TierDto>>> {
    let page = Page::new(q.limit, q.offset)?;
    let all = tiers::tiers(level);
    let list = page.slice(all.iter().map(|t| TierDto::new(level, t)).collect());
    let link =
        |limit, offset| format!("/tiers/{}?limit={limit}&offset={offset}", level.path_name());
    Ok(Json(ListEnvelope::new(list, all.len() as i64, page, link)))
}

fn one(level: TierLevel, name: &str) -> Result<Json<TierDto>> {
    tiers::find(level, name)
        .map(|t| Json(TierDto::new(level, t)))
        .ok_or_else(|| Error::NotFound("Tier", name.to_string()))
}
