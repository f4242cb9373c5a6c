//! Store subscriptions, `/api/am/store/v0.14/subscriptions` (spec 2.5, 4.4).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use sqlx::{Any, Executor};

use super::queries;
use super::records::{ON_HOLD, Subscription, UNBLOCKED};
use crate::apis::{StoredApi, Viewer, find as find_api};
use crate::applications::{StoreUser, StoredApplication, owned_application, require_approved};
use crate::error::{Error, OnDuplicate, Result};
use crate::http::STORE;
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get, post};
use crate::manifest::Touched;
use crate::manifest::Touches;
use crate::state::AppState;
use crate::tokens::Caller;
use crate::workflows::{self, Kind};

pub fn router() -> Routes {
    Routes::new()
        .route(
            &format!("{STORE}/subscriptions"),
            get(list_subscriptions).post(subscribe),
        )
        .route(
            &format!("{STORE}/subscriptions/multiple"),
            post(subscribe_many),
        )
        .route(
            &format!("{STORE}/subscriptions/{{subscription_id}}"),
            get(get_subscription).delete(unsubscribe),
        )
}

/// WSO2's `Subscription`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SubscriptionDto {
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
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    subscription_id: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
    status: Option<String>,
}

/// A subscription request, checked: the caller's application, an API it may subscribe
/// to, and a tier the API allows.
struct Checked {
    application: StoredApplication,
    api: StoredApi,
    tier: String,
}

impl Checked {
    /// The subscription as WSO2 shows it once stored under `id` with `status`.
    fn dto(&self, id: String, status: &str) -> SubscriptionDto {
        SubscriptionDto {
            subscription_id: id,
            application_id: self.application.id.clone(),
            api_identifier: self.api.identifier(),
            tier: self.tier.clone(),
            status: status.into(),
        }
    }

    fn touched(&self) -> Touched {
        Touched::Subscription {
            application: self.application.id.clone(),
            api: self.api.id.clone(),
        }
    }

    /// WSO2's words for a subscription its API's publisher has blocked
    /// (`ApiMgtDAO.addSubscription`).
    fn was_blocked(&self) -> String {
        format!(
            "Subscription to API {} through application {} was blocked",
            self.api.identifier(),
            self.application.name
        )
    }

    fn already_exists(&self) -> String {
        format!(
            "Specified subscription already exists for API {} for application {}",
            self.api.identifier(),
            self.application.name
        )
    }
}

/// Checks a subscription request as WSO2 does: 400 for missing fields, 404 for an
/// application or API the caller may not use (answered as missing ones), 403 for another
/// user's application or a tier the API does not allow.
async fn check(state: &AppState, caller: &Caller, body: SubscriptionBody) -> Result<Checked> {
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
    let application = owned_application(state, caller, &application_id).await?;
    require_approved(&application)?;
    // An API the caller may not subscribe to (another tenant's, or not visible to it)
    // answers as a missing one.
    let viewer = Viewer::of(state, Some(caller)).await?;
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
    check_tier_permission(state, caller, &api.tenant, &tier).await?;
    Ok(Checked {
        application,
        api,
        tier,
    })
}

/// Refuses a subscription the application already has (409), or had and the publisher
/// blocked (403): a block holds even after the subscriber deleted the subscription, as
/// WSO2's `ApiMgtDAO.addSubscription` refuses it, until the publisher unblocks it.
async fn check_earlier<'e>(db: impl Executor<'e, Database = Any>, checked: &Checked) -> Result<()> {
    match queries::find_pair(db, &checked.application.id, &checked.api.id).await? {
        None => Ok(()),
        Some(earlier) if earlier.is_blocked() => Err(Error::Forbidden(checked.was_blocked())),
        Some(_) => Err(Error::AlreadyExists(checked.already_exists())),
    }
}

/// `POST /subscriptions`: 201 with `Location`; the API by id or unique name.
async fn subscribe(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    JsonBody(body): JsonBody<SubscriptionBody>,
) -> Result<Response> {
    let checked = check(&state, &caller, body).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let (application, api) = (&checked.application.id, &checked.api.id);
    let waits = workflows::required(&state.db, caller.tenant(), Kind::SubscriptionCreation).await?;
    let status = initial_status(waits);
    // The subscription and the workflow that approves it are made together, or neither.
    let mut tx = state.db.begin().await?;
    check_earlier(&mut *tx, &checked).await?;
    queries::insert(&mut *tx, &id, application, api, &checked.tier, status)
        .await
        .on_duplicate(|| checked.already_exists())?;
    if waits {
        workflows::open(
            &mut *tx,
            caller.tenant(),
            Kind::SubscriptionCreation,
            &id,
            "{}",
        )
        .await?;
    }
    tx.commit().await?;
    tracing::info!(subscription = %id, %api, %application, tier = %checked.tier, %status, "subscribed");
    let location = format!("{STORE}/subscriptions/{id}");
    Ok((
        StatusCode::CREATED,
        Touches::one(checked.touched()),
        [(header::LOCATION, location)],
        Json(checked.dto(id, status)),
    )
        .into_response())
}

/// A new subscription's status: ON_HOLD while its creation waits for an approval (the
/// gateways refuse it), UNBLOCKED otherwise.
fn initial_status(waits: bool) -> &'static str {
    if waits { ON_HOLD } else { UNBLOCKED }
}

/// Most subscriptions one `POST /subscriptions/multiple` takes: each costs a few
/// queries, and the body limit alone would let one request ask for thousands.
const MAX_BATCH: usize = 100;

/// `POST /subscriptions/multiple`: 200 with the new subscriptions. All or nothing: every
/// item is checked first, then all are stored in one transaction, so one refused item (or
/// one that races with another subscription) stores none of them.
async fn subscribe_many(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    JsonBody(items): JsonBody<Vec<SubscriptionBody>>,
) -> Result<(Touches, Json<Vec<SubscriptionDto>>)> {
    if items.len() > MAX_BATCH {
        return Err(Error::Invalid(format!(
            "At most {MAX_BATCH} subscriptions can be added at once"
        )));
    }
    let mut batch: Vec<Checked> = Vec::with_capacity(items.len());
    for item in items {
        let checked = check(&state, &caller, item).await?;
        // Twice the same pair in one batch is the duplicate WSO2 answers 409 for.
        if batch
            .iter()
            .any(|b| b.application.id == checked.application.id && b.api.id == checked.api.id)
        {
            return Err(Error::AlreadyExists(checked.already_exists()));
        }
        batch.push(checked);
    }
    let ids: Vec<String> = batch
        .iter()
        .map(|_| uuid::Uuid::new_v4().to_string())
        .collect();
    let waits = workflows::required(&state.db, caller.tenant(), Kind::SubscriptionCreation).await?;
    let status = initial_status(waits);
    let mut tx = state.db.begin().await?;
    for (checked, id) in batch.iter().zip(&ids) {
        check_earlier(&mut *tx, checked).await?;
        queries::insert(
            &mut *tx,
            id,
            &checked.application.id,
            &checked.api.id,
            &checked.tier,
            status,
        )
        .await
        .on_duplicate(|| checked.already_exists())?;
        if waits {
            workflows::open(
                &mut *tx,
                caller.tenant(),
                Kind::SubscriptionCreation,
                id,
                "{}",
            )
            .await?;
        }
    }
    tx.commit().await?;
    tracing::info!(count = ids.len(), "subscribed in a batch");
    let touched = Touches(batch.iter().map(Checked::touched).collect());
    let dtos = batch
        .iter()
        .zip(ids)
        .map(|(c, id)| c.dto(id, status))
        .collect();
    Ok((touched, Json(dtos)))
}

impl SubscriptionDto {
    /// A stored subscription as WSO2 shows it, its API by `api_identifier`.
    pub(super) fn of(row: Subscription, api_identifier: String) -> Self {
        SubscriptionDto {
            subscription_id: row.id,
            application_id: row.application_id,
            api_identifier,
            tier: row.tier,
            status: row.status,
        }
    }
}

/// How subscriptions name an API: its unique name (its id if it is gone).
pub(super) async fn api_identifier(state: &AppState, api_id: &str) -> Result<String> {
    Ok(match find_api(&state.db, api_id).await? {
        Some(api) => api.identifier(),
        None => api_id.to_string(),
    })
}

/// A stored subscription as WSO2 shows it, the API by its unique name.
pub(super) async fn to_dto(state: &AppState, row: Subscription) -> Result<SubscriptionDto> {
    let api_identifier = api_identifier(state, &row.api_id).await?;
    Ok(SubscriptionDto::of(row, api_identifier))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListQuery {
    api_id: Option<String>,
    application_id: Option<String>,
    #[expect(dead_code, reason = "WSO2's clients send it; read and ignored")]
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
            let rows = queries::of_application(&state.db, &app.id).await?;
            (rows, format!("applicationId={application_id}"))
        }
        (None, Some(api_id)) => {
            let viewer = Viewer::of(&state, Some(&caller)).await?;
            let api = find_api(&state.db, api_id)
                .await?
                .filter(|api| viewer.sees(api))
                .ok_or_else(|| Error::NotFound("API", api_id.clone()))?;
            let rows = queries::of_api_owned_by(&state.db, &api.id, caller.username()).await?;
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

/// The caller's subscription: 404 when missing, deleted by its subscriber while blocked, or
/// another tenant's (answered exactly as a missing one, naming neither its application
/// nor anything else), 403 when another user's of the caller's tenant.
async fn owned_subscription(state: &AppState, caller: &Caller, id: &str) -> Result<Subscription> {
    let row = queries::find(&state.db, id)
        .await?
        .filter(Subscription::is_subscribed);
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

/// `DELETE /subscriptions/{subscriptionId}`: 200 with no body. A blocked subscription is
/// kept, marked, so that the block holds (WSO2's `ApiMgtDAO.removeSubscription`): the
/// store no longer shows it, and subscribing again is refused until it is unblocked.
async fn unsubscribe(
    State(state): State<AppState>,
    StoreUser(caller): StoreUser,
    Path(subscription_id): Path<String>,
) -> Result<(Touches, StatusCode)> {
    let row = owned_subscription(&state, &caller, &subscription_id).await?;
    if row.is_blocked() {
        queries::mark_unsubscribed(&state.db, &row.id).await?;
    } else {
        queries::delete(&state.db, &row.id).await?;
        workflows::forget(&state.db, &row.id).await?;
    }
    tracing::info!(subscription = %row.id, blocked = row.is_blocked(), "unsubscribed");
    Ok((
        Touches::one(Touched::Subscription {
            application: row.application_id,
            api: row.api_id,
        }),
        StatusCode::OK,
    ))
}

/// Refuses (403) a subscription tier the API's tenant does not let the caller's roles
/// use (`POST /tiers/update-permission`).
async fn check_tier_permission(
    state: &AppState,
    caller: &Caller,
    tenant: &str,
    tier: &str,
) -> Result<()> {
    let permissions =
        crate::tiers::Permissions::of(&state.db, tenant, crate::tiers::TierLevel::Subscription)
            .await?;
    let roles = crate::users::find(&state.db, caller.username())
        .await?
        .map(|user| user.roles)
        .unwrap_or_default();
    if permissions.allows(tier, Some(&roles)) {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "Tier {tier} is not allowed for the roles of user {}",
            caller.username()
        )))
    }
}
