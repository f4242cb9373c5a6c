//! Failed logins: the lock-out of a user name after consecutive failures (kept in the
//! database, so that it holds across restarts and across control planes sharing one) and
//! the throttle of failures per client address (in memory: each control plane counts
//! what it sees). User names are counted whether or not such a user exists, so that a
//! lock-out tells nothing of who does.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use sqlx::AnyPool;

use super::rules::validate_username;
use crate::config::Config;
use crate::db::now;

/// Failures this old are forgotten: a user who mistypes now and then is never locked.
const FORGOTTEN_AFTER_SECS: i64 = 24 * 3600;
/// Forgotten rows are deleted at most this often.
const PRUNE_EVERY_SECS: i64 = 60;
/// Most addresses counted at once; past it, new addresses are not counted until windows end.
const MAX_COUNTED_ADDRESSES: usize = 100_000;

/// What the configuration says about failed logins.
#[derive(Debug, Clone)]
pub struct LockoutPolicy {
    /// Consecutive failures that lock a user name; 0 never locks.
    pub max_failures: u32,
    /// How long a lock lasts, seconds.
    pub lock_secs: i64,
    /// Failures one address may make within `address_window`; 0 never throttles.
    pub address_max_failures: u32,
    /// The window of the per-address count.
    pub address_window: Duration,
}

impl LockoutPolicy {
    /// The configured policy.
    pub fn from_config(config: &Config) -> Self {
        LockoutPolicy {
            max_failures: config.login_max_failures,
            lock_secs: config.login_lock_secs,
            address_max_failures: config.login_address_max_failures,
            address_window: Duration::from_secs(config.login_address_window_secs),
        }
    }
}

impl Default for LockoutPolicy {
    fn default() -> Self {
        use clap::Parser;
        Self::from_config(&Config::parse_from(["control-plane"]))
    }
}

/// Whether a user name may log in now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginState {
    /// It may, with this many recent failures.
    Open {
        /// Consecutive failures not yet forgotten.
        failures: i64,
    },
    /// It is locked out.
    Locked,
}

/// A user name's row in `login_failures`.
#[derive(Debug, sqlx::FromRow)]
struct FailureRow {
    failures: i64,
    locked_until: i64,
    updated_at: i64,
}

/// A client address's failures in the current window.
#[derive(Debug, Clone, Copy)]
struct AddressCount {
    since: Instant,
    failures: u32,
}

/// The lock-out and the per-address throttle.
pub struct Lockout {
    policy: LockoutPolicy,
    addresses: Mutex<HashMap<IpAddr, AddressCount>>,
    last_prune: AtomicI64,
}

impl Lockout {
    /// Counts under this policy.
    pub fn new(policy: LockoutPolicy) -> Self {
        Lockout {
            policy,
            addresses: Mutex::default(),
            last_prune: AtomicI64::new(0),
        }
    }

    /// Seconds until an address that failed too often lately may try again; `None` when
    /// it may now.
    pub fn address_wait(&self, address: IpAddr) -> Option<u64> {
        let max = self.policy.address_max_failures;
        if max == 0 {
            return None;
        }
        let addresses = self.lock_addresses();
        let count = addresses.get(&counted_as(address))?;
        let elapsed = count.since.elapsed();
        (count.failures >= max && elapsed < self.policy.address_window).then(|| {
            (self.policy.address_window - elapsed)
                .as_secs_f64()
                .ceil()
                .max(1.0) as u64
        })
    }

    /// Counts a failed login of `username` from `address`; locks the user name when that
    /// makes too many. Failures while it is locked are not counted against it (the lock
    /// does not grow), but they are against the address.
    pub async fn failed(
        &self,
        db: &AnyPool,
        username: &str,
        address: IpAddr,
        state: &LoginState,
    ) -> sqlx::Result<()> {
        self.address_failed(address);
        let max = i64::from(self.policy.max_failures);
        // A name no user can have is not stored (it could be megabytes long).
        if max == 0 || *state == LoginState::Locked || validate_username(username).is_err() {
            return Ok(());
        }
        let now = now();
        self.prune(db, now).await?;
        // One statement, so that concurrent failures all count.
        // language=SQL
        let (failures,): (i64,) = sqlx::query_as(
            "INSERT INTO login_failures (username, failures, locked_until, updated_at)
             VALUES ($1, 1, 0, $2)
             ON CONFLICT (username) DO UPDATE SET
                 failures = CASE WHEN login_failures.updated_at < $3 THEN 1
                                 ELSE login_failures.failures + 1 END,
                 updated_at = $2
             RETURNING failures",
        )
        .bind(username)
        .bind(now)
        .bind(now - FORGOTTEN_AFTER_SECS)
        .fetch_one(db)
        .await?;
        if failures >= max {
            // The count starts over when the lock ends.
            // language=SQL
            sqlx::query(
                "UPDATE login_failures SET failures = 0, locked_until = $2 WHERE username = $1",
            )
            .bind(username)
            .bind(now.saturating_add(self.policy.lock_secs))
            .execute(db)
            .await?;
            tracing::warn!(%username, failures, "user name locked after failed logins");
            crate::ops::metrics::metrics().user_locked_out();
        }
        Ok(())
    }

    /// A successful login forgets the user name's failures.
    pub async fn succeeded(
        &self,
        db: &AnyPool,
        username: &str,
        state: &LoginState,
    ) -> sqlx::Result<()> {
        if matches!(state, LoginState::Open { failures } if *failures > 0) {
            forget(db, username).await?;
        }
        Ok(())
    }

    fn address_failed(&self, address: IpAddr) {
        if self.policy.address_max_failures == 0 {
            return;
        }
        let window = self.policy.address_window;
        let mut addresses = self.lock_addresses();
        if addresses.len() >= MAX_COUNTED_ADDRESSES {
            addresses.retain(|_, count| count.since.elapsed() < window);
        }
        let fresh = AddressCount {
            since: Instant::now(),
            failures: 0,
        };
        let key = counted_as(address);
        if addresses.len() >= MAX_COUNTED_ADDRESSES && !addresses.contains_key(&key) {
            return;
        }
        let count = addresses.entry(key).or_insert(fresh);
        if count.since.elapsed() >= window {
            *count = fresh;
        }
        count.failures = count.failures.saturating_add(1);
        if count.failures == self.policy.address_max_failures {
            crate::ops::metrics::metrics().address_locked_out();
        }
    }

    /// Deletes forgotten, unlocked rows, at most every [`PRUNE_EVERY_SECS`].
    async fn prune(&self, db: &AnyPool, now: i64) -> sqlx::Result<()> {
        let last = self.last_prune.load(Ordering::Relaxed);
        if now - last < PRUNE_EVERY_SECS
            || self
                .last_prune
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return Ok(());
        }
        // language=SQL
        sqlx::query("DELETE FROM login_failures WHERE updated_at < $1 AND locked_until < $2")
            .bind(now - FORGOTTEN_AFTER_SECS)
            .bind(now)
            .execute(db)
            .await?;
        Ok(())
    }

    fn lock_addresses(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, AddressCount>> {
        self.addresses.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether a user name may log in now.
pub async fn state(db: &AnyPool, username: &str) -> sqlx::Result<LoginState> {
    // language=SQL
    let row: Option<FailureRow> = sqlx::query_as(
        "SELECT failures, locked_until, updated_at FROM login_failures WHERE username = $1",
    )
    .bind(username)
    .fetch_optional(db)
    .await?;
    let now = now();
    Ok(match row {
        Some(row) if row.locked_until > now => LoginState::Locked,
        Some(row) if row.updated_at >= now - FORGOTTEN_AFTER_SECS => LoginState::Open {
            failures: row.failures,
        },
        _ => LoginState::Open { failures: 0 },
    })
}

/// Lifts a user name's lock-out and forgets its failures; whether it was locked.
pub async fn unlock(db: &AnyPool, username: &str) -> sqlx::Result<bool> {
    let locked = state(db, username).await? == LoginState::Locked;
    forget(db, username).await?;
    Ok(locked)
}

async fn forget(db: &AnyPool, username: &str) -> sqlx::Result<()> {
    // language=SQL
    sqlx::query("DELETE FROM login_failures WHERE username = $1")
        .bind(username)
        .execute(db)
        .await
        .map(|_| ())
}

/// What an address is counted as: IPv6 clients by their /64 (one host usually has a
/// whole /64 to pick addresses from), IPv4 ones (mapped or not) by their address.
fn counted_as(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(address_max_failures: u32) -> LockoutPolicy {
        LockoutPolicy {
            max_failures: 5,
            lock_secs: 300,
            address_max_failures,
            address_window: Duration::from_secs(60),
        }
    }

    #[test]
    fn addresses_are_throttled_after_their_failures_and_ipv6_by_its_64() {
        let lockout = Lockout::new(policy(3));
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        let other: IpAddr = "2001:db8:0:1::1".parse().unwrap();
        for _ in 0..2 {
            lockout.address_failed(a);
        }
        assert_eq!(lockout.address_wait(a), None);
        lockout.address_failed(same_64);
        let wait = lockout.address_wait(a).expect("throttled");
        assert!((1..=60).contains(&wait), "{wait}");
        assert_eq!(lockout.address_wait(other), None);
        assert_eq!(
            counted_as("::ffff:10.0.0.1".parse().unwrap()),
            "10.0.0.1".parse::<IpAddr>().unwrap()
        );
        let off = Lockout::new(policy(0));
        for _ in 0..10 {
            off.address_failed(a);
        }
        assert_eq!(off.address_wait(a), None);
    }

    #[tokio::test]
    async fn consecutive_failures_lock_and_a_success_or_unlock_forgets() {
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        let lockout = Lockout::new(policy(0));
        let from: IpAddr = "192.0.2.1".parse().unwrap();
        for expected in 1..5 {
            let current = state(&db, "alice").await.unwrap();
            lockout.failed(&db, "alice", from, &current).await.unwrap();
            assert_eq!(
                state(&db, "alice").await.unwrap(),
                LoginState::Open { failures: expected }
            );
        }
        let current = state(&db, "alice").await.unwrap();
        lockout.succeeded(&db, "alice", &current).await.unwrap();
        assert_eq!(
            state(&db, "alice").await.unwrap(),
            LoginState::Open { failures: 0 }
        );
        for _ in 0..5 {
            let current = state(&db, "alice").await.unwrap();
            lockout.failed(&db, "alice", from, &current).await.unwrap();
        }
        assert_eq!(state(&db, "alice").await.unwrap(), LoginState::Locked);
        // Names no user can have are not stored.
        let long = "x".repeat(1000);
        lockout
            .failed(&db, &long, from, &LoginState::Open { failures: 0 })
            .await
            .unwrap();
        assert_eq!(
            state(&db, &long).await.unwrap(),
            LoginState::Open { failures: 0 }
        );
        assert!(unlock(&db, "alice").await.unwrap());
        assert!(!unlock(&db, "alice").await.unwrap());
        assert_eq!(
            state(&db, "alice").await.unwrap(),
            LoginState::Open { failures: 0 }
        );
    }
}
