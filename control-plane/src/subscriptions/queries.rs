//! The `subscriptions` table (WSO2 store operations on subscriptions).

use sqlx::{Any, AnyPool, Executor, Transaction};

use super::records::{PROD_ONLY_BLOCKED, SUBSCRIPTION_COLUMNS, Subscription, UNBLOCKED};
use crate::db::{KEYS_PER_QUERY, now, rows_in};
use crate::http::pagination::Page;

/// Subscribes an application to an API; a unique violation when it already is.
pub async fn insert<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
    application_id: &str,
    api_id: &str,
    tier: &str,
    status: &str,
) -> sqlx::Result<()> {
    insert_with(db, INSERT, [id, application_id, api_id, tier, status]).await?;
    Ok(())
}

// language=SQL
const INSERT: &str =
    "INSERT INTO subscriptions (id, application_id, api_id, tier, status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6)";

// language=SQL
const INSERT_UNLESS_SUBSCRIBED: &str =
    "INSERT INTO subscriptions (id, application_id, api_id, tier, status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (api_id, application_id) DO NOTHING";

/// Runs one of the inserts above with `[id, application, api, tier, status]`; the rows
/// it added.
async fn insert_with<'e>(
    db: impl Executor<'e, Database = Any>,
    statement: &'static str,
    values: [&str; 5],
) -> sqlx::Result<u64> {
    let mut query = sqlx::query(statement);
    for value in values {
        query = query.bind(value);
    }
    Ok(query.bind(now()).execute(db).await?.rows_affected())
}

/// An application's subscriptions, oldest first (not those deleted while blocked).
pub async fn of_application(db: &AnyPool, application_id: &str) -> sqlx::Result<Vec<Subscription>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s
         WHERE s.application_id = $1 AND s.unsubscribed = 0 ORDER BY s.created_at, s.id"
    ))
    .bind(application_id)
    .fetch_all(db)
    .await
}

/// The subscriptions to an API of one owner's applications, oldest first (not those
/// deleted while blocked).
pub(super) async fn of_api_owned_by(
    db: &AnyPool,
    api_id: &str,
    owner: &str,
) -> sqlx::Result<Vec<Subscription>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN applications a ON a.id = s.application_id
         WHERE s.api_id = $1 AND a.owner = $2 AND s.unsubscribed = 0 ORDER BY s.created_at, s.id"
    ))
    .bind(api_id)
    .bind(owner)
    .fetch_all(db)
    .await
}

/// The subscription with this id, if any.
pub async fn find(db: &AnyPool, id: &str) -> sqlx::Result<Option<Subscription>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s WHERE s.id = $1"
    ))
    .bind(id)
    .fetch_optional(db)
    .await
}

/// The subscription of an application to an API, if any (deleted while blocked or not).
pub(super) async fn find_pair<'e>(
    db: impl Executor<'e, Database = Any>,
    application_id: &str,
    api_id: &str,
) -> sqlx::Result<Option<Subscription>> {
    // language=SQL
    sqlx::query_as(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s
         WHERE s.application_id = $1 AND s.api_id = $2"
    ))
    .bind(application_id)
    .bind(api_id)
    .fetch_optional(db)
    .await
}

/// One page of the subscriptions to the APIs of a tenant, or to one of them (`api_id`),
/// oldest first, and how many there are in all: the publisher's view of them.
pub(super) async fn page_of_tenant_apis(
    db: &AnyPool,
    tenant: &str,
    api_id: Option<&str>,
    page: Page,
) -> sqlx::Result<(i64, Vec<Subscription>)> {
    let one_api = if api_id.is_some() {
        "AND a.id = $2"
    } else {
        ""
    };
    let from = format!(
        "FROM subscriptions s JOIN apis a ON a.id = s.api_id WHERE a.tenant = $1 {one_api}"
    );
    // language=SQL
    let count = format!("SELECT COUNT(*) {from}");
    let mut counting = sqlx::query_as::<_, (i64,)>(&count).bind(tenant);
    // language=SQL
    let select = format!(
        "SELECT {SUBSCRIPTION_COLUMNS} {from} ORDER BY s.created_at, s.id LIMIT {} OFFSET {}",
        page.limit, page.offset
    );
    let mut selecting = sqlx::query_as::<_, Subscription>(&select).bind(tenant);
    if let Some(api_id) = api_id {
        counting = counting.bind(api_id);
        selecting = selecting.bind(api_id);
    }
    let (total,) = counting.fetch_one(db).await?;
    Ok((total, selecting.fetch_all(db).await?))
}

/// Sets a subscription's status (a publisher's block or unblock, an approval or rejection).
pub async fn set_status<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
    status: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("UPDATE subscriptions SET status = $1 WHERE id = $2")
        .bind(status)
        .bind(id)
        .execute(db)
        .await?;
    Ok(())
}

/// Marks a blocked subscription deleted by its subscriber: the row stays, so that the
/// block holds (WSO2's `ApiMgtDAO.removeSubscription` sets `SUBS_CREATE_STATE`
/// `UN_SUBSCRIBE` instead of deleting a blocked row).
pub(super) async fn mark_unsubscribed(db: &AnyPool, id: &str) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("UPDATE subscriptions SET unsubscribed = 1 WHERE id = $1")
        .bind(id)
        .execute(db)
        .await?;
    Ok(())
}

/// Deletes a subscription.
pub(super) async fn delete<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM subscriptions WHERE id = $1")
        .bind(id)
        .execute(db)
        .await?;
    Ok(())
}

/// How many applications are subscribed to an API (those whose subscription was deleted
/// while blocked are not).
pub async fn count_for_api(tx: &mut Transaction<'_, Any>, api_id: &str) -> sqlx::Result<i64> {
    // language=SQL
    let (subscriptions,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM subscriptions WHERE api_id = $1 AND unsubscribed = 0")
            .bind(api_id)
            .fetch_one(&mut **tx)
            .await?;
    Ok(subscriptions)
}

/// Gives `to_api` the subscriptions of `from_apis` (older versions of it, the first
/// wins for an application subscribed to several) on the tiers in `offered`, as WSO2
/// forwards them when a new version is published. Each keeps its tier and status; one
/// its subscriber deleted while blocked arrives BLOCKED; ON_HOLD and REJECTED ones, and
/// applications already subscribed (or subscribing meanwhile), stay as they are. The
/// applications given one.
pub async fn forward_to_version(
    tx: &mut Transaction<'_, Any>,
    from_apis: &[String],
    to_api: &str,
    offered: &[String],
) -> sqlx::Result<Vec<String>> {
    let mut forwarded: Vec<String> = Vec::new();
    for from in from_apis {
        // language=SQL
        let rows: Vec<(String, String, String, i64)> = sqlx::query_as(
            "SELECT application_id, tier, status, unsubscribed FROM subscriptions
             WHERE api_id = $1 AND status NOT IN ($2, $3)
               AND application_id NOT IN (SELECT application_id FROM subscriptions WHERE api_id = $4)
             ORDER BY created_at",
        )
        .bind(from)
        .bind(super::records::ON_HOLD)
        .bind(super::records::REJECTED)
        .bind(to_api)
        .fetch_all(&mut **tx)
        .await?;
        for (application, tier, status, unsubscribed) in rows {
            if !offered.contains(&tier) {
                continue;
            }
            let status = if unsubscribed != 0 {
                super::records::BLOCKED
            } else {
                status.as_str()
            };
            let id = uuid::Uuid::new_v4().to_string();
            // A subscribe committed since the query above keeps the application's own.
            let values = [id.as_str(), &application, to_api, &tier, status];
            if insert_with(&mut **tx, INSERT_UNLESS_SUBSCRIBED, values).await? == 1 {
                forwarded.push(application);
            }
        }
    }
    Ok(forwarded)
}

/// Deletes the subscriptions to an API that their subscribers deleted while blocked, with
/// the API they remember the block for.
pub async fn delete_unsubscribed_of_api(
    tx: &mut Transaction<'_, Any>,
    api_id: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM subscriptions WHERE api_id = $1 AND unsubscribed <> 0")
        .bind(api_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The status gateways enforce: a subscription deleted while blocked stays refused for
/// every key type, whatever block the publisher sets on it afterwards.
const GRANT_COLUMNS: &str =
    "application_id, api_id, tier, CASE WHEN unsubscribed <> 0 THEN 'BLOCKED' ELSE status END";

/// What gateways enforce of a subscription: application id, API id, tier, status.
pub type Grant = (String, String, String, String);

/// The grants of every subscription (a full compile).
pub async fn all_grants(db: &AnyPool) -> sqlx::Result<Vec<Grant>> {
    // language=SQL
    sqlx::query_as(&format!("SELECT {GRANT_COLUMNS} FROM subscriptions"))
        .fetch_all(db)
        .await
}

/// The grants of every subscription of these applications.
pub async fn grants_of(db: &AnyPool, applications: &[&str]) -> sqlx::Result<Vec<Grant>> {
    // language=SQL
    let select = format!("SELECT {GRANT_COLUMNS} FROM subscriptions WHERE application_id");
    rows_in(db, &select, applications).await
}

/// The grants of these subscriptions, by (application, API) (those that exist).
pub async fn grants(db: &AnyPool, pairs: &[(&str, &str)]) -> sqlx::Result<Vec<Grant>> {
    let mut grants = Vec::new();
    for chunk in pairs.chunks(KEYS_PER_QUERY / 2) {
        let conditions: Vec<String> = (0..chunk.len())
            .map(|i| {
                format!(
                    "(application_id = ${} AND api_id = ${})",
                    2 * i + 1,
                    2 * i + 2
                )
            })
            .collect();
        // language=SQL
        let sql = format!(
            "SELECT {GRANT_COLUMNS} FROM subscriptions WHERE {}",
            conditions.join(" OR ")
        );
        let mut query = sqlx::query_as::<_, Grant>(&sql);
        for (application, api) in chunk {
            query = query.bind(*application).bind(*api);
        }
        grants.extend(query.fetch_all(db).await?);
    }
    Ok(grants)
}

/// The stored records of the APIs an application's keys of `key_type` may call: those of
/// its subscriptions the gateways admit for that key type (unblocked, or blocked for
/// production only and the keys are not production ones), so that its tokens never get
/// the scopes of an API they cannot call. Without a key type, either will do.
pub async fn subscribed_records(
    db: &AnyPool,
    application_id: &str,
    key_type: Option<&str>,
) -> sqlx::Result<Vec<String>> {
    #[derive(sqlx::FromRow)]
    struct Record {
        record: String,
    }
    let production = key_type.is_some_and(|k| k.eq_ignore_ascii_case("PRODUCTION"));
    let also_admitted = if production {
        UNBLOCKED
    } else {
        PROD_ONLY_BLOCKED
    };
    // language=SQL
    let records: Vec<Record> = sqlx::query_as(
        "SELECT a.record FROM subscriptions s JOIN apis a ON a.id = s.api_id
         WHERE s.application_id = $1 AND s.unsubscribed = 0 AND s.status IN ($2, $3)
         ORDER BY s.created_at, s.id",
    )
    .bind(application_id)
    .bind(UNBLOCKED)
    .bind(also_admitted)
    .fetch_all(db)
    .await?;
    Ok(records.into_iter().map(|r| r.record).collect())
}

/// The APIs subscribed to on a tier of this name (any tenant's: the caller keeps its own).
pub async fn apis_on_tier(db: &AnyPool, tier: &str) -> sqlx::Result<Vec<String>> {
    // language=SQL
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT api_id FROM subscriptions WHERE tier = $1")
            .bind(tier)
            .fetch_all(db)
            .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// The scopes declared by the APIs an application's keys of `key_type` may call (any key
/// type's when `None`): a blocked subscription's API lends none.
pub async fn subscribed_api_scopes(
    db: &sqlx::AnyPool,
    application_id: &str,
    key_type: Option<&str>,
) -> sqlx::Result<Vec<crate::scopes::ApiScope>> {
    let records = subscribed_records(db, application_id, key_type).await?;
    Ok(records
        .iter()
        .flat_map(|record| crate::scopes::declared_by(record))
        .collect())
}
