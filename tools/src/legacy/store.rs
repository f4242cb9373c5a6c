//! The developers and their repositories, in a SQLite file that outlives the process.

use std::path::Path;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

/// A developer, as `tns:developer` in developers.xsd.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Developer {
    /// Unique key.
    pub username: String,
    /// Display name.
    pub name: String,
    /// E-mail address.
    pub email: String,
}

/// A repository, as `tns:repo` in developers.xsd.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Repo {
    /// Its name (the original keeps no uniqueness).
    pub name: String,
    /// The owning developer.
    pub username: String,
    /// Fork count (`xs:int`).
    pub forks: i32,
}

/// Why an operation did not happen.
#[derive(Debug)]
pub enum StoreError {
    /// No such developer.
    NotFound,
    /// The database failed.
    Database(sqlx::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        StoreError::Database(err)
    }
}

// Table names match data.sql case-insensitively, so the customer's seed file runs as is.
// As in the original, nothing links a repository to its owner: addRepo checks no owner
// and no duplicate, and a developer's repositories stay when the developer goes.
const SCHEMA: &str = "
CREATE TABLE developer (
    username TEXT PRIMARY KEY,
    name     TEXT NOT NULL,
    email    TEXT NOT NULL
);
CREATE TABLE repo (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    name     TEXT NOT NULL,
    username TEXT NOT NULL,
    forks    INTEGER NOT NULL
);
CREATE INDEX repo_owner ON repo (username);
";

/// Databases made before the stand-in modelled the original kept repositories unique per
/// owner and tied to it; they are rebuilt without either, rows kept.
const UNLINK_REPOS: &str = "
CREATE TABLE repo_unlinked (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    name     TEXT NOT NULL,
    username TEXT NOT NULL,
    forks    INTEGER NOT NULL
);
INSERT INTO repo_unlinked (id, name, username, forks) SELECT id, name, username, forks FROM repo;
DROP TABLE repo;
ALTER TABLE repo_unlinked RENAME TO repo;
CREATE INDEX repo_owner ON repo (username);
";

/// The customer's seed rows (their data.sql, verbatim).
const SEED: &str = include_str!("../../fixtures/legacy-soap/data.sql");

/// The database.
#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
}

impl Store {
    /// Opens (creating it and its directories if need be) the database at `path`. A new
    /// database gets the seed rows; an existing one is left as it is, deletions included.
    /// Returns whether it seeded.
    pub async fn open(path: &Path) -> Result<(Self, bool), sqlx::Error> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .foreign_keys(false);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        let store = Store { pool };
        let seeded = store.create_and_seed().await?;
        Ok((store, seeded))
    }

    /// Creates the tables and seeds them in one transaction, unless they exist (then
    /// unlinks the repositories of an older database).
    async fn create_and_seed(&self) -> Result<bool, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let (tables,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'developer'",
        )
        .fetch_one(&mut *tx)
        .await?;
        if tables > 0 {
            let (linked,): (i64,) = sqlx::query_as(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'repo'
                 AND (sql LIKE '%REFERENCES%' OR sql LIKE '%UNIQUE%')",
            )
            .fetch_one(&mut *tx)
            .await?;
            if linked > 0 {
                sqlx::raw_sql(UNLINK_REPOS).execute(&mut *tx).await?;
                tx.commit().await?;
            }
            return Ok(false);
        }
        sqlx::raw_sql(SCHEMA).execute(&mut *tx).await?;
        sqlx::raw_sql(SEED).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Closes the pool (on shutdown).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The developer called `username`.
    pub async fn developer(&self, username: &str) -> Result<Developer, StoreError> {
        sqlx::query_as("SELECT username, name, email FROM developer WHERE username = ?")
            .bind(username)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// Adds a developer; returns the stored record, or `None` when the user name is taken
    /// (the stored developer is left as it is).
    pub async fn add_developer(
        &self,
        developer: &Developer,
    ) -> Result<Option<Developer>, StoreError> {
        Ok(sqlx::query_as(
            "INSERT INTO developer (username, name, email) VALUES (?, ?, ?)
             ON CONFLICT (username) DO NOTHING RETURNING username, name, email",
        )
        .bind(&developer.username)
        .bind(&developer.name)
        .bind(&developer.email)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Deletes a developer (their repositories stay, as in the original).
    pub async fn delete_developer(&self, username: &str) -> Result<(), StoreError> {
        let deleted = sqlx::query("DELETE FROM developer WHERE username = ?")
            .bind(username)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if deleted == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    /// The repositories of `username` in the order they were added (none for a stranger).
    pub async fn repos(&self, username: &str) -> Result<Vec<Repo>, StoreError> {
        Ok(
            sqlx::query_as("SELECT name, username, forks FROM repo WHERE username = ? ORDER BY id")
                .bind(username)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// Adds a repository, whoever the owner and whatever repositories they have (as the
    /// original does); returns the stored record.
    pub async fn add_repo(&self, repo: &Repo) -> Result<Repo, StoreError> {
        Ok(sqlx::query_as(
            "INSERT INTO repo (name, username, forks) VALUES (?, ?, ?)
             RETURNING name, username, forks",
        )
        .bind(&repo.name)
        .bind(&repo.username)
        .bind(repo.forks)
        .fetch_one(&self.pool)
        .await?)
    }
}
