//! When writers arrive in a group-commit run: given instants, evenly spaced, or a
//! seeded Poisson process, generated one at a time so a run of millions allocates none.

use crate::rng::Rng;
use crate::sim::{exponential, LnTable};
use crate::time::Nanos;

/// When writers arrive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// Explicit instants, sorted (the tiny store's, or `--arrivals-ms`).
    Given(Vec<Nanos>),
    /// `count` writers evenly spaced at `rate_per_s`: writer i arrives at
    /// `(i + 1/2) / rate`, in the middle of its slot.
    Even { rate_per_s: u64, count: u64 },
    /// `count` writers with exponentially distributed gaps (mean `1 / rate`), seeded.
    Poisson { rate_per_s: u64, count: u64, seed: u64 },
}

/// Why arrivals were refused before a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalsError {
    /// Arrival `index` (from 0) comes before the one before it.
    Unsorted { index: usize },
    /// A rate of zero writes a second.
    RateZero,
    /// No writers at all.
    Empty,
    /// More writers than a run takes ([`WRITES_MAX`]).
    TooMany { count: u64 },
}

/// The most writes one run simulates (a bound on every per-write table).
pub const WRITES_MAX: u64 = 100_000_000;

impl core::fmt::Display for ArrivalsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ArrivalsError::Unsorted { index } => write!(f, "arrival {} comes before the one before it", index + 1),
            ArrivalsError::RateZero => f.write_str("the rate must be at least 1 write per second"),
            ArrivalsError::Empty => f.write_str("no writes to simulate"),
            ArrivalsError::TooMany { count } => write!(f, "{count} writes is more than a run takes ({WRITES_MAX})"),
        }
    }
}

impl std::error::Error for ArrivalsError {}

impl Arrivals {
    /// Checks the arrivals before a run.
    pub fn validate(&self) -> Result<(), ArrivalsError> {
        if self.count() > WRITES_MAX {
            return Err(ArrivalsError::TooMany { count: self.count() });
        }
        match self {
            Arrivals::Given(times) => {
                if times.is_empty() {
                    return Err(ArrivalsError::Empty);
                }
                match times.windows(2).position(|pair| pair[1] < pair[0]) {
                    Some(index) => Err(ArrivalsError::Unsorted { index: index + 1 }),
                    None => Ok(()),
                }
            }
            Arrivals::Even { rate_per_s, count } | Arrivals::Poisson { rate_per_s, count, .. } => {
                if *rate_per_s == 0 {
                    Err(ArrivalsError::RateZero)
                } else if *count == 0 {
                    Err(ArrivalsError::Empty)
                } else {
                    Ok(())
                }
            }
        }
    }

    pub fn count(&self) -> u64 {
        match self {
            Arrivals::Given(times) => times.len() as u64,
            Arrivals::Even { count, .. } | Arrivals::Poisson { count, .. } => *count,
        }
    }

    /// The arrival instants, one at a time, in order (the same ones a run uses).
    pub fn instants(&self) -> impl Iterator<Item = Nanos> + '_ {
        self.stream()
    }

    pub(super) fn stream(&self) -> ArrivalStream<'_> {
        ArrivalStream { arrivals: self, index: 0, clock: Nanos::ZERO, rng: Rng::new(self.seed()), ln: LnTable::new() }
    }

    fn seed(&self) -> u64 {
        match self {
            Arrivals::Poisson { seed, .. } => *seed,
            _ => 0,
        }
    }
}

/// Generates arrival instants one at a time.
pub(super) struct ArrivalStream<'a> {
    arrivals: &'a Arrivals,
    index: u64,
    clock: Nanos,
    rng: Rng,
    ln: LnTable,
}

impl Iterator for ArrivalStream<'_> {
    type Item = Nanos;

    fn next(&mut self) -> Option<Nanos> {
        let index = self.index;
        let at = match self.arrivals {
            Arrivals::Given(times) => *times.get(index as usize)?,
            Arrivals::Even { rate_per_s, count } => {
                if index >= *count {
                    return None;
                }
                // (2i + 1) * 1e9 / (2 * rate), exactly; in u64 while it fits (it does for
                // any run shorter than about a hundred days), else in u128.
                let denominator = 2 * *rate_per_s;
                match (2 * index + 1).checked_mul(1_000_000_000) {
                    Some(numerator) => Nanos(numerator / denominator),
                    None => {
                        let numerator = (2 * u128::from(index) + 1) * 1_000_000_000;
                        Nanos((numerator / u128::from(denominator)) as u64)
                    }
                }
            }
            Arrivals::Poisson { rate_per_s, count, .. } => {
                if index >= *count {
                    return None;
                }
                let mean_gap = 1e9 / *rate_per_s as f64;
                self.clock += exponential(&mut self.rng, &self.ln, mean_gap);
                self.clock
            }
        };
        self.index += 1;
        Some(at)
    }
}
