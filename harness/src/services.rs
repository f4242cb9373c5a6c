//! The outside services some tests need. A test that needs one fails when it is missing,
//! unless `APIM_TEST_SKIP` names it (`redis`, `postgres`, comma separated); then the test
//! returns at once and says so on the console, past the test runner's capture, with the
//! count skipped so far. `run-tests` never sets it.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The setting that skips the tests needing a missing service.
pub const SKIP_VAR: &str = "APIM_TEST_SKIP";

/// A service some tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// PostgreSQL at [`crate::postgres_admin_url`].
    Postgres,
    /// Redis on 127.0.0.1:6379.
    Redis,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Postgres => "postgres",
            Service::Redis => "redis",
        }
    }

    fn address(self) -> String {
        match self {
            Service::Postgres => {
                let url = crate::postgres_admin_url();
                let authority = url.split('@').next_back().unwrap_or_default();
                authority.split('/').next().unwrap_or_default().to_string()
            }
            Service::Redis => "127.0.0.1:6379".to_string(),
        }
    }
}

static SKIPPED: AtomicUsize = AtomicUsize::new(0);

/// Whether `test` can run: true when `service` accepts connections; false, said on the
/// console, when it does not and [`SKIP_VAR`] names it; otherwise the test fails here.
pub fn available(service: Service, test: &str) -> bool {
    let address = service.address();
    if std::net::TcpStream::connect(&address).is_ok() {
        return true;
    }
    let skipping = std::env::var(SKIP_VAR).unwrap_or_default();
    let named = skipping.split(',').any(|s| s.trim() == service.name());
    assert!(
        named,
        "{test} needs {} on {address}, which does not answer: start it (run-tests shows how), \
         or set {SKIP_VAR}={} to skip such tests",
        service.name(),
        service.name()
    );
    let count = SKIPPED.fetch_add(1, Ordering::Relaxed) + 1;
    // Straight to the console: the runner captures print! and eprint! of passing tests.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: no {} on {address} ({SKIP_VAR}); {count} skipped so far in this test binary",
        service.name()
    );
    false
}
