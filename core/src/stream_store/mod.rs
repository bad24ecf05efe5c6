//! The stream store's pure half: what `walab serve` decides without touching a socket, a
//! file or a clock.
//!
//! A stream store takes appends to named streams, gives each record the next offset of
//! its stream (offsets count from 0 with no gaps) and answers only once the record is
//! durable in the WAL. The WAL is a staging area: it holds records of every stream in
//! the order they were submitted, and each of its records carries everything recovery
//! needs to rebuild the store's state from it alone.
//!
//! - [`record`]: the WAL record of one append (stream, offset, producer, epoch, seq,
//!   value), carried as the key and value of the WAL's tiny record. Its bytes are laid
//!   out here and nowhere else.
//! - [`producers`]: idempotent producers. A producer sends an epoch and a seq with each
//!   append; a repeated last seq is a duplicate answered with the offset it got the first
//!   time, a seq gap or a lower epoch is refused, a higher epoch fences the older
//!   session. The table is rebuilt from replayed records, so a retry is recognised also
//!   after a restart.
//! - [`log_cache`]: one stream's records in offset order, with the end assigned so far
//!   and the end known durable; reads never pass the durable end.
//! - [`upload`]: when pending records are sealed into a block, and how a block splits
//!   into one stream-set object and stream objects for large runs; [`object`] their codec.
//! - [`meta`]: the metadata log's state machine (reserve ids, commit objects and advance
//!   every involved stream's committed end at once, expire orphans), its codec, and its
//!   compaction (the state written as snapshot parts; replay from the last whole one).
//!
//! Why the producer table is kept per stream: the check and the offset assignment happen
//! under the stream's lock, so a producer's seq is checked against that stream's state
//! without any lock shared by all streams. A producer writing to two streams keeps one
//! seq per stream (as a Kafka producer keeps one per partition).

mod bytes;
pub use bytes::DecodeError;
pub mod log_cache;
pub mod meta;
pub mod object;
pub mod producers;
pub mod record;
pub mod upload;

/// The most bytes in a stream or producer name.
pub const NAME_BYTES_MAX: usize = 128;

/// Why a stream or producer name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong { bytes: usize },
    BadByte { byte: u8 },
}

impl core::fmt::Display for NameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NameError::Empty => write!(f, "is empty"),
            NameError::TooLong { bytes } => write!(f, "is {bytes} bytes, more than {NAME_BYTES_MAX}"),
            NameError::BadByte { byte } => {
                write!(f, "holds byte 0x{byte:02x}; use A-Z, a-z, 0-9, '.', '_' and '-' only")
            }
        }
    }
}

/// Checks a stream or producer name: `[A-Za-z0-9._-]{1,128}`.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > NAME_BYTES_MAX {
        return Err(NameError::TooLong { bytes: name.len() });
    }
    match name.bytes().find(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))) {
        Some(byte) => Err(NameError::BadByte { byte }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_letters_digits_dot_underscore_dash() {
        assert_eq!(check_name("orders.eu-1_a"), Ok(()));
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name(&"a".repeat(128)), Ok(()));
        assert_eq!(check_name(&"a".repeat(129)), Err(NameError::TooLong { bytes: 129 }));
        assert_eq!(check_name("a/b"), Err(NameError::BadByte { byte: b'/' }));
        assert_eq!(check_name("é"), Err(NameError::BadByte { byte: 0xc3 }));
    }
}
