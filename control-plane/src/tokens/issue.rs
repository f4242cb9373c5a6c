//! Issuing tokens: the access token a grant gives (a JWT, or an opaque token for an
//! application whose `tokenType` is not `JWT`), the refresh family it starts, and the
//! revocation of a family; shared by every grant of the token endpoint.

use std::collections::HashMap;

use serde::Serialize;

use super::jwt::{self as token, Claims};
use super::opaque;
use super::queries::{self, hash};
use crate::clients::OAuthClient;
use crate::db::{now, now_ms};
use crate::http::error::OAuthError;
use crate::scopes::{self, APPLICATION_SCOPE};
use crate::state::AppState;
use crate::users::User;

/// A successful token response (RFC 6749 §5.1).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokenResponse {
    /// A JWT, or an opaque token for an application whose `tokenType` is not `JWT`.
    pub access_token: String,
    /// For grants that may be refreshed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Granted scopes, space separated.
    pub scope: String,
    /// Always Bearer.
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// An OpenID Connect id_token (RS256), for an authorization code asked with `openid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}

pub(super) type Params = HashMap<String, String>;

/// Issues an access token (and a refresh token starting a family, when asked) to
/// `client` acting for `user`.
pub async fn issue(
    state: &AppState,
    client: &OAuthClient,
    user: &User,
    requested_scope: &str,
    validity: i64,
    with_refresh: bool,
) -> Result<TokenResponse, OAuthError> {
    let mut scopes = granted_scopes(state, client, user, requested_scope).await?;
    if !with_refresh && !scopes.iter().any(|s| s == APPLICATION_SCOPE) {
        // WSO2 adds the application scope to client_credentials tokens.
        scopes.push(APPLICATION_SCOPE.to_string());
    }
    let lifetime = lifetime(validity);
    if !with_refresh {
        let claims = claims(state, client, user, &scopes, lifetime, new_id(), Vec::new());
        return respond(state, &claims, None).await;
    }
    issue_family(state, client, user, &scopes, lifetime, new_id(), Vec::new()).await
}

/// Issues an access token and a refresh token starting `family`, bound to `audience`.
pub(super) async fn issue_family(
    state: &AppState,
    client: &OAuthClient,
    user: &User,
    scopes: &[String],
    lifetime: Lifetime,
    family: String,
    audience: Vec<String>,
) -> Result<TokenResponse, OAuthError> {
    let claims = claims(
        state,
        client,
        user,
        scopes,
        lifetime,
        family_jti(&family),
        audience,
    );
    let refresh_token = new_refresh_token(&family);
    let expires_at = claims
        .iat
        .saturating_add(state.config.refresh_token_validity_secs);
    queries::insert_family(
        &state.db,
        &family,
        &hash(&refresh_token),
        &claims,
        expires_at,
    )
    .await?;
    respond(state, &claims, Some(refresh_token)).await
}

/// The scopes a token for `client` acting for `user` gets of those requested: by the
/// user's roles for a registered (management) client; for an application's consumer key
/// only application scopes, never management ones.
pub(super) async fn granted_scopes(
    state: &AppState,
    client: &OAuthClient,
    user: &User,
    requested: &str,
) -> sqlx::Result<Vec<String>> {
    let Some(application_id) = &client.application_id else {
        return Ok(state.scopes.grant(requested, &user.roles));
    };
    let needs_api_scopes = requested
        .split_whitespace()
        .any(|s| !scopes::is_open(s) && !state.scopes.is_management(s));
    let api_scopes = if needs_api_scopes {
        crate::subscriptions::subscribed_api_scopes(
            &state.db,
            application_id,
            client.key_type.as_deref(),
        )
        .await?
    } else {
        Vec::new()
    };
    Ok(state
        .scopes
        .grant_application(requested, &user.roles, &api_scopes))
}

/// When a token is issued and when it expires.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lifetime {
    /// Issued at, Unix milliseconds.
    issued_ms: i64,
    /// Issued at, Unix seconds.
    pub iat: i64,
    /// Expires at, Unix seconds.
    pub exp: i64,
}

/// The lifetime of a token valid for `validity` seconds from now.
pub(super) fn lifetime(validity: i64) -> Lifetime {
    let issued_ms = now_ms();
    let iat = issued_ms / 1000;
    Lifetime {
        issued_ms,
        iat,
        exp: iat.saturating_add(validity),
    }
}

pub(super) fn claims(
    state: &AppState,
    client: &OAuthClient,
    user: &User,
    scopes: &[String],
    lifetime: Lifetime,
    jti: String,
    aud: Vec<String>,
) -> Claims {
    Claims {
        iss: state.issuer.clone(),
        sub: user.username.clone(),
        iat: lifetime.iat,
        iat_ms: Some(lifetime.issued_ms),
        exp: lifetime.exp,
        jti,
        scope: scopes.join(" "),
        client_id: client.client_id.clone(),
        application_id: client.application_id.clone(),
        key_type: client.key_type.clone(),
        aud,
    }
}

/// Issues the access token `claims` describe and answers with it: an opaque token,
/// stored, for an application whose `tokenType` is not `JWT` (WSO2's default is `OAUTH`),
/// else a signed JWT (registered clients' management tokens always are).
pub(super) async fn respond(
    state: &AppState,
    claims: &Claims,
    refresh_token: Option<String>,
) -> Result<TokenResponse, OAuthError> {
    let access_token = if issues_opaque_tokens(state, claims).await? {
        let token = opaque::new_token();
        opaque::insert(&state.db, &hash(&token), claims).await?;
        token
    } else {
        token::sign(&state.keys, claims)?
    };
    Ok(TokenResponse {
        access_token,
        refresh_token,
        scope: claims.scope.clone(),
        token_type: "Bearer",
        expires_in: claims.exp - claims.iat,
        id_token: None,
    })
}

/// Whether the application the token is for (if any) has opaque tokens.
async fn issues_opaque_tokens(state: &AppState, claims: &Claims) -> sqlx::Result<bool> {
    let Some(application_id) = &claims.application_id else {
        return Ok(false);
    };
    let application = crate::applications::find(&state.db, application_id).await?;
    Ok(application.is_some_and(|app| app.token_type != "JWT"))
}

pub(super) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A refresh token: its family, a dot, and a secret (opaque, as WSO2's, and 65
/// characters: naming its family lets any refresh token of a family, spent ones too,
/// revoke it).
pub(super) fn new_refresh_token(family: &str) -> String {
    format!("{family}.{}", new_id())
}

/// The `jti` of an access token of a family: the family, a dot, and its own id.
pub(super) fn family_jti(family: &str) -> String {
    format!("{family}.{}", new_id())
}

/// The family a refresh token names (tokens from before families were their own family,
/// named by their hash).
pub(super) fn family_of_refresh_token(token: &str) -> String {
    match token.split_once('.') {
        Some((family, _)) => family.to_string(),
        None => hash(token),
    }
}

/// Revokes a family of `client_id`'s: the one named, or the one whose access token in use
/// is `access_jti`. Returns the access tokens revoked.
pub(super) async fn revoke_family(
    state: &AppState,
    client_id: &str,
    family: &str,
    access_jti: &str,
) -> sqlx::Result<Vec<String>> {
    let rows = queries::delete_families(&state.db, client_id, family, access_jti).await?;
    let mut revoked = Vec::new();
    for row in rows {
        for (jti, exp) in [
            (row.access_jti, row.access_exp),
            (row.spent_jti, row.spent_exp),
        ] {
            if !jti.is_empty() && exp > now() {
                queries::insert_revocation(&state.db, &jti, exp).await?;
                revoked.push(jti);
            }
        }
    }
    Ok(revoked)
}

pub(super) fn param<'a>(params: &'a Params, name: &str) -> Result<&'a str, OAuthError> {
    params
        .get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OAuthError::invalid_request(format!("Missing parameter: {name}")))
}
