//! Latency percentiles for every command and bench that reports them: an HDR histogram
//! (`hdrhistogram`, three significant digits) read at nearest ranks.

use std::time::Duration;

/// Latencies in nanoseconds. Values past the histogram's range are clamped to it.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    inner: hdrhistogram::Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> LatencyHistogram {
        LatencyHistogram::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> LatencyHistogram {
        // Three significant digits (0.1%), growing as larger values arrive.
        let inner = hdrhistogram::Histogram::new(3).expect("3 significant digits is a valid precision");
        LatencyHistogram { inner }
    }

    /// A histogram of these samples (nanoseconds).
    pub fn of(samples: &[u64]) -> LatencyHistogram {
        let mut histogram = LatencyHistogram::new();
        for &sample in samples {
            histogram.record(sample);
        }
        histogram
    }

    pub fn record(&mut self, nanos: u64) {
        // The histogram grows to take the value; only one past every range it can grow
        // to is clamped.
        if self.inner.record(nanos).is_err() {
            self.inner.saturating_record(nanos);
        }
    }

    /// `count` samples of `nanos` (the records of one batch, answered together).
    pub fn record_n(&mut self, nanos: u64, count: u64) {
        if self.inner.record_n(nanos, count).is_err() {
            self.inner.saturating_record_n(nanos, count);
        }
    }

    pub fn record_duration(&mut self, elapsed: Duration) {
        self.record(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
    }

    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Both grow on demand, so adding never runs out of range.
        let _ = self.inner.add(&other.inner);
    }

    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    pub fn mean(&self) -> u64 {
        if self.count() == 0 {
            0
        } else {
            self.inner.mean().round() as u64
        }
    }

    pub fn min(&self) -> u64 {
        if self.count() == 0 {
            0
        } else {
            self.inner.min()
        }
    }

    pub fn max(&self) -> u64 {
        if self.count() == 0 {
            0
        } else {
            self.inner.max()
        }
    }

    /// The nearest-rank value at `per_mille / 1000` (500 is p50, 999 is p99.9): the
    /// smallest recorded value with at least that share of samples at or below it, to
    /// the histogram's precision. Empty: 0.
    pub fn quantile(&self, per_mille: u64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let rank = (per_mille.min(1000) * total).div_ceil(1000).max(1);
        // Half a sample below the rank, so the histogram's own rounding up of
        // `quantile * count` lands on exactly this rank.
        let quantile = (rank as f64 - 0.5) / total as f64;
        self.inner.value_at_quantile(quantile).min(self.inner.max())
    }

    /// [`LatencyHistogram::quantile`] in milliseconds.
    pub fn quantile_ms(&self, per_mille: u64) -> f64 {
        walab_core::time::Nanos(self.quantile(per_mille)).as_millis_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_ranks_within_the_precision() {
        let histogram = LatencyHistogram::of(&(1..=1000).collect::<Vec<u64>>());
        assert_eq!(histogram.quantile(500), 500);
        assert_eq!(histogram.quantile(990), 990);
        assert_eq!(histogram.quantile(1000), 1000);
        let mut large = LatencyHistogram::new();
        for value in 1..=100_000u64 {
            large.record(value * 1000);
        }
        for (per_mille, exact) in [(500u64, 50_000_000u64), (990, 99_000_000), (1000, 100_000_000)] {
            let got = large.quantile(per_mille);
            assert!((got as f64 - exact as f64).abs() / (exact as f64) < 0.002, "p{per_mille}: {got} vs {exact}");
        }
        assert_eq!(LatencyHistogram::new().quantile(500), 0);
        let mut huge = LatencyHistogram::new();
        huge.record(u64::MAX);
        assert!(huge.count() == 1);
    }
}
