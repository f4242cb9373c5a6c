//! Password logins: checked against the store, behind the lock-out, remembered a while.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use sqlx::AnyPool;
use subtle::ConstantTimeEq;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::lockout::{Lockout, LockoutPolicy, LoginState};
use super::password::{LoginError, verify_password};
use super::queries::find_with_hash;
use super::records::User;
use crate::error::{Error, Result};
use crate::http::auth::{basic_credentials, client_address};
use crate::state::AppState;

/// How long a verified password is remembered.
const VERIFIED_FOR: Duration = Duration::from_secs(300);
/// Most users remembered at once; past it the memory starts over.
const MAX_REMEMBERED: usize = 10_000;

/// Password logins: the lock-out and throttle of failed ones, and recently verified
/// passwords, so that a client that logs in again and again (a password grant per call,
/// HTTP Basic on every registration) pays argon2 once every few minutes rather than every
/// time. It holds, per user, an HMAC (under a key of this process) of the password and of
/// the stored hash it matched: a changed password never matches, and failed attempts are
/// never remembered, so guessing still costs argon2.
pub struct VerifiedLogins {
    key: [u8; 32],
    remembered: Mutex<HashMap<String, (Instant, [u8; 32])>>,
    lockout: Lockout,
}

impl Default for VerifiedLogins {
    fn default() -> Self {
        Self::new(LockoutPolicy::default())
    }
}

impl VerifiedLogins {
    /// Logins under this lock-out policy.
    pub fn new(policy: LockoutPolicy) -> Self {
        VerifiedLogins {
            key: rand::random(),
            remembered: Mutex::default(),
            lockout: Lockout::new(policy),
        }
    }

    /// The user, if the password is right and the user name is not locked out. A wrong
    /// password, an unknown user and a locked one are answered alike and cost the same
    /// argon2 check, so that neither the answer nor its time tells them apart.
    pub async fn authenticate(
        &self,
        db: &AnyPool,
        username: &str,
        password: &str,
        from: IpAddr,
    ) -> Result<Option<User>, LoginError> {
        if let Some(retry_after) = self.lockout.address_wait(from) {
            return Err(LoginError::Throttled { retry_after });
        }
        // A disabled account costs and answers what an unknown one does.
        let found = find_with_hash(db, username)
            .await?
            .filter(|(user, _)| !user.disabled);
        let state = super::lockout::state(db, username).await?;
        let candidate = found.filter(|_| matches!(state, LoginState::Open { .. }));
        if let Some((user, hash)) = &candidate {
            let fingerprint = self.fingerprint(username, password, hash);
            if self.remembers(username, &fingerprint) {
                self.lockout.succeeded(db, username, &state).await?;
                return Ok(Some(user.clone()));
            }
        }
        let hash = candidate.as_ref().map(|(_, hash)| hash.clone());
        let valid = verify_password(password, hash).await?;
        match candidate {
            Some((user, hash)) if valid => {
                self.remember(username, self.fingerprint(username, password, &hash));
                self.lockout.succeeded(db, username, &state).await?;
                Ok(Some(user))
            }
            _ => {
                crate::ops::metrics::metrics().login_failed();
                self.lockout.failed(db, username, from, &state).await?;
                Ok(None)
            }
        }
    }

    fn fingerprint(&self, username: &str, password: &str, hash: &str) -> [u8; 32] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        for part in [username, password, hash] {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part.as_bytes());
        }
        mac.finalize().into_bytes().into()
    }

    fn remembers(&self, username: &str, fingerprint: &[u8; 32]) -> bool {
        let remembered = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        remembered.get(username).is_some_and(|(at, known)| {
            at.elapsed() < VERIFIED_FOR && bool::from(known.ct_eq(fingerprint))
        })
    }

    fn remember(&self, username: &str, fingerprint: [u8; 32]) {
        let mut remembered = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        if remembered.len() >= MAX_REMEMBERED {
            remembered.clear();
        }
        remembered.insert(username.to_string(), (Instant::now(), fingerprint));
    }
}

/// A user authenticated by HTTP Basic (registration and admin calls).
pub struct BasicUser(pub User);

impl FromRequestParts<AppState> for BasicUser {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let (username, password) =
            basic_credentials(&parts.headers).ok_or(Error::Unauthenticated)?;
        let from = client_address(parts, state);
        state
            .shared::<VerifiedLogins>()
            .authenticate(&state.db, &username, &password, from)
            .await?
            .map(BasicUser)
            .ok_or(Error::Unauthenticated)
    }
}
