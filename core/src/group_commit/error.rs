//! How a persist, an append or a completion can fail.

use std::fmt;

use super::BatchId;

/// Why a persist failed, as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum SyncError {
    /// EIO: the device failed; the pages may have been dropped (Part 3).
    Io,
    /// ENOSPC: the disk is full.
    NoSpace,
    /// The backend is unreachable (a lost volume, a failed PUT, a dropped connection).
    Unavailable,
    /// Another writer took the log over (its epoch moved).
    Fenced,
    /// A retried persist found different bytes already stored at its position: the
    /// storage is corrupt (or two writers share an epoch). Never accepted.
    Mismatch,
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyncError::Io => "i/o error (eio)",
            SyncError::NoSpace => "no space left on device (enospc)",
            SyncError::Unavailable => "storage unavailable",
            SyncError::Fenced => "fenced by a newer writer",
            SyncError::Mismatch => "different bytes already stored at this position (corruption)",
        })
    }
}

impl std::error::Error for SyncError {}

/// Why an append was refused. Nothing was queued; the writer was not given a ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendError {
    /// A persist failed earlier: the log takes nothing until it is recovered and reopened.
    Failed(SyncError),
    /// The bytes appended but not yet durable would exceed `unflushed_bytes_max`.
    Backpressure { unflushed_bytes: usize, record_bytes: usize },
    /// `waiters_max` appends already wait for their acknowledgement.
    TooManyWaiters,
    /// The record can never fit under `unflushed_bytes_max`.
    RecordTooLarge { record_bytes: usize },
    /// An empty record: there is nothing to make durable.
    EmptyRecord,
    /// The record names a segment before the current one.
    SegmentWentBack { current: u64, given: u64 },
}

impl fmt::Display for AppendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppendError::Failed(error) => write!(f, "log failed earlier ({error}); recover and reopen it"),
            AppendError::Backpressure { unflushed_bytes, record_bytes } => write!(
                f,
                "backpressure: {unflushed_bytes} bytes not yet durable, {record_bytes} more would pass the limit"
            ),
            AppendError::TooManyWaiters => f.write_str("too many writers waiting"),
            AppendError::RecordTooLarge { record_bytes } => {
                write!(f, "record of {record_bytes} bytes exceeds the unflushed-bytes limit")
            }
            AppendError::EmptyRecord => f.write_str("empty record"),
            AppendError::SegmentWentBack { current, given } => {
                write!(f, "segment {given} is before the current segment {current}")
            }
        }
    }
}

impl std::error::Error for AppendError {}

/// A driver reported something the machine never asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionError {
    /// No persist or sync with this id is in flight.
    UnknownBatch(BatchId),
}

impl fmt::Display for CompletionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompletionError::UnknownBatch(batch) => write!(f, "{batch}: no such batch in flight"),
        }
    }
}

impl std::error::Error for CompletionError {}
