//! The deterministic simulator: runs the core's state machines against simulated time
//! and a simulated device, and records what happened as a [`crate::trace::Trace`].
//!
//! A simulation is an event loop over integer time. At each instant it feeds the
//! machines every input that happens then (arrivals, sync completions, timeouts), and
//! only then asks them for actions. That ordering is what makes exact ties behave as
//! the teaching page says (a write arriving as a sync completes joins the *next* batch),
//! whatever order the inputs of one instant are listed in.
//!
//! - [`commit`]: group commit alone, one log, no device: the Part 5 schedules, the
//!   steady-load runs (evenly spaced and Poisson arrivals) and the benchmark.
//! - [`tiny`]: the tiny store end to end (Parts 2 to 8): the log over the simulated
//!   [`crate::device::Device`], the MemTable of four writes, flushes with their own
//!   syncs, manifest edits, the two deletion gates and CDC readers, power cuts with
//!   every legal post-crash state, and failed syncs handled the wrong and the right way.
//!
//! Randomness (Poisson arrivals, sync latencies drawn from a distribution, the units a
//! power cut keeps) comes from [`crate::rng::Rng`] and the portable logarithm below, so
//! a scenario plus a seed gives the same run on every target.

pub mod commit;
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
    /// Drawn uniformly from measured samples (for example the native `fsync-test`'s
    /// exported distribution), so the browser can simulate a real disk.
    Samples { samples: Vec<Nanos> },
}

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
        }
    }

    /// True if every draw is above zero (a zero-time sync makes no sense).
    pub fn is_positive(&self) -> bool {
        match self {
            SyncLatency::Fixed { latency } => latency.0 > 0,
            SyncLatency::Uniform { min, max } => min.0 > 0 && max.0 >= min.0,
            SyncLatency::Samples { samples } => !samples.is_empty() && samples.iter().all(|s| s.0 > 0),
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
}
