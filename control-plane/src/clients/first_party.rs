//! The control plane's own web applications as OAuth clients: registered at every start,
//! public (PKCE, no secret to keep), for every tenant's users (`saas_app`), and sent back
//! only to their callback under the issuer, which follows a changed issuer.

use sqlx::AnyPool;

use super::queries::{self, OAuthClient};
use crate::secrets::DataKeys;

/// Registers the web application `client_id` (`name` on the consent page), sent back to
/// `redirect_uri`; a registration under another redirect URI is brought up to date.
pub async fn register(
    db: &AnyPool,
    keys: &DataKeys,
    client_id: &str,
    name: &str,
    redirect_uri: &str,
) -> anyhow::Result<()> {
    match queries::find(db, keys, client_id).await? {
        Some(client) if client.callback_url == redirect_uri => Ok(()),
        Some(_) => {
            // language=SQL
            sqlx::query(
                "UPDATE oauth_clients SET callback_url = $1, redirect_uris = $1 WHERE client_id = $2",
            )
            .bind(redirect_uri)
            .bind(client_id)
            .execute(db)
            .await?;
            Ok(())
        }
        None => {
            let client = OAuthClient {
                client_id: client_id.to_string(),
                client_secret: queries::new_client_secret(),
                client_name: name.to_string(),
                owner: "admin".to_string(),
                callback_url: redirect_uri.to_string(),
                grant_types: "authorization_code refresh_token".to_string(),
                saas_app: 1,
                application_id: None,
                key_type: None,
                validity_secs: None,
                scopes: String::new(),
                allow_domains: String::new(),
                public_client: 1,
                redirect_uris: redirect_uri.to_string(),
            };
            // Another control plane may register it at the same moment: either row serves.
            if let Err(err) = queries::insert(db, keys, &client).await
                && queries::find(db, keys, client_id).await?.is_none()
            {
                return Err(err.into());
            }
            Ok(())
        }
    }
}
