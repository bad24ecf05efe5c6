//! When a stream expires: a sliding TTL (`Stream-TTL`, seconds since the last read or
//! write) or an absolute time (`Stream-Expires-At`).
//!
//! The expiry a stream was created with is in the metadata log; when it passes, the
//! server deletes the stream through the metadata log as a client's `DELETE` would (a
//! stream that forks still read is soft-deleted instead). The last access of a sliding
//! TTL is kept in memory only: writing every read to a log would cost a write per read.
//! After a restart the clock starts again from the restart, so a stream never expires
//! earlier than its TTL allows and may live up to one TTL longer.

/// The largest `Stream-TTL` accepted: about 317 years, so that adding it to any time
/// fits.
pub const TTL_SECONDS_MAX: u64 = 10_000_000_000;

/// What a stream expires by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Expiry {
    #[default]
    Never,
    /// Idle this many seconds (no read or write): gone.
    Ttl { seconds: u64 },
    /// Gone at this wall-clock time (milliseconds since 1970).
    At { unix_ms: u64 },
}

impl Expiry {
    /// Whether the stream has expired at `now_unix_ms`, last read or written at
    /// `last_access_unix_ms`.
    pub fn passed(self, last_access_unix_ms: u64, now_unix_ms: u64) -> bool {
        match self {
            Expiry::Never => false,
            Expiry::Ttl { seconds } => now_unix_ms >= last_access_unix_ms.saturating_add(seconds.saturating_mul(1000)),
            Expiry::At { unix_ms } => now_unix_ms >= unix_ms,
        }
    }

    /// What a fork gets when it asks for `requested`, forking a source that has
    /// `source`: its own if it asks for one, else the source's (a TTL is then the same
    /// window, counted from the fork's own accesses).
    pub fn of_fork(source: Expiry, requested: Expiry) -> Expiry {
        match requested {
            Expiry::Never => source,
            own => own,
        }
    }
}

/// Why a `Stream-TTL` value was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlError {
    /// Not a plain decimal number (a sign, a point, an exponent, a leading zero, ...).
    NotDecimal,
    TooLarge,
}

impl core::fmt::Display for TtlError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TtlError::NotDecimal => {
                write!(f, "is not a whole number of seconds in plain decimal (no sign, point, exponent or leading zero)")
            }
            TtlError::TooLarge => write!(f, "is more than {TTL_SECONDS_MAX} seconds"),
        }
    }
}

/// Reads a `Stream-TTL` value: `0`, or decimal digits without a leading zero.
pub fn parse_ttl(text: &str) -> Result<u64, TtlError> {
    let bytes = text.as_bytes();
    let plain = !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit) && (bytes[0] != b'0' || bytes.len() == 1);
    if !plain {
        return Err(TtlError::NotDecimal);
    }
    if bytes.len() > 11 {
        return Err(TtlError::TooLarge);
    }
    let seconds: u64 = text.parse().map_err(|_| TtlError::NotDecimal)?;
    if seconds > TTL_SECONDS_MAX {
        return Err(TtlError::TooLarge);
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_values_are_plain_decimals() {
        assert_eq!(parse_ttl("3600"), Ok(3600));
        assert_eq!(parse_ttl("0"), Ok(0));
        for bad in ["", "00060", "+60", "-1", "60.5", "1e3", "abc", " 60"] {
            assert_eq!(parse_ttl(bad), Err(TtlError::NotDecimal), "{bad:?}");
        }
        assert_eq!(parse_ttl("10000000001"), Err(TtlError::TooLarge));
        assert_eq!(parse_ttl("99999999999999999999999"), Err(TtlError::TooLarge));
    }

    #[test]
    fn a_ttl_slides_and_a_time_does_not() {
        let ttl = Expiry::Ttl { seconds: 2 };
        assert!(!ttl.passed(1_000, 2_999));
        assert!(ttl.passed(1_000, 3_000));
        let at = Expiry::At { unix_ms: 5_000 };
        assert!(!at.passed(4_999, 4_999));
        assert!(at.passed(0, 5_000));
        assert!(!Expiry::Never.passed(0, u64::MAX));
        assert_eq!(Expiry::of_fork(ttl, Expiry::Never), ttl);
        assert_eq!(Expiry::of_fork(at, Expiry::Never), at);
        assert_eq!(Expiry::of_fork(ttl, at), at);
        assert_eq!(Expiry::of_fork(Expiry::Never, ttl), ttl);
    }
}
