//! Per-API analytics as gateways report them to the control plane: per minute and per
//! (API, application), requests, errors and a latency histogram with fixed buckets.
//!
//! A report carries the reporting process's totals *so far* for each (minute, API,
//! application) it names, never increments: the control plane keeps the largest total it
//! has been given for each, so a report sent twice, or an older one arriving late, never
//! counts twice. `boot` names the gateway process, so a restarted gateway (which counts
//! the same minute again from zero) adds to what the one before it reported.

use serde::{Deserialize, Serialize};

/// Upper bounds of the latency buckets, microseconds; one more bucket counts what is
/// slower than the last. The same as the gateway's Prometheus histograms: from a refusal
/// answered in tens of microseconds to a backend taking the longest timeout.
pub const LATENCY_BOUNDS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// How many buckets a histogram has: one per bound, and the slowest.
pub const BUCKETS: usize = LATENCY_BOUNDS_US.len() + 1;

/// Most rows in one report; a gateway sends more as several.
pub const MAX_ROWS_PER_REPORT: usize = 1_000;

/// Longest API or application id a row may name.
pub const MAX_ID_CHARS: usize = 128;

/// The application of rows whose requests had none (no token, or a refused one).
pub const NO_APPLICATION: &str = "";

/// What one gateway process has counted, `POST`ed to
/// [`paths::CONTROL_PLANE_ANALYTICS`](crate::paths::CONTROL_PLANE_ANALYTICS).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnalyticsReport {
    /// The gateway's id (`gateway_id`).
    pub gateway: String,
    /// The gateway process: random, made at its start.
    pub boot: String,
    /// Totals so far.
    pub rows: Vec<MinuteCounts>,
}

/// One process's totals of one (minute, API, application).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MinuteCounts {
    /// Unix minute (Unix seconds / 60) the requests were answered in.
    pub minute: i64,
    /// The API's id.
    pub api_id: String,
    /// The calling application's id; [`NO_APPLICATION`] when there was none.
    pub application_id: String,
    /// Requests answered.
    pub requests: u64,
    /// Of them, answered 4xx.
    pub client_errors: u64,
    /// Of them, answered 5xx.
    pub server_errors: u64,
    /// Their latencies added up, microseconds.
    pub latency_sum_us: u64,
    /// Their latencies, by bucket ([`LATENCY_BOUNDS_US`]).
    pub latency_buckets: Vec<u64>,
}

impl MinuteCounts {
    /// Why these counts cannot be what a gateway counted, if they cannot.
    pub fn inconsistency(&self) -> Option<&'static str> {
        if self.latency_buckets.len() != BUCKETS {
            return Some("latencyBuckets must have one count per bucket");
        }
        let bucketed = self
            .latency_buckets
            .iter()
            .try_fold(0u64, |sum, n| sum.checked_add(*n));
        if bucketed != Some(self.requests) {
            return Some("latencyBuckets must add up to requests");
        }
        if self.client_errors.saturating_add(self.server_errors) > self.requests {
            return Some("errors cannot outnumber requests");
        }
        if self.api_id.is_empty()
            || self.api_id.chars().count() > MAX_ID_CHARS
            || self.application_id.chars().count() > MAX_ID_CHARS
        {
            return Some("apiId and applicationId must be ids");
        }
        None
    }
}

/// The bucket a latency falls in.
pub fn bucket_of(latency_us: u64) -> usize {
    LATENCY_BOUNDS_US.partition_point(|bound| *bound < latency_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_fall_in_the_bucket_their_bound_closes() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(100), 0);
        assert_eq!(bucket_of(101), 1);
        assert_eq!(bucket_of(10_000_000), BUCKETS - 2);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn counts_that_do_not_add_up_are_told() {
        let mut counts = MinuteCounts {
            minute: 1,
            api_id: "api".into(),
            application_id: NO_APPLICATION.into(),
            requests: 3,
            client_errors: 1,
            server_errors: 1,
            latency_sum_us: 30,
            latency_buckets: vec![0; BUCKETS],
        };
        counts.latency_buckets[2] = 3;
        assert_eq!(counts.inconsistency(), None);
        counts.server_errors = 3;
        assert!(counts.inconsistency().is_some());
        counts.server_errors = 0;
        counts.latency_buckets.push(0);
        assert!(counts.inconsistency().is_some());
        counts.latency_buckets.pop();
        counts.latency_buckets[0] = u64::MAX;
        assert!(counts.inconsistency().is_some(), "overflowing sums");
    }
}
