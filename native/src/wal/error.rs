//! The WAL's errors ([`WalError`]), one line each, and how an I/O error from a persist
//! maps to the machine's failure kinds.

use walab_core::group_commit::SyncError;

/// Why the WAL could not do what was asked (one line each).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WalError {
    /// The storage could not be opened, read or prepared: `subject: what`.
    #[error("{0}")]
    Open(String),
    /// The log on the storage is damaged beyond a torn tail.
    #[error("{0}")]
    Corrupt(String),
    /// A persist failed: this append's outcome is unknown, and the WAL takes no more
    /// appends until it is reopened.
    #[error("persist failed, outcome unknown, log stopped: {0}")]
    Failed(SyncError),
    /// The session refused the append (backpressure, a record too large, ...).
    #[error("append refused: {0}")]
    Refused(String),
    /// The WAL was closed.
    #[error("the log is closed")]
    Closed,
}

/// Maps an I/O error from a persist to the machine's failure kinds.
pub fn sync_error_of(error: &std::io::Error) -> SyncError {
    match error.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => SyncError::NoSpace,
        _ => SyncError::Io,
    }
}
