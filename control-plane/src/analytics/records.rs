//! What the analytics of an API add up to: counts and a merged latency histogram per slot
//! of time and application, and the figures an answer shows of them.

use std::collections::BTreeMap;

use apim_manifest::analytics::{BUCKETS, LATENCY_BOUNDS_US};
use serde::Serialize;
use sqlx::Row as _;
use sqlx::any::AnyRow;

use super::rules::{Window, time_text};

/// Counts added up over gateways, processes and minutes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub requests: u64,
    pub client_errors: u64,
    pub server_errors: u64,
    pub latency_sum_us: u64,
    pub buckets: [u64; BUCKETS],
}

impl Totals {
    /// Adds `other` in.
    pub fn add(&mut self, other: &Totals) {
        self.requests += other.requests;
        self.client_errors += other.client_errors;
        self.server_errors += other.server_errors;
        self.latency_sum_us += other.latency_sum_us;
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets) {
            *mine += theirs;
        }
    }

    /// The latency below which a `fraction` of the requests were answered, milliseconds,
    /// interpolated within its bucket as Prometheus' `histogram_quantile` does (so it lies
    /// within the bounds of the bucket holding that request); the slowest bucket has no
    /// upper bound, and answers its lower one. `None` without requests.
    pub fn percentile_ms(&self, fraction: f64) -> Option<f64> {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = fraction * total as f64;
        let mut below = 0u64;
        for (bucket, count) in self.buckets.iter().enumerate() {
            let lower = if bucket == 0 {
                0
            } else {
                LATENCY_BOUNDS_US[bucket - 1]
            };
            let Some(&upper) = LATENCY_BOUNDS_US.get(bucket) else {
                return Some(lower as f64 / 1e3);
            };
            if *count > 0 && (below + count) as f64 >= rank {
                let within = (rank - below as f64) / *count as f64;
                let us = lower as f64 + within.clamp(0.0, 1.0) * (upper - lower) as f64;
                return Some(us / 1e3);
            }
            below += count;
        }
        None
    }

    /// The figures an answer shows.
    pub fn figures(&self) -> Figures {
        let ms = |us: Option<f64>| us.map(|v| (v * 1e3).round() / 1e3);
        let mean =
            (self.requests > 0).then(|| self.latency_sum_us as f64 / self.requests as f64 / 1e3);
        Figures {
            requests: self.requests,
            errors: self.client_errors + self.server_errors,
            client_errors: self.client_errors,
            server_errors: self.server_errors,
            latency_ms: Latency {
                mean: ms(mean),
                p50: ms(self.percentile_ms(0.50)),
                p95: ms(self.percentile_ms(0.95)),
                p99: ms(self.percentile_ms(0.99)),
            },
        }
    }
}

/// One row of [`super::queries::totals`] or [`super::queries::application_totals`]: a
/// slot of time (its first Unix minute), what the totals are grouped by (an application,
/// or an API), and their totals.
#[derive(Debug, Clone)]
pub struct SlotTotals {
    pub slot: i64,
    pub grouped: String,
    pub totals: Totals,
}

impl<'r> sqlx::FromRow<'r, AnyRow> for SlotTotals {
    fn from_row(row: &'r AnyRow) -> sqlx::Result<Self> {
        let count = |column: &str| -> sqlx::Result<u64> {
            Ok(u64::try_from(row.try_get::<i64, _>(column)?).unwrap_or(0))
        };
        let mut buckets = [0u64; BUCKETS];
        for (bucket, count_of) in buckets.iter_mut().enumerate() {
            *count_of = count(&format!("bucket_{bucket}"))?;
        }
        Ok(SlotTotals {
            slot: row.try_get("slot")?,
            grouped: row.try_get("grouped")?,
            totals: Totals {
                requests: count("requests")?,
                client_errors: count("client_errors")?,
                server_errors: count("server_errors")?,
                latency_sum_us: count("latency_sum_us")?,
                buckets,
            },
        })
    }
}

/// One slot's figures.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SlotFigures {
    pub time: String,
    #[serde(flatten)]
    pub figures: Figures,
}

/// Rows added up three ways.
pub struct Summed {
    /// Over the whole range.
    pub whole: Figures,
    /// Per what the rows are grouped by (an application, an API), most requests first.
    pub groups: Vec<(String, Figures)>,
    /// Per slot, every slot of the window, in order.
    pub series: Vec<SlotFigures>,
}

/// `rows` of `window` added up over it, per group and per slot.
pub fn summed(window: &Window, rows: &[SlotTotals]) -> Summed {
    let mut whole = Totals::default();
    let mut per_group: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut per_slot: BTreeMap<i64, Totals> = BTreeMap::new();
    for row in rows {
        whole.add(&row.totals);
        per_group
            .entry(row.grouped.as_str())
            .or_default()
            .add(&row.totals);
        per_slot.entry(row.slot).or_default().add(&row.totals);
    }
    let mut groups: Vec<(String, Figures)> = per_group
        .into_iter()
        .map(|(group, totals)| (group.to_string(), totals.figures()))
        .collect();
    groups.sort_by_key(|(_, figures)| std::cmp::Reverse(figures.requests));
    let series = window
        .slots()
        .map(|slot| SlotFigures {
            time: time_text(slot),
            figures: per_slot.remove(&slot).unwrap_or_default().figures(),
        })
        .collect();
    Summed {
        whole: whole.figures(),
        groups,
        series,
    }
}

/// Requests, errors and latency over some span.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub requests: u64,
    /// 4xx and 5xx answers.
    pub errors: u64,
    pub client_errors: u64,
    pub server_errors: u64,
    pub latency_ms: Latency,
}

/// Latency figures, milliseconds; `null` without requests.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Latency {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use apim_manifest::analytics::bucket_of;

    fn totals_of(latencies_us: &[u64]) -> Totals {
        let mut totals = Totals::default();
        for latency in latencies_us {
            totals.requests += 1;
            totals.latency_sum_us += latency;
            totals.buckets[bucket_of(*latency)] += 1;
        }
        totals
    }

    #[test]
    fn percentiles_lie_in_the_bucket_of_the_ranked_request() {
        // 90 fast (in 250..500 µs), 9 in 5..10 ms, 1 slower than every bound.
        let mut latencies = vec![300; 90];
        latencies.extend([7_000; 9]);
        latencies.push(60_000_000);
        let totals = totals_of(&latencies);
        let p50 = totals.percentile_ms(0.5).unwrap();
        assert!((0.25..=0.5).contains(&p50), "{p50}");
        let p95 = totals.percentile_ms(0.95).unwrap();
        assert!((5.0..=10.0).contains(&p95), "{p95}");
        let p99 = totals.percentile_ms(0.99).unwrap();
        assert!((5.0..=10.0).contains(&p99), "{p99}");
        assert_eq!(totals.percentile_ms(1.0), Some(10_000.0), "the open bucket");
        assert_eq!(Totals::default().percentile_ms(0.5), None);
    }

    #[test]
    fn figures_add_errors_and_leave_latency_null_without_requests() {
        let mut totals = totals_of(&[1_000, 3_000]);
        totals.client_errors = 1;
        totals.server_errors = 1;
        let figures = totals.figures();
        assert_eq!((figures.requests, figures.errors), (2, 2));
        assert_eq!(figures.latency_ms.mean, Some(2.0));
        let none = Totals::default().figures();
        assert_eq!(none.latency_ms.p99, None);
        let mut merged = Totals::default();
        merged.add(&totals);
        merged.add(&totals);
        assert_eq!(merged.requests, 4);
        assert_eq!(merged.buckets.iter().sum::<u64>(), 4);
    }
}
