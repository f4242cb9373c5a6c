//! A caller with a bearer token for the management API: valid, unrevoked, its user still
//! active, and the scopes it carries.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::jwt::{Claims, verify};
use super::queries::is_revoked;
use crate::error::{Error, Result};
use crate::http::auth::bearer_token;
use crate::scopes::Scope;
use crate::state::AppState;
use crate::users::queries::is_active;
use crate::users::rules::tenant_of;

/// A caller with a valid, unrevoked bearer token.
pub struct Caller {
    /// The token's claims.
    pub claims: Claims,
}

impl Caller {
    /// The user name the token acts for.
    pub fn username(&self) -> &str {
        &self.claims.sub
    }

    /// The caller's tenant domain.
    pub fn tenant(&self) -> &str {
        tenant_of(&self.claims.sub)
    }

    /// Refuses the call, as WSO2 does with 401, unless the token carries the scope.
    pub fn require(&self, state: &AppState, scope: Scope) -> Result<()> {
        if self.claims.has_scope(&state.scopes.name(scope)) {
            Ok(())
        } else {
            Err(Error::Unauthenticated)
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let token = bearer_token(&parts.headers).ok_or(Error::Unauthenticated)?;
        Caller::with_token(state, token).await
    }
}

/// A caller when a bearer token is given (which must then be valid), anonymous without:
/// for the store's public reads.
pub struct MaybeCaller(pub Option<Caller>);

impl FromRequestParts<AppState> for MaybeCaller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        Ok(MaybeCaller(match bearer_token(&parts.headers) {
            Some(token) => Some(Caller::with_token(state, token).await?),
            None => None,
        }))
    }
}

impl Caller {
    /// The caller a bearer token names: valid, unrevoked, its user still active.
    async fn with_token(state: &AppState, token: &str) -> Result<Self> {
        let claims = verify(&state.keys, &state.issuers, token, false)
            .map_err(|_| Error::Unauthenticated)?;
        // An application's token is for its APIs on the gateways, never for managing; so
        // is a token bound to resources (RFC 8707), which name gateways' APIs.
        if claims.application_id.is_some()
            || !claims.aud.is_empty()
            || is_revoked(&state.db, &claims.jti).await?
            || !is_active(&state.db, &claims.sub, claims.issued_ms()).await?
        {
            return Err(Error::Unauthenticated);
        }
        Ok(Caller { claims })
    }
}

/// The tenant whose store is read: `X-WSO2-Tenant` when given (as in WSO2), else the
/// caller's, else the super tenant's.
pub fn store_tenant(headers: &axum::http::HeaderMap, caller: Option<&Caller>) -> String {
    headers
        .get("x-wso2-tenant")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .or_else(|| caller.map(|c| c.tenant().to_string()))
        .unwrap_or_else(|| crate::users::rules::SUPER_TENANT.to_string())
}
