//! The token endpoint's `authorization_code` grant (RFC 6749 §4.1.3, RFC 7636 §4.6): a
//! code redeemed once, by the client it was issued to, with the redirect URI and the PKCE
//! verifier of its request; a code redeemed twice revokes what the first redemption
//! issued. With `openid` asked, an id_token comes along.

use super::id_token;
use super::issue::{
    Params, TokenResponse, granted_scopes, issue_family, lifetime, new_id, param, revoke_family,
};
use crate::authorizations::{self, Redeemed};
use crate::clients::OAuthClient;
use crate::fleet::ManifestHub;
use crate::http::error::OAuthError;
use crate::manifest::Touched;
use crate::state::AppState;
use crate::users;

/// Exchanges a code for tokens.
pub(super) async fn authorization_code_grant(
    state: &AppState,
    client: &OAuthClient,
    params: &Params,
    validity: i64,
) -> Result<TokenResponse, OAuthError> {
    let code = param(params, "code")?;
    let digest = crate::secrets::stored_digest(code);
    let family = new_id();
    let Some(grant) = authorizations::redeem(&state.db, &digest, &family).await? else {
        revoke_what_a_reused_code_issued(state, &digest).await?;
        return Err(OAuthError::invalid_grant(
            "The authorization code is invalid, expired or already used",
        ));
    };
    check_binding(&grant, client, params)?;
    let user = users::find(&state.db, &grant.username)
        .await?
        .filter(|user| !user.disabled)
        .ok_or_else(|| OAuthError::invalid_grant("The user of this code no longer exists"))?;
    let audience = audience(&grant, params)?;
    let scopes = granted_scopes(state, client, &user, &grant.scope).await?;
    let lifetime = lifetime(validity);
    let mut response =
        issue_family(state, client, &user, &scopes, lifetime, family, audience).await?;
    if scopes.iter().any(|s| s == "openid") {
        let claims = id_token::IdTokenClaims::new(
            state,
            &user.username,
            &client.client_id,
            grant.auth_time,
            lifetime.iat,
            lifetime.exp,
            (!grant.nonce.is_empty()).then(|| grant.nonce.clone()),
            &response.access_token,
        );
        response.id_token = Some(id_token::sign(state, &claims)?);
    }
    Ok(response)
}

/// A code is bound to its client, its redirect URI and its PKCE challenge (RFC 6749
/// §4.1.3, RFC 7636 §4.6); a verifier for a code issued without a challenge is a
/// downgrade (OAuth 2.1 §4.1.3).
fn check_binding(
    grant: &Redeemed,
    client: &OAuthClient,
    params: &Params,
) -> Result<(), OAuthError> {
    if grant.client_id != client.client_id {
        return Err(OAuthError::invalid_grant(
            "The authorization code was issued to another client",
        ));
    }
    if params
        .get("redirect_uri")
        .is_some_and(|uri| *uri != grant.redirect_uri)
    {
        return Err(OAuthError::invalid_grant(
            "redirect_uri is not the one of the authorization request",
        ));
    }
    match (grant.code_challenge.is_empty(), params.get("code_verifier")) {
        (true, None) => Ok(()),
        (true, Some(_)) => Err(OAuthError::invalid_grant(
            "code_verifier was sent for a code issued without a code_challenge",
        )),
        (false, Some(verifier))
            if authorizations::verifier_matches(verifier, &grant.code_challenge) =>
        {
            Ok(())
        }
        (false, _) => Err(OAuthError::invalid_grant(
            "code_verifier does not match the code_challenge",
        )),
    }
}

/// The resources the tokens are for: the authorization request's, or the one of them
/// the token request names (RFC 8707 §2.2).
fn audience(grant: &Redeemed, params: &Params) -> Result<Vec<String>, OAuthError> {
    let granted: Vec<String> = grant
        .resource
        .split_whitespace()
        .map(str::to_string)
        .collect();
    match params.get("resource") {
        None => Ok(granted),
        Some(asked) if granted.contains(asked) => Ok(vec![asked.clone()]),
        Some(_) => Err(OAuthError::invalid_target(
            "resource is not one the authorization request named",
        )),
    }
}

/// A code redeemed a second time: the tokens of its first redemption are revoked
/// (RFC 6749 §4.1.2), and gateways learn it.
async fn revoke_what_a_reused_code_issued(
    state: &AppState,
    digest: &str,
) -> Result<(), OAuthError> {
    let Some((client_id, family)) = authorizations::reused_family(&state.db, digest).await? else {
        return Ok(());
    };
    let revoked = revoke_family(state, &client_id, &family, "").await?;
    tracing::warn!(%client_id, "an authorization code was used twice; its tokens are revoked");
    state
        .shared::<ManifestHub>()
        .touch(revoked.into_iter().map(Touched::Revocation));
    Ok(())
}
