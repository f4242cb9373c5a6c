//! The `workflow_settings` and `workflows` tables.

use sqlx::{Any, AnyPool, Executor};

use super::records::{Kind, WAITING, WORKFLOW_COLUMNS, Workflow, WorkflowSettings};
use crate::db::now;
use crate::http::pagination::Page;

/// A tenant's switches (all off without a row).
pub(super) async fn settings_of(db: &AnyPool, tenant: &str) -> sqlx::Result<WorkflowSettings> {
    // language=SQL
    let row: Option<WorkflowSettings> = sqlx::query_as(
        "SELECT application_creation, subscription_creation, production_key_generation, sandbox_key_generation
         FROM workflow_settings WHERE tenant = $1",
    )
    .bind(tenant)
    .fetch_optional(db)
    .await?;
    Ok(row.unwrap_or_default())
}

/// Replaces a tenant's switches.
pub(super) async fn save_settings(
    db: &AnyPool,
    tenant: &str,
    settings: &WorkflowSettings,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "INSERT INTO workflow_settings (tenant, application_creation, subscription_creation, production_key_generation, sandbox_key_generation)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant) DO UPDATE SET application_creation = excluded.application_creation,
           subscription_creation = excluded.subscription_creation,
           production_key_generation = excluded.production_key_generation,
           sandbox_key_generation = excluded.sandbox_key_generation",
    )
    .bind(tenant)
    .bind(settings.application_creation.stored())
    .bind(settings.subscription_creation.stored())
    .bind(settings.production_key_generation.stored())
    .bind(settings.sandbox_key_generation.stored())
    .execute(db)
    .await?;
    Ok(())
}

/// Whether requests of `kind` wait for an approval in `tenant`.
pub async fn required(db: &AnyPool, tenant: &str, kind: Kind) -> sqlx::Result<bool> {
    Ok(settings_of(db, tenant).await?.requires(kind))
}

/// Opens a workflow waiting for a decision on `subject`; its reference id.
pub async fn open<'e>(
    db: impl Executor<'e, Database = Any>,
    tenant: &str,
    kind: Kind,
    subject: &str,
    payload: &str,
) -> sqlx::Result<String> {
    let reference = uuid::Uuid::new_v4().to_string();
    // language=SQL
    sqlx::query(
        "INSERT INTO workflows (reference_id, tenant, kind, subject, status, payload, description, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, '', $7)",
    )
    .bind(&reference)
    .bind(tenant)
    .bind(kind.name())
    .bind(subject)
    .bind(WAITING)
    .bind(payload)
    .bind(now())
    .execute(db)
    .await?;
    Ok(reference)
}

/// The workflow of this reference, if any.
pub(super) async fn find(db: &AnyPool, reference: &str) -> sqlx::Result<Option<Workflow>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {WORKFLOW_COLUMNS} FROM workflows WHERE reference_id = $1"
    ))
    .bind(reference)
    .fetch_optional(db)
    .await
}

/// The workflow of `kind` on `subject` still waiting for its decision, if any.
pub async fn pending(db: &AnyPool, subject: &str, kind: Kind) -> sqlx::Result<Option<Workflow>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {WORKFLOW_COLUMNS} FROM workflows WHERE subject = $1 AND kind = $2 AND status = $3"
    ))
    .bind(subject)
    .bind(kind.name())
    .bind(WAITING)
    .fetch_optional(db)
    .await
}

/// The reference of the latest workflow of `kind` on `subject` (WSO2's `workflowId`).
pub async fn latest_reference(
    db: &AnyPool,
    subject: &str,
    kind: Kind,
) -> sqlx::Result<Option<String>> {
    // language=SQL
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT reference_id FROM workflows WHERE subject = $1 AND kind = $2
         ORDER BY created_at DESC, reference_id LIMIT 1",
    )
    .bind(subject)
    .bind(kind.name())
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(reference,)| reference))
}

/// Records the decision on a waiting workflow; false when it was decided already (by a
/// racing call), so that a workflow is decided once.
pub(super) async fn decide<'e>(
    db: impl Executor<'e, Database = Any>,
    reference: &str,
    status: &str,
    description: &str,
) -> sqlx::Result<bool> {
    // language=SQL
    let decided = sqlx::query(
        "UPDATE workflows SET status = $1, description = $2, completed_at = $3
         WHERE reference_id = $4 AND status = $5",
    )
    .bind(status)
    .bind(description)
    .bind(now())
    .bind(reference)
    .bind(WAITING)
    .execute(db)
    .await?;
    Ok(decided.rows_affected() == 1)
}

/// One page of a tenant's workflows waiting for a decision (of one kind, if given),
/// oldest first, and how many there are in all.
pub(super) async fn page_waiting(
    db: &AnyPool,
    tenant: &str,
    kind: Option<Kind>,
    page: Page,
) -> sqlx::Result<(i64, Vec<Workflow>)> {
    let one_kind = if kind.is_some() { "AND kind = $3" } else { "" };
    let from = format!("FROM workflows WHERE tenant = $1 AND status = $2 {one_kind}");
    // language=SQL
    let count = format!("SELECT COUNT(*) {from}");
    let mut counting = sqlx::query_as::<_, (i64,)>(&count)
        .bind(tenant)
        .bind(WAITING);
    // language=SQL
    let select = format!(
        "SELECT {WORKFLOW_COLUMNS} {from} ORDER BY created_at, reference_id LIMIT {} OFFSET {}",
        page.limit, page.offset
    );
    let mut selecting = sqlx::query_as::<_, Workflow>(&select)
        .bind(tenant)
        .bind(WAITING);
    if let Some(kind) = kind {
        counting = counting.bind(kind.name());
        selecting = selecting.bind(kind.name());
    }
    let (total,) = counting.fetch_one(db).await?;
    Ok((total, selecting.fetch_all(db).await?))
}

/// Forgets the workflows about a subject that is gone (an unsubscribed subscription).
pub async fn forget<'e>(db: impl Executor<'e, Database = Any>, subject: &str) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM workflows WHERE subject = $1")
        .bind(subject)
        .execute(db)
        .await?;
    Ok(())
}

/// Forgets the workflows about an application being deleted and about its
/// subscriptions; run in the deletion's transaction before the subscriptions go.
pub async fn forget_application<'e>(
    db: impl Executor<'e, Database = Any>,
    application_id: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "DELETE FROM workflows WHERE subject = $1
         OR subject IN (SELECT id FROM subscriptions WHERE application_id = $1)",
    )
    .bind(application_id)
    .execute(db)
    .await?;
    Ok(())
}
