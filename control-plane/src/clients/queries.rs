//! The `clients` table: OAuth clients registered dynamically (RFC 7591) and the consumer
//! keys of store applications; the cache the token endpoint reads them through. Their secrets are stored encrypted with the data key ([`crate::secrets`]) and held in
//! clear only in memory, as read by this module.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::distr::{Alphanumeric, SampleString};
use sqlx::{AnyPool, Executor};
use subtle::ConstantTimeEq;

use crate::secrets::{DataKeys, Field};
use crate::users::{self, User};

/// How long a client read for the token endpoint is used without reading it again:
/// changes made through another control plane sharing the database show within it
/// (this one's own changes clear the cache at once).
const CACHED_FOR: Duration = Duration::from_secs(10);
/// Most clients cached; past it the cache starts over.
const MAX_CACHED: usize = 10_000;

/// An OAuth client, its secret in clear (as read by [`find`] and its kin).
#[derive(Clone, sqlx::FromRow)]
pub struct OAuthClient {
    /// Client id (consumer key).
    pub client_id: String,
    /// Client secret (consumer secret); encrypted in the database.
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
    /// A public client (`token_endpoint_auth_method: none`): it has no secret it could
    /// keep, so it authenticates by its id alone and may only use the authorization code
    /// flow (with PKCE) and refresh its tokens.
    pub public_client: i64,
    /// Redirect URIs registered beside `callback_url`, space separated.
    pub redirect_uris: String,
}

/// Everything but the secret, so that no log can show it.
impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field("client_name", &self.client_name)
            .field("owner", &self.owner)
            .field("application_id", &self.application_id)
            .field("key_type", &self.key_type)
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// The client as read from its row: the secret decrypted.
    fn opened(mut self, keys: &DataKeys) -> anyhow::Result<Self> {
        self.client_secret =
            keys.open(Field::ClientSecret, &self.client_id, &self.client_secret)?;
        Ok(self)
    }

    /// Whether the client may use this grant.
    pub fn allows_grant(&self, grant: &str) -> bool {
        self.grant_types.trim().is_empty()
            || self.grant_types.split_whitespace().any(|g| g == grant)
    }

    /// The public client a metadata document describes (its secret random and never
    /// used: a public client authenticates by its id alone).
    fn described(described: super::metadata_document::Described) -> Self {
        OAuthClient {
            client_id: described.client_id,
            client_secret: new_client_secret() + &new_client_secret(),
            client_name: described.name,
            owner: String::new(),
            callback_url: String::new(),
            grant_types: "authorization_code refresh_token".into(),
            saas_app: 0,
            application_id: None,
            key_type: None,
            validity_secs: None,
            scopes: String::new(),
            allow_domains: String::new(),
            public_client: 1,
            redirect_uris: described.redirect_uris.join(" "),
        }
    }

    /// Whether it is a public client.
    pub fn is_public(&self) -> bool {
        self.public_client != 0
    }

    /// The redirect URIs an authorization may send its code to: `callback_url` and the
    /// others registered, each compared exactly (never a prefix or a pattern).
    pub fn redirect_uris(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.callback_url.trim())
            .chain(self.redirect_uris.split_whitespace())
            .filter(|uri| !uri.is_empty())
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
     saas_app, application_id, key_type, validity_secs, scopes, allow_domains, public_client, \
     redirect_uris";

/// The client with this id.
pub async fn find(
    db: &AnyPool,
    keys: &DataKeys,
    client_id: &str,
) -> anyhow::Result<Option<OAuthClient>> {
    let row: Option<OAuthClient> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM oauth_clients WHERE client_id = $1"
    ))
    .bind(client_id)
    .fetch_optional(db)
    .await?;
    let Some(mut client) = row else {
        return Ok(None);
    };
    // A secret altered in the database authenticates no one (logged), like an unknown id.
    let secret = keys.open_if_intact(
        Field::ClientSecret,
        &client.client_id,
        &client.client_secret,
    )?;
    Ok(secret.map(|secret| {
        client.client_secret = secret;
        client
    }))
}

/// The registered (non-application) client of this owner and name.
pub async fn find_registered(
    db: &AnyPool,
    keys: &DataKeys,
    owner: &str,
    client_name: &str,
) -> anyhow::Result<Option<OAuthClient>> {
    let row: Option<OAuthClient> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM oauth_clients
         WHERE owner = $1 AND client_name = $2 AND application_id IS NULL"
    ))
    .bind(owner)
    .bind(client_name)
    .fetch_optional(db)
    .await?;
    row.map(|client| client.opened(keys)).transpose()
}

/// The key of an application for a key type.
pub async fn find_application_key<'e>(
    db: impl Executor<'e, Database = sqlx::Any>,
    keys: &DataKeys,
    application_id: &str,
    key_type: &str,
) -> anyhow::Result<Option<OAuthClient>> {
    let row: Option<OAuthClient> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM oauth_clients WHERE application_id = $1 AND key_type = $2"
    ))
    .bind(application_id)
    .bind(key_type)
    .fetch_optional(db)
    .await?;
    row.map(|client| client.opened(keys)).transpose()
}

/// Stores a new client, its secret encrypted.
pub async fn insert<'e>(
    db: impl Executor<'e, Database = sqlx::Any>,
    keys: &DataKeys,
    client: &OAuthClient,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "INSERT INTO oauth_clients ({COLUMNS}, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
    ))
    .bind(&client.client_id)
    .bind(keys.seal(
        Field::ClientSecret,
        &client.client_id,
        &client.client_secret,
    ))
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
    .bind(client.public_client)
    .bind(&client.redirect_uris)
    .bind(crate::db::now())
    .execute(db)
    .await
    .map(|_| ())
}

/// Changes an application key's grants and callback URL (WSO2's `updateAuthClient`).
pub async fn update_grants(
    db: &AnyPool,
    client_id: &str,
    grant_types: &str,
    callback_url: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "UPDATE oauth_clients SET grant_types = $1, callback_url = $2
         WHERE client_id = $3 AND application_id IS NOT NULL",
    )
    .bind(grant_types)
    .bind(callback_url)
    .bind(client_id)
    .execute(db)
    .await?;
    Ok(())
}

/// Gives an application key a new secret, stored encrypted; the old one authenticates no
/// one from then on (this control plane's cache is cleared after every change; others
/// sharing the database drop it within [`CACHED_FOR`]).
pub async fn replace_application_secret(
    db: &AnyPool,
    keys: &DataKeys,
    client_id: &str,
    secret: &str,
) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query(
        "UPDATE oauth_clients SET client_secret = $1
         WHERE client_id = $2 AND application_id IS NOT NULL",
    )
    .bind(keys.seal(Field::ClientSecret, client_id, secret))
    .bind(client_id)
    .execute(db)
    .await?;
    Ok(())
}

/// A fresh client id, in WSO2's style (28 alphanumerics).
pub fn new_client_id() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 28)
}

/// A fresh client secret.
pub fn new_client_secret() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 28)
}

/// A client with its owner (the user a client_credentials token acts for, if it exists).
#[derive(Debug, Clone)]
pub struct Principal {
    /// The client.
    pub client: OAuthClient,
    /// Its owner.
    pub owner: Option<User>,
}

/// Clients as the token endpoint reads them on every request, for a few seconds; cleared
/// whenever something changes through this control plane. A token request then costs a
/// signature rather than two queries and a decryption. A client named by the URL of its
/// metadata document, which no row holds, is read from that document and kept as long as
/// it says.
pub struct ClientCache {
    /// What the secrets are decrypted with.
    keys: Arc<DataKeys>,
    /// What fetches client metadata documents, when they are taken.
    documents: Option<super::metadata_document::MetadataFetcher>,
    /// Each client until when it is used without reading it again.
    entries: Mutex<HashMap<String, (Instant, Arc<Principal>)>>,
    /// Bumped at every clearing, so that a client read before a change is not cached after.
    generation: AtomicU64,
}

impl ClientCache {
    /// An empty cache of clients whose secrets `keys` decrypt.
    pub fn new(keys: Arc<DataKeys>) -> Self {
        ClientCache {
            keys,
            documents: None,
            entries: Mutex::default(),
            generation: AtomicU64::default(),
        }
    }

    /// The same cache, taking clients named by their metadata documents too.
    pub fn with_metadata_documents(
        mut self,
        fetcher: super::metadata_document::MetadataFetcher,
    ) -> Self {
        self.documents = Some(fetcher);
        self
    }

    /// The client with this id and its owner; unknown ids are not cached.
    pub async fn get(
        &self,
        db: &AnyPool,
        client_id: &str,
    ) -> anyhow::Result<Option<Arc<Principal>>> {
        if let Some(principal) = self.cached(client_id) {
            return Ok(Some(principal));
        }
        let generation = self.generation.load(Ordering::Acquire);
        let (client, owner, kept_for) = match find(db, &self.keys, client_id).await? {
            Some(client) => {
                let owner = users::find(db, &client.owner).await?;
                (client, owner, CACHED_FOR)
            }
            None => match self.read_metadata_document(client_id).await {
                Some(fetched) => (
                    OAuthClient::described(fetched.client),
                    None,
                    fetched.kept_for,
                ),
                None => return Ok(None),
            },
        };
        let principal = Arc::new(Principal { client, owner });
        let mut entries = self.lock();
        if self.generation.load(Ordering::Acquire) == generation {
            if entries.len() >= MAX_CACHED {
                entries.clear();
            }
            let until = Instant::now() + kept_for;
            entries.insert(client_id.to_string(), (until, principal.clone()));
        }
        Ok(Some(principal))
    }

    /// The client a metadata document at `client_id` describes, if documents are taken,
    /// `client_id` is such a URL, and the document checks out (why not is logged).
    async fn read_metadata_document(
        &self,
        client_id: &str,
    ) -> Option<super::metadata_document::Fetched> {
        let fetcher = self.documents.as_ref()?;
        if !super::metadata_document::is_metadata_url(client_id) {
            return None;
        }
        match fetcher.fetch(client_id).await {
            Ok(fetched) => Some(fetched),
            Err(why) => {
                tracing::info!(%client_id, %why, "a client metadata document was refused");
                None
            }
        }
    }

    /// Forgets every client (something may have changed).
    pub fn clear(&self) {
        let mut entries = self.lock();
        self.generation.fetch_add(1, Ordering::AcqRel);
        entries.clear();
    }

    fn cached(&self, client_id: &str) -> Option<Arc<Principal>> {
        let entries = self.lock();
        let (until, principal) = entries.get(client_id)?;
        (Instant::now() < *until).then(|| principal.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Arc<Principal>)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `(client_id, client_secret as stored)` of every client, for resealing.
pub async fn stored_secrets(db: &AnyPool) -> sqlx::Result<Vec<(String, String)>> {
    // language=SQL
    sqlx::query_as("SELECT client_id, client_secret FROM oauth_clients")
        .fetch_all(db)
        .await
}

/// Replaces a client's stored secret if it is still `stored`; the rows changed (0 or 1).
pub async fn replace_secret(
    db: &AnyPool,
    client_id: &str,
    sealed: &str,
    stored: &str,
) -> sqlx::Result<u64> {
    // language=SQL
    let done = sqlx::query(
        "UPDATE oauth_clients SET client_secret = $1 WHERE client_id = $2 AND client_secret = $3",
    )
    .bind(sealed)
    .bind(client_id)
    .bind(stored)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}
