//! The seam between the driver and a storage: [`Backend`] and what recovery found
//! ([`Recovered`]).

use walab_core::codec::tiny::TinyRecord;
use walab_core::group_commit::{self, Batch, SyncError};
use walab_core::session::retention::KeptSegment;
use walab_core::session::ring::RingTrim;
use walab_core::session::{RingLayout, RingResume};

use super::error::WalError;
use super::inbox::{Completion, TrimDone};

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
    /// A ring of slot tables (the Postgres WAL): its layout and what recovery found of
    /// its trim. Its segments are the ring's generations, and it is trimmed by offset.
    pub ring: Option<(RingLayout, RingResume)>,
}

impl Recovered {
    /// The kept segments, as the session keeps them.
    pub fn kept(&self) -> Vec<KeptSegment> {
        self.segments.iter().map(|&(segment, last_seq)| KeptSegment { segment, last_seq }).collect()
    }
}

/// One storage behind the WAL. See the module docs.
pub trait Backend: Send + 'static {
    /// The log's name in messages (`file:///data/wal/default/0`).
    fn describe(&self) -> String;
    /// Reads what the storage durably holds, repairs a torn tail, and gets ready to
    /// append. Called once, before anything else.
    fn recover(&mut self) -> Result<Recovered, WalError>;
    /// [`Backend::recover`], every recovered record handed to `visit` in seq order as
    /// recovery finds it instead of kept in [`Recovered::records`] (left empty). A record
    /// handed over before recovery fails (a corrupt log) was read intact, but the log is
    /// refused. The default recovers and then hands the records over; the file, S3 and
    /// Postgres backends stream them as they read, so that recovering holds one segment,
    /// a few objects or a page of rows, not the log.
    fn recover_streaming(&mut self, visit: &mut dyn FnMut(TinyRecord)) -> Result<Recovered, WalError> {
        let mut recovered = self.recover()?;
        for record in std::mem::take(&mut recovered.records) {
            visit(record);
        }
        Ok(recovered)
    }
    /// The most bytes a segment holds: the session starts segment `n + 1` before a
    /// record would pass it. Backends without segments return `u64::MAX`.
    fn segment_bytes_max(&self) -> u64;
    /// The group-commit settings this storage runs with: its preset
    /// ([`walab_core::session::preset`]) with the tuning it was built with. A storage
    /// that names none gets the machine's defaults (one persist at a time).
    fn machine_config(&self) -> group_commit::Config {
        group_commit::Config::file(group_commit::Policy::Group)
    }
    /// Writes the batch at `batch.offset` of `batch.segment` and makes it durable, on
    /// the driver's thread when the machine marked it [`Batch::inline`] and off it
    /// otherwise; calls `done.complete` once it has (or has failed).
    fn persist(&mut self, batch: Batch, done: Completion);
    /// Hands the batch to the storage *without* making it durable. Only the policies
    /// that acknowledge before syncing use it (the deliberately unsafe ones).
    fn write_unsynced(&mut self, batch: &Batch) -> Result<(), SyncError>;
    /// Removes these whole segments (all older than the segment being appended to).
    fn remove_segments(&mut self, segments: &[u64]) -> Result<(), WalError>;
    /// Trims a ring (a backend whose recovery named one): records trim offset `trim.to`
    /// and truncates the slots of the `trim.released` generations, in one transaction,
    /// then reports with `done` (done, or the fence that refused it). The session names
    /// each trim; others are never asked.
    fn trim_ring(&mut self, _trim: RingTrim, done: TrimDone) {
        done.complete(Ok(()));
    }
    /// The CPUs the driver should run on, because it syncs (the file WAL's
    /// `--sync-cpus`); `None` (the default) leaves it wherever Linux puts it.
    fn sync_cpus(&self) -> Option<Vec<usize>> {
        None
    }
}
