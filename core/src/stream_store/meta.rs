//! The metadata log's state machine: which streams exist (their names, content types,
//! expiry, fork bases; whether they were deleted while forks still read them), how far
//! each is committed to objects and with which producers, `Stream-Seq` and closure, and
//! which objects hold which runs.
//!
//! The metadata is a log of [`MetaCommand`]s; the state is what applying them in order
//! gives, so a restart replays the log and arrives at the same state.
//!
//! # Streams
//!
//! [`MetaCommand::Create`] gives a stream its number and configuration (numbers are
//! handed out by the server in order and never reused, though concurrent creations may
//! finish out of order); a `PUT` is
//! answered once it is durable (the stream's initial records, if any, went to the WAL
//! first, under the same number, so a crash between the two leaves records of a number
//! nothing names, which recovery skips). [`MetaCommand::Delete`] removes a stream, or,
//! while forks still inherit from it, marks it soft-deleted: its URL answers `410`, its
//! name stays taken, its records stay for the forks. Removing the last fork of a
//! soft-deleted source removes the source too, up the chain. A removed stream leaves
//! nothing behind in the state: not its name, not its runs, not its producers.
//!
//! # Uploads
//!
//! [`MetaCommand::Reserve`] takes object ids before anything is uploaded. An upload that
//! crashes leaves an object under a reserved id that no commit names: an orphan, which
//! the next start deletes and expires ([`MetaCommand::Expire`]). Ids are never reused.
//! [`MetaCommand::Commit`] registers the uploaded objects and advances the committed end
//! of every stream in them at once: one command, so a reader sees all of it or none. It
//! also carries each stream's producers, `Stream-Seq` and closure as of its new end, so
//! a retried seq is still recognised once the WAL records that held it are trimmed. A
//! run of a stream removed while its upload was in flight is dropped. An object no live
//! run names any more (its streams were removed) is garbage: the uploader deletes it and
//! [`MetaCommand::Forget`]s its id.
//!
//! A command is checked whole before any of it applies: a commit's ids must be reserved
//! and not committed, and each stream's runs must start exactly at its committed end and
//! follow one another, so the objects of a stream tile its records from its base (0, or
//! a fork's offset) with no gap or overlap.
//!
//! # Bounded
//!
//! Each upload adds one run to each stream it carries, so a stream written for a long
//! time would gather runs without end. [`MetaCommand::Compact`] rewrites several small
//! objects as one, each stream's runs in them joined where they meet (see
//! [`super::upload::compaction`] for which objects), the old objects turning garbage once
//! nothing else lives in them. A stream's runs are then bounded by the bytes written over
//! the compacted object size (and a few per size tier), not by how many uploads it took.
//!
//! # Belonging to one WAL
//!
//! [`MetaCommand::Bind`], the first command of a log, names the data WAL whose records
//! the commits stand for. A server started on another WAL with the same metadata log is
//! refused: its WAL's records would be skipped or taken for another stream's.
//!
//! # Compaction
//!
//! [`MetaState::snapshot`] writes the whole state as [`MetaCommand::Snapshot`] parts (a
//! state larger than one record takes several, written one after the other); once the
//! last part is durable, every record before the first part may be trimmed. [`replay`]
//! starts from the last complete snapshot in what the log holds and applies only the
//! commands after it; a snapshot cut short by a crash is ignored (the records before it
//! are still there, since nothing is trimmed until a snapshot is whole), and a log that
//! no longer starts at its first record but holds no complete snapshot is refused:
//! something trimmed it wrongly.

use std::collections::{BTreeMap, BTreeSet};

use super::bytes::{put_bytes16, put_bytes8, put_u32, put_u64, DecodeError, Reader};
use super::expiry::Expiry;
use super::offset::Offset;
use super::producers::{ProducerState, ProducerTable};
use super::record::ProducerStamp;
use super::{check_producer_id, check_stream_name, NameError, StreamId};

/// The most bytes one encoded command may take: it is one record of the metadata WAL
/// (the tiny record's payload holds 65,535 bytes, with room for its own fields).
pub const COMMAND_BYTES_MAX: usize = 60_000;
/// The most bytes in a content type.
pub const CONTENT_TYPE_BYTES_MAX: usize = 255;

/// One run of one stream in one object: records from `start` to `end`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEntry {
    pub stream: StreamId,
    pub start: Offset,
    pub end: Offset,
}

/// One uploaded object and the runs it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectEntry {
    pub id: u64,
    pub runs: Vec<RunEntry>,
}

/// A stream as a commit leaves it: its committed end and what its records up to there
/// say about producers, `Stream-Seq` and closure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEnd {
    pub stream: StreamId,
    pub end: Offset,
    pub closed: bool,
    /// The producer request that closed the stream, for recognising its retry.
    pub closed_by: Option<ProducerStamp>,
    /// The last `Stream-Seq`, if a committed record carried one.
    pub stream_seq: Option<String>,
    /// The producers whose state the committed records changed.
    pub producers: Vec<(String, ProducerState)>,
}

/// Where a fork branches off its source: it inherits the source's records before `at`,
/// and, with a sub-offset, a prefix of the record at `at` (copied into the fork's first
/// record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForkBase {
    pub source: StreamId,
    pub at: Offset,
    pub sub_offset: u64,
}

/// What a stream is created with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    pub name: String,
    pub content_type: String,
    pub expiry: Expiry,
    pub fork: Option<ForkBase>,
}

/// One entry of the metadata log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaCommand {
    /// This log belongs to the data WAL named `wal`.
    Bind { wal: String },
    /// Object ids `first..first + count` are taken.
    Reserve { first: u64, count: u32 },
    /// These objects are in place: register them and advance their streams' ends.
    Commit { objects: Vec<ObjectEntry>, ends: Vec<StreamEnd> },
    /// These reserved ids were never committed; their objects (if any) are deleted.
    Expire { ids: Vec<u64> },
    /// A new stream.
    Create { id: StreamId, config: StreamConfig },
    /// A stream is deleted (by a client or by its expiry).
    Delete { id: StreamId },
    /// These objects held only runs of removed streams and are deleted.
    Forget { ids: Vec<u64> },
    /// Object `id` (reserved) holds these runs, each in the place of the one or more
    /// committed runs of its stream that it covers exactly (their records, rewritten
    /// together by the uploader's compaction).
    Compact { id: u64, runs: Vec<RunEntry> },
    /// Part `part` (from 0) of `parts` of the state's encoding: the whole state as of
    /// this point of the log, once every part is there. Changes nothing when applied.
    Snapshot { part: u32, parts: u32, bytes: Vec<u8> },
}

/// Why a command does not apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaError {
    /// The log belongs to another data WAL.
    OtherWal { bound: String, wal: String },
    /// A reservation that does not start at the next free id.
    ReserveOutOfOrder { first: u64, next: u64 },
    /// An id that is not reserved (or is committed already).
    NotReserved { id: u64 },
    /// An object id that is not garbage.
    NotGarbage { id: u64 },
    /// A run that does not start at its stream's committed end.
    RunNotAtEnd { stream: StreamId, start: Offset, committed: Offset },
    /// A run with no records.
    EmptyRun { stream: StreamId },
    /// A stream end that is not where the commit leaves the stream.
    EndNotAtCommit { stream: StreamId, end: Offset, committed: Offset },
    /// A stream number a stream has.
    StreamIdTaken { id: StreamId },
    /// A name that a stream (live or soft-deleted) has.
    NameTaken { name: String },
    /// A fork of a stream that does not exist or is deleted.
    NoSource { source: StreamId },
    /// A delete of a stream that does not exist or is deleted already.
    NoStream { id: StreamId },
    /// A compacted run that is not one or more whole committed runs of its stream.
    CompactNotAtRuns { stream: StreamId, start: Offset, end: Offset },
}

impl core::fmt::Display for MetaError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MetaError::OtherWal { bound, wal } => {
                write!(f, "this metadata log belongs to the WAL {bound}, not to {wal}")
            }
            MetaError::ReserveOutOfOrder { first, next } => write!(f, "reservation at id {first}, the next free id is {next}"),
            MetaError::NotReserved { id } => write!(f, "object id {id} is not reserved"),
            MetaError::NotGarbage { id } => write!(f, "object {id} is not garbage"),
            MetaError::RunNotAtEnd { stream, start, committed } => {
                write!(f, "stream {stream}: a run at {start}, its committed end is {committed}")
            }
            MetaError::EmptyRun { stream } => write!(f, "stream {stream}: an empty run"),
            MetaError::EndNotAtCommit { stream, end, committed } => {
                write!(f, "stream {stream}: an end at {end}, the commit leaves it at {committed}")
            }
            MetaError::StreamIdTaken { id } => write!(f, "stream number {id} is taken"),
            MetaError::NameTaken { name } => write!(f, "a stream named {name:?} exists"),
            MetaError::NoSource { source } => write!(f, "fork source stream {source} does not exist or is deleted"),
            MetaError::NoStream { id } => write!(f, "stream {id} does not exist or is deleted"),
            MetaError::CompactNotAtRuns { stream, start, end } => {
                write!(f, "stream {stream}: a compacted run from {start} to {end} is not one or more whole runs")
            }
        }
    }
}

/// What the metadata says about one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamMeta {
    pub config: StreamConfig,
    /// Deleted while forks inherit from it.
    pub soft_deleted: bool,
    /// Streams (live or soft-deleted) forked from this one.
    pub forks: u32,
    /// Records before this are in committed objects (or, below a fork's base, in its
    /// source).
    pub committed: Offset,
    /// `(start, end, object id)` by start: they tile the stream from its base to
    /// `committed`.
    pub runs: Vec<(Offset, Offset, u64)>,
    pub closed: bool,
    pub closed_by: Option<ProducerStamp>,
    pub stream_seq: Option<String>,
    pub producers: ProducerTable,
}

impl StreamMeta {
    fn new(config: StreamConfig) -> StreamMeta {
        let committed = config.fork.map_or(Offset::START, |fork| fork.at);
        StreamMeta {
            config,
            soft_deleted: false,
            forks: 0,
            committed,
            runs: Vec::new(),
            closed: false,
            closed_by: None,
            stream_seq: None,
            producers: ProducerTable::default(),
        }
    }

    /// Where the stream's own records start: 0, or a fork's offset.
    pub fn base(&self) -> Offset {
        self.config.fork.map_or(Offset::START, |fork| fork.at)
    }

    /// The run holding record `index`: `(start, end, object id)`.
    pub fn run_holding(&self, index: u64) -> Option<(Offset, Offset, u64)> {
        let at = self.runs.partition_point(|&(_, end, _)| end.index <= index);
        self.runs.get(at).copied().filter(|&(start, _, _)| start.index <= index)
    }
}

/// What applying a command did to streams, for the server to mirror.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Streams that are gone (a delete, and every soft-deleted source it freed).
    pub removed: Vec<StreamId>,
    /// A stream that is now soft-deleted.
    pub soft_deleted: Option<StreamId>,
}

/// The state the metadata log gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaState {
    wal: Option<String>,
    next_object_id: u64,
    reserved: BTreeSet<u64>,
    /// Committed objects and how many live runs each holds.
    objects: BTreeMap<u64, u32>,
    next_stream_id: u64,
    streams: BTreeMap<StreamId, StreamMeta>,
    names: BTreeMap<String, StreamId>,
}

impl MetaState {
    /// The command that reserves the next `count` ids.
    pub fn reserve(&self, count: u32) -> MetaCommand {
        MetaCommand::Reserve { first: self.next_object_id, count }
    }

    /// The data WAL this log belongs to, once bound.
    pub fn wal(&self) -> Option<&str> {
        self.wal.as_deref()
    }

    /// The lowest stream number not given yet.
    pub fn next_stream_id(&self) -> u64 {
        self.next_stream_id
    }

    /// Applies one command, or changes nothing and says why not.
    pub fn apply(&mut self, command: &MetaCommand) -> Result<Applied, MetaError> {
        let mut applied = Applied::default();
        match command {
            MetaCommand::Bind { wal } => match &self.wal {
                Some(bound) if bound != wal => return Err(MetaError::OtherWal { bound: bound.clone(), wal: wal.clone() }),
                _ => self.wal = Some(wal.clone()),
            },
            MetaCommand::Reserve { first, count } => {
                if *first != self.next_object_id {
                    return Err(MetaError::ReserveOutOfOrder { first: *first, next: self.next_object_id });
                }
                self.reserved.extend(*first..*first + u64::from(*count));
                self.next_object_id = first + u64::from(*count);
            }
            MetaCommand::Commit { objects, ends } => self.commit(objects, ends)?,
            MetaCommand::Expire { ids } => {
                if let Some(&id) = ids.iter().find(|id| !self.reserved.contains(id)) {
                    return Err(MetaError::NotReserved { id });
                }
                for id in ids {
                    self.reserved.remove(id);
                }
            }
            MetaCommand::Create { id, config } => {
                // Numbers are handed out in order but creations finish in any order: a
                // number below the next one is new as long as no stream has it.
                if self.streams.contains_key(id) {
                    return Err(MetaError::StreamIdTaken { id: *id });
                }
                if self.names.contains_key(&config.name) {
                    return Err(MetaError::NameTaken { name: config.name.clone() });
                }
                if let Some(fork) = &config.fork {
                    match self.streams.get_mut(&fork.source) {
                        Some(source) if !source.soft_deleted => source.forks += 1,
                        _ => return Err(MetaError::NoSource { source: fork.source }),
                    }
                }
                self.next_stream_id = self.next_stream_id.max(id.0 + 1);
                self.names.insert(config.name.clone(), *id);
                self.streams.insert(*id, StreamMeta::new(config.clone()));
            }
            MetaCommand::Delete { id } => {
                let stream = match self.streams.get_mut(id) {
                    Some(stream) if !stream.soft_deleted => stream,
                    _ => return Err(MetaError::NoStream { id: *id }),
                };
                if stream.forks > 0 {
                    stream.soft_deleted = true;
                    applied.soft_deleted = Some(*id);
                } else {
                    self.remove(*id, &mut applied.removed);
                }
            }
            MetaCommand::Forget { ids } => {
                if let Some(&id) = ids.iter().find(|id| self.objects.get(id) != Some(&0)) {
                    return Err(MetaError::NotGarbage { id });
                }
                for id in ids {
                    self.objects.remove(id);
                }
            }
            MetaCommand::Compact { id, runs } => self.compact(*id, runs)?,
            MetaCommand::Snapshot { .. } => {}
        }
        Ok(applied)
    }

    fn commit(&mut self, objects: &[ObjectEntry], ends: &[StreamEnd]) -> Result<(), MetaError> {
        // Check everything first: where each stream's runs leave it.
        let mut committed: BTreeMap<StreamId, Offset> = BTreeMap::new();
        for object in objects {
            if !self.reserved.contains(&object.id) || objects.iter().filter(|o| o.id == object.id).count() > 1 {
                return Err(MetaError::NotReserved { id: object.id });
            }
            for run in &object.runs {
                let Some(stream) = self.streams.get(&run.stream) else { continue };
                let end = *committed.entry(run.stream).or_insert(stream.committed);
                if run.start != end {
                    return Err(MetaError::RunNotAtEnd { stream: run.stream, start: run.start, committed: end });
                }
                if run.end.index <= run.start.index || run.end.bytes < run.start.bytes {
                    return Err(MetaError::EmptyRun { stream: run.stream });
                }
                committed.insert(run.stream, run.end);
            }
        }
        for end in ends {
            let Some(stream) = self.streams.get(&end.stream) else { continue };
            let at = committed.get(&end.stream).copied().unwrap_or(stream.committed);
            if end.end != at {
                return Err(MetaError::EndNotAtCommit { stream: end.stream, end: end.end, committed: at });
            }
        }
        for object in objects {
            self.reserved.remove(&object.id);
            let mut live = 0;
            for run in &object.runs {
                let Some(stream) = self.streams.get_mut(&run.stream) else { continue };
                stream.runs.push((run.start, run.end, object.id));
                stream.committed = run.end;
                live += 1;
            }
            self.objects.insert(object.id, live);
        }
        for end in ends {
            let Some(stream) = self.streams.get_mut(&end.stream) else { continue };
            stream.closed |= end.closed;
            if end.closed_by.is_some() {
                stream.closed_by = end.closed_by.clone();
            }
            if end.stream_seq.is_some() {
                stream.stream_seq = end.stream_seq.clone();
            }
            for (producer, state) in &end.producers {
                stream.producers.restore(producer, *state);
            }
        }
        Ok(())
    }

    fn compact(&mut self, id: u64, runs: &[RunEntry]) -> Result<(), MetaError> {
        if !self.reserved.contains(&id) {
            return Err(MetaError::NotReserved { id });
        }
        // Each run's place among its stream's runs: the first and last it covers.
        let mut places = Vec::with_capacity(runs.len());
        for run in runs {
            // A stream removed while the compaction was written: its run is dropped.
            let Some(stream) = self.streams.get(&run.stream) else { continue };
            let first = stream.runs.iter().position(|&(start, _, _)| start == run.start);
            let last = stream.runs.iter().position(|&(_, end, _)| end == run.end);
            match (first, last) {
                (Some(first), Some(last)) if last >= first => places.push((run, first, last)),
                _ => return Err(MetaError::CompactNotAtRuns { stream: run.stream, start: run.start, end: run.end }),
            }
        }
        // Two runs of one stream must not overlap: they would replace a run twice.
        let mut sorted: Vec<&(&RunEntry, usize, usize)> = places.iter().collect();
        crate::sort::sort_by_key(&mut sorted, |(run, first, _)| (run.stream, *first));
        if let Some(pair) = sorted.windows(2).find(|pair| pair[0].0.stream == pair[1].0.stream && pair[1].1 <= pair[0].2) {
            let run = pair[1].0;
            return Err(MetaError::CompactNotAtRuns { stream: run.stream, start: run.start, end: run.end });
        }
        // Later places first, so earlier ones stay where they were found.
        crate::sort::sort_by_key(&mut sorted, |(run, first, _)| (run.stream, std::cmp::Reverse(*first)));
        let mut live = 0;
        for &(run, first, last) in sorted {
            let stream = self.streams.get_mut(&run.stream).expect("checked above");
            let replaced: Vec<u64> = stream.runs.splice(first..=last, [(run.start, run.end, id)]).map(|(_, _, object)| object).collect();
            for object in replaced {
                if let Some(count) = self.objects.get_mut(&object) {
                    *count = count.saturating_sub(1);
                }
            }
            live += 1;
        }
        self.reserved.remove(&id);
        self.objects.insert(id, live);
        Ok(())
    }

    /// Committed objects with the data bytes of the live runs each holds, by id.
    pub fn object_bytes(&self) -> BTreeMap<u64, u64> {
        let mut bytes: BTreeMap<u64, u64> = crate::sort::map_from(self.objects.keys().map(|&id| (id, 0)));
        for stream in self.streams.values() {
            for &(start, end, object) in &stream.runs {
                *bytes.entry(object).or_default() += end.bytes - start.bytes;
            }
        }
        bytes
    }

    /// Removes stream `id`, and every soft-deleted source that was waiting only for it.
    fn remove(&mut self, id: StreamId, removed: &mut Vec<StreamId>) {
        let mut next = Some(id);
        while let Some(id) = next.take() {
            let Some(stream) = self.streams.remove(&id) else { break };
            removed.push(id);
            if self.names.get(&stream.config.name) == Some(&id) {
                self.names.remove(&stream.config.name);
            }
            for &(_, _, object) in &stream.runs {
                if let Some(live) = self.objects.get_mut(&object) {
                    *live = live.saturating_sub(1);
                }
            }
            if let Some(fork) = stream.config.fork {
                if let Some(source) = self.streams.get_mut(&fork.source) {
                    source.forks = source.forks.saturating_sub(1);
                    if source.soft_deleted && source.forks == 0 {
                        next = Some(fork.source);
                    }
                }
            }
        }
    }

    /// The state as [`MetaCommand::Snapshot`] parts, each at most [`SNAPSHOT_PART_BYTES`]
    /// of the state's encoding (at least one: an empty state's encoding has its counts).
    pub fn snapshot(&self) -> Vec<MetaCommand> {
        let bytes = self.encode();
        let chunks: Vec<&[u8]> = bytes.chunks(SNAPSHOT_PART_BYTES).collect();
        let parts = chunks.len() as u32;
        chunks
            .into_iter()
            .enumerate()
            .map(|(part, chunk)| MetaCommand::Snapshot { part: part as u32, parts, bytes: chunk.to_vec() })
            .collect()
    }

    /// A stream by number (live or soft-deleted).
    pub fn stream(&self, id: StreamId) -> Option<&StreamMeta> {
        self.streams.get(&id)
    }

    /// The stream that has `name` now.
    pub fn id_of(&self, name: &str) -> Option<StreamId> {
        self.names.get(name).copied()
    }

    /// Every stream, by number.
    pub fn streams(&self) -> impl Iterator<Item = (StreamId, &StreamMeta)> {
        self.streams.iter().map(|(id, meta)| (*id, meta))
    }

    /// Ids reserved and never committed nor expired: orphans once no upload is running.
    pub fn reserved_ids(&self) -> Vec<u64> {
        self.reserved.iter().copied().collect()
    }

    /// Committed objects no live run names: to delete, then forget.
    pub fn garbage_ids(&self) -> Vec<u64> {
        self.objects.iter().filter(|&(_, &live)| live == 0).map(|(&id, _)| id).collect()
    }

    /// Committed object ids.
    pub fn objects(&self) -> impl Iterator<Item = u64> + '_ {
        self.objects.keys().copied()
    }
}

/// The most state bytes one [`MetaCommand::Snapshot`] part carries (the rest of
/// [`COMMAND_BYTES_MAX`] is its own fields and room to spare).
pub const SNAPSHOT_PART_BYTES: usize = COMMAND_BYTES_MAX - 64;

/// What [`replay`] found in a metadata log's records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replayed {
    pub state: MetaState,
    /// The seq of the first part of the last complete snapshot, if there is one: every
    /// record before it may be trimmed.
    pub snapshot_seq: Option<u64>,
    /// Records after that snapshot (or all records, without one).
    pub since_snapshot: u64,
}

/// Why a metadata log's records do not replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// The record at `seq` does not apply to the state before it.
    Apply { seq: u64, error: MetaError },
    /// A snapshot's parts do not decode into a state.
    Snapshot { seq: u64, error: DecodeError },
    /// The log starts at `first_seq`, not at its first record, and holds no complete
    /// snapshot to start from.
    NoStart { first_seq: u64 },
}

impl core::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReplayError::Apply { seq, error } => write!(f, "metadata record {seq}: {error}"),
            ReplayError::Snapshot { seq, error } => write!(f, "the snapshot starting at metadata record {seq}: {error}"),
            ReplayError::NoStart { first_seq } => write!(
                f,
                "the metadata log starts at record {first_seq} and holds no complete snapshot: records before it are missing"
            ),
        }
    }
}

/// Replays a metadata log's records `(seq, command)`, in seq order, as its recovery
/// found them (records 1, 2, ... of a new log; a compacted log's from some later seq),
/// `next_seq` being the seq its next record gets: from the last complete snapshot, or
/// from the start when there is none.
pub fn replay(records: &[(u64, MetaCommand)], next_seq: u64) -> Result<Replayed, ReplayError> {
    // The last run of parts 0..parts, one after the other with nothing between.
    let mut last_complete: Option<(usize, usize)> = None;
    let mut open: Option<(usize, u32)> = None;
    for (index, (_, command)) in records.iter().enumerate() {
        open = match (command, open) {
            (MetaCommand::Snapshot { part: 0, parts, .. }, _) => Some((index, *parts)),
            (MetaCommand::Snapshot { part, parts, .. }, Some((start, expected_parts)))
                if *parts == expected_parts && *part as usize == index - start =>
            {
                Some((start, expected_parts))
            }
            _ => None,
        };
        if let Some((start, parts)) = open {
            if index - start + 1 == parts as usize {
                last_complete = Some((start, index));
                open = None;
            }
        }
    }
    let (mut state, from, snapshot_seq) = match last_complete {
        Some((start, end)) => {
            let mut bytes = Vec::new();
            for (_, command) in &records[start..=end] {
                if let MetaCommand::Snapshot { bytes: part, .. } = command {
                    bytes.extend_from_slice(part);
                }
            }
            let seq = records[start].0;
            let state = MetaState::decode(&bytes).map_err(|error| ReplayError::Snapshot { seq, error })?;
            (state, end + 1, Some(seq))
        }
        None => {
            // An empty log is a new one only if it never took a record.
            let first_seq = records.first().map_or(next_seq, |&(seq, _)| seq);
            if first_seq != 1 {
                return Err(ReplayError::NoStart { first_seq });
            }
            (MetaState::default(), 0, None)
        }
    };
    for (seq, command) in &records[from..] {
        state.apply(command).map_err(|error| ReplayError::Apply { seq: *seq, error })?;
    }
    Ok(Replayed { state, snapshot_seq, since_snapshot: (records.len() - from) as u64 })
}

mod codec;
pub use self::codec::{producer_entry_bytes, COMMIT_FIXED_BYTES, OBJECT_ENTRY_BYTES, RUN_ENTRY_BYTES};

#[cfg(test)]
mod tests;
