//! OAuth clients: those registered dynamically and the consumer keys of store applications.

use rand::distr::{Alphanumeric, SampleString};
use sqlx::{AnyPool, Executor};
use subtle::ConstantTimeEq;

/// An OAuth client as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OAuthClient {
    /// Client id (consumer key).
    pub client_id: String,
    /// Client secret (consumer secret).
    pub client_secret: String,
    /// Registered name.
    pub client_name: String,
    /// Owning user.
    pub owner: String,
    /// Callback URL, possibly empty.
    pub callback_url: String,
    /// Allowed grant types, space separated; empty allows every grant.
    pub grant_types: String,
    /// Whether it is a multi-tenant (SaaS) client.
    pub saas_app: i64,
    /// The store application whose key this is.
    pub application_id: Option<String>,
    /// PRODUCTION or SANDBOX, for application keys.
    pub key_type: Option<String>,
    /// Default access-token validity, seconds.
    pub validity_secs: Option<i64>,
    /// Scopes requested at key generation, space separated.
    pub scopes: String,
    /// Allowed domains, space separated.
    pub allow_domains: String,
}

impl OAuthClient {
    /// Whether the client may use this grant.
    pub fn allows_grant(&self, grant: &str) -> bool {
        self.grant_types.trim().is_empty()
            || self.grant_types.split_whitespace().any(|g| g == grant)
    }

    /// Compares a presented secret in constant time.
    pub fn secret_matches(&self, presented: &str) -> bool {
        self.client_secret
            .as_bytes()
            .ct_eq(presented.as_bytes())
            .into()
    }
}

const COLUMNS: &str = "client_id, client_secret, client_name, owner, callback_url, grant_types, \
     saas_app, application_id, key_type, validity_secs, scopes, allow_domains";

/// The client with this id.
pub async fn find(db: &AnyPool, client_id: &str) -> sqlx::Result<Option<OAuthClient>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM oauth_clients WHERE client_id = $1"
    ))
    .bind(client_id)
    .fetch_optional(db)
    .await
}

/// The registered (non-application) client of this owner and name.
pub async fn find_registered(
    db: &AnyPool,
    owner: &str,
    client_name: &str,
) -> sqlx::Result<Option<OAuthClient>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM oauth_clients
         WHERE owner = $1 AND client_name = $2 AND application_id IS NULL"
    ))
    .bind(owner)
    .bind(client_name)
    .fetch_optional(db)
    .await
}

/// The key of an application for a key type.
pub async fn find_application_key<'e>(
    db: impl Executor<'e, Database = sqlx::Any>,
    application_id: &str,
    key_type: &str,
) -> sqlx::Result<Option<OAuthClient>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM oauth_clients WHERE application_id = $1 AND key_type = $2"
    ))
    .bind(application_id)
    .bind(key_type)
    .fetch_optional(db)
    .await
}

/// Stores a new client.
pub async fn insert<'e>(
    db: impl Executor<'e, Database = sqlx::Any>,
    client: &OAuthClient,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "INSERT INTO oauth_clients ({COLUMNS}, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    ))
    .bind(&client.client_id)
    .bind(&client.client_secret)
    .bind(&client.client_name)
    .bind(&client.owner)
    .bind(&client.callback_url)
    .bind(&client.grant_types)
    .bind(client.saas_app)
    .bind(&client.application_id)
    .bind(&client.key_type)
    .bind(client.validity_secs)
    .bind(&client.scopes)
    .bind(&client.allow_domains)
    .bind(crate::db::now())
    .execute(db)
    .await
    .map(|_| ())
}

/// A fresh client id, in WSO2's style (28 alphanumerics).
pub fn new_client_id() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 28)
}

/// A fresh client secret.
pub fn new_client_secret() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 28)
}
