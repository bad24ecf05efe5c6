//! The stream store's pure half: what `walab serve` decides without touching a socket, a
//! file or a clock.
//!
//! `walab serve` speaks the Durable Streams protocol: a stream is a URL, created with
//! `PUT`, appended to with `POST`, read with `GET` from an offset (and tailed live),
//! closed, forked and deleted. Each `POST` is one *record* of its stream: its bytes (or,
//! for an `application/json` stream, its messages) are appended whole, at the stream's
//! next record index, and answered only once the record is durable in the WAL. The WAL
//! is a staging area: it holds the records of every stream in the order they were
//! submitted, and each of them carries everything recovery needs to rebuild the streams'
//! tails from it alone.
//!
//! - [`offset`]: positions in a stream: a record index and the bytes before it, written
//!   as a fixed-width token that sorts as the positions do.
//! - [`record`]: the WAL record of one append (stream, index, producer, epoch, seq,
//!   `Stream-Seq`, close, body), cut in fragments when a body is larger than one WAL
//!   record holds and joined again by [`record::Assembler`]: a request is in the log
//!   whole or not at all.
//! - [`producers`]: idempotent producers. A producer sends an epoch and a seq with each
//!   request; a seq at or below the last is a duplicate, a gap or a lower epoch is
//!   refused. The table is rebuilt from replayed records, so a retry is recognised also
//!   after a restart.
//! - [`log_cache`]: one stream's records above its committed end, with the end known
//!   durable; reads never pass it.
//! - [`upload`]: when pending records are sealed into a block, and how a block splits
//!   into one stream-set object and stream objects for large runs; [`object`] their codec;
//!   [`cycle`] the one order of a block's upload (reserve, PUT, commit, trim) every
//!   uploader follows.
//! - [`meta`]: the metadata log's state machine: the streams themselves (created,
//!   forked, deleted, expired; their committed ends, producers and closure), the objects
//!   their records were uploaded to, and its compaction.
//! - [`cursor`]: the protocol's live-read cursors; [`expiry`]: when a stream's TTL or
//!   expiry time has passed.
//!
//! Why a stream has a number as well as a name: names are reused (a deleted stream's URL
//! may be created again), numbers never are, so a WAL record or an object names its
//! stream by number and a record of a deleted stream can never surface in its successor.
//! The name lives in the metadata log only.

mod bytes;
pub use bytes::DecodeError;
pub mod cursor;
pub mod cycle;
pub mod expiry;
pub mod log_cache;
pub mod meta;
pub mod object;
pub mod offset;
pub mod producers;
pub mod record;
pub mod upload;

/// A stream's number: given at creation, never reused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StreamId(pub u64);

impl core::fmt::Display for StreamId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The most bytes in a stream's name (its URL path below the stream root).
pub const STREAM_NAME_BYTES_MAX: usize = 1024;
/// The most bytes in a producer id.
pub const PRODUCER_ID_BYTES_MAX: usize = 255;
/// The first path segment the protocol reserves for its own control routes.
pub const RESERVED_SEGMENT: &str = "__ds";

/// Why a stream name or a producer id was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong { bytes: usize, max: usize },
    /// A control character (below 0x20, or 0x7f).
    ControlCharacter { at: usize },
    /// An empty, `.` or `..` path segment.
    BadSegment { segment: String },
    /// The protocol's reserved `__ds` prefix.
    Reserved,
}

impl core::fmt::Display for NameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NameError::Empty => write!(f, "is empty"),
            NameError::TooLong { bytes, max } => write!(f, "is {bytes} bytes, more than {max}"),
            NameError::ControlCharacter { at } => write!(f, "holds a control character at byte {at}"),
            NameError::BadSegment { segment } => {
                write!(f, "holds the path segment {segment:?}; segments are non-empty and not . or ..")
            }
            NameError::Reserved => write!(f, "starts with {RESERVED_SEGMENT}/, which the protocol reserves"),
        }
    }
}

fn check_text(text: &str, max: usize) -> Result<(), NameError> {
    if text.is_empty() {
        return Err(NameError::Empty);
    }
    if text.len() > max {
        return Err(NameError::TooLong { bytes: text.len(), max });
    }
    match text.bytes().position(|b| b < 0x20 || b == 0x7f) {
        Some(at) => Err(NameError::ControlCharacter { at }),
        None => Ok(()),
    }
}

/// Checks a stream name: the URL path below the stream root, percent-decoded, 1 to
/// [`STREAM_NAME_BYTES_MAX`] bytes of UTF-8 without control characters, in
/// `/`-separated segments that are neither empty nor `.` or `..`, and not under the
/// protocol's reserved `__ds/`.
pub fn check_stream_name(name: &str) -> Result<(), NameError> {
    check_text(name, STREAM_NAME_BYTES_MAX)?;
    if let Some(segment) = name.split('/').find(|segment| segment.is_empty() || *segment == "." || *segment == "..") {
        return Err(NameError::BadSegment { segment: segment.to_string() });
    }
    if name.split('/').next() == Some(RESERVED_SEGMENT) {
        return Err(NameError::Reserved);
    }
    Ok(())
}

/// Checks a producer id: 1 to [`PRODUCER_ID_BYTES_MAX`] bytes of UTF-8 without control
/// characters.
pub fn check_producer_id(id: &str) -> Result<(), NameError> {
    check_text(id, PRODUCER_ID_BYTES_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_names_are_paths_of_plain_segments() {
        assert_eq!(check_stream_name("orders/eu-1/2026"), Ok(()));
        assert_eq!(check_stream_name("caf\u{e9} au lait"), Ok(()));
        assert_eq!(check_stream_name(""), Err(NameError::Empty));
        assert_eq!(check_stream_name(&"a".repeat(1024)), Ok(()));
        assert_eq!(check_stream_name(&"a".repeat(1025)), Err(NameError::TooLong { bytes: 1025, max: 1024 }));
        assert_eq!(check_stream_name("a\nb"), Err(NameError::ControlCharacter { at: 1 }));
        assert_eq!(check_stream_name("a/../b"), Err(NameError::BadSegment { segment: "..".into() }));
        assert_eq!(check_stream_name("a//b"), Err(NameError::BadSegment { segment: "".into() }));
        assert_eq!(check_stream_name("a/"), Err(NameError::BadSegment { segment: "".into() }));
        assert_eq!(check_stream_name("__ds/subscriptions/x"), Err(NameError::Reserved));
        assert_eq!(check_stream_name("x/__ds"), Ok(()));
        assert_eq!(check_producer_id("order-service-1"), Ok(()));
        assert_eq!(check_producer_id(""), Err(NameError::Empty));
        assert_eq!(check_producer_id(&"p".repeat(256)), Err(NameError::TooLong { bytes: 256, max: 255 }));
        assert_eq!(NameError::Reserved.to_string(), "starts with __ds/, which the protocol reserves");
    }
}
