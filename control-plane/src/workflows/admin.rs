//! Workflow resources: the tenant administrator's switches,
//! `/api/am/admin/v0.14/workflows/settings` (ours: WSO2 keeps them in the tenant's
//! `workflow-extensions.xml`), and the publisher's
//! `POST /workflows/update-workflow-status?workflowReferenceId=` (WSO2 v0.14, scope
//! `apim:api_workflow`), which approves or rejects what waits.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::decide::{already_decided, decide};
use super::queries;
use super::records::{APPROVED, Flag, Kind, REJECTED, WAITING, Workflow, WorkflowSettings};
use crate::error::{Error, Result};
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::pagination::{ListEnvelope, Page};
use crate::http::routes::{Routes, get, post};
use crate::http::{ADMIN, PUBLISHER};
use crate::manifest::Touches;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::tokens::Caller;
use crate::users::AdminUser;

pub fn router() -> Routes {
    Routes::new()
        .route(&format!("{ADMIN}/workflows"), get(list_waiting))
        .route(
            &format!("{ADMIN}/workflows/settings"),
            get(get_settings).put(put_settings),
        )
        .route(
            &format!("{PUBLISHER}/workflows/update-workflow-status"),
            post(update_workflow_status),
        )
}

/// The tenant an administrator's switches are of; 403 for anyone else.
fn administered_tenant(user: &crate::users::User) -> Result<&str> {
    if user.has_role("admin") {
        Ok(&user.tenant)
    } else {
        Err(Error::Forbidden(
            "Only administrators may change which requests wait for an approval".into(),
        ))
    }
}

/// `GET /workflows/settings`: the caller's tenant's switches.
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/workflows/settings",
    tag = "Administration",
    responses((status = 200, description = "Which of the tenant's requests wait for an approval", body = WorkflowSettings)),
    security(("basic" = []), ("bearer" = []))
)]
async fn get_settings(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
) -> Result<Json<WorkflowSettings>> {
    let tenant = administered_tenant(&user)?;
    Ok(Json(queries::settings_of(&state.db, tenant).await?))
}

/// The switches a `PUT` changes; those left out keep their value.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SettingsChange {
    application_creation: Option<bool>,
    subscription_creation: Option<bool>,
    production_key_generation: Option<bool>,
    sandbox_key_generation: Option<bool>,
}

/// `PUT /workflows/settings`: 200 with the tenant's switches. Requests made before keep
/// the state they were made in.
#[utoipa::path(
    put,
    path = "/api/am/admin/v0.14/workflows/settings",
    tag = "Administration",
    request_body = SettingsChange,
    responses((status = 200, description = "The switches as changed", body = WorkflowSettings)),
    security(("basic" = []), ("bearer" = []))
)]
async fn put_settings(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    JsonBody(change): JsonBody<SettingsChange>,
) -> Result<(Touches, Json<WorkflowSettings>)> {
    let tenant = administered_tenant(&user)?;
    let old = queries::settings_of(&state.db, tenant).await?;
    let pick = |given: Option<bool>, old: Flag| given.map(Flag).unwrap_or(old);
    let new = WorkflowSettings {
        application_creation: pick(change.application_creation, old.application_creation),
        subscription_creation: pick(change.subscription_creation, old.subscription_creation),
        production_key_generation: pick(
            change.production_key_generation,
            old.production_key_generation,
        ),
        sandbox_key_generation: pick(change.sandbox_key_generation, old.sandbox_key_generation),
    };
    queries::save_settings(&state.db, tenant, &new).await?;
    tracing::info!(%tenant, by = %user.username, settings = ?new, "workflow settings changed");
    // Gateways see requests, not switches.
    Ok((Touches::nothing(), Json(new)))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListQuery {
    workflow_type: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

/// A workflow waiting for a decision, as listed (the shape of WSO2's admin
/// `WorkflowInfo`; `properties` names what waits).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct WorkflowInfo {
    workflow_type: String,
    workflow_status: String,
    /// Unix seconds.
    created_time: i64,
    reference_id: String,
    properties: BTreeMap<&'static str, String>,
}

impl From<Workflow> for WorkflowInfo {
    fn from(workflow: Workflow) -> Self {
        let subject = match Kind::of_name(&workflow.kind) {
            Some(Kind::SubscriptionCreation) => "subscriptionId",
            _ => "applicationId",
        };
        WorkflowInfo {
            workflow_type: workflow.kind,
            workflow_status: workflow.status,
            created_time: workflow.created_at,
            reference_id: workflow.reference_id,
            properties: BTreeMap::from([(subject, workflow.subject)]),
        }
    }
}

/// `GET /workflows[?workflowType=]`: the caller's tenant's workflows waiting for a
/// decision, oldest first (how an approver learns their references).
#[utoipa::path(
    get,
    path = "/api/am/admin/v0.14/workflows",
    tag = "Administration",
    params(
        ("workflowType" = Option<String>, Query, description = "Only requests of this kind"),
        ("limit" = Option<i64>, Query, description = "Maximum size of the page"),
        ("offset" = Option<i64>, Query, description = "Starting point within the list")
    ),
    responses((status = 200, description = "The tenant's requests awaiting an approval", body = ListEnvelope<WorkflowInfo>)),
    security(("basic" = []), ("bearer" = []))
)]
async fn list_waiting(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Json<ListEnvelope<WorkflowInfo>>> {
    let tenant = administered_tenant(&user)?;
    let page = Page::new(q.limit, q.offset)?;
    let kind = match q.workflow_type.as_deref() {
        None => None,
        Some(name) => Some(
            Kind::of_name(name)
                .ok_or_else(|| Error::Invalid(format!("Invalid workflowType '{name}'")))?,
        ),
    };
    let (total, rows) = queries::page_waiting(&state.db, tenant, kind, page).await?;
    let list = rows.into_iter().map(WorkflowInfo::from).collect();
    let kind_param = q.workflow_type.unwrap_or_default();
    let link = |limit, offset| {
        format!("/workflows?limit={limit}&offset={offset}&workflowType={kind_param}")
    };
    Ok(Json(ListEnvelope::new(list, total, page, link)))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReferenceQuery {
    workflow_reference_id: Option<String>,
}

/// WSO2's `Workflow`, asked and answered.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct WorkflowBody {
    status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attributes: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// Longest description kept with a decision.
const MAX_DESCRIPTION: usize = 1024;

impl WorkflowBody {
    /// The decision asked for: APPROVED or REJECTED (400 otherwise).
    fn decision(&self) -> Result<&'static str> {
        match self.status.as_deref() {
            None => Err(Error::InvalidFields(vec![(
                "status".into(),
                "may not be null".into(),
            )])),
            Some(APPROVED) => Ok(APPROVED),
            Some(REJECTED) => Ok(REJECTED),
            Some(other) => Err(Error::Invalid(format!(
                "Invalid status '{other}'; allowed values are {APPROVED}, {REJECTED}"
            ))),
        }
    }

    fn description(&self) -> Result<&str> {
        let description = self.description.as_deref().unwrap_or_default();
        if description.chars().count() > MAX_DESCRIPTION {
            return Err(Error::Invalid(format!(
                "description must have at most {MAX_DESCRIPTION} characters"
            )));
        }
        Ok(description)
    }
}

/// `POST /workflows/update-workflow-status?workflowReferenceId=`: 200 with the workflow
/// as decided. A reference unknown or of another tenant answers 404 (its existence is not
/// disclosed); one decided before 400.
async fn update_workflow_status(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ReferenceQuery>,
    JsonBody(body): JsonBody<WorkflowBody>,
) -> Result<(Touches, Json<WorkflowBody>)> {
    caller.require(&state, Scope::ApiWorkflow)?;
    let reference = q
        .workflow_reference_id
        .filter(|id| !id.is_empty())
        .ok_or_else(|| Error::Invalid("Query parameter workflowReferenceId is required".into()))?;
    let status = body.decision()?;
    let description = body.description()?;
    let workflow = queries::find(&state.db, &reference)
        .await?
        .filter(|workflow| workflow.tenant == caller.tenant())
        .ok_or_else(|| Error::NotFound("workflow", reference.clone()))?;
    if workflow.status != WAITING {
        return Err(already_decided());
    }
    let touched = decide(&state, &workflow, status, description).await?;
    tracing::info!(workflow = %reference, kind = %workflow.kind, subject = %workflow.subject, %status, by = caller.username(), "workflow decided");
    let answer = WorkflowBody {
        status: Some(status.to_string()),
        attributes: Some(body.attributes.unwrap_or_default()),
        description: body.description,
    };
    Ok((Touches(touched), Json(answer)))
}

/// These operations in the control plane's OpenAPI document (`update-workflow-status` is WSO2's,
/// described by its contract).
#[derive(utoipa::OpenApi)]
#[openapi(paths(get_settings, put_settings, list_waiting))]
pub struct Api;
