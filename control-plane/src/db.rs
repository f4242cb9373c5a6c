//! The database: SQLite by default, PostgreSQL for a `postgres://` URL, one schema for both.

use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

/// Migrations embedded at build time; applied at every start.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Opens the pool and brings the schema up to date.
pub async fn connect(url: &str) -> anyhow::Result<AnyPool> {
    sqlx::any::install_default_drivers();
    let is_sqlite = url.starts_with("sqlite:");
    let options = AnyConnectOptions::from_str(url)
        .with_context(|| format!("invalid database URL {}", redact(url)))?;
    // SQLite has one writer at a time; a single connection makes every transaction
    // serial instead of failing with "database is locked" under concurrent writes.
    let max_connections = if is_sqlite { 1 } else { 16 };
    let pool = AnyPoolOptions::new()
        .after_connect(move |connection, _| {
            Box::pin(async move {
                if is_sqlite {
                    // 64 MiB of pages rather than 2: with thousands of APIs the database
                    // outgrows the default, and every miss is a read from the file.
                    connection.execute("PRAGMA cache_size = -65536").await?;
                }
                Ok(())
            })
        })
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await
        .with_context(|| format!("could not connect to {}", redact(url)))?;
    if is_sqlite {
        // Write-ahead logging: a commit appends to the log (one sync) instead of
        // rewriting pages through a rollback journal, and readers do not block the writer.
        // It stays set in the file.
        sqlx::query("PRAGMA journal_mode = WAL")
            .fetch_optional(&pool)
            .await
            .context("could not switch SQLite to write-ahead logging")?;
    }
    MIGRATOR
        .run(&pool)
        .await
        .context("could not apply database migrations")?;
    Ok(pool)
}

/// Hides a password in a database URL for logs and errors.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}://{user}:***{}", &url[..scheme_end], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// Whether an sqlx error is a unique-constraint violation (a concurrent duplicate).
pub fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite://x.db"), "sqlite://x.db");
    }
}
