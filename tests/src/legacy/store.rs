//! The developers and their repositories, in a SQLite file that outlives the process.

use std::path::Path;

use sqlx::error::ErrorKind;
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
    /// Unique per owner.
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
    /// The username is taken.
    DeveloperExists,
    /// The developer already has a repository of that name.
    RepoExists,
    /// The database failed.
    Database(sqlx::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        StoreError::Database(err)
    }
}

// Table names match data.sql case-insensitively, so the customer's seed file runs as is.
// Repos go with their developer (ON DELETE CASCADE).
const SCHEMA: &str = "
CREATE TABLE developer (
    username TEXT PRIMARY KEY,
    name     TEXT NOT NULL,
    email    TEXT NOT NULL
);
CREATE TABLE repo (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    name     TEXT NOT NULL,
    username TEXT NOT NULL REFERENCES developer (username) ON DELETE CASCADE,
    forks    INTEGER NOT NULL,
    UNIQUE (username, name)
);
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
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        let store = Store { pool };
        let seeded = store.create_and_seed().await?;
        Ok((store, seeded))
    }

    /// Creates the tables and seeds them in one transaction, unless they exist.
    async fn create_and_seed(&self) -> Result<bool, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let (tables,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'developer'",
        )
        .fetch_one(&mut *tx)
        .await?;
        if tables > 0 {
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

    /// Adds a developer; returns the stored record.
    pub async fn add_developer(&self, developer: &Developer) -> Result<Developer, StoreError> {
        sqlx::query_as(
            "INSERT INTO developer (username, name, email) VALUES (?, ?, ?)
             ON CONFLICT (username) DO NOTHING RETURNING username, name, email",
        )
        .bind(&developer.username)
        .bind(&developer.name)
        .bind(&developer.email)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::DeveloperExists)
    }

    /// Deletes a developer and, by cascade, their repositories.
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

    /// Adds a repository to an existing developer; returns the stored record.
    pub async fn add_repo(&self, repo: &Repo) -> Result<Repo, StoreError> {
        let inserted = sqlx::query_as(
            "INSERT INTO repo (name, username, forks) VALUES (?, ?, ?)
             ON CONFLICT (username, name) DO NOTHING RETURNING name, username, forks",
        )
        .bind(&repo.name)
        .bind(&repo.username)
        .bind(repo.forks)
        .fetch_optional(&self.pool)
        .await;
        match inserted {
            Ok(Some(stored)) => Ok(stored),
            Ok(None) => Err(StoreError::RepoExists),
            // The foreign key is what tells an unknown owner, without a race against deletes.
            Err(sqlx::Error::Database(e)) if e.kind() == ErrorKind::ForeignKeyViolation => {
                Err(StoreError::NotFound)
            }
            Err(e) => Err(e.into()),
        }
    }
}
