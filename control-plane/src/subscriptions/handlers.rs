//! Store subscriptions, `/api/am/store/v0.14/subscriptions` (spec 2.5, 4.4).

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::records::Subscription;
use super::store;
use crate::apis::{Viewer, find as find_api};
use crate::applications::{STORE, StoreUser, owned_application};
use crate::error::{Error, OnDuplicate, Result};
use crate::http::auth::Caller;
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::pagination::{ListEnvelope, Page};
use crate::manifest::Touched;
use crate::state::{AppState, Touches};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{STORE}/subscriptions"),
            get(list_subscriptions).post(subscribe),
        )
        .route(
            &format!("{STORE}/subscriptions/{{subscription_id}}"),
            get(get_subscription).delete(unsubscribe),
        )
}

/// WSO2's `Subscription`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SubscriptionDto {
    subscription_id: String,
    application_id: String,
    api_identifier: String,
    tier: String,
    status: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SubscriptionBody {
    tier: Option<String>,
    api_identifier: Option<String>,
    application_id: Option<String>,
    #[allow(dead_code)]
    subscription_id: Option<String>,
    #[allow(dead_code)]
    status: Option<String>,
}

/// `POST /subscriptions`: 201 with `Location`; the API by id or unique name.
async fn subscribe(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    JsonBody(body): JsonBody<SubscriptionBody>,
) -> Result<Response> {
    let missing: Vec<(String, String)> = [
        ("tier", &body.tier),
        ("apiIdentifier", &body.api_identifier),
        ("applicationId", &body.application_id),
    ]
    .iter()
    .filter(|(_, v)| v.as_deref().is_none_or(str::is_empty))
    .map(|(name, _)| (name.to_string(), "may not be null".to_string()))
    .collect();
    if !missing.is_empty() {
        return Err(Error::InvalidFields(missing));
    }
    let (tier, api_identifier, application_id) = (
        body.tier.unwrap_or_default(),
        body.api_identifier.unwrap_or_default(),
        body.application_id.unwrap_or_default(),
    );
    let app = owned_application(&state, &caller, &application_id).await?;
    // An API the caller may not subscribe to (another tenant's, or not visible to it)
    // answers as a missing one.
    let viewer = Viewer::of(&state, Some(&caller)).await?;
    let api = find_api(&state.db, &api_identifier)
        .await?
        .filter(|api| viewer.may_subscribe(api))
        .ok_or_else(|| Error::NotFound("API", api_identifier.clone()))?;
    if !matches!(api.status.as_str(), "PUBLISHED" | "PROTOTYPED") {
        return Err(Error::NotFoundWhy(format!(
            "Subscriptions not allowed on APIs in the state: {}",
            api.status
        )));
    }
    let allowed = api.record.tiers.clone().unwrap_or_default();
    if !allowed.contains(&tier) {
        return Err(Error::Forbidden(format!(
            "Tier {tier} is not allowed for API {}. Only [{}] tiers are allowed",
            api.identifier(),
            allowed.join(", ")
        )));
    }
    let id = uuid::Uuid::new_v4().to_string();
    store::insert(&state.db, &id, &app.id, &api.id, &tier)
        .await
        .on_duplicate(|| {
            format!(
                "Specified subscription already exists for API {} for application {}",
                api.identifier(),
                app.name
            )
        })?;
    tracing::info!(subscription = %id, api = %api.id, application = %app.id, %tier, "subscribed");
    let dto = SubscriptionDto {
        subscription_id: id.clone(),
        application_id: app.id,
        api_identifier: api.identifier(),
        tier,
        status: "UNBLOCKED".into(),
    };
    let location = format!("{STORE}/subscriptions/{id}");
    let touched = Touched::Subscription {
        application: dto.application_id.clone(),
        api: api.id.clone(),
    };
    Ok((
        StatusCode::CREATED,
        Touches::one(touched),
        [(header::LOCATION, location)],
        Json(dto),
    )
        .into_response())
}

async fn to_dto(
    state: &AppState,
    Subscription {
        id,
        application_id,
        api_id,
        tier,
        status,
    }: Subscription,
) -> Result<SubscriptionDto> {
    let api_identifier = match find_api(&state.db, &api_id).await? {
        Some(api) => api.identifier(),
        None => api_id,
    };
    Ok(SubscriptionDto {
        subscription_id: id,
        application_id,
        api_identifier,
        tier,
        status,
    })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListQuery {
    api_id: Option<String>,
    application_id: Option<String>,
    #[allow(dead_code)]
    group_id: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

/// `GET /subscriptions?applicationId=` or `?apiId=`: the caller's subscriptions.
async fn list_subscriptions(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<SubscriptionDto>>> {
    let page = Page::new(q.limit, q.offset)?;
    let (rows, link_param): (Vec<Subscription>, String) = match (&q.application_id, &q.api_id) {
        (Some(application_id), _) => {
            let app = owned_application(&state, &caller, application_id).await?;
            let rows = store::of_application(&state.db, &app.id).await?;
            (rows, format!("applicationId={application_id}"))
        }
        (None, Some(api_id)) => {
            let viewer = Viewer::of(&state, Some(&caller)).await?;
            let api = find_api(&state.db, api_id)
                .await?
                .filter(|api| viewer.sees(api))
                .ok_or_else(|| Error::NotFound("API", api_id.clone()))?;
            let rows = store::of_api_owned_by(&state.db, &api.id, caller.username()).await?;
            (rows, format!("apiId={api_id}"))
        }
        (None, None) => {
            return Err(Error::Invalid(
                "Either applicationId or apiId should be available".into(),
            ));
        }
    };
    let total = rows.len() as i64;
    let mut list = Vec::new();
    for row in page.slice(rows) {
        list.push(to_dto(&state, row).await?);
    }
    let link = |limit, offset| format!("/subscriptions?limit={limit}&offset={offset}&{link_param}");
    Ok(Json(ListEnvelope::new(list, total, page, link)))
}

/// The caller's subscription: 404 when missing or another tenant's (answered exactly as
/// a missing one, naming neither its application nor anything else), 403 when another
/// user's of the caller's tenant.
async fn owned_subscription(state: &AppState, caller: &Caller, id: &str) -> Result<Subscription> {
    let row = store::find(&state.db, id).await?;
    let missing = || Error::NotFound("subscription", id.to_string());
    let row = row.ok_or_else(missing)?;
    match owned_application(state, caller, &row.application_id).await {
        Ok(_) => Ok(row),
        Err(Error::NotFound(..)) => Err(missing()),
        Err(err) => Err(err),
    }
}

/// `GET /subscriptions/{subscriptionId}`.
async fn get_subscription(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path(subscription_id): Path<String>,
) -> Result<Json<SubscriptionDto>> {
    let row = owned_subscription(&state, &caller, &subscription_id).await?;
    Ok(Json(to_dto(&state, row).await?))
}

/// `DELETE /subscriptions/{subscriptionId}`: 200 with no body.
async fn unsubscribe(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path(subscription_id): Path<String>,
) -> Result<(Touches, StatusCode)> {
    let row = owned_subscription(&state, &caller, &subscription_id).await?;
    store::delete(&state.db, &row.id).await?;
    tracing::info!(subscription = %row.id, "unsubscribed");
    Ok((
        Touches::one(Touched::Subscription {
            application: row.application_id,
            api: row.api_id,
        }),
        StatusCode::OK,
    ))
}
