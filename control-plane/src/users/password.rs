//! Passwords: argon2 hashing and checking, bounded so that a burst of logins cannot
//! take every core or gigabytes of memory; why a login could not be checked.

use crate::config::PasswordCost;
use crate::error::Error;
use crate::http::error::{BUSY_RETRY_AFTER_SECS, OAuthError};
use axum::http::StatusCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::Semaphore;

/// Argon2 runs at most this many at once (one per core): each takes about 19 MiB and a
/// core for tens of milliseconds, and a burst of logins must not take gigabytes.
static ARGON2_THREADS: LazyLock<usize> =
    LazyLock::new(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
static ARGON2_PERMITS: LazyLock<Arc<Semaphore>> =
    LazyLock::new(|| Arc::new(Semaphore::new(*ARGON2_THREADS)));
/// Password checks admitted: running, or waiting for one of [`ARGON2_PERMITS`].
static ARGON2_ADMITTED: AtomicUsize = AtomicUsize::new(0);
/// How many password checks may wait for a permit (APIM_ARGON2_QUEUE); past it a login
/// is answered 503 at once rather than queued behind seconds of work.
static ARGON2_QUEUE: AtomicUsize = AtomicUsize::new(32);

/// Whether new hashes take [`PasswordCost::Minimal`] (set once at start-up).
static MINIMAL_COST: AtomicBool = AtomicBool::new(false);

/// Sets the work of the hashes made from now on (the dummy one too, if not made yet).
pub fn set_password_cost(cost: PasswordCost) {
    MINIMAL_COST.store(cost == PasswordCost::Minimal, Ordering::Relaxed);
}

/// The hasher of new hashes; checks read their parameters from the stored hash.
fn hasher() -> Argon2<'static> {
    if !MINIMAL_COST.load(Ordering::Relaxed) {
        return Argon2::default();
    }
    let least = Params::new(Params::MIN_M_COST, Params::MIN_T_COST, 1, None)
        .expect("argon2's least parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, least)
}

/// What a password is checked against when the user does not exist or may not log in
/// now, so that the answer takes as long as a wrong password does.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>()).expect("16 bytes of salt");
    let password: [u8; 32] = rand::random();
    hasher()
        .hash_password(&password, &salt)
        .expect("argon2 with valid parameters")
        .to_string()
});

/// Why a login could not be checked (a wrong password is not an error: `Ok(None)`).
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The client address failed too often lately (429).
    #[error("too many failed logins from this address")]
    Throttled {
        /// Seconds until it may try again.
        retry_after: u64,
    },
    /// Too many password checks are waiting already (503).
    #[error("too many password checks waiting")]
    Busy,
    /// Anything else (500).
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<sqlx::Error> for LoginError {
    fn from(err: sqlx::Error) -> Self {
        LoginError::Internal(err.into())
    }
}

/// Sets how many password checks may wait for a CPU (APIM_ARGON2_QUEUE).
pub fn limit_argon2_queue(waiting: usize) {
    ARGON2_QUEUE.store(waiting, Ordering::Relaxed);
}

/// Computes the dummy hash now rather than at the first unknown user's login (which
/// would then take twice as long as a wrong password).
pub async fn prepare_dummy_hash() -> anyhow::Result<()> {
    tokio::task::spawn_blocking(|| LazyLock::force(&DUMMY_HASH).len()).await?;
    Ok(())
}

/// A place among the admitted password checks, given back when dropped.
struct Admitted(());

impl Admitted {
    /// A place, unless [`ARGON2_QUEUE`] checks wait already.
    fn try_new() -> Option<Self> {
        let limit = *ARGON2_THREADS + ARGON2_QUEUE.load(Ordering::Relaxed);
        if ARGON2_ADMITTED.fetch_add(1, Ordering::AcqRel) >= limit {
            ARGON2_ADMITTED.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Admitted(()))
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        ARGON2_ADMITTED.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Checks a password against a stored argon2 hash (the dummy one for `None`, always
/// false), within the concurrency bound; `Busy` when too many checks wait already.
pub(super) async fn verify_password(
    password: &str,
    hash: Option<String>,
) -> Result<bool, LoginError> {
    let admitted = Admitted::try_new().ok_or(LoginError::Busy)?;
    let password = password.to_string();
    let valid = argon2(move || {
        let _admitted = admitted;
        let hash = hash.as_deref().unwrap_or(DUMMY_HASH.as_str());
        PasswordHash::new(hash)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await?;
    Ok(valid)
}

/// Runs argon2 work off the async threads, at most [`ARGON2_PERMITS`] at a time. The
/// permit goes with the work, which finishes even if the caller gives up waiting.
async fn argon2<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> anyhow::Result<T> {
    let permit = ARGON2_PERMITS.clone().acquire_owned().await?;
    Ok(tokio::task::spawn_blocking(move || {
        let done = work();
        drop(permit);
        done
    })
    .await?)
}

/// Argon2id with a random salt, off the async threads (it is deliberately slow).
pub(super) async fn hash_password(password: &str) -> anyhow::Result<String> {
    let password = password.to_string();
    argon2(move || {
        let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())
            .map_err(|e| anyhow::anyhow!("salt: {e}"))?;
        hasher()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| anyhow::anyhow!("could not hash password: {e}"))
    })
    .await?
}

impl From<LoginError> for Error {
    fn from(err: LoginError) -> Self {
        match err {
            LoginError::Throttled { retry_after } => Error::Throttled(retry_after),
            LoginError::Busy => Error::Busy,
            LoginError::Internal(err) => err.into(),
        }
    }
}

impl From<LoginError> for OAuthError {
    fn from(err: LoginError) -> Self {
        match err {
            LoginError::Throttled { retry_after } => Self::unavailable(
                StatusCode::TOO_MANY_REQUESTS,
                retry_after,
                &format!("Too many failed logins from this address; retry after {retry_after} s"),
            ),
            LoginError::Busy => Self::unavailable(
                StatusCode::SERVICE_UNAVAILABLE,
                BUSY_RETRY_AFTER_SECS,
                "Too many logins are being checked; retry shortly",
            ),
            LoginError::Internal(err) => err.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hash keeps its parameters, so a cheap one is checked cheaply and still only
    /// with its own password.
    #[tokio::test]
    async fn a_minimal_hash_names_its_cost_and_checks_only_its_password() {
        set_password_cost(PasswordCost::Minimal);
        let hash = hash_password("s3cret").await.unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=8,t=1,p=1$"), "{hash}");
        assert!(verify_password("s3cret", Some(hash.clone())).await.unwrap());
        assert!(!verify_password("s3cret ", Some(hash)).await.unwrap());
        assert!(!verify_password("s3cret", None).await.unwrap());
    }
}
