//! Positions in a stream, and the tokens the protocol carries them in.
//!
//! A position is between two records: the number of records before it (the *index* the
//! next record takes) and the number of data bytes before it. Both only grow, so a
//! position after another is larger in both. The protocol wants offsets to be opaque
//! tokens that sort as the positions do; walab writes both numbers in 16 decimal digits
//! with an underscore between them:
//!
//! ```text
//!   0000000000000003_0000000000000017     after 3 records holding 17 bytes
//!   ^ index (records)  ^ bytes
//! ```
//!
//! Fixed width makes byte-wise order the numeric order, and the width fits any count a
//! stream reaches (up to 10^16 - 1). `-1` (the beginning) and `now` (the tail at the
//! moment of the request) are the protocol's sentinels and never an offset walab hands
//! out. An offset is only ever read back exactly as it was written: anything else, from
//! a stray comma to a number too large, is refused by name.

/// The largest index or byte count an offset can carry.
pub const COMPONENT_MAX: u64 = 9_999_999_999_999_999;
/// Decimal digits per component.
const DIGITS: usize = 16;
/// The length of an offset token.
pub const TOKEN_BYTES: usize = 2 * DIGITS + 1;

/// A position between two records of a stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Offset {
    /// Records before this position: the index the next record takes.
    pub index: u64,
    /// Data bytes before this position.
    pub bytes: u64,
}

impl Offset {
    /// The beginning of every stream.
    pub const START: Offset = Offset { index: 0, bytes: 0 };

    pub fn new(index: u64, bytes: u64) -> Offset {
        Offset { index, bytes }
    }

    /// The position after one more record of `body_bytes`, or `None` when it would pass
    /// what a token can carry.
    pub fn after(self, body_bytes: u64) -> Option<Offset> {
        let next = Offset { index: self.index.checked_add(1)?, bytes: self.bytes.checked_add(body_bytes)? };
        (next.index <= COMPONENT_MAX && next.bytes <= COMPONENT_MAX).then_some(next)
    }

    /// The token: `IIIIIIIIIIIIIIII_BBBBBBBBBBBBBBBB`.
    pub fn token(self) -> String {
        assert!(self.index <= COMPONENT_MAX && self.bytes <= COMPONENT_MAX, "offsets stay within {COMPONENT_MAX}");
        format!("{:016}_{:016}", self.index, self.bytes)
    }

    /// Reads a token [`Offset::token`] wrote.
    pub fn parse(token: &str) -> Result<Offset, OffsetError> {
        let bytes = token.as_bytes();
        if bytes.len() != TOKEN_BYTES || bytes[DIGITS] != b'_' {
            return Err(OffsetError::Shape);
        }
        let digits = |field: &[u8]| -> Result<u64, OffsetError> {
            if !field.iter().all(u8::is_ascii_digit) {
                return Err(OffsetError::Shape);
            }
            Ok(field.iter().fold(0u64, |value, digit| value * 10 + u64::from(digit - b'0')))
        };
        Ok(Offset { index: digits(&bytes[..DIGITS])?, bytes: digits(&bytes[DIGITS + 1..])? })
    }
}

impl core::fmt::Display for Offset {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.token())
    }
}

/// Where a read starts: the `offset` query parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFrom {
    /// `-1` or no parameter: the stream's beginning.
    Start,
    /// `now`: the tail when the request arrives; nothing already in the stream.
    Now,
    At(Offset),
}

impl ReadFrom {
    /// Reads the `offset` parameter's value.
    pub fn parse(text: &str) -> Result<ReadFrom, OffsetError> {
        match text {
            "" => Err(OffsetError::Empty),
            "-1" => Ok(ReadFrom::Start),
            "now" => Ok(ReadFrom::Now),
            token => Offset::parse(token).map(ReadFrom::At),
        }
    }
}

/// Why an offset token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetError {
    Empty,
    /// Not `-1`, `now` or 16 digits, an underscore and 16 digits.
    Shape,
}

impl core::fmt::Display for OffsetError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            OffsetError::Empty => write!(f, "is empty"),
            OffsetError::Shape => {
                write!(f, "is not -1, now or an offset this server gave (16 digits, an underscore, 16 digits)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fixed_width_and_sort_as_positions_do() {
        assert_eq!(Offset::START.token(), "0000000000000000_0000000000000000");
        assert_eq!(Offset::new(3, 17).token(), "0000000000000003_0000000000000017");
        let positions = [Offset::new(0, 0), Offset::new(1, 9), Offset::new(2, 10), Offset::new(10, 100), Offset::new(11, 100)];
        for pair in positions.windows(2) {
            assert!(pair[0].token() < pair[1].token(), "{} < {}", pair[0], pair[1]);
        }
        for position in positions {
            assert_eq!(Offset::parse(&position.token()), Ok(position));
        }
        let last = Offset::new(COMPONENT_MAX, COMPONENT_MAX);
        assert_eq!(Offset::parse(&last.token()), Ok(last));
        assert_eq!(last.after(0), None);
        assert_eq!(Offset::new(1, 2).after(5), Some(Offset::new(2, 7)));
    }

    #[test]
    fn sentinels_and_bad_tokens() {
        assert_eq!(ReadFrom::parse("-1"), Ok(ReadFrom::Start));
        assert_eq!(ReadFrom::parse("now"), Ok(ReadFrom::Now));
        assert_eq!(ReadFrom::parse(""), Err(OffsetError::Empty));
        for bad in ["0,1", "0 1", "../x", "x/..", "abc", "0000000000000000-0000000000000000", "000000000000000_00000000000000000", "+000000000000000_0000000000000000", "0000000000000000_0000000000000000\n"] {
            assert_eq!(ReadFrom::parse(bad), Err(OffsetError::Shape), "{bad:?}");
        }
    }
}
