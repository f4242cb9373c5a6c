//! Resealing: every secret at rest re-encrypted under the active data key.

use anyhow::Context;
use sqlx::AnyPool;

use super::keys::{DataKeys, Field};
use crate::apis::{self, ApiRecord};
use crate::clients;

/// What [`reseal_all`] re-encrypted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Resealed {
    /// Client and consumer secrets.
    pub client_secrets: usize,
    /// Backend passwords of API records.
    pub backend_passwords: usize,
}

/// Re-encrypts under the active key every secret that is not under it (values in clear
/// from earlier versions included). Each row is replaced only if it is still as read, so a
/// change made meanwhile by a running control plane is never lost (a value it wrote is
/// already encrypted, with the key it had). On SQLite, freed space is zeroed
/// (`secure_delete`) and the write-ahead log emptied afterwards, so no old copy stays in
/// the files; PostgreSQL keeps dead row versions until its next vacuum.
pub async fn reseal_all(db: &AnyPool, keys: &DataKeys) -> anyhow::Result<Resealed> {
    let resealed = Resealed {
        client_secrets: reseal_client_secrets(db, keys).await?,
        backend_passwords: reseal_backend_passwords(db, keys).await?,
    };
    if resealed != Resealed::default() {
        // The values replaced, in clear or under an old key, leave no copy behind.
        crate::db::truncate_sqlite_log(db).await?;
    }
    Ok(resealed)
}

async fn reseal_client_secrets(db: &AnyPool, keys: &DataKeys) -> anyhow::Result<usize> {
    let rows = clients::stored_secrets(db).await?;
    let mut resealed = 0;
    for (client_id, stored) in rows.iter().filter(|(_, s)| keys.needs_resealing(s)) {
        let clear = keys.open(Field::ClientSecret, client_id, stored)?;
        let sealed = keys.seal(Field::ClientSecret, client_id, &clear);
        resealed += clients::replace_secret(db, client_id, &sealed, stored).await? as usize;
    }
    Ok(resealed)
}

async fn reseal_backend_passwords(db: &AnyPool, keys: &DataKeys) -> anyhow::Result<usize> {
    let rows = apis::records_with_password(db).await?;
    let mut resealed = 0;
    for (id, text) in rows {
        let mut record: ApiRecord = serde_json::from_str(&text)
            .with_context(|| format!("stored record of API {id} is unreadable"))?;
        let Some(stored) = record.stored_backend_password() else {
            continue;
        };
        if !keys.needs_resealing(&stored) {
            continue;
        }
        let clear = keys.open(Field::BackendPassword, &id, &stored)?;
        record.set_backend_password(keys.seal(Field::BackendPassword, &id, &clear));
        let record = serde_json::to_string(&record)?;
        resealed += apis::replace_record(db, &id, &record, &text).await? as usize;
    }
    Ok(resealed)
}
