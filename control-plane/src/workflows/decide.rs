//! What a decision on a workflow does to what waited (WSO2's workflow executors'
//! `complete`): an application becomes APPROVED or REJECTED, a subscription UNBLOCKED (the
//! gateways admit it from the next compile) or REJECTED, and an approved key request gets
//! its keys. The decision and its effect are stored in one transaction.

use super::queries;
use super::records::{APPROVED, Kind, Workflow};
use crate::error::{Error, Result};
use crate::manifest::Touched;
use crate::state::AppState;
use crate::{applications, keys, subscriptions};

/// Records `status` (APPROVED or REJECTED) on a waiting workflow and applies it; what the
/// gateways must see again. 400 when it was decided already.
pub(super) async fn decide(
    state: &AppState,
    workflow: &Workflow,
    status: &str,
    description: &str,
) -> Result<Vec<Touched>> {
    let kind = Kind::of_name(&workflow.kind)
        .ok_or_else(|| anyhow::anyhow!("workflow of unknown kind {}", workflow.kind))?;
    let approved = status == APPROVED;
    let subject = workflow.subject.as_str();
    // Read before the transaction: on SQLite it holds the one connection that writes.
    let subscription = match kind {
        Kind::SubscriptionCreation => subscriptions::find(&state.db, subject).await?,
        _ => None,
    };
    let application = match kind {
        Kind::ProductionKeys | Kind::SandboxKeys if approved => {
            applications::find(&state.db, subject).await?
        }
        _ => None,
    };
    let mut tx = state.db.begin().await?;
    if !queries::decide(&mut *tx, &workflow.reference_id, status, description).await? {
        return Err(already_decided());
    }
    let touched = match kind {
        Kind::ApplicationCreation => {
            let app_status = if approved {
                applications::APPROVED
            } else {
                applications::REJECTED
            };
            applications::set_status(&mut *tx, subject, app_status).await?;
            vec![Touched::Application(subject.to_string())]
        }
        Kind::SubscriptionCreation => {
            let sub_status = if approved {
                subscriptions::UNBLOCKED
            } else {
                subscriptions::REJECTED
            };
            subscriptions::set_status(&mut *tx, subject, sub_status).await?;
            subscription
                .map(|row| Touched::Subscription {
                    application: row.application_id,
                    api: row.api_id,
                })
                .into_iter()
                .collect()
        }
        Kind::ProductionKeys | Kind::SandboxKeys => {
            if approved {
                let key_type = if kind == Kind::SandboxKeys {
                    "SANDBOX"
                } else {
                    "PRODUCTION"
                };
                keys::approve_key_request(
                    &mut tx,
                    &state.data_keys,
                    application,
                    key_type,
                    &workflow.payload,
                )
                .await?;
            }
            Vec::new()
        }
    };
    tx.commit().await?;
    Ok(touched)
}

/// WSO2's answer to a decision on a workflow decided before.
pub(super) fn already_decided() -> Error {
    Error::Invalid("Workflow is already in complete state".into())
}
