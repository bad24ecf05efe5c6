//! The WAL record of one append, and its fragments.
//!
//! Each request that appends to (or closes) a stream becomes one record of the WAL: a
//! tiny-store record ([`crate::codec::tiny`]) whose key is the stream's number in decimal
//! and whose value is the rest of the append, so `walab dump` shows which stream a record
//! belongs to and the tiny record's CRC32C covers all of it.
//!
//! ```text
//! tiny key:   stream number, decimal ("17")
//! tiny value: version u8 = 2 | index u64 LE | flags u8
//!             | part u16 | parts u16              (flags & FRAGMENT)
//!             | len u8 | producer id | epoch u64 | seq u64   (flags & PRODUCER)
//!             | len u8 | Stream-Seq               (flags & STREAM_SEQ)
//!             | body: the rest
//! ```
//!
//! The index is fixed before the WAL sees the record (it is the stream's next record
//! index), so replaying the WAL gives every stream's records at their places, and the
//! producer fields let recovery rebuild the producers' table ([`super::producers`])
//! from the log alone. A record with `CLOSES` closes its stream after its body; one with
//! an empty body only closes it and takes no index.
//!
//! # Fragments
//!
//! A tiny record holds at most 65,535 bytes, and a request may carry more. Such a body
//! is cut into fragments of at most [`FRAGMENT_BODY_BYTES_MAX`] bytes, each its own WAL
//! record with the same index and its part number; only the first carries the producer,
//! `Stream-Seq` and close. They are submitted one after the other under the stream's
//! lock and the request is answered once the last is durable. Because the WAL is
//! durable as a prefix, a crash can leave only the first few fragments of a request
//! that was never answered: recovery ([`Assembler`]) applies a request only once all
//! its parts are there, and a request cut short is dropped, whole. This is LevelDB's
//! FIRST/MIDDLE/LAST fragments, one level up.

use std::collections::BTreeMap;

use super::bytes::{put_bytes8, put_u16, put_u64, DecodeError, Reader};
use super::{check_producer_id, NameError, StreamId};

/// The format version this code writes and reads.
pub const VERSION: u8 = 2;
/// The most body bytes in one WAL record: with the largest producer id and `Stream-Seq`
/// the tiny record's payload stays under its 65,535 bytes.
pub const FRAGMENT_BODY_BYTES_MAX: usize = 64_000;
/// The most bytes in a `Stream-Seq`.
pub const STREAM_SEQ_BYTES_MAX: usize = 255;

const FLAG_PRODUCER: u8 = 1;
const FLAG_STREAM_SEQ: u8 = 2;
const FLAG_CLOSES: u8 = 4;
const FLAG_FRAGMENT: u8 = 8;
const FLAGS_KNOWN: u8 = FLAG_PRODUCER | FLAG_STREAM_SEQ | FLAG_CLOSES | FLAG_FRAGMENT;
/// Version, index, flags.
const FIXED_BYTES: usize = 1 + 8 + 1;

/// Who sent an append, for idempotence: a producer id, its session's epoch, its seq.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProducerStamp {
    pub id: String,
    pub epoch: u64,
    pub seq: u64,
}

/// One request's append (or close) as the WAL holds it, joined from its fragments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppendRecord {
    pub stream: StreamId,
    /// The record index the body takes (a close-only record: the index the next record
    /// would take).
    pub index: u64,
    pub producer: Option<ProducerStamp>,
    /// The request's `Stream-Seq`, if it had one.
    pub stream_seq: Option<String>,
    /// The stream is closed after this record.
    pub closes: bool,
    /// The data; empty only for a close-only record.
    pub body: Vec<u8>,
}

/// Why an append cannot be encoded, or a WAL record does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// The producer id is not an id ([`check_producer_id`]).
    BadProducer(NameError),
    /// A `Stream-Seq` over [`STREAM_SEQ_BYTES_MAX`] bytes or not UTF-8.
    BadStreamSeq,
    /// A record with no body that does not close its stream.
    Empty,
    /// A body that needs more than 65,535 fragments.
    BodyTooLarge { bytes: usize },
    /// A key that is not a stream number.
    BadKey,
    /// A format version this code does not know.
    UnknownVersion(u8),
    /// Flag bits this code does not know, or a continuation fragment carrying a head.
    BadFlags(u8),
    /// A fragment numbered past its count of parts.
    BadPart { part: u16, parts: u16 },
    /// Fewer bytes than the fields need.
    Truncated,
}

impl core::fmt::Display for RecordError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RecordError::BadProducer(error) => write!(f, "producer id {error}"),
            RecordError::BadStreamSeq => write!(f, "Stream-Seq is over {STREAM_SEQ_BYTES_MAX} bytes"),
            RecordError::Empty => write!(f, "an append record with no body that does not close its stream"),
            RecordError::BodyTooLarge { bytes } => write!(f, "a body of {bytes} bytes needs more than 65,535 fragments"),
            RecordError::BadKey => write!(f, "an append record whose key is not a stream number"),
            RecordError::UnknownVersion(version) => write!(f, "unknown append record version {version}"),
            RecordError::BadFlags(flags) => write!(f, "bad append record flags 0x{flags:02x}"),
            RecordError::BadPart { part, parts } => write!(f, "fragment {part} of {parts}"),
            RecordError::Truncated => write!(f, "append record truncated"),
        }
    }
}

impl AppendRecord {
    /// Checks the producer id, the `Stream-Seq` and the body, so that encoding cannot
    /// fail.
    pub fn check(&self) -> Result<(), RecordError> {
        if let Some(producer) = &self.producer {
            check_producer_id(&producer.id).map_err(RecordError::BadProducer)?;
        }
        if self.stream_seq.as_ref().is_some_and(|seq| seq.len() > STREAM_SEQ_BYTES_MAX) {
            return Err(RecordError::BadStreamSeq);
        }
        if self.body.is_empty() && !self.closes {
            return Err(RecordError::Empty);
        }
        if self.fragment_count() > usize::from(u16::MAX) {
            return Err(RecordError::BodyTooLarge { bytes: self.body.len() });
        }
        Ok(())
    }

    /// The tiny record's key: the stream's number in decimal.
    pub fn key(&self) -> String {
        self.stream.0.to_string()
    }

    /// How many WAL records the append takes.
    pub fn fragment_count(&self) -> usize {
        self.body.len().div_ceil(FRAGMENT_BODY_BYTES_MAX).max(1)
    }

    /// Fragment `part`'s tiny value, into `out` (cleared first). Call
    /// [`AppendRecord::check`] first.
    pub fn encode_fragment(&self, part: usize, out: &mut Vec<u8>) {
        let parts = self.fragment_count();
        assert!(part < parts, "fragment {part} of {parts}");
        out.clear();
        out.push(VERSION);
        put_u64(out, self.index);
        let mut flags = 0;
        if parts > 1 {
            flags |= FLAG_FRAGMENT;
        }
        if part == 0 {
            if self.producer.is_some() {
                flags |= FLAG_PRODUCER;
            }
            if self.stream_seq.is_some() {
                flags |= FLAG_STREAM_SEQ;
            }
            if self.closes {
                flags |= FLAG_CLOSES;
            }
        }
        out.push(flags);
        if parts > 1 {
            put_u16(out, part as u16);
            put_u16(out, parts as u16);
        }
        if part == 0 {
            if let Some(producer) = &self.producer {
                put_bytes8(out, producer.id.as_bytes());
                put_u64(out, producer.epoch);
                put_u64(out, producer.seq);
            }
            if let Some(seq) = &self.stream_seq {
                put_bytes8(out, seq.as_bytes());
            }
        }
        let start = part * FRAGMENT_BODY_BYTES_MAX;
        let end = self.body.len().min(start + FRAGMENT_BODY_BYTES_MAX);
        out.extend_from_slice(&self.body[start.min(end)..end]);
    }
}

/// What a first fragment carries besides its body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    pub producer: Option<ProducerStamp>,
    pub stream_seq: Option<String>,
    pub closes: bool,
}

/// One WAL record of an append: a whole append, or one fragment of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    pub stream: StreamId,
    pub index: u64,
    pub part: u16,
    pub parts: u16,
    /// Only the first fragment has one.
    pub head: Option<Head>,
    pub body: Vec<u8>,
}

fn truncated(_: DecodeError) -> RecordError {
    RecordError::Truncated
}

impl Fragment {
    /// Decodes a WAL record's key and value.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Fragment, RecordError> {
        let stream = core::str::from_utf8(key)
            .ok()
            .filter(|text| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|text| text.parse().ok())
            .map(StreamId)
            .ok_or(RecordError::BadKey)?;
        if value.len() < FIXED_BYTES {
            return Err(RecordError::Truncated);
        }
        if value[0] != VERSION {
            return Err(RecordError::UnknownVersion(value[0]));
        }
        let mut reader = Reader { rest: &value[1..] };
        let index = reader.u64().map_err(truncated)?;
        let flags = reader.u8().map_err(truncated)?;
        if flags & !FLAGS_KNOWN != 0 {
            return Err(RecordError::BadFlags(flags));
        }
        let (part, parts) = if flags & FLAG_FRAGMENT != 0 {
            let part = reader.u16().map_err(truncated)?;
            let parts = reader.u16().map_err(truncated)?;
            if parts < 2 || part >= parts {
                return Err(RecordError::BadPart { part, parts });
            }
            (part, parts)
        } else {
            (0, 1)
        };
        let head = if part == 0 {
            let producer = if flags & FLAG_PRODUCER != 0 {
                let id = core::str::from_utf8(reader.bytes8().map_err(truncated)?)
                    .map_err(|_| RecordError::BadProducer(NameError::ControlCharacter { at: 0 }))?
                    .to_string();
                check_producer_id(&id).map_err(RecordError::BadProducer)?;
                let epoch = reader.u64().map_err(truncated)?;
                let seq = reader.u64().map_err(truncated)?;
                Some(ProducerStamp { id, epoch, seq })
            } else {
                None
            };
            let stream_seq = if flags & FLAG_STREAM_SEQ != 0 {
                let bytes = reader.bytes8().map_err(truncated)?;
                Some(core::str::from_utf8(bytes).map_err(|_| RecordError::BadStreamSeq)?.to_string())
            } else {
                None
            };
            Some(Head { producer, stream_seq, closes: flags & FLAG_CLOSES != 0 })
        } else {
            if flags & (FLAG_PRODUCER | FLAG_STREAM_SEQ | FLAG_CLOSES) != 0 {
                return Err(RecordError::BadFlags(flags));
            }
            None
        };
        let body = reader.rest.to_vec();
        if body.len() > FRAGMENT_BODY_BYTES_MAX {
            return Err(RecordError::BadPart { part, parts });
        }
        if parts == 1 && body.is_empty() && !head.as_ref().is_some_and(|head| head.closes) {
            return Err(RecordError::Empty);
        }
        Ok(Fragment { stream, index, part, parts, head, body })
    }
}

/// A request whose fragments are not all in yet.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Partial {
    record: AppendRecord,
    parts: u16,
    next_part: u16,
}

/// Why a fragment does not continue what recovery holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AssemblyError {
    /// A later fragment without the ones before it.
    Orphan { stream: StreamId, index: u64, part: u16 },
}

impl core::fmt::Display for AssemblyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AssemblyError::Orphan { stream, index, part } => {
                write!(f, "stream {stream} record {index}: fragment {part} without the fragments before it")
            }
        }
    }
}

/// Joins fragments back into appends as recovery replays the WAL, per stream.
///
/// A request's fragments follow one another in its stream's records (they are submitted
/// under the stream's lock), though other streams' records may come between. A first
/// fragment while another request of the same stream is unfinished means that request
/// was cut short by a crash (nothing after its last durable fragment survived, and the
/// server that came back appended after it): it is dropped.
#[derive(Debug, Default)]
pub struct Assembler {
    pending: BTreeMap<StreamId, Partial>,
    /// Requests dropped because they were cut short.
    pub dropped: u64,
}

impl Assembler {
    /// Takes the next fragment: a whole append once its last part is in.
    pub fn push(&mut self, fragment: Fragment) -> Result<Option<AppendRecord>, AssemblyError> {
        match fragment.head {
            Some(head) => {
                if self.pending.remove(&fragment.stream).is_some() {
                    self.dropped += 1;
                }
                let record = AppendRecord {
                    stream: fragment.stream,
                    index: fragment.index,
                    producer: head.producer,
                    stream_seq: head.stream_seq,
                    closes: head.closes,
                    body: fragment.body,
                };
                if fragment.parts == 1 {
                    return Ok(Some(record));
                }
                self.pending.insert(fragment.stream, Partial { record, parts: fragment.parts, next_part: 1 });
                Ok(None)
            }
            None => {
                let orphan = AssemblyError::Orphan { stream: fragment.stream, index: fragment.index, part: fragment.part };
                let Some(partial) = self.pending.get_mut(&fragment.stream) else { return Err(orphan) };
                if partial.record.index != fragment.index || partial.next_part != fragment.part || partial.parts != fragment.parts {
                    return Err(orphan);
                }
                partial.record.body.extend_from_slice(&fragment.body);
                partial.next_part += 1;
                if partial.next_part < partial.parts {
                    return Ok(None);
                }
                Ok(self.pending.remove(&fragment.stream).map(|partial| partial.record))
            }
        }
    }

    /// At the end of the WAL: the requests still unfinished are dropped (they were never
    /// answered). Returns how many were dropped in all.
    pub fn finish(mut self) -> u64 {
        self.dropped += self.pending.len() as u64;
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::tiny;

    fn stamped() -> AppendRecord {
        AppendRecord {
            stream: StreamId(17),
            index: 7,
            producer: Some(ProducerStamp { id: "p1".into(), epoch: 2, seq: 9 }),
            stream_seq: Some("a1".into()),
            closes: true,
            body: b"hi".to_vec(),
        }
    }

    fn fragments(record: &AppendRecord) -> Vec<Fragment> {
        let mut value = Vec::new();
        (0..record.fragment_count())
            .map(|part| {
                record.encode_fragment(part, &mut value);
                Fragment::decode(record.key().as_bytes(), &value).unwrap()
            })
            .collect()
    }

    #[test]
    fn an_append_with_a_producer_golden() {
        let record = stamped();
        let mut value = Vec::new();
        record.encode_fragment(0, &mut value);
        assert_eq!(record.key(), "17");
        assert_eq!(
            value,
            [
                2, // version
                7, 0, 0, 0, 0, 0, 0, 0, // index 7
                1 | 2 | 4, // flags: producer, Stream-Seq, closes
                2, b'p', b'1', // producer id
                2, 0, 0, 0, 0, 0, 0, 0, // epoch 2
                9, 0, 0, 0, 0, 0, 0, 0, // seq 9
                2, b'a', b'1', // Stream-Seq
                b'h', b'i', // body
            ]
        );
        let mut assembler = Assembler::default();
        let whole = fragments(&record).into_iter().map(|f| assembler.push(f).unwrap()).last().unwrap();
        assert_eq!(whole, Some(record));
        assert_eq!(assembler.finish(), 0);
    }

    #[test]
    fn a_large_body_is_cut_in_fragments_and_joined_back_whole() {
        let body: Vec<u8> = (0..FRAGMENT_BODY_BYTES_MAX * 2 + 5).map(|n| n as u8).collect();
        let record = AppendRecord { body, ..stamped() };
        assert_eq!(record.fragment_count(), 3);
        let parts = fragments(&record);
        assert!(parts[0].head.is_some() && parts[1].head.is_none());
        assert_eq!(parts.iter().map(|f| f.body.len()).collect::<Vec<_>>(), [FRAGMENT_BODY_BYTES_MAX, FRAGMENT_BODY_BYTES_MAX, 5]);
        let mut value = Vec::new();
        record.encode_fragment(0, &mut value);
        assert!(tiny::payload_len(record.key().len() + 1, value.len() + 255 + 255) <= usize::from(u16::MAX));
        // Another stream's record between the fragments changes nothing.
        let other = AppendRecord { stream: StreamId(3), index: 0, body: b"x".to_vec(), ..AppendRecord::default() };
        let mut assembler = Assembler::default();
        assert_eq!(assembler.push(parts[0].clone()), Ok(None));
        assert_eq!(assembler.push(fragments(&other).remove(0)), Ok(Some(other)));
        assert_eq!(assembler.push(parts[1].clone()), Ok(None));
        assert_eq!(assembler.push(parts[2].clone()), Ok(Some(record.clone())));
        // Cut short by a crash: the next server's record at the same index drops it.
        let mut assembler = Assembler::default();
        assembler.push(parts[0].clone()).unwrap();
        assembler.push(parts[1].clone()).unwrap();
        let retry = AppendRecord { body: b"again".to_vec(), ..stamped() };
        assert_eq!(assembler.push(fragments(&retry).remove(0)), Ok(Some(retry)));
        assert_eq!(assembler.dropped, 1);
        // Cut short at the end of the WAL: dropped too.
        let mut assembler = Assembler::default();
        assembler.push(parts[0].clone()).unwrap();
        assert_eq!(assembler.finish(), 1);
        // A continuation without its start is damage.
        let mut assembler = Assembler::default();
        assert_eq!(assembler.push(parts[2].clone()), Err(AssemblyError::Orphan { stream: StreamId(17), index: 7, part: 2 }));
    }

    #[test]
    fn a_close_only_record_and_bad_input_are_named() {
        let close = AppendRecord { stream: StreamId(1), index: 4, closes: true, ..AppendRecord::default() };
        assert_eq!(close.check(), Ok(()));
        let decoded = fragments(&close).remove(0);
        assert_eq!(decoded.head, Some(Head { producer: None, stream_seq: None, closes: true }));
        assert!(decoded.body.is_empty());
        assert_eq!(AppendRecord { closes: false, ..close.clone() }.check(), Err(RecordError::Empty));
        let mut value = Vec::new();
        stamped().encode_fragment(0, &mut value);
        assert_eq!(Fragment::decode(b"x7", &value), Err(RecordError::BadKey));
        assert_eq!(Fragment::decode(b"", &value), Err(RecordError::BadKey));
        assert_eq!(Fragment::decode(b"17", &value[..5]), Err(RecordError::Truncated));
        assert_eq!(Fragment::decode(b"17", &value[..14]), Err(RecordError::Truncated));
        let mut versioned = value.clone();
        versioned[0] = 1;
        assert_eq!(Fragment::decode(b"17", &versioned), Err(RecordError::UnknownVersion(1)));
        let mut flagged = value.clone();
        flagged[9] = 0x40;
        assert_eq!(Fragment::decode(b"17", &flagged), Err(RecordError::BadFlags(0x40)));
        let mut empty = value.clone();
        empty.truncate(10);
        empty[9] = 0;
        assert_eq!(Fragment::decode(b"17", &empty), Err(RecordError::Empty));
        let long_seq = AppendRecord { stream_seq: Some("s".repeat(256)), ..stamped() };
        assert_eq!(long_seq.check(), Err(RecordError::BadStreamSeq));
        let bad_producer = AppendRecord { producer: Some(ProducerStamp { id: String::new(), epoch: 0, seq: 0 }), ..stamped() };
        assert_eq!(bad_producer.check(), Err(RecordError::BadProducer(NameError::Empty)));
    }
}
