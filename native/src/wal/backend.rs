//! The seam between the driver and a storage: [`Backend`], its [`Completion`], what
//! recovery found ([`Recovered`]) and the WAL's errors ([`WalError`]).

use std::sync::mpsc::Sender;

use walab_core::codec::tiny::TinyRecord;
use walab_core::group_commit::{self, Batch, BatchId, Policy, SyncError};

use super::driver::Event;

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
    /// The machine refused the append (backpressure, a record too large, ...).
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

/// What a backend found on its storage when the WAL was opened.
#[derive(Clone, Debug, Default)]
pub struct Recovered {
    /// Every durable record, in seq order.
    pub records: Vec<TinyRecord>,
    /// The seq the next append gets (last recovered seq + 1, or 1 for an empty log).
    pub next_seq: u64,
    /// Log position (record bytes since the log began, as far as the kept segments tell).
    pub lsn: u64,
    /// The segment appends continue in, and the bytes already used in it.
    pub segment: u64,
    pub segment_bytes: u64,
    /// For every kept segment, oldest first: its number and the seq of its last record
    /// (`None` when it holds none).
    pub segments: Vec<(u64, Option<u64>)>,
    /// A one-line note about what recovery repaired, if anything (a cut torn tail).
    pub repaired: Option<String>,
}

/// Tells the driver that a persist has returned. Cheap to move into another thread or task.
pub struct Completion {
    pub(super) batch: BatchId,
    pub(super) events: Sender<Event>,
}

impl Completion {
    /// Reports the persist's outcome, handing back the batch's buffer for reuse.
    pub fn complete(self, result: Result<(), SyncError>, buffer: Vec<u8>) {
        // A closed driver no longer cares; nothing to do then.
        let _ = self.events.send(Event::Persisted { batch: self.batch, result, buffer });
    }
}

/// One storage behind the WAL. See the module docs for the contract.
pub trait Backend: Send + 'static {
    /// The log's name in messages (`file:///data/wal/default/0`).
    fn describe(&self) -> String;
    /// Reads what the storage durably holds, repairs a torn tail, and gets ready to
    /// append. Called once, before anything else.
    fn recover(&mut self) -> Result<Recovered, WalError>;
    /// The most bytes a segment holds; the driver starts segment `n + 1` before a record
    /// would pass it. Backends without segments return `u64::MAX`.
    fn segment_bytes_max(&self) -> u64;
    /// Writes the batch at `batch.offset` of `batch.segment` and makes it durable; calls
    /// `done.complete` once it has (or has failed), inline or later.
    fn persist(&mut self, batch: Batch, done: Completion);
    /// Hands the batch to the storage *without* making it durable. Only the policies
    /// that acknowledge before syncing use it (the deliberately unsafe ones).
    fn write_unsynced(&mut self, batch: &Batch) -> Result<(), SyncError>;
    /// Removes these whole segments (all older than the segment being appended to).
    fn remove_segments(&mut self, segments: &[u64]) -> Result<(), WalError>;
    /// The group-commit settings this storage wants: one sync at a time for a local
    /// file (the default); an object store or database returns
    /// `Config::remote(Policy::Group)` (or a `Window` policy) for several batches in flight.
    fn machine_config(&self) -> group_commit::Config {
        group_commit::Config::file(Policy::Group)
    }
    /// Every consumer and reader has confirmed the records through `seq`. Called before
    /// [`Backend::remove_segments`] whenever that position moves; a backend that trims
    /// finer than whole segments (the Postgres WAL's trim offset) uses it, the others
    /// ignore it.
    fn confirmed(&mut self, _seq: u64) {}
    /// The CPUs the driver should run on, because it syncs (see [`super::file::affinity`]); `None`
    /// (the default) leaves it wherever Linux puts it.
    fn sync_cpus(&self) -> Option<Vec<usize>> {
        None
    }
}

