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
//! block:
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
//! The simulation here runs after the WAL's run ([`super::run`]): the upload reads only
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

use std::collections::BTreeMap;

use super::{RemoteBackend, RemoteRun};
use crate::rng::Rng;
use crate::sim::clock::earliest;
use crate::stream_store::expiry::Expiry;
use crate::stream_store::log_cache::CachedRecord;
use crate::stream_store::meta::{MetaCommand, MetaError, MetaState, StreamConfig};
use crate::stream_store::offset::Offset;
use crate::stream_store::upload::{seal, Block, Pending, SealPolicy};
use crate::stream_store::StreamId;
use crate::sim::SyncLatency;
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
}

impl core::fmt::Display for UploadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UploadError::Setup(text) => write!(f, "upload: {text}"),
            UploadError::NotObjectStore => f.write_str("upload: simulated for the object-store WAL only"),
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

/// Why the metadata log refused a commit. It registers nothing then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitError {
    /// The metadata state machine refused it: an id not reserved (expired, or never
    /// reserved), or a run that does not start at its stream's committed end.
    Refused(MetaError),
    /// The node's epoch has moved on: a newer owner holds the node.
    Fenced { epoch: u64, current: u64 },
}

impl core::fmt::Display for CommitError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CommitError::Refused(error) => write!(f, "{error}"),
            CommitError::Fenced { epoch, current } => write!(f, "epoch {epoch} is fenced (the node is at {current})"),
        }
    }
}

/// A stream's name in the metadata: `s1`, `s2`, ... (streams are numbered from 0 here).
pub fn stream_name(stream: u64) -> String {
    format!("s{}", stream + 1)
}

/// The metadata log as the upload meets it: the core's metadata state machine
/// ([`MetaState`], the one `walab serve` runs: reserve, commit, expire), plus what the
/// simulation adds around it: when each reservation expires, and the node's epoch that
/// a commit must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataLog {
    state: MetaState,
    /// Reserved ids and when each expires.
    expires: BTreeMap<u64, Nanos>,
    streams: u64,
    epoch: u64,
}

impl MetadataLog {
    pub fn new(streams: u64, epoch: u64) -> MetadataLog {
        let mut state = MetaState::default();
        for stream in 0..streams {
            let config = StreamConfig {
                name: stream_name(stream),
                content_type: "application/octet-stream".into(),
                expiry: Expiry::Never,
                fork: None,
            };
            state.apply(&MetaCommand::Create { id: StreamId(stream), config }).expect("a new stream's name is free");
        }
        MetadataLog { state, expires: BTreeMap::new(), streams, epoch }
    }

    /// Stream `stream`'s committed end, in records.
    fn committed(&self, stream: u64) -> u64 {
        self.state.stream(StreamId(stream)).map_or(0, |meta| meta.committed.index)
    }

    /// Reserves `count` fresh ids at `now`; each expires `ttl` later unless committed.
    pub fn reserve(&mut self, now: Nanos, count: u64, ttl: Nanos) -> Vec<u64> {
        let command = self.state.reserve(count as u32);
        self.state.apply(&command).expect("a reservation at the next free id applies");
        let MetaCommand::Reserve { first, .. } = command else { unreachable!("reserve gives a Reserve") };
        let ids: Vec<u64> = (first..first + count).collect();
        for &id in &ids {
            self.expires.insert(id, now + ttl);
        }
        ids
    }

    /// Expires the reservations due by `now` (one `Expire` command); returns their ids.
    pub fn expire(&mut self, now: Nanos) -> Vec<u64> {
        let reserved = self.state.reserved_ids();
        let due: Vec<u64> = reserved.into_iter().filter(|id| self.expires.get(id).is_some_and(|&at| at <= now)).collect();
        if !due.is_empty() {
            self.state.apply(&MetaCommand::Expire { ids: due.clone() }).expect("the ids are reserved");
        }
        due
    }

    /// A new owner claims the node.
    pub fn claim(&mut self, epoch: u64) {
        self.epoch = self.epoch.max(epoch);
    }

    /// Registers `block`'s objects under `ids` and advances every stream in it (the
    /// commit `walab serve` appends), or changes nothing.
    pub fn commit(&mut self, now: Nanos, epoch: u64, block: &Block, ids: &[u64]) -> Result<(), CommitError> {
        self.expire(now);
        if epoch != self.epoch {
            return Err(CommitError::Fenced { epoch, current: self.epoch });
        }
        self.state.apply(&block.commit(ids)).map(|_| ()).map_err(CommitError::Refused)
    }

    /// Each stream's committed end.
    pub fn stream_ends(&self) -> Vec<u64> {
        (0..self.streams).map(|stream| self.committed(stream)).collect()
    }

    /// How many committed runs cover each offset of `stream` below its committed end:
    /// what a reader reading the stream from 0 reads each record as.
    pub fn coverage(&self, stream: u64) -> Vec<u32> {
        let mut counts = vec![0u32; self.committed(stream) as usize];
        for (_, meta) in self.state.streams().filter(|(other, _)| *other == StreamId(stream)) {
            for &(start, end, _) in &meta.runs {
                for offset in start.index..end.index {
                    if let Some(count) = counts.get_mut(offset as usize) {
                        *count += 1;
                    }
                }
            }
        }
        counts
    }
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
    /// The WAL bulks whose objects are deleted.
    pub bulks: Vec<u64>,
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

    /// The WAL bulks deleted by `t`.
    pub fn deleted_by(&self, t: Nanos) -> impl Iterator<Item = u64> + '_ {
        self.deletes.iter().filter(move |delete| delete.done <= t).flat_map(|delete| delete.bulks.iter().copied())
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

/// The acknowledged records as the log cache holds them for the upload.
struct Cache {
    /// Acknowledgement instants in record order (they never decrease: writers are
    /// acknowledged in submission order).
    acked: Vec<Nanos>,
    /// Per stream, by offset: when the record was acknowledged, and its number.
    streams: Vec<Vec<(Nanos, u64)>>,
    record_bytes: u64,
    value_bytes: usize,
}

impl Cache {
    fn new(acked: Vec<Nanos>, record_stream: &[u64], streams: u64, record_bytes: u64) -> Cache {
        let mut by_stream = vec![Vec::new(); streams as usize];
        for (index, &at) in acked.iter().enumerate() {
            by_stream[record_stream[index] as usize].push((at, index as u64 + 1));
        }
        Cache { acked, streams: by_stream, record_bytes, value_bytes: record_bytes.saturating_sub(32) as usize }
    }

    /// Records acknowledged by `t`.
    fn acked_by(&self, t: Nanos) -> usize {
        self.acked.partition_point(|&at| at <= t)
    }

    /// The bytes pending at `t` above the committed `ends`, and since when the oldest waits.
    fn pending(&self, ends: &[u64], t: Nanos) -> (usize, Option<Nanos>) {
        let committed: u64 = ends.iter().sum();
        // Committed records were acknowledged before their seal, so before `t`.
        let records = (self.acked_by(t) as u64).saturating_sub(committed);
        let oldest = self
            .streams
            .iter()
            .zip(ends)
            .filter_map(|(records, &end)| records.get(end as usize).map(|&(at, _)| at).filter(|&at| at <= t))
            .min();
        ((records * self.record_bytes) as usize, oldest)
    }

    /// The first instant from `from` on at which a block is due, if one ever is.
    fn next_due(&self, ends: &[u64], from: Nanos, policy: &SealPolicy) -> Option<Nanos> {
        let mut t = from;
        // Bounded by the acknowledgements. A pass that finds no block due moves either to
        // the next acknowledgement instant (there are at most `acked.len()` of them after
        // `from`) or to the oldest pending record's age limit, where a block is due (it is
        // still pending there: nothing is committed while the search runs). So the passes
        // are the one at `from`, one per acknowledgement instant, and the last one at an
        // age limit.
        let passes_max = self.acked.len() + 2;
        for _ in 0..passes_max {
            let (bytes, oldest) = self.pending(ends, t);
            if policy.due(bytes, oldest, t) {
                return Some(t);
            }
            let next_ack = self.acked.get(self.acked_by(t)).copied();
            t = earliest(next_ack, oldest.map(|since| since + policy.block_age))?;
        }
        unreachable!("a block is due once the oldest pending record is old enough")
    }

    /// The pending runs at `t`, in stream-name order, copied until `bytes_max` (as
    /// `walab serve` hands them to the seal).
    fn pending_runs(&self, ends: &[u64], t: Nanos, bytes_max: usize) -> Vec<Pending> {
        let mut runs = Vec::new();
        let mut bytes = 0;
        for (stream, records) in self.streams.iter().enumerate() {
            let start = ends[stream];
            let value_bytes = self.value_bytes as u64;
            let mut at = Offset::new(start, start * value_bytes);
            let mut run = Pending { stream: StreamId(stream as u64), start: at, records: Vec::new(), close: None };
            for _ in records[start as usize..].iter().take_while(|&&(at, _)| at <= t) {
                if bytes >= bytes_max {
                    break;
                }
                bytes += self.value_bytes + 32;
                let record = CachedRecord {
                    start: at,
                    body: vec![0; self.value_bytes].into(),
                    producer: None,
                    stream_seq: None,
                    closes: false,
                    wal_seq: 0,
                };
                at = record.end();
                run.records.push(record);
            }
            if !run.records.is_empty() {
                runs.push(run);
            }
        }
        runs
    }

    /// The number of the oldest record above the committed `ends` (one past the last
    /// acknowledged record when every one is committed).
    fn oldest_uncommitted(&self, ends: &[u64]) -> u64 {
        self.streams
            .iter()
            .zip(ends)
            .filter_map(|(records, &end)| records.get(end as usize).map(|&(_, record)| record))
            .min()
            .unwrap_or(self.acked.len() as u64 + 1)
    }

    /// The lowest record number in `block`.
    fn first_record(&self, block: &Block) -> u64 {
        block
            .objects
            .iter()
            .flatten()
            .map(|run| self.streams[run.stream.0 as usize][run.start.index as usize].1)
            .min()
            .expect("a sealed block holds a record")
    }
}

/// A sealed block's objects: the seal puts the shared stream-set object first, then one
/// stream object per run of at least `stream_object_bytes`.
fn block_objects(block: &Block, policy: &SealPolicy) -> Vec<(ObjectKind, Vec<StreamRange>)> {
    block
        .objects
        .iter()
        .map(|runs| {
            let kind = match runs.as_slice() {
                [run] if run.record_bytes() >= policy.stream_object_bytes => ObjectKind::Stream,
                _ => ObjectKind::StreamSet,
            };
            let ranges = runs.iter().map(|run| StreamRange { stream: run.stream.0, start: run.start.index, end: run.end().index }).collect();
            (kind, ranges)
        })
        .collect()
}

/// Runs the upload over the records the WAL's run acknowledged.
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
    let policy = setup.seal_policy();
    let claim = wal.takeover.as_ref().map(|takeover| (takeover.claimed_at, takeover.new_epoch));
    let mut rng = Rng::new(seed ^ 0x0b1e_c75a_0000_0000);
    let mut metadata = MetadataLog::new(STREAMS, super::OWNER_EPOCH);
    let mut out = UploadRun {
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
    let mut ready = Nanos::ZERO;
    let mut deleted_bulks = 0usize;
    let mut stopped = false;
    // Bounded by the records: a block commits at least one unless every attempt at it
    // failed (then the next seal takes the same records again).
    for index in 0..cache.acked.len() {
        let ends = metadata.stream_ends();
        let Some(sealed) = cache.next_due(&ends, ready, &policy) else {
            break;
        };
        if claim.is_some_and(|(claimed_at, _)| sealed >= claimed_at) {
            break;
        }
        let block = seal(cache.pending_runs(&ends, sealed, policy.block_bytes), &policy).expect("a due block holds a record");
        let block_number = index as u64 + 1;
        let records = block.records();
        let objects = block_objects(&block, &policy);
        let mut row = BlockRow {
            block: block_number,
            first_record: cache.first_record(&block),
            records,
            bytes: records * record_bytes,
            sealed,
            attempts: Vec::new(),
        };
        for attempt in 1..=ATTEMPTS_MAX {
            let start = ready.max(sealed);
            if claim.is_some_and(|(claimed_at, _)| start >= claimed_at) {
                stopped = true;
                break;
            }
            let reserved = start + setup.metadata_latency;
            let ids = metadata.reserve(reserved, objects.len() as u64, setup.id_ttl);
            let mut uploaded = reserved;
            for (&id, (kind, object_ranges)) in ids.iter().zip(&objects) {
                let stored = reserved + latency.draw(&mut rng);
                uploaded = uploaded.max(stored);
                let bytes = object_ranges.iter().map(|range| (range.end - range.start) * record_bytes).sum();
                out.objects.push(ObjectRow {
                    id,
                    kind: *kind,
                    block: block_number,
                    attempt,
                    ranges: object_ranges.clone(),
                    bytes,
                    reserved,
                    stored,
                    committed: None,
                    expired: None,
                });
            }
            let crash = setup.crash_before_commit == Some(block_number) && attempt == 1;
            if crash {
                row.attempts.push(AttemptRow { reserve_sent: start, reserved, uploaded, commit_answered: None, outcome: AttemptOutcome::CrashedBeforeCommit, ids });
                ready = uploaded + setup.restart_after;
                continue;
            }
            let answered = uploaded + setup.metadata_latency;
            if let Some((claimed_at, epoch)) = claim {
                if claimed_at <= answered {
                    metadata.claim(epoch);
                }
            }
            let outcome = match metadata.commit(answered, super::OWNER_EPOCH, &block, &ids) {
                Ok(()) => AttemptOutcome::Committed,
                Err(CommitError::Fenced { .. }) => AttemptOutcome::Fenced,
                Err(CommitError::Refused(MetaError::NotReserved { .. })) => AttemptOutcome::Expired,
                Err(CommitError::Refused(error)) => unreachable!("the task uploads from the committed ends: {error}"),
            };
            row.attempts.push(AttemptRow { reserve_sent: start, reserved, uploaded, commit_answered: Some(answered), outcome, ids: ids.clone() });
            ready = answered;
            match outcome {
                AttemptOutcome::Committed => {
                    for &id in &ids {
                        out.objects[id as usize].committed = Some(answered);
                    }
                    let ends = metadata.stream_ends();
                    // Trim: the WAL objects whose records are all committed now, those
                    // below the oldest record still above its stream's committed end.
                    let uncommitted = cache.oldest_uncommitted(&ends);
                    out.commits.push(CommitRow { at: answered, block: block_number, ids, stream_ends: ends });
                    let covered: Vec<u64> = wal.bulks[deleted_bulks..]
                        .iter()
                        .take_while(|bulk| bulk.acked.is_some() && bulk.first_record + bulk.records <= uncommitted)
                        .map(|bulk| bulk.bulk)
                        .collect();
                    if !covered.is_empty() {
                        deleted_bulks += covered.len();
                        let done = answered + latency.draw(&mut rng);
                        out.deletes.push(WalDeleteRow { sent: answered, done, bulks: covered });
                    }
                    break;
                }
                AttemptOutcome::Fenced => {
                    stopped = true;
                    break;
                }
                AttemptOutcome::Expired | AttemptOutcome::CrashedBeforeCommit => {}
            }
        }
        if !row.attempts.is_empty() {
            out.blocks.push(row);
        }
        if stopped {
            break;
        }
    }
    // Reservations never committed expire; their objects are garbage from then on.
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
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_due_when_its_bytes_are_pending_or_its_oldest_record_is_old_enough() {
        let policy = UploadSetup::lab().seal_policy();
        let ms = Nanos::from_millis;
        // Ten records of 110 bytes at 1 ms, 190 more at 5 ms, streams taking turns.
        let acked: Vec<Nanos> = (0..200).map(|i| if i < 10 { ms(1) } else { ms(5) }).collect();
        let streams: Vec<u64> = (0..200).map(|i| i % STREAMS).collect();
        let cache = Cache::new(acked, &streams, STREAMS, 110);
        // 1,100 bytes wait from 1 ms; at 5 ms 22,000 do, more than a block's 16,384.
        assert_eq!(cache.next_due(&[0; 4], Nanos::ZERO, &policy), Some(ms(5)));
        let few = Cache::new(vec![ms(1); 10], &streams[..10], STREAMS, 110);
        assert_eq!(few.next_due(&[0; 4], Nanos::ZERO, &policy), Some(ms(41)), "40 ms after the oldest");
        assert_eq!(few.next_due(&[3, 3, 2, 2], ms(2), &policy), None, "nothing pending, nothing to come");
        // One record, acknowledged after the search starts: one pass finds nothing
        // pending, one reaches its acknowledgement, one its age limit.
        let one = Cache::new(vec![ms(58)], &streams[..1], STREAMS, 110);
        assert_eq!(one.next_due(&[0; 4], Nanos::ZERO, &policy), Some(ms(98)));
        // Every record acknowledged at its own instant, all after the start.
        let apart: Vec<Nanos> = (1..=10).map(ms).collect();
        let spread = Cache::new(apart, &streams[..10], STREAMS, 110);
        assert_eq!(spread.next_due(&[0; 4], Nanos::ZERO, &policy), Some(ms(41)));
        // The seal takes the streams' runs in name order and stops at the block's 148
        // records; runs of 50 records (82 bytes each in an object) reach 4 KiB and get
        // objects of their own, s3's 48 share the stream-set object, which comes first.
        let block = seal(cache.pending_runs(&[0; 4], ms(5), policy.block_bytes), &policy).unwrap();
        let runs: Vec<(String, u64, u64)> =
            block.objects.iter().flatten().map(|r| (stream_name(r.stream.0), r.start.index, r.end().index)).collect();
        assert_eq!(runs, vec![("s3".into(), 0, 48), ("s1".into(), 0, 50), ("s2".into(), 0, 50)]);
        let kinds: Vec<ObjectKind> = block_objects(&block, &policy).into_iter().map(|(kind, _)| kind).collect();
        assert_eq!(kinds, vec![ObjectKind::StreamSet, ObjectKind::Stream, ObjectKind::Stream]);
        assert_eq!(cache.first_record(&block), 1);
        // Record 4n + 1 is s1's offset n: with s1 committed to 50 and the others not, the
        // oldest uncommitted record is s2's first, record 2.
        assert_eq!(cache.oldest_uncommitted(&[50, 0, 0, 0]), 2);
        assert_eq!(cache.oldest_uncommitted(&[50, 50, 50, 50]), 201);
    }
}
