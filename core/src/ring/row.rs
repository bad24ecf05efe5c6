//! A row of a slot table: the stream frame of one batch (the writer's epoch in a header
//! record, then the batch's tiny records), how it is checked when read back, and what a
//! row found at a retried insert's offset means.
//!
//! A row is `(start_offset, end_offset, epoch, body)`. The body is the stream WAL's frame
//! ([`crate::codec::stream`]): header (frame offset = `start_offset`, length, CRC32 over
//! the body), then the frame's records. The first frame record is the *batch header*,
//! the writer's epoch as 8 bytes little-endian, so that recovery can check the row's
//! `epoch` column against what the writer framed; the others are the batch's
//! tiny-store records, one frame record each ([`encode_row_body`], [`decode_row`]).

use core::fmt;

use super::BATCH_HEADER_BYTES;
use crate::checksum::{crc32, crc32c};
use crate::codec::stream::{decode_body, encode_frame_records, BodyError, FRAME_HEADER_BYTES};
use crate::codec::tiny::{self, PayloadError, TinyRecord};

/// Why a row's body is not what its writer framed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowError {
    /// Fewer bytes than a frame header.
    HeaderShort { bytes: usize },
    /// The frame's offset field is not the row's start offset.
    OffsetMismatch { row: u64, frame: u64 },
    /// The frame's length field is not the bytes after the header.
    LengthMismatch { header: u64, actual: u64 },
    /// The CRC32 over the body does not match.
    Checksum { stored: u32, computed: u32 },
    /// The body's record list does not parse.
    Body(BodyError),
    /// The first frame record is not an 8-byte batch header.
    NoBatchHeader,
    /// The row's epoch column differs from the epoch its writer framed.
    EpochMismatch { row: u64, frame: u64 },
    /// A frame record is not one whole tiny record.
    RecordLength { record: usize },
    /// A tiny record's own CRC32C does not match.
    RecordChecksum { record: usize },
    /// A tiny record's payload does not parse.
    RecordPayload { record: usize, error: PayloadError },
    /// `end_offset - start_offset` is not the bytes of the records.
    EndMismatch { row_end: u64, records_end: u64 },
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowError::HeaderShort { bytes } => write!(f, "body of {bytes} bytes is shorter than a frame header"),
            RowError::OffsetMismatch { row, frame } => {
                write!(f, "frame offset {frame} differs from the row's start offset {row}")
            }
            RowError::LengthMismatch { header, actual } => {
                write!(f, "frame length {header} differs from the {actual} body bytes present")
            }
            RowError::Checksum { stored, computed } => {
                write!(f, "checksum mismatch: stored {stored:08x}, computed {computed:08x}")
            }
            RowError::Body(error) => error.fmt(f),
            RowError::NoBatchHeader => f.write_str("the frame has no 8-byte batch header (epoch)"),
            RowError::EpochMismatch { row, frame } => {
                write!(f, "row epoch {row} differs from the epoch {frame} in its frame")
            }
            RowError::RecordLength { record } => write!(f, "frame record {record} is not one whole tiny record"),
            RowError::RecordChecksum { record } => write!(f, "tiny record {record} fails its crc32c"),
            RowError::RecordPayload { record, error } => write!(f, "tiny record {record}: payload {error:?}"),
            RowError::EndMismatch { row_end, records_end } => {
                write!(f, "end offset {row_end} differs from start + record bytes = {records_end}")
            }
        }
    }
}

/// The body of the row for a batch: the stream frame at `start_offset` holding the batch
/// header (`epoch`) and each of the batch's tiny records, as the group-commit machine
/// hands them out ([`Batch::records`](crate::group_commit::Batch::records)).
pub fn encode_row_body<'a>(start_offset: u64, epoch: u64, records: impl Iterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let header = epoch.to_le_bytes();
    let header: &[u8] = &header;
    encode_frame_records(start_offset, core::iter::once(header).chain(records.map(|record| -> &[u8] { record })))
}

/// True when `record` is exactly one tiny record by its length field.
fn is_one_tiny_record(record: &[u8]) -> bool {
    record.len() >= tiny::HEADER_BYTES
        && record.len() == tiny::HEADER_BYTES + usize::from(u16::from_le_bytes([record[4], record[5]]))
}

/// A row as read back from a slot table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotRow {
    pub slot: u64,
    pub start_offset: u64,
    pub end_offset: u64,
    pub epoch: u64,
    pub body: Vec<u8>,
}

/// Checks a row against its frame and returns its records.
pub fn decode_row(row: &SlotRow) -> Result<Vec<TinyRecord>, RowError> {
    let body = &row.body;
    if body.len() < FRAME_HEADER_BYTES {
        return Err(RowError::HeaderShort { bytes: body.len() });
    }
    let frame_offset = u64::from_le_bytes(body[..8].try_into().expect("eight bytes"));
    let length = u64::from(u32::from_le_bytes(body[8..12].try_into().expect("four bytes")));
    let stored = u32::from_le_bytes(body[12..16].try_into().expect("four bytes"));
    if frame_offset != row.start_offset {
        return Err(RowError::OffsetMismatch { row: row.start_offset, frame: frame_offset });
    }
    let payload = &body[FRAME_HEADER_BYTES..];
    if length != payload.len() as u64 {
        return Err(RowError::LengthMismatch { header: length, actual: payload.len() as u64 });
    }
    let computed = crc32(payload);
    if computed != stored {
        return Err(RowError::Checksum { stored, computed });
    }
    let mut frame_records = decode_body(payload).map_err(RowError::Body)?.into_iter();
    let header = frame_records.next().filter(|h| h.len() == BATCH_HEADER_BYTES).ok_or(RowError::NoBatchHeader)?;
    let frame_epoch = u64::from_le_bytes(header[..].try_into().expect("eight bytes"));
    if frame_epoch != row.epoch {
        return Err(RowError::EpochMismatch { row: row.epoch, frame: frame_epoch });
    }
    let mut records = Vec::new();
    let mut bytes = 0u64;
    for (index, record) in frame_records.enumerate() {
        if !is_one_tiny_record(&record) {
            return Err(RowError::RecordLength { record: index });
        }
        let stored = u32::from_le_bytes(record[..4].try_into().expect("four bytes"));
        if crc32c(&[&record[6..]]) != stored {
            return Err(RowError::RecordChecksum { record: index });
        }
        let decoded = tiny::decode_payload(&record[tiny::HEADER_BYTES..])
            .map_err(|error| RowError::RecordPayload { record: index, error })?;
        bytes += record.len() as u64;
        records.push(decoded);
    }
    let records_end = row.start_offset + bytes;
    if records_end != row.end_offset {
        return Err(RowError::EndMismatch { row_end: row.end_offset, records_end });
    }
    Ok(records)
}

/// A row's offsets end, epoch and body, for [`judge_stored_row`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowAt<'a> {
    pub end: u64,
    pub epoch: u64,
    pub body: &'a [u8],
}

/// What the row already at a batch's offset means when the batch's fenced insert
/// inserted nothing ([`judge_stored_row`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredRowVerdict {
    /// The same end, epoch and bytes: an earlier attempt of this insert committed.
    Committed,
    /// A row of another epoch: a newer writer owns the log.
    Fenced,
    /// The same epoch with other bytes or another end: corruption, never success.
    Mismatch,
}

/// A lost reply says nothing about whether the `COMMIT` happened, so a retried insert
/// that finds a row at its offset compares it with its own batch (`ours`).
pub fn judge_stored_row(ours: &RowAt<'_>, stored: &RowAt<'_>) -> StoredRowVerdict {
    if stored == ours {
        StoredRowVerdict::Committed
    } else if stored.epoch != ours.epoch {
        StoredRowVerdict::Fenced
    } else {
        StoredRowVerdict::Mismatch
    }
}
