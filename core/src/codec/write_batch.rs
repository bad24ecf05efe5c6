//! The payload of a LevelDB or RocksDB log record: a `WriteBatch`.
//!
//! One commit group becomes one logical log record, and that record's bytes are the batch
//! exactly as it sat in memory:
//!
//! ```text
//! seq u64 LE | count u32 LE | entry | entry | ...
//! entry := tag u8, then the tag's fields
//!   Put (1)     key, value           Delete (0)        key
//!   Merge (2)   key, value           SingleDelete (7)  key
//!   RangeDelete (15) begin, end      BlobIndex (17)    key, value
//!   WideColumnEntity (22) key, value
//!   the column-family variants (4, 5, 6, 8, 14, 16, 23) put a varint32 family id first
//!   LogData (3) blob                 Noop (13)
//!   BeginPrepare (9), BeginPersistedPrepare (18), BeginUnprepare (19)
//!   EndPrepare (10) xid, Commit (11) xid, Rollback (12) xid,
//!   CommitWithTimestamp (21) timestamp, xid
//! key, value, blob, xid := varint32 length, bytes
//! ```
//!
//! `seq` is the sequence number of the batch's first data entry; the batch uses `count`
//! numbers, so the next batch starts at `seq + count`. `count` counts the data entries
//! (puts, deletes, merges, range deletes, blob indexes, wide-column entities), not the
//! markers that RocksDB's transactions and `PutLogData` add. LevelDB writes only tags 0
//! and 1; the rest are RocksDB's. A tag walab does not know is an error that names it, so
//! an unfamiliar log is never silently half-read.

use super::varint::{get_varint, put_varint};

/// Bytes before the first entry: seq (8) and count (4).
pub const BATCH_HEADER_BYTES: usize = 12;

pub const TAG_DELETE: u8 = 0x00;
pub const TAG_PUT: u8 = 0x01;
pub const TAG_MERGE: u8 = 0x02;
pub const TAG_LOG_DATA: u8 = 0x03;
pub const TAG_CF_DELETE: u8 = 0x04;
pub const TAG_CF_PUT: u8 = 0x05;
pub const TAG_CF_MERGE: u8 = 0x06;
pub const TAG_SINGLE_DELETE: u8 = 0x07;
pub const TAG_CF_SINGLE_DELETE: u8 = 0x08;
pub const TAG_BEGIN_PREPARE: u8 = 0x09;
pub const TAG_END_PREPARE: u8 = 0x0a;
pub const TAG_COMMIT: u8 = 0x0b;
pub const TAG_ROLLBACK: u8 = 0x0c;
pub const TAG_NOOP: u8 = 0x0d;
pub const TAG_CF_RANGE_DELETE: u8 = 0x0e;
pub const TAG_RANGE_DELETE: u8 = 0x0f;
pub const TAG_CF_BLOB_INDEX: u8 = 0x10;
pub const TAG_BLOB_INDEX: u8 = 0x11;
pub const TAG_BEGIN_PERSISTED_PREPARE: u8 = 0x12;
pub const TAG_BEGIN_UNPREPARE: u8 = 0x13;
pub const TAG_COMMIT_WITH_TIMESTAMP: u8 = 0x15;
pub const TAG_WIDE_COLUMN_ENTITY: u8 = 0x16;
pub const TAG_CF_WIDE_COLUMN_ENTITY: u8 = 0x17;

/// One entry of a batch. `column_family` is 0 for the default family, which is written
/// with the plain tag; any other family uses the column-family tag.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "op", rename_all = "snake_case"))]
pub enum BatchOp {
    Put { column_family: u32, key: Vec<u8>, value: Vec<u8> },
    Delete { column_family: u32, key: Vec<u8> },
    SingleDelete { column_family: u32, key: Vec<u8> },
    Merge { column_family: u32, key: Vec<u8>, value: Vec<u8> },
    RangeDelete { column_family: u32, begin_key: Vec<u8>, end_key: Vec<u8> },
    BlobIndex { column_family: u32, key: Vec<u8>, value: Vec<u8> },
    WideColumnEntity { column_family: u32, key: Vec<u8>, value: Vec<u8> },
    /// Bytes an application logged alongside the batch (`PutLogData`); not a data entry.
    LogData { blob: Vec<u8> },
    Noop,
    BeginPrepare,
    BeginPersistedPrepare,
    BeginUnprepare,
    EndPrepare { xid: Vec<u8> },
    Commit { xid: Vec<u8> },
    CommitWithTimestamp { timestamp: Vec<u8>, xid: Vec<u8> },
    Rollback { xid: Vec<u8> },
}

impl BatchOp {
    /// True for the entries that `count` counts and that use a sequence number.
    pub fn is_data(&self) -> bool {
        matches!(
            self,
            BatchOp::Put { .. }
                | BatchOp::Delete { .. }
                | BatchOp::SingleDelete { .. }
                | BatchOp::Merge { .. }
                | BatchOp::RangeDelete { .. }
                | BatchOp::BlobIndex { .. }
                | BatchOp::WideColumnEntity { .. }
        )
    }
}

/// A decoded batch.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WriteBatch {
    /// The sequence number of the first data entry.
    pub seq: u64,
    /// The count stored in the header (equal to the data entries, or decoding fails).
    pub count: u32,
    pub ops: Vec<BatchOp>,
}

impl WriteBatch {
    /// A batch of these entries starting at `seq`, with `count` computed.
    pub fn new(seq: u64, ops: Vec<BatchOp>) -> WriteBatch {
        let count = ops.iter().filter(|op| op.is_data()).count() as u32;
        WriteBatch { seq, count, ops }
    }

    /// The first sequence number after this batch: `seq + count`.
    pub fn next_seq(&self) -> u64 {
        self.seq.saturating_add(u64::from(self.count))
    }

    /// The last sequence number the batch uses (its `seq` when it has no data entry).
    pub fn last_seq(&self) -> u64 {
        self.next_seq().saturating_sub(1).max(self.seq)
    }
}

/// Why a batch did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum BatchError {
    /// Fewer than the 12 header bytes.
    TooSmall { bytes: usize },
    /// A field runs past the end of the batch.
    Truncated { at: usize },
    /// A varint that overflows 32 bits.
    BadVarint { at: usize },
    /// A tag walab does not know.
    UnknownTag { tag: u8, at: usize },
    /// The header's count differs from the data entries found.
    WrongCount { stored: u32, found: u32 },
}

impl core::fmt::Display for BatchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BatchError::TooSmall { bytes } => write!(f, "write batch of {bytes} bytes is shorter than its 12-byte header"),
            BatchError::Truncated { at } => write!(f, "write batch entry runs past the end at batch byte {at}"),
            BatchError::BadVarint { at } => write!(f, "write batch length varint overflows at batch byte {at}"),
            BatchError::UnknownTag { tag, at } => write!(f, "unknown write batch tag 0x{tag:02x} at batch byte {at}"),
            BatchError::WrongCount { stored, found } => {
                write!(f, "write batch count says {stored} entries, found {found}")
            }
        }
    }
}

/// Encodes a batch as LevelDB and RocksDB lay it out (the stored count is `batch.count`).
pub fn encode_batch(batch: &WriteBatch) -> Vec<u8> {
    let mut out = Vec::with_capacity(BATCH_HEADER_BYTES + 16 * batch.ops.len());
    out.extend_from_slice(&batch.seq.to_le_bytes());
    out.extend_from_slice(&batch.count.to_le_bytes());
    for op in &batch.ops {
        encode_op(&mut out, op);
    }
    out
}

fn put_slice(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The tag, and the family id when it is not the default one.
fn tag_for(out: &mut Vec<u8>, column_family: u32, plain: u8, with_family: u8) {
    if column_family == 0 {
        out.push(plain);
    } else {
        out.push(with_family);
        put_varint(out, u64::from(column_family));
    }
}

fn encode_op(out: &mut Vec<u8>, op: &BatchOp) {
    match op {
        BatchOp::Put { column_family, key, value } => {
            tag_for(out, *column_family, TAG_PUT, TAG_CF_PUT);
            put_slice(out, key);
            put_slice(out, value);
        }
        BatchOp::Delete { column_family, key } => {
            tag_for(out, *column_family, TAG_DELETE, TAG_CF_DELETE);
            put_slice(out, key);
        }
        BatchOp::SingleDelete { column_family, key } => {
            tag_for(out, *column_family, TAG_SINGLE_DELETE, TAG_CF_SINGLE_DELETE);
            put_slice(out, key);
        }
        BatchOp::Merge { column_family, key, value } => {
            tag_for(out, *column_family, TAG_MERGE, TAG_CF_MERGE);
            put_slice(out, key);
            put_slice(out, value);
        }
        BatchOp::RangeDelete { column_family, begin_key, end_key } => {
            tag_for(out, *column_family, TAG_RANGE_DELETE, TAG_CF_RANGE_DELETE);
            put_slice(out, begin_key);
            put_slice(out, end_key);
        }
        BatchOp::BlobIndex { column_family, key, value } => {
            tag_for(out, *column_family, TAG_BLOB_INDEX, TAG_CF_BLOB_INDEX);
            put_slice(out, key);
            put_slice(out, value);
        }
        BatchOp::WideColumnEntity { column_family, key, value } => {
            tag_for(out, *column_family, TAG_WIDE_COLUMN_ENTITY, TAG_CF_WIDE_COLUMN_ENTITY);
            put_slice(out, key);
            put_slice(out, value);
        }
        BatchOp::LogData { blob } => {
            out.push(TAG_LOG_DATA);
            put_slice(out, blob);
        }
        BatchOp::Noop => out.push(TAG_NOOP),
        BatchOp::BeginPrepare => out.push(TAG_BEGIN_PREPARE),
        BatchOp::BeginPersistedPrepare => out.push(TAG_BEGIN_PERSISTED_PREPARE),
        BatchOp::BeginUnprepare => out.push(TAG_BEGIN_UNPREPARE),
        BatchOp::EndPrepare { xid } => {
            out.push(TAG_END_PREPARE);
            put_slice(out, xid);
        }
        BatchOp::Commit { xid } => {
            out.push(TAG_COMMIT);
            put_slice(out, xid);
        }
        BatchOp::CommitWithTimestamp { timestamp, xid } => {
            out.push(TAG_COMMIT_WITH_TIMESTAMP);
            put_slice(out, timestamp);
            put_slice(out, xid);
        }
        BatchOp::Rollback { xid } => {
            out.push(TAG_ROLLBACK);
            put_slice(out, xid);
        }
    }
}

/// A reader over a batch's bytes that knows its position, for error messages.
struct BatchReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> BatchReader<'a> {
    fn varint32(&mut self) -> Result<u32, BatchError> {
        let at = self.at;
        match get_varint(&self.bytes[at..]) {
            Ok((value, used)) => {
                let value = u32::try_from(value).map_err(|_| BatchError::BadVarint { at })?;
                self.at += used;
                Ok(value)
            }
            Err(super::varint::VarintError::Truncated) => Err(BatchError::Truncated { at }),
            Err(super::varint::VarintError::Overflow) => Err(BatchError::BadVarint { at }),
        }
    }

    fn slice(&mut self) -> Result<Vec<u8>, BatchError> {
        let at = self.at;
        let len = self.varint32()? as usize;
        let end = self.at.checked_add(len).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or(BatchError::Truncated { at })?;
        let field = self.bytes[self.at..end].to_vec();
        self.at = end;
        Ok(field)
    }
}

/// Decodes a batch. Every entry must parse, no bytes may be left over, and the stored
/// count must equal the data entries found.
pub fn decode_batch(bytes: &[u8]) -> Result<WriteBatch, BatchError> {
    if bytes.len() < BATCH_HEADER_BYTES {
        return Err(BatchError::TooSmall { bytes: bytes.len() });
    }
    let seq = u64::from_le_bytes(bytes[..8].try_into().expect("eight bytes"));
    let count = u32::from_le_bytes(bytes[8..12].try_into().expect("four bytes"));
    let mut reader = BatchReader { bytes, at: BATCH_HEADER_BYTES };
    let mut ops = Vec::new();
    let mut found: u32 = 0;
    // Bounded by the batch: every entry consumes at least its tag byte.
    while reader.at < bytes.len() {
        let at = reader.at;
        let tag = bytes[at];
        reader.at += 1;
        let op = match tag {
            TAG_PUT => BatchOp::Put { column_family: 0, key: reader.slice()?, value: reader.slice()? },
            TAG_CF_PUT => {
                let column_family = reader.varint32()?;
                BatchOp::Put { column_family, key: reader.slice()?, value: reader.slice()? }
            }
            TAG_DELETE => BatchOp::Delete { column_family: 0, key: reader.slice()? },
            TAG_CF_DELETE => {
                let column_family = reader.varint32()?;
                BatchOp::Delete { column_family, key: reader.slice()? }
            }
            TAG_SINGLE_DELETE => BatchOp::SingleDelete { column_family: 0, key: reader.slice()? },
            TAG_CF_SINGLE_DELETE => {
                let column_family = reader.varint32()?;
                BatchOp::SingleDelete { column_family, key: reader.slice()? }
            }
            TAG_MERGE => BatchOp::Merge { column_family: 0, key: reader.slice()?, value: reader.slice()? },
            TAG_CF_MERGE => {
                let column_family = reader.varint32()?;
                BatchOp::Merge { column_family, key: reader.slice()?, value: reader.slice()? }
            }
            TAG_RANGE_DELETE => {
                BatchOp::RangeDelete { column_family: 0, begin_key: reader.slice()?, end_key: reader.slice()? }
            }
            TAG_CF_RANGE_DELETE => {
                let column_family = reader.varint32()?;
                BatchOp::RangeDelete { column_family, begin_key: reader.slice()?, end_key: reader.slice()? }
            }
            TAG_BLOB_INDEX => BatchOp::BlobIndex { column_family: 0, key: reader.slice()?, value: reader.slice()? },
            TAG_CF_BLOB_INDEX => {
                let column_family = reader.varint32()?;
                BatchOp::BlobIndex { column_family, key: reader.slice()?, value: reader.slice()? }
            }
            TAG_WIDE_COLUMN_ENTITY => {
                BatchOp::WideColumnEntity { column_family: 0, key: reader.slice()?, value: reader.slice()? }
            }
            TAG_CF_WIDE_COLUMN_ENTITY => {
                let column_family = reader.varint32()?;
                BatchOp::WideColumnEntity { column_family, key: reader.slice()?, value: reader.slice()? }
            }
            TAG_LOG_DATA => BatchOp::LogData { blob: reader.slice()? },
            TAG_NOOP => BatchOp::Noop,
            TAG_BEGIN_PREPARE => BatchOp::BeginPrepare,
            TAG_BEGIN_PERSISTED_PREPARE => BatchOp::BeginPersistedPrepare,
            TAG_BEGIN_UNPREPARE => BatchOp::BeginUnprepare,
            TAG_END_PREPARE => BatchOp::EndPrepare { xid: reader.slice()? },
            TAG_COMMIT => BatchOp::Commit { xid: reader.slice()? },
            TAG_COMMIT_WITH_TIMESTAMP => BatchOp::CommitWithTimestamp { timestamp: reader.slice()?, xid: reader.slice()? },
            TAG_ROLLBACK => BatchOp::Rollback { xid: reader.slice()? },
            unknown => return Err(BatchError::UnknownTag { tag: unknown, at }),
        };
        if op.is_data() {
            found += 1;
        }
        ops.push(op);
    }
    if found != count {
        return Err(BatchError::WrongCount { stored: count, found });
    }
    Ok(WriteBatch { seq, count, ops })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, value: &str) -> BatchOp {
        BatchOp::Put { column_family: 0, key: key.into(), value: value.into() }
    }

    #[test]
    fn golden_put_and_delete() {
        let batch = WriteBatch::new(
            1,
            vec![put("user:1", "alice"), BatchOp::Delete { column_family: 0, key: b"user:2".to_vec() }],
        );
        let bytes = encode_batch(&batch);
        let mut expected = vec![1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0];
        expected.extend([1, 6]);
        expected.extend(b"user:1");
        expected.push(5);
        expected.extend(b"alice");
        expected.extend([0, 6]);
        expected.extend(b"user:2");
        assert_eq!(bytes, expected);
        assert_eq!(decode_batch(&bytes), Ok(batch));
    }

    #[test]
    fn rocksdb_entries_round_trip() {
        let batch = WriteBatch::new(
            77,
            vec![
                BatchOp::Put { column_family: 3, key: b"k".to_vec(), value: b"v".to_vec() },
                BatchOp::Delete { column_family: 300, key: b"k".to_vec() },
                BatchOp::SingleDelete { column_family: 0, key: b"s".to_vec() },
                BatchOp::Merge { column_family: 1, key: b"m".to_vec(), value: b"+1".to_vec() },
                BatchOp::RangeDelete { column_family: 0, begin_key: b"a".to_vec(), end_key: b"c".to_vec() },
                BatchOp::LogData { blob: b"note".to_vec() },
                BatchOp::Noop,
                BatchOp::BeginPrepare,
                BatchOp::EndPrepare { xid: b"tx1".to_vec() },
                BatchOp::Commit { xid: b"tx1".to_vec() },
            ],
        );
        assert_eq!(batch.count, 5);
        assert_eq!(batch.next_seq(), 82);
        let bytes = encode_batch(&batch);
        assert_eq!(decode_batch(&bytes), Ok(batch));
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(decode_batch(&[0; 5]), Err(BatchError::TooSmall { bytes: 5 }));
        let mut bytes = encode_batch(&WriteBatch::new(1, vec![put("a", "b")]));
        bytes.push(0x42);
        assert_eq!(decode_batch(&bytes), Err(BatchError::UnknownTag { tag: 0x42, at: 17 }));
        let bytes = encode_batch(&WriteBatch::new(1, vec![put("a", "b")]));
        assert_eq!(decode_batch(&bytes[..bytes.len() - 1]), Err(BatchError::Truncated { at: 15 }));
        let mut bytes = encode_batch(&WriteBatch::new(1, vec![put("a", "b")]));
        bytes[8] = 2;
        assert_eq!(decode_batch(&bytes), Err(BatchError::WrongCount { stored: 2, found: 1 }));
        assert_eq!(
            BatchError::UnknownTag { tag: 0x42, at: 17 }.to_string(),
            "unknown write batch tag 0x42 at batch byte 17"
        );
    }
}
