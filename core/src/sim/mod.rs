//! The deterministic simulator: runs the core's state machines against simulated time
//! and a simulated device, and records what happened as a [`crate::trace::Trace`].
//!
//! A simulation is an event loop over integer time. At each instant it feeds the
//! machines every input that happens then (arrivals, sync completions, timeouts), and
//! only then asks them for actions. That ordering is what makes exact ties behave as
//! the teaching page says (a write arriving as a sync completes joins the *next* batch),
//! whatever order the inputs of one instant are listed in. That loop is written once,
//! in [`clock`]; [`commit`], [`tiny`], [`crate::quorum`] and [`remote`] run on it.
//!
//! - [`commit`]: group commit alone, one log, no device: the Part 5 schedules, the
//!   steady-load runs (evenly spaced and Poisson arrivals) and the benchmark.
//! - [`tiny`]: the tiny store end to end (Parts 2 to 8): the log over the simulated
//!   [`crate::device::Device`], the MemTable of four writes, flushes with their own
//!   syncs, manifest edits, the two deletion gates and CDC readers, power cuts with
//!   every legal post-crash state, and failed syncs handled the wrong and the right way.
//!
//! - [`remote`]: the stream store's WAL with no local disk: a simulated object store and
//!   a simulated Postgres under the group-commit machine, with latency profiles, faults at
//!   chosen requests and a takeover by a second node.
//!
//! Randomness (Poisson arrivals, sync latencies drawn from a distribution, the units a
//! power cut keeps) comes from [`crate::rng::Rng`] and the portable logarithm below, so
//! a scenario plus a seed gives the same run on every target.

pub mod clock;
pub mod commit;
pub mod remote;
pub mod tiny;

use crate::rng::Rng;
use crate::time::Nanos;

/// How long a sync takes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case", tag = "kind"))]
pub enum SyncLatency {
    /// Every sync takes exactly this long.
    Fixed { latency: Nanos },
    /// Uniform between `min` and `max` inclusive.
    Uniform { min: Nanos, max: Nanos },
    /// Drawn uniformly from measured samples, so the browser can simulate a real disk.
    Samples { samples: Vec<Nanos> },
    /// A measured distribution as `walab fsync-test --export-latency` writes it
    /// (`walab-latency/1`): 101 percentiles, minimum to maximum. A draw picks u in
    /// [0, 100) and interpolates between percentiles floor(u) and floor(u) + 1, in
    /// integers, so the draw is the same on every target.
    Quantiles { quantiles: Vec<Nanos> },
}

/// Why a latency distribution cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyError {
    /// `walab-latency/1` has exactly 101 percentiles.
    QuantileCount { found: usize },
    /// Percentiles must not decrease.
    Decreasing { index: usize },
    /// A sync of zero time.
    Zero,
}

impl core::fmt::Display for LatencyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LatencyError::QuantileCount { found } => write!(f, "expected 101 percentiles, found {found}"),
            LatencyError::Decreasing { index } => write!(f, "percentile {index} is below the one before it"),
            LatencyError::Zero => f.write_str("a sync latency of zero"),
        }
    }
}

impl std::error::Error for LatencyError {}

/// Percentiles in `walab-latency/1`.
pub const LATENCY_QUANTILES: usize = 101;

/// Fixed-point resolution of a quantile draw (millionths of a percentile).
const QUANTILE_STEPS: u64 = 1_000_000;

impl SyncLatency {
    pub fn fixed(latency: Nanos) -> SyncLatency {
        SyncLatency::Fixed { latency }
    }

    /// The next sync's duration.
    pub fn draw(&self, rng: &mut Rng) -> Nanos {
        match self {
            SyncLatency::Fixed { latency } => *latency,
            SyncLatency::Uniform { min, max } => {
                let span = max.0.saturating_sub(min.0);
                Nanos(min.0 + if span == 0 { 0 } else { rng.below(span + 1) })
            }
            SyncLatency::Samples { samples } => {
                if samples.is_empty() {
                    Nanos::ZERO
                } else {
                    samples[rng.below(samples.len() as u64) as usize]
                }
            }
            SyncLatency::Quantiles { quantiles } => {
                if quantiles.len() < 2 {
                    return quantiles.first().copied().unwrap_or(Nanos::ZERO);
                }
                let steps = (quantiles.len() as u64 - 1) * QUANTILE_STEPS;
                let draw = rng.below(steps);
                let index = (draw / QUANTILE_STEPS) as usize;
                let fraction = u128::from(draw % QUANTILE_STEPS);
                let (low, high) = (quantiles[index].0, quantiles[index + 1].0.max(quantiles[index].0));
                let span = u128::from(high - low);
                Nanos(low + (span * fraction / u128::from(QUANTILE_STEPS)) as u64)
            }
        }
    }

    /// A measured distribution from `walab fsync-test --export-latency`'s percentiles.
    pub fn from_quantiles(quantiles_ns: &[u64]) -> Result<SyncLatency, LatencyError> {
        if quantiles_ns.len() != LATENCY_QUANTILES {
            return Err(LatencyError::QuantileCount { found: quantiles_ns.len() });
        }
        if let Some(index) = quantiles_ns.windows(2).position(|pair| pair[1] < pair[0]) {
            return Err(LatencyError::Decreasing { index: index + 1 });
        }
        if quantiles_ns[0] == 0 {
            return Err(LatencyError::Zero);
        }
        Ok(SyncLatency::Quantiles { quantiles: quantiles_ns.iter().map(|&ns| Nanos(ns)).collect() })
    }

    /// True if every draw is above zero (a zero-time sync makes no sense).
    pub fn is_positive(&self) -> bool {
        match self {
            SyncLatency::Fixed { latency } => latency.0 > 0,
            SyncLatency::Uniform { min, max } => min.0 > 0 && max.0 >= min.0,
            SyncLatency::Samples { samples } => !samples.is_empty() && samples.iter().all(|s| s.0 > 0),
            SyncLatency::Quantiles { quantiles } => !quantiles.is_empty() && quantiles.iter().all(|q| q.0 > 0),
        }
    }
}

/// Natural logarithm from IEEE-754 additions, multiplications and divisions only, which
/// every platform rounds identically (a platform's `ln` may differ in the last bit
/// between glibc and the wasm32 math library). Accurate to a few ulps for `x > 0`.
pub fn ln_portable(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    // x = m * 2^e with m in [1, 2).
    let mut bits = x.to_bits();
    let mut exponent = ((bits >> 52) & 0x7ff) as i64;
    if exponent == 0 {
        // Subnormal: scale into the normal range first.
        let scaled = x * (1u64 << 54) as f64;
        bits = scaled.to_bits();
        exponent = ((bits >> 52) & 0x7ff) as i64 - 54;
    }
    let exponent = exponent - 1023;
    let mut mantissa = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let mut exponent = exponent as f64;
    // Centre m on 1 (m in [0.707, 1.414)) so the series below converges fast.
    if mantissa > core::f64::consts::SQRT_2 {
        mantissa /= 2.0;
        exponent += 1.0;
    }
    // ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716.
    // atanh(s) = s (1 + s^2/3 + s^4/5 + ...); 0.1716^(2*14) < 1e-21, so fourteen terms
    // reach full precision. Horner's rule with constant reciprocals: multiplications and
    // additions only.
    const RECIPROCALS: [f64; 14] = [
        1.0,
        1.0 / 3.0,
        1.0 / 5.0,
        1.0 / 7.0,
        1.0 / 9.0,
        1.0 / 11.0,
        1.0 / 13.0,
        1.0 / 15.0,
        1.0 / 17.0,
        1.0 / 19.0,
        1.0 / 21.0,
        1.0 / 23.0,
        1.0 / 25.0,
        1.0 / 27.0,
    ];
    let s = (mantissa - 1.0) / (mantissa + 1.0);
    let s2 = s * s;
    let mut series = RECIPROCALS[13];
    for reciprocal in RECIPROCALS[..13].iter().rev() {
        series = series * s2 + reciprocal;
    }
    2.0 * s * series + exponent * core::f64::consts::LN_2
}

/// A faster portable logarithm for hot loops (Poisson arrivals): the mantissa is
/// divided by the nearest of 65 centres `1 + j/64` whose logarithms are computed once
/// with [`ln_portable`], which leaves a ratio within 1/128 of 1 whose logarithm four
/// series terms give to full precision. Still only IEEE-754 arithmetic, so still the
/// same result on every platform.
#[derive(Clone, Debug)]
pub struct LnTable {
    ln_centre: [f64; 65],
    inverse_centre: [f64; 65],
}

impl Default for LnTable {
    fn default() -> LnTable {
        LnTable::new()
    }
}

impl LnTable {
    pub fn new() -> LnTable {
        let mut table = LnTable { ln_centre: [0.0; 65], inverse_centre: [0.0; 65] };
        for j in 0..65 {
            let centre = 1.0 + j as f64 / 64.0;
            table.ln_centre[j] = ln_portable(centre);
            table.inverse_centre[j] = 1.0 / centre;
        }
        table
    }

    /// ln(x) for a normal, positive, finite x; other inputs go to [`ln_portable`].
    pub fn ln(&self, x: f64) -> f64 {
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i64;
        if x <= 0.0 || biased == 0 || biased == 0x7ff {
            return ln_portable(x);
        }
        let mantissa = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
        let j = ((mantissa - 1.0) * 64.0 + 0.5) as usize;
        let ratio = mantissa * self.inverse_centre[j];
        // ln(ratio) = 2 atanh(s), |s| <= 1/257: s (1 + s^2/3 + s^4/5 + s^6/7 + s^8/9).
        let s = (ratio - 1.0) / (ratio + 1.0);
        let s2 = s * s;
        let series = (((s2 * (1.0 / 9.0) + 1.0 / 7.0) * s2 + 1.0 / 5.0) * s2 + 1.0 / 3.0) * s2 + 1.0;
        (biased - 1023) as f64 * core::f64::consts::LN_2 + self.ln_centre[j] + 2.0 * s * series
    }
}

/// An exponentially distributed duration with the given mean, rounded to whole
/// nanoseconds (the gaps between Poisson arrivals).
pub fn exponential(rng: &mut Rng, table: &LnTable, mean: f64) -> Nanos {
    // 1 - u is in (0, 1], so the logarithm is finite.
    let u = 1.0 - rng.unit_f64();
    let gap = -table.ln(u) * mean;
    // Round half up without a libm call; gap is never negative.
    Nanos((gap + 0.5) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_ln_matches_std() {
        for x in [1e-300, 1e-10, 0.001, 0.3, 0.5, 0.999, 1.0, 1.5, 2.0, 10.0, 1e10, 1e300] {
            let ours = ln_portable(x);
            let std = x.ln();
            assert!((ours - std).abs() <= 4.0 * f64::EPSILON * std.abs().max(1.0), "ln({x}): {ours} vs {std}");
        }
        assert!(ln_portable(-1.0).is_nan());
        assert_eq!(ln_portable(0.0), f64::NEG_INFINITY);
    }

    #[test]
    fn table_ln_matches_std() {
        let table = LnTable::new();
        let mut rng = Rng::new(1);
        for _ in 0..10_000 {
            let x = 1.0 - rng.unit_f64();
            let (ours, std) = (table.ln(x), x.ln());
            assert!((ours - std).abs() <= 8.0 * f64::EPSILON * std.abs().max(1.0), "ln({x}): {ours} vs {std}");
        }
        for x in [1.0, 2.0, 0.5, 1e-300, 1e300, 1.9999999] {
            assert!((table.ln(x) - x.ln()).abs() <= 8.0 * f64::EPSILON * x.ln().abs().max(1.0), "ln({x})");
        }
    }

    #[test]
    fn exponential_has_its_mean() {
        let mut rng = Rng::new(9);
        let draws = 200_000u64;
        let table = LnTable::new();
        let total: u64 = (0..draws).map(|_| exponential(&mut rng, &table, 10_000.0).0).sum();
        let mean = total as f64 / draws as f64;
        assert!((mean - 10_000.0).abs() < 100.0, "mean {mean}");
    }

    #[test]
    fn latency_draws_stay_in_range() {
        let mut rng = Rng::new(3);
        let uniform = SyncLatency::Uniform { min: Nanos(5), max: Nanos(9) };
        for _ in 0..100 {
            let draw = uniform.draw(&mut rng);
            assert!(draw >= Nanos(5));
            assert!(draw <= Nanos(9));
        }
        let samples = SyncLatency::Samples { samples: vec![Nanos(7), Nanos(8)] };
        assert!([Nanos(7), Nanos(8)].contains(&samples.draw(&mut rng)));
        assert!(!SyncLatency::fixed(Nanos::ZERO).is_positive());
    }

    #[test]
    fn measured_quantiles_are_interpolated() {
        // Percentile i is 1 ms + i us: every draw lies between 1.0 and 1.1 ms, mean ~1.05.
        let quantiles: Vec<u64> = (0..101).map(|i| 1_000_000 + i * 1_000).collect();
        let latency = SyncLatency::from_quantiles(&quantiles).unwrap();
        let mut rng = Rng::new(5);
        let draws: Vec<u64> = (0..10_000).map(|_| latency.draw(&mut rng).0).collect();
        assert!(draws.iter().all(|&d| (1_000_000..=1_100_000).contains(&d)));
        let mean = draws.iter().sum::<u64>() / draws.len() as u64;
        assert!((1_045_000..1_055_000).contains(&mean), "mean {mean}");
        assert_eq!(SyncLatency::from_quantiles(&[1, 2]), Err(LatencyError::QuantileCount { found: 2 }));
        let mut bad = quantiles.clone();
        bad[50] = 0;
        assert_eq!(SyncLatency::from_quantiles(&bad), Err(LatencyError::Decreasing { index: 50 }));
    }
}
