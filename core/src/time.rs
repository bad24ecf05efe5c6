//! Time as an integer.
//!
//! A write-ahead log's story is full of exact coincidences: a write that arrives at the
//! very instant a sync completes, a power cut at 13.5 ms while a sync that started at
//! 13.0 ms is still running. Floating-point milliseconds would make those ties depend on
//! rounding. walab counts time in whole nanoseconds, so `12.7 ms` is exactly
//! `12_700_000` and two events either happen at the same instant or they do not.
//!
//! The core never reads a clock. Every state machine takes `now: Nanos` as an argument;
//! the simulator advances it event by event, the native binary reads a monotonic clock
//! at its edge and passes the value in.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// An instant or a duration, in nanoseconds since the start of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    pub const fn from_micros(micros: u64) -> Nanos {
        Nanos(micros * 1_000)
    }

    pub const fn from_millis(millis: u64) -> Nanos {
        Nanos(millis * 1_000_000)
    }

    /// Tenths of a millisecond: the grain of the tiny store's arrival times.
    pub const fn from_tenth_millis(tenths: u64) -> Nanos {
        Nanos(tenths * 100_000)
    }

    /// Milliseconds as a float, for display and JSON only; never for decisions.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }

    /// Parses a non-negative decimal number of milliseconds ("12.7", "0", "1.25")
    /// exactly, without going through floating point. Returns `None` for anything
    /// else (a sign, an exponent, more than six decimals, overflow).
    pub fn parse_millis(text: &str) -> Option<Nanos> {
        let text = text.trim();
        let (whole, fraction) = match text.split_once('.') {
            Some((w, f)) => (w, f),
            None => (text, ""),
        };
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        if !whole.bytes().all(|b| b.is_ascii_digit()) || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if fraction.len() > 6 {
            return None;
        }
        let whole_ms: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
        let mut fraction_ns: u64 = 0;
        let mut scale = 100_000u64;
        for digit in fraction.bytes() {
            fraction_ns += u64::from(digit - b'0') * scale;
            scale /= 10;
        }
        whole_ms.checked_mul(1_000_000)?.checked_add(fraction_ns).map(Nanos)
    }

    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 += rhs.0;
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        debug_assert!(self.0 >= rhs.0, "time went backwards: {} - {}", self.0, rhs.0);
        Nanos(self.0 - rhs.0)
    }
}

impl fmt::Display for Nanos {
    /// Milliseconds with as many decimals as needed (at least one): `12.7 ms`, `1.0 ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / 1_000_000;
        let mut fraction = self.0 % 1_000_000;
        let mut digits = 6;
        while digits > 1 && fraction % 10 == 0 {
            fraction /= 10;
            digits -= 1;
        }
        write!(f, "{whole}.{fraction:0digits$} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_millis_exactly() {
        assert_eq!(Nanos::parse_millis("12.7"), Some(Nanos(12_700_000)));
        assert_eq!(Nanos::parse_millis("0"), Some(Nanos(0)));
        assert_eq!(Nanos::parse_millis(".5"), Some(Nanos(500_000)));
        assert_eq!(Nanos::parse_millis("1.000001"), Some(Nanos(1_000_001)));
        assert_eq!(Nanos::parse_millis("-1"), None);
        assert_eq!(Nanos::parse_millis("1e3"), None);
        assert_eq!(Nanos::parse_millis(""), None);
        assert_eq!(Nanos::parse_millis("1.0000001"), None);
    }

    #[test]
    fn displays_millis() {
        assert_eq!(Nanos(12_700_000).to_string(), "12.7 ms");
        assert_eq!(Nanos(1_000_000).to_string(), "1.0 ms");
        assert_eq!(Nanos(1_250_000).to_string(), "1.25 ms");
    }
}
