//! From WAL to committed objects: the background upload that keeps the WAL short.
//!
//! The WAL is a staging area. Records wait in it only until a background task has
//! copied them into read-optimized objects and committed those through the metadata
//! log; then the WAL objects that held them carry nothing unique and are deleted, which
//! bounds how much a recovery has to replay.
//!
//! The task works on the log cache's sealed blocks, one at a time and in order. When it
//! is free and a block is due (the acknowledged records above the streams' committed
//! ends hold `block_bytes`, or the oldest of them has waited `block_age_max`), it seals
//! one with the stream store's own [`seal`], the function `walab serve` runs: from each
//! stream in name order, the run from its committed end, until the block holds
//! `block_bytes`. So while a backlog waits, the busy stream's runs come first. For each
//! block it carries out the core's [`UploadCycle`](crate::stream_store::cycle), the steps
//! and order `walab serve`'s uploader follows too (why that order is the cycle's):
//!
//! 1. **Reserve.** One metadata command reserves an object id for every object the block
//!    becomes: one stream-set object for the streams with little data in the block, and
//!    one stream object per stream whose run is at least `stream_object_bytes_min` as
//!    laid out in an object (the seal's split). A reserved id that is not committed
//!    within `id_ttl` expires.
//! 2. **Upload.** The objects are PUT side by side. An uploaded object that nothing
//!    references is invisible: readers find objects only through the metadata.
//! 3. **Commit.** One metadata command registers every object of the block and advances
//!    the committed end of every stream in it, atomically ([`MetadataLog::commit`], over
//!    the metadata state machine `walab serve` runs, [`crate::stream_store::meta`]): a
//!    reader sees none of the commit or all of it. The command is refused unless every
//!    id is still reserved and every range starts exactly at its stream's committed end,
//!    so no offset is ever covered by two committed objects.
//! 4. **Trim.** The WAL objects whose records are all committed are deleted.
//!
//! A crash between the upload and the commit leaves objects that nothing references and
//! ids that expire. The restarted task finds the streams' committed ends unchanged and
//! the WAL still holding the records (nothing was trimmed), reserves fresh ids and
//! uploads the block again. Nothing is read twice: the orphan was never committed, and
//! the commit check would refuse it even if it tried.
//!
//! The simulation here runs after the WAL's run ([`super::run`]), on the simulator's
//! clock ([`task`]; [`cache`] what is pending and when a block is due, [`metadata`] the
//! metadata log it commits to): the upload reads only
//! what the WAL acknowledged and never holds back an append, so it changes nothing in
//! the write path on the object store. A record's value is `record_bytes - 32` bytes, so
//! the seal counts it as `record_bytes` (the store counts a value and 32 bytes for its
//! framing), and it has no producer. Request latencies are drawn from the run's
//! distribution with their own seeded generator; a metadata command takes
//! `metadata_latency`. A block retried after a crash or an expired id is the block
//! sealed before (`walab serve` seals again after its restart, and may take more
//! records then). After a takeover the old owner's next commit is refused (the metadata
//! log carries the node's epoch as the registration does) and it uploads no further
//! block: the new owner's recovery takes over from the committed ends.

mod cache;
mod metadata;
mod task;

use self::cache::Cache;
pub use self::metadata::{CommitError, MetadataLog};
use self::task::UploadTask;
use super::{RemoteBackend, RemoteRun};
use crate::rng::Rng;
use crate::sim::clock::{self, BoundExceeded};
use crate::sim::SyncLatency;
use crate::stream_store::upload::SealPolicy;
use crate::time::Nanos;

/// Streams on the node in the lab's runs.
pub const STREAMS: u64 = 4;
/// Each record's stream is drawn with these weights: one busy stream and three quiet ones.
pub const STREAM_WEIGHTS: [u64; STREAMS as usize] = [12, 3, 3, 2];
/// Attempts at one block at most (a crash, an expired id or a refused commit retries).
pub const ATTEMPTS_MAX: u32 = 4;

/// The upload's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadSetup {
    /// A log-cache block seals once this many bytes are pending, and holds at most this many.
    pub block_bytes: u64,
    /// ... or once the oldest pending record has waited this long.
    pub block_age_max: Nanos,
    /// A stream's run in a block at least this big (as laid out in an object) becomes its
    /// own stream object.
    pub stream_object_bytes_min: u64,
    /// One metadata command (reserve, commit).
    pub metadata_latency: Nanos,
    /// A reserved id not committed within this expires.
    pub id_ttl: Nanos,
    /// The task restarts this long after it crashed.
    pub restart_after: Nanos,
    /// Block k's first attempt crashes after its upload, before its commit.
    pub crash_before_commit: Option<u64>,
}

impl UploadSetup {
    /// The lab's settings: small blocks, so a run of a few hundred records makes several.
    pub fn lab() -> UploadSetup {
        UploadSetup {
            block_bytes: 16 * 1024,
            block_age_max: Nanos::from_millis(40),
            stream_object_bytes_min: 4 * 1024,
            metadata_latency: Nanos::from_millis(2),
            id_ttl: Nanos::from_millis(150),
            restart_after: Nanos::from_millis(10),
            crash_before_commit: None,
        }
    }

    /// The stream store's seal policy with these sizes.
    pub fn seal_policy(&self) -> SealPolicy {
        SealPolicy {
            block_bytes: usize::try_from(self.block_bytes).unwrap_or(usize::MAX),
            block_age: self.block_age_max,
            stream_object_bytes: usize::try_from(self.stream_object_bytes_min).unwrap_or(usize::MAX),
        }
    }

    pub fn validate(&self) -> Result<(), UploadError> {
        if self.block_bytes == 0 || self.stream_object_bytes_min == 0 {
            return Err(UploadError::Setup("block sizes must be above 0"));
        }
        if self.block_age_max == Nanos::ZERO || self.metadata_latency == Nanos::ZERO {
            return Err(UploadError::Setup("the block age and the metadata latency must be above 0"));
        }
        if self.id_ttl <= self.metadata_latency {
            return Err(UploadError::Setup("a reserved id must outlive one metadata command"));
        }
        if self.crash_before_commit == Some(0) {
            return Err(UploadError::Setup("blocks are numbered from 1"));
        }
        Ok(())
    }
}

/// Why the upload could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UploadError {
    Setup(&'static str),
    /// The upload models the object-store WAL only.
    NotObjectStore,
    /// The run visited more instants than its bound (a bug, never an input problem).
    Bound(BoundExceeded),
}

impl core::fmt::Display for UploadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UploadError::Setup(text) => write!(f, "upload: {text}"),
            UploadError::NotObjectStore => f.write_str("upload: simulated for the object-store WAL only"),
            UploadError::Bound(bound) => write!(f, "upload: {bound}"),
        }
    }
}

impl std::error::Error for UploadError {}

/// A run of one stream's offsets, `start..end` (offsets count that stream's records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StreamRange {
    pub stream: u64,
    pub start: u64,
    pub end: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum ObjectKind {
    /// The small runs of several streams in one object.
    StreamSet,
    /// One stream's large run on its own.
    Stream,
}

/// A stream's name in the metadata: `s1`, `s2`, ... (streams are numbered from 0 here).
pub fn stream_name(stream: u64) -> String {
    format!("s{}", stream + 1)
}

/// How an attempt at a block ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum AttemptOutcome {
    Committed,
    /// The task crashed after the upload, before the commit.
    CrashedBeforeCommit,
    /// The commit was refused: an id had expired.
    Expired,
    /// The commit was refused: the node was taken over.
    Fenced,
}

/// One attempt at a block: reserve, upload, commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptRow {
    pub reserve_sent: Nanos,
    pub reserved: Nanos,
    /// Every object of the attempt is stored.
    pub uploaded: Nanos,
    /// The commit's answer (committed or refused); `None` after a crash.
    pub commit_answered: Option<Nanos>,
    pub outcome: AttemptOutcome,
    /// The attempt's object ids (ids count from 0: object `id` is `UploadRun::objects[id]`).
    pub ids: Vec<u64>,
}

/// One sealed log-cache block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRow {
    pub block: u64,
    /// The lowest record number in the block (numbered as in the WAL's run), and how many
    /// records it holds: each stream's run from its committed end, so with a backlog the
    /// records are not one range of numbers (the busy stream's come first).
    pub first_record: u64,
    pub records: u64,
    pub bytes: u64,
    pub sealed: Nanos,
    pub attempts: Vec<AttemptRow>,
}

/// One uploaded object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRow {
    pub id: u64,
    pub kind: ObjectKind,
    pub block: u64,
    /// 1 for the block's first attempt.
    pub attempt: u32,
    pub ranges: Vec<StreamRange>,
    pub bytes: u64,
    pub reserved: Nanos,
    pub stored: Nanos,
    pub committed: Option<Nanos>,
    /// Never committed: the id expired then, and the object is garbage.
    pub expired: Option<Nanos>,
}

/// A commit: the streams' committed ends after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitRow {
    pub at: Nanos,
    pub block: u64,
    pub ids: Vec<u64>,
    pub stream_ends: Vec<u64>,
}

/// A trim: WAL objects deleted once their records are committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalDeleteRow {
    pub sent: Nanos,
    pub done: Nanos,
    /// The WAL batches whose objects are deleted.
    pub batches: Vec<u64>,
}

/// The whole upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadRun {
    pub streams: u64,
    /// Record r's stream is `record_stream[r - 1]`, its offset in it `record_offset[r - 1]`.
    pub record_stream: Vec<u64>,
    pub record_offset: Vec<u64>,
    pub blocks: Vec<BlockRow>,
    pub objects: Vec<ObjectRow>,
    pub commits: Vec<CommitRow>,
    pub deletes: Vec<WalDeleteRow>,
    /// Offsets a reader of the committed objects would read more than once (0, always).
    pub read_twice: u64,
    /// Offsets held by an orphan that a committed object also holds: what a reader that
    /// trusted unreferenced objects would read twice.
    pub orphan_overlap: u64,
    pub end: Nanos,
}

impl UploadRun {
    /// Each stream's committed end at `t`.
    pub fn stream_ends_at(&self, t: Nanos) -> Vec<u64> {
        self.commits
            .iter()
            .rev()
            .find(|commit| commit.at <= t)
            .map_or_else(|| vec![0; self.streams as usize], |commit| commit.stream_ends.clone())
    }

    /// The WAL batches deleted by `t`.
    pub fn deleted_by(&self, t: Nanos) -> impl Iterator<Item = u64> + '_ {
        self.deletes.iter().filter(move |delete| delete.done <= t).flat_map(|delete| delete.batches.iter().copied())
    }
}

/// Each record's stream, drawn from `seed` with [`STREAM_WEIGHTS`].
pub fn record_streams(records: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed ^ 0x5715_ea35_0000_0000);
    let total: u64 = STREAM_WEIGHTS.iter().sum();
    (0..records)
        .map(|_| {
            let mut draw = rng.below(total);
            let mut stream = 0;
            for (index, &weight) in STREAM_WEIGHTS.iter().enumerate() {
                if draw < weight {
                    stream = index as u64;
                    break;
                }
                draw -= weight;
            }
            stream
        })
        .collect()
}

/// Runs the upload over the records the WAL's run acknowledged, on the simulator's clock.
pub fn run(wal: &RemoteRun, setup: &UploadSetup, latency: &SyncLatency, seed: u64, record_bytes: u32) -> Result<UploadRun, UploadError> {
    setup.validate()?;
    if wal.backend != RemoteBackend::S3 {
        return Err(UploadError::NotObjectStore);
    }
    let record_bytes = u64::from(record_bytes);
    let record_stream = record_streams(wal.records.len() as u64, seed);
    let mut next_offset = vec![0u64; STREAMS as usize];
    let record_offset: Vec<u64> = record_stream
        .iter()
        .map(|&stream| {
            let offset = next_offset[stream as usize];
            next_offset[stream as usize] += 1;
            offset
        })
        .collect();
    // Acknowledgements go out in record order, so the acknowledged records are a prefix.
    let acked: Vec<Nanos> = wal.records.iter().map_while(|record| record.acked).collect();
    assert!(wal.records[acked.len()..].iter().all(|record| record.acked.is_none()), "acknowledged records form a prefix");
    let cache = Cache::new(acked, &record_stream, STREAMS, record_bytes);
    let out = UploadRun {
        streams: STREAMS,
        record_stream,
        record_offset,
        blocks: Vec::new(),
        objects: Vec::new(),
        commits: Vec::new(),
        deletes: Vec::new(),
        read_twice: 0,
        orphan_overlap: 0,
        end: Nanos::ZERO,
    };
    let mut task = UploadTask::new(wal, setup, latency, seed, cache, record_bytes, out);
    let bound = task.bound();
    clock::run(&mut task, bound).map_err(UploadError::Bound)?;
    Ok(finish(task.out, task.metadata, setup))
}

/// What the run left: reservations never committed expire (their objects are garbage
/// from then on), what a reader would read twice, and when the last thing happened.
fn finish(mut out: UploadRun, mut metadata: MetadataLog, setup: &UploadSetup) -> UploadRun {
    for object in out.objects.iter_mut().filter(|object| object.committed.is_none()) {
        object.expired = Some(object.reserved + setup.id_ttl);
    }
    let final_time = out.objects.iter().filter_map(|object| object.expired).max().unwrap_or(Nanos::ZERO);
    metadata.expire(final_time);
    out.read_twice = (0..STREAMS).map(|stream| metadata.coverage(stream).iter().filter(|&&count| count > 1).count() as u64).sum();
    let ends = metadata.stream_ends();
    out.orphan_overlap = out
        .objects
        .iter()
        .filter(|object| object.committed.is_none())
        .flat_map(|object| object.ranges.iter())
        .map(|range| range.end.min(ends[range.stream as usize]).saturating_sub(range.start))
        .sum();
    out.end = [
        out.objects.iter().flat_map(|o| [Some(o.stored), o.committed, o.expired]).flatten().max(),
        out.deletes.iter().map(|d| d.done).max(),
        out.blocks.iter().flat_map(|b| b.attempts.iter().filter_map(|a| a.commit_answered)).max(),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(Nanos::ZERO);
    out
}
