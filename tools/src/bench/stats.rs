//! Medians and percentiles of the samples the cases collect.

use std::time::Duration;

/// The median of `values` (NaN when empty).
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut sorted: Vec<f64> = values.into_iter().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// p50, p99 and the worst of a set of durations.
#[derive(Debug, Clone, Copy, Default)]
pub struct Latencies {
    /// How many samples.
    pub count: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile (nearest rank), ms.
    pub p99_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
}

impl Latencies {
    /// Summarises `samples`.
    pub fn of(samples: &[Duration]) -> Self {
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            if ms.is_empty() {
                return f64::NAN;
            }
            let index = ((p * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1;
            ms[index]
        };
        Latencies {
            count: ms.len(),
            p50_ms: median(ms.iter().copied()),
            p99_ms: rank(0.99),
            max_ms: ms.last().copied().unwrap_or(f64::NAN),
        }
    }

    /// "p50 / p99 ms", as the tables show it.
    pub fn cell(&self) -> String {
        if self.count == 0 {
            return "–".into();
        }
        format!("{:.1} / {:.1}", self.p50_ms, self.p99_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ranks() {
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), 2.5);
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let latencies = Latencies::of(&samples);
        assert_eq!(latencies.p99_ms, 99.0);
        assert_eq!(latencies.max_ms, 100.0);
        assert_eq!(latencies.p50_ms, 50.5);
    }
}
