//! The database: SQLite by default, PostgreSQL for a `postgres://` URL, one schema for both.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor};

/// Migrations embedded at build time; applied at every start.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Connections held open to PostgreSQL unless `APIM_DATABASE_MAX_CONNECTIONS` says.
pub const DEFAULT_POOL_SIZE: u32 = 16;

/// Opens the pool and brings the schema up to date.
pub async fn connect(url: &str) -> anyhow::Result<AnyPool> {
    connect_with_pool_size(url, DEFAULT_POOL_SIZE).await
}

/// Like [`connect`], holding at most `pool_size` connections to PostgreSQL.
pub async fn connect_with_pool_size(url: &str, pool_size: u32) -> anyhow::Result<AnyPool> {
    sqlx::any::install_default_drivers();
    let is_sqlite = url.starts_with("sqlite:");
    let options = AnyConnectOptions::from_str(url)
        .with_context(|| format!("invalid database URL {}", redact(url)))?;
    // SQLite has one writer at a time; a single connection makes every transaction
    // serial instead of failing with "database is locked" under concurrent writes.
    let max_connections = if is_sqlite { 1 } else { pool_size };
    if is_sqlite {
        restrict_sqlite_files(url)?;
    }
    let pool = AnyPoolOptions::new()
        .after_connect(move |connection, _| {
            Box::pin(async move {
                if is_sqlite {
                    // 16 MiB of pages rather than 2: the tables every request reads stay
                    // in it with thousands of APIs. Not more: whole-manifest reads fill
                    // any size (the database is 73 MiB with 10,000 APIs), all of it
                    // resident, while a miss is a read from the kernel's page cache and
                    // 64 MiB timed no better.
                    connection.execute("PRAGMA cache_size = -16384").await?;
                    // Freed space is zeroed, so that a value replaced (a secret once in
                    // clear, before it was encrypted) does not linger in the file.
                    connection.execute("PRAGMA secure_delete = ON").await?;
                    // An API's documents, thumbnail, WSDL and mediation policies go with
                    // it by ON DELETE CASCADE; sqlx turns this on by default, said here so
                    // that it stays on whatever the URL asks.
                    connection.execute("PRAGMA foreign_keys = ON").await?;
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

/// The file a SQLite URL names (`sqlite://path?...`, `sqlite:path`); none in memory.
fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let in_memory =
        path.is_empty() || path.starts_with(":memory:") || query.contains("mode=memory");
    (!in_memory).then(|| PathBuf::from(path))
}

/// The database file readable by its owner only, and so its `-wal` and `-shm` files,
/// which SQLite creates with the database file's mode: a new file is created 0600 before
/// SQLite opens it (when the URL lets SQLite create it), and existing ones from earlier
/// versions (0644) are narrowed.
fn restrict_sqlite_files(url: &str) -> anyhow::Result<()> {
    let Some(path) = sqlite_file(url) else {
        return Ok(());
    };
    if url.contains("mode=rwc") && !path.exists() {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options
            .open(&path)
            .with_context(|| format!("could not create {}", path.display()))?;
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.clone().into_os_string();
        file.push(suffix);
        let file = PathBuf::from(file);
        if file.exists() {
            crate::signing::restrict_file(&file)?;
        }
    }
    Ok(())
}

/// On SQLite, moves what the write-ahead log holds into the database file and empties
/// the log, whose old frames would otherwise keep earlier versions of rewritten rows
/// (secrets once in clear) until overwritten. Nothing to do on PostgreSQL.
pub async fn truncate_sqlite_log(db: &AnyPool) -> anyhow::Result<()> {
    if db.connect_options().database_url.scheme() == "sqlite" {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_optional(db)
            .await
            .context("could not checkpoint SQLite's write-ahead log")?;
    }
    Ok(())
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

/// Copies the rows of `table` that belong to API `from` (its `api_id`) to API `to`, the
/// `columns` as they are; rows keyed by an `id` of their own (`with_new_ids`) each get a
/// new one. For the content a new version of an API takes along.
pub async fn copy_api_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    table: &str,
    columns: &str,
    from: &str,
    to: &str,
    with_new_ids: bool,
) -> sqlx::Result<()> {
    if !with_new_ids {
        // language=SQL
        let copy = format!(
            "INSERT INTO {table} (api_id, {columns}) SELECT $1, {columns} FROM {table} WHERE api_id = $2"
        );
        sqlx::query(&copy)
            .bind(to)
            .bind(from)
            .execute(&mut **tx)
            .await?;
        return Ok(());
    }
    // language=SQL
    let select = format!("SELECT id FROM {table} WHERE api_id = $1");
    let ids: Vec<(String,)> = sqlx::query_as(&select)
        .bind(from)
        .fetch_all(&mut **tx)
        .await?;
    // language=SQL
    let copy = format!(
        "INSERT INTO {table} (id, api_id, {columns}) SELECT $1, $2, {columns} FROM {table} WHERE id = $3"
    );
    for (id,) in ids {
        sqlx::query(&copy)
            .bind(uuid::Uuid::new_v4().to_string())
            .bind(to)
            .bind(&id)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Deletes the rows of `table` that belong to API `api_id` (its `api_id`): the content an
/// import replaces.
pub async fn delete_api_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    table: &str,
    api_id: &str,
) -> sqlx::Result<()> {
    // language=SQL
    let delete = format!("DELETE FROM {table} WHERE api_id = $1");
    sqlx::query(&delete).bind(api_id).execute(&mut **tx).await?;
    Ok(())
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    now_ms() / 1000
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// Whether an sqlx error is a unique-constraint violation (a concurrent duplicate).
pub fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// Whether an sqlx error is a foreign-key violation (the row it refers to went).
pub fn is_foreign_key_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_foreign_key_violation())
}

/// Whether an sqlx error says the database cannot serve right now rather than that the
/// request or the code is wrong: the connection broke or was refused (a restart, a
/// failover), no connection came free within the pool's acquire timeout, or the server
/// is shutting down, starting up or out of connections (SQLSTATE class 08, 57P01-57P03,
/// 53300), or SQLite's file is locked by another process. The same request may succeed
/// a moment later, so it is answered 503, not 500.
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                unavailable_sqlstate(pg.code())
            } else if let Some(sqlite) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                sqlx::error::DatabaseError::code(sqlite)
                    .and_then(|code| code.parse::<u32>().ok())
                    .is_some_and(sqlite_busy)
            } else {
                false
            }
        }
        _ => false,
    }
}

/// PostgreSQL's connection exceptions (class 08), `admin_shutdown`, `crash_shutdown`,
/// `cannot_connect_now` and `too_many_connections`.
fn unavailable_sqlstate(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}

/// `SQLITE_BUSY` and `SQLITE_LOCKED`, extended codes included (the primary code is the
/// low byte).
fn sqlite_busy(code: u32) -> bool {
    matches!(code & 0xff, 5 | 6)
}

/// Rows read per query when many are asked for by key.
pub const KEYS_PER_QUERY: usize = 400;

/// The rows of `select`, which ends with the column to match, whose column is one of
/// `keys`: `select IN ($1, $2, ...)`, a chunk of keys at a time.
pub async fn rows_in<R>(db: &AnyPool, select: &str, keys: &[&str]) -> sqlx::Result<Vec<R>>
where
    R: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
{
    let mut rows = Vec::new();
    for chunk in keys.chunks(KEYS_PER_QUERY) {
        let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
        let sql = format!("{select} IN ({})", placeholders.join(", "));
        let mut query = sqlx::query_as::<_, R>(&sql);
        for key in chunk {
            query = query.bind(*key);
        }
        rows.extend(query.fetch_all(db).await?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn sqlite_files_are_found_in_urls() {
        use super::sqlite_file;
        assert_eq!(
            sqlite_file("sqlite://dir/apim.db?mode=rwc"),
            Some("dir/apim.db".into())
        );
        assert_eq!(sqlite_file("sqlite:/abs/x.db"), Some("/abs/x.db".into()));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("sqlite://x?mode=memory"), None);
        assert_eq!(sqlite_file("postgres://h/db"), None);
    }

    #[test]
    fn unavailable_databases_are_told_from_failing_requests() {
        use super::{is_unavailable, sqlite_busy, unavailable_sqlstate};
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(is_unavailable(&sqlx::Error::Io(refused)));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(is_unavailable(&sqlx::Error::Io(reset)));
        assert!(is_unavailable(&sqlx::Error::PoolTimedOut));
        assert!(is_unavailable(&sqlx::Error::PoolClosed));
        assert!(!is_unavailable(&sqlx::Error::RowNotFound));
        assert!(!is_unavailable(&sqlx::Error::ColumnNotFound("x".into())));
        // admin_shutdown is what a restart sends the sessions it ends.
        for code in ["57P01", "57P02", "57P03", "53300", "08006", "08001"] {
            assert!(unavailable_sqlstate(code), "{code}");
        }
        // unique_violation, syntax_error, serialization_failure: the request's business.
        for code in ["23505", "42601", "40001"] {
            assert!(!unavailable_sqlstate(code), "{code}");
        }
        // SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT (517), SQLITE_LOCKED; not SQLITE_CONSTRAINT.
        assert!(sqlite_busy(5) && sqlite_busy(517) && sqlite_busy(6));
        assert!(!sqlite_busy(19) && !sqlite_busy(2067));
    }

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite://x.db"), "sqlite://x.db");
    }
}
