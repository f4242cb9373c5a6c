//! Publisher subscriptions, `/api/am/publisher/v0.14/subscriptions`: the provider side
//! lists the subscriptions to its tenant's APIs and blocks or unblocks them (WSO2 v0.14
//! publisher `Subscription (Collection)` and `(Individual)`). Gateways enforce the status.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::queries;
use super::records::{BLOCKED, ON_HOLD, PROD_ONLY_BLOCKED, REJECTED, Subscription, UNBLOCKED};
use super::store_api::{SubscriptionDto, api_identifier, to_dto};
use crate::apis::{StoredApi, find as find_api};
use crate::error::{Error, Result};
use crate::http::PUBLISHER;
use crate::http::extract::QueryParams;
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
            &format!("{PUBLISHER}/subscriptions"),
            get(list_subscriptions),
        )
        .route(
            &format!("{PUBLISHER}/subscriptions/block-subscription"),
            post(block_subscription),
        )
        .route(
            &format!("{PUBLISHER}/subscriptions/unblock-subscription"),
            post(unblock_subscription),
        )
        .route(
            &format!("{PUBLISHER}/subscriptions/{{subscription_id}}"),
            get(get_subscription),
        )
}

/// WSO2's `ExtendedSubscription`: a subscription with the workflow that approves it
/// (empty when its creation did not wait for an approval).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ExtendedSubscription {
    #[serde(flatten)]
    subscription: SubscriptionDto,
    workflow_id: String,
}

/// The API a subscription is to, if it is of the caller's tenant.
async fn tenant_api_of(
    state: &AppState,
    caller: &Caller,
    row: &Subscription,
) -> Result<Option<StoredApi>> {
    Ok(find_api(&state.db, &row.api_id)
        .await?
        .filter(|api| api.tenant == caller.tenant()))
}

/// A subscription to one of the caller's tenant's APIs; any other answers 404, exactly as
/// a missing one, so that ids of other tenants' subscriptions disclose nothing.
async fn tenant_subscription(state: &AppState, caller: &Caller, id: &str) -> Result<Subscription> {
    let missing = || Error::NotFound("subscription", id.to_string());
    let row = queries::find(&state.db, id).await?.ok_or_else(missing)?;
    match tenant_api_of(state, caller, &row).await? {
        Some(_) => Ok(row),
        None => Err(missing()),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListQuery {
    api_id: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

/// `GET /subscriptions[?apiId=]`: the subscriptions to the tenant's APIs, or to one of
/// them; an API of another tenant answers 404 as an unknown one.
async fn list_subscriptions(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<SubscriptionDto>>> {
    caller.require(&state, Scope::SubscriptionView)?;
    let page = Page::new(q.limit, q.offset)?;
    let api = match q.api_id.as_deref() {
        Some(api_id) => Some(
            find_api(&state.db, api_id)
                .await?
                .filter(|api| api.tenant == caller.tenant())
                .ok_or_else(|| Error::NotFound("API", api_id.to_string()))?,
        ),
        None => None,
    };
    let api_id = api.as_ref().map(|api| api.id.as_str());
    let (total, rows) =
        queries::page_of_tenant_apis(&state.db, caller.tenant(), api_id, page).await?;
    let list = dtos(&state, rows).await?;
    let api_param = q.api_id.unwrap_or_default();
    let link = |limit, offset| {
        format!("/subscriptions?limit={limit}&offset={offset}&apiId={api_param}&groupId=")
    };
    Ok(Json(ListEnvelope::new(list, total, page, link)))
}

/// The page's subscriptions as WSO2 shows them, each API looked up once.
async fn dtos(state: &AppState, rows: Vec<Subscription>) -> Result<Vec<SubscriptionDto>> {
    let mut identifiers: HashMap<String, String> = HashMap::new();
    let mut list = Vec::with_capacity(rows.len());
    for row in rows {
        if !identifiers.contains_key(&row.api_id) {
            let identifier = api_identifier(state, &row.api_id).await?;
            identifiers.insert(row.api_id.clone(), identifier);
        }
        let identifier = identifiers[&row.api_id].clone();
        list.push(SubscriptionDto::of(row, identifier));
    }
    Ok(list)
}

/// `GET /subscriptions/{subscriptionId}`: WSO2's `ExtendedSubscription`.
async fn get_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Path(subscription_id): Path<String>,
) -> Result<Json<ExtendedSubscription>> {
    caller.require(&state, Scope::SubscriptionView)?;
    let row = tenant_subscription(&state, &caller, &subscription_id).await?;
    let kind = crate::workflows::Kind::SubscriptionCreation;
    let workflow_id = crate::workflows::latest_reference(&state.db, &row.id, kind).await?;
    Ok(Json(ExtendedSubscription {
        subscription: to_dto(&state, row).await?,
        workflow_id: workflow_id.unwrap_or_default(),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BlockQuery {
    subscription_id: Option<String>,
    block_state: Option<String>,
}

/// The `subscriptionId` query parameter, required.
fn subscription_id(given: Option<String>) -> Result<String> {
    given
        .filter(|id| !id.is_empty())
        .ok_or_else(|| Error::Invalid("Query parameter subscriptionId is required".into()))
}

/// `POST /subscriptions/block-subscription?subscriptionId=&blockState=`: 200, no body.
/// `BLOCKED` refuses every key, `PROD_ONLY_BLOCKED` production keys only.
async fn block_subscription(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<BlockQuery>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::SubscriptionBlock)?;
    let id = subscription_id(q.subscription_id)?;
    let block_state = match q.block_state.as_deref() {
        Some(state @ (BLOCKED | PROD_ONLY_BLOCKED)) => state,
        Some(other) => {
            return Err(Error::Invalid(format!(
                "Invalid blockState '{other}'; allowed values are {BLOCKED}, {PROD_ONLY_BLOCKED}"
            )));
        }
        None => {
            return Err(Error::Invalid(
                "Query parameter blockState is required".into(),
            ));
        }
    };
    change_status(&state, &caller, &id, block_state).await
}

/// `POST /subscriptions/unblock-subscription?subscriptionId=`: 200, no body.
async fn unblock_subscription(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<BlockQuery>,
) -> Result<(Touches, StatusCode)> {
    caller.require(&state, Scope::SubscriptionBlock)?;
    if q.block_state.is_some() {
        return Err(Error::Invalid("Unrecognized parameter 'blockState'".into()));
    }
    let id = subscription_id(q.subscription_id)?;
    change_status(&state, &caller, &id, UNBLOCKED).await
}

/// Sets the status of a subscription to the caller's tenant's APIs; the gateways take it
/// with the subscription's entry.
async fn change_status(
    state: &AppState,
    caller: &Caller,
    id: &str,
    status: &str,
) -> Result<(Touches, StatusCode)> {
    let row = tenant_subscription(state, caller, id).await?;
    // Blocking or unblocking would decide what only the subscription's workflow decides.
    if matches!(row.status.as_str(), ON_HOLD | REJECTED) {
        return Err(Error::Invalid(format!(
            "Subscription {} is {}: its creation is not approved",
            row.id, row.status
        )));
    }
    if status == UNBLOCKED && !row.is_subscribed() {
        // Its subscriber deleted it while blocked: unblocking ends it, and the application
        // may subscribe again.
        queries::delete(&state.db, &row.id).await?;
    } else {
        queries::set_status(&state.db, &row.id, status).await?;
    }
    tracing::info!(subscription = %row.id, %status, by = caller.username(), "subscription status changed");
    let touched = Touched::Subscription {
        application: row.application_id,
        api: row.api_id,
    };
    Ok((Touches::one(touched), StatusCode::OK))
}
