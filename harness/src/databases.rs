//! The tests' PostgreSQL databases, made and dropped off the tests' path: creating one
//! takes about 170 ms of the server's fsyncs and dropping it 60 ms, which a test would
//! otherwise wait for. A thread of this process keeps [`READY`] fresh databases in stock
//! and drops those handed back; a test takes a stocked one at once, or makes its own
//! when the stock is empty.
//!
//! Each is a copy of a template database the control plane's migrations have already
//! run on (made once per set of migrations), so that a control plane starting on it
//! finds its schema in place rather than spending 120 ms migrating; the template itself
//! is migrated from empty by the control plane's own code, every time the migrations
//! change.
//!
//! Names carry this process's id (`apim_test_<pid>_<uuid>`), so that what a process
//! left behind when it ended (its stock, its last drops) is dropped by the next one
//! once that process is gone.

use std::collections::VecDeque;
use std::sync::{Condvar, LazyLock, Mutex};

use sqlx::{Connection, PgConnection};

use crate::postgres_admin_url;

/// Fresh databases kept ready.
const READY: usize = 2;

/// A database made for one test: its name (on the server of [`postgres_admin_url`]).
pub async fn fresh() -> String {
    if let Some(name) = STOCK.take() {
        return name;
    }
    let name = new_name();
    let mut admin = connect_admin().await;
    create(&mut admin, &name)
        .await
        .expect("create test database");
    name
}

/// The migrated template, made on first use; `None` if it could not be made (each
/// database is then made empty and migrated by its control plane).
async fn template() -> Option<&'static str> {
    static TEMPLATE: tokio::sync::OnceCell<Option<String>> = tokio::sync::OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let made = make_template().await;
            if let Err(err) = &made {
                eprintln!("no migrated template database, each test migrates its own: {err}");
            }
            made.ok()
        })
        .await
        .as_deref()
}

/// The template of this set of migrations: found, or migrated under a name of this
/// process's and then renamed into place, so that no test ever copies a half-made one.
async fn make_template() -> anyhow::Result<String> {
    let name = format!("apim_template_{:016x}", migrations_hash()?);
    let mut admin = PgConnection::connect(&postgres_admin_url()).await?;
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_optional(&mut admin)
        .await?;
    if exists.is_some() {
        return Ok(name);
    }
    let draft = new_name();
    sqlx::query(&format!("CREATE DATABASE {draft}"))
        .execute(&mut admin)
        .await?;
    let pool = control_plane::db::connect(&url_of(&draft)).await?;
    pool.close().await;
    // The pool's server processes end a moment after it closes; until then the draft
    // cannot be renamed.
    for _ in 0..50 {
        let renamed = sqlx::query(&format!("ALTER DATABASE {draft} RENAME TO {name}"))
            .execute(&mut admin)
            .await;
        match renamed {
            Ok(_) => return Ok(name),
            Err(err) if !is_in_use(&err) => {
                // Another process put the same template in place meanwhile.
                let _ = drop_database(&mut admin, &draft).await;
                return Ok(name);
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
    let _ = drop_database(&mut admin, &draft).await;
    anyhow::bail!("the migrated draft {draft} stayed in use")
}

/// Whether PostgreSQL refused because others are connected (SQLSTATE 55006).
fn is_in_use(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "55006")
}

/// What identifies the control plane's migrations: their names and texts.
fn migrations_hash() -> std::io::Result<u64> {
    use std::hash::{Hash, Hasher};
    let dir = crate::workspace_root().join("control-plane/migrations");
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    let mut hasher = std::hash::DefaultHasher::new();
    for file in files {
        file.file_name().hash(&mut hasher);
        std::fs::read(&file)?.hash(&mut hasher);
    }
    Ok(hasher.finish())
}

/// The URL of database `name` on the tests' server.
pub fn url_of(name: &str) -> String {
    let admin = postgres_admin_url();
    let base = admin
        .rsplit_once('/')
        .map(|(base, _)| base)
        .unwrap_or(&admin);
    format!("{base}/{name}")
}

/// Hands `name` back: it is dropped on the stock's thread, the caller does not wait.
pub fn hand_back(name: String) {
    STOCK.hand_back(name);
}

/// What the stock's thread has to do, under one lock.
#[derive(Default)]
struct Work {
    ready: VecDeque<String>,
    to_drop: Vec<String>,
    /// Whether the stock's thread runs (it starts at the first call).
    started: bool,
}

struct Stock {
    work: Mutex<Work>,
    changed: Condvar,
}

static STOCK: LazyLock<Stock> = LazyLock::new(|| Stock {
    work: Mutex::new(Work::default()),
    changed: Condvar::new(),
});

impl Stock {
    /// A stocked database, if one is ready; either way the thread refills the stock.
    fn take(&'static self) -> Option<String> {
        let mut work = self.lock();
        self.start(&mut work);
        let name = work.ready.pop_front();
        self.changed.notify_all();
        name
    }

    fn hand_back(&'static self, name: String) {
        let mut work = self.lock();
        self.start(&mut work);
        work.to_drop.push(name);
        self.changed.notify_all();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Work> {
        self.work.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start(&'static self, work: &mut Work) {
        if work.started {
            return;
        }
        work.started = true;
        std::thread::Builder::new()
            .name("test-databases".into())
            .spawn(move || self.run())
            .expect("start the test databases' thread");
    }

    /// The stock's thread: sweeps what ended processes left, then makes and drops
    /// databases as asked, for as long as the process runs.
    fn run(&self) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the test databases");
        runtime.block_on(async {
            let mut admin = reconnect_admin().await;
            sweep_ended_processes(&mut admin).await;
            loop {
                let (to_drop, make) = self.next_work();
                let mut failed = false;
                for name in to_drop {
                    failed |= drop_database(&mut admin, &name).await.is_err();
                }
                if make {
                    let name = new_name();
                    match create(&mut admin, &name).await {
                        Ok(()) => self.lock().ready.push_back(name),
                        Err(_) => failed = true,
                    }
                }
                if failed {
                    // The server may have gone away for a while (a fault test stops it).
                    admin = reconnect_admin().await;
                }
            }
        });
    }

    /// Waits for something to do: databases to drop, or a stock below [`READY`].
    fn next_work(&self) -> (Vec<String>, bool) {
        let mut work = self.lock();
        loop {
            let make = work.ready.len() < READY;
            if make || !work.to_drop.is_empty() {
                return (std::mem::take(&mut work.to_drop), make);
            }
            work = self.changed.wait(work).unwrap_or_else(|p| p.into_inner());
        }
    }
}

fn new_name() -> String {
    format!(
        "apim_test_{}_{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    )
}

/// A connection to the server; while it has no connection slot free (other tests' control
/// planes hold them), waited for up to a minute.
async fn connect_admin() -> PgConnection {
    let admin = postgres_admin_url();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match PgConnection::connect(&admin).await {
            Ok(connection) => return connection,
            Err(err) if is_full(&err) && std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await
            }
            Err(err) => panic!("PostgreSQL at {admin} is needed for the tests: {err}"),
        }
    }
}

/// Whether PostgreSQL refused a connection for want of a free slot (SQLSTATE 53300).
fn is_full(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "53300")
}

/// A connection to the server, waited for while it is down.
async fn reconnect_admin() -> PgConnection {
    loop {
        match PgConnection::connect(&postgres_admin_url()).await {
            Ok(admin) => return admin,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
        }
    }
}

/// Creates `name` as a copy of the migrated template, or empty when there is none or
/// the copy fails (a template dropped under it).
async fn create(admin: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    if let Some(template) = template().await {
        let copied = sqlx::query(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .execute(&mut *admin)
            .await;
        if copied.is_ok() {
            return Ok(());
        }
    }
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(admin)
        .await
        .map(drop)
}

async fn drop_database(admin: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(admin)
        .await
        .map(drop)
}

/// Drops the databases of test processes that are no longer running, and templates of
/// migrations that are no longer these.
async fn sweep_ended_processes(admin: &mut PgConnection) {
    let current = migrations_hash().map(|hash| format!("apim_template_{hash:016x}"));
    let templates: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'apim_template_%'")
            .fetch_all(&mut *admin)
            .await
            .unwrap_or_default();
    for name in templates {
        if current.as_ref().is_ok_and(|current| *current != name) {
            let _ = drop_database(admin, &name).await;
        }
    }
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'apim_test_%'")
            .fetch_all(&mut *admin)
            .await
            .unwrap_or_default();
    for name in names {
        if owner_ended(&name) {
            let _ = drop_database(admin, &name).await;
        }
    }
}

/// Whether `name` is of this machine's naming and its process has ended.
fn owner_ended(name: &str) -> bool {
    let Some((pid, _)) = name
        .strip_prefix("apim_test_")
        .and_then(|rest| rest.split_once('_'))
    else {
        return false;
    };
    pid.parse::<u32>().is_ok_and(|pid| {
        pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_of_ended_processes_are_swept() {
        assert!(!owner_ended(&new_name()), "this process runs");
        assert!(owner_ended("apim_test_4294967295_0123abcd"));
        assert!(!owner_ended("apim_test_0123456789abcdef0123456789abcdef"));
        assert!(!owner_ended("apim_test_1_x"), "pid 1 runs");
        assert!(!owner_ended("other_4294967295_x"));
    }
}
