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
        sorted.sort_by_key(|(run, first, _)| (run.stream, *first));
        if let Some(pair) = sorted.windows(2).find(|pair| pair[0].0.stream == pair[1].0.stream && pair[1].1 <= pair[0].2) {
            let run = pair[1].0;
            return Err(MetaError::CompactNotAtRuns { stream: run.stream, start: run.start, end: run.end });
        }
        // Later places first, so earlier ones stay where they were found.
        sorted.sort_by_key(|(run, first, _)| (run.stream, std::cmp::Reverse(*first)));
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
        let mut bytes: BTreeMap<u64, u64> = self.objects.keys().map(|&id| (id, 0)).collect();
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

    /// The state's encoding: what the snapshot parts carry, cut in pieces.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_option_text16(&mut out, self.wal.as_deref());
        put_u64(&mut out, self.next_object_id);
        put_u32(&mut out, self.reserved.len() as u32);
        for id in &self.reserved {
            put_u64(&mut out, *id);
        }
        put_u32(&mut out, self.objects.len() as u32);
        for id in self.objects.keys() {
            put_u64(&mut out, *id);
        }
        put_u64(&mut out, self.next_stream_id);
        put_u32(&mut out, self.streams.len() as u32);
        for (id, stream) in &self.streams {
            put_u64(&mut out, id.0);
            put_config(&mut out, &stream.config);
            out.push(u8::from(stream.soft_deleted));
            put_offset(&mut out, stream.committed);
            put_u32(&mut out, stream.runs.len() as u32);
            for &(start, end, object) in &stream.runs {
                put_offset(&mut out, start);
                put_offset(&mut out, end);
                put_u64(&mut out, object);
            }
            put_tail(&mut out, stream.closed, stream.closed_by.as_ref(), stream.stream_seq.as_deref());
            put_u32(&mut out, stream.producers.len() as u32);
            for (producer, state) in stream.producers.iter() {
                put_bytes8(&mut out, producer.as_bytes());
                put_u64(&mut out, state.epoch);
                put_u64(&mut out, state.last_seq);
            }
        }
        out
    }

    /// Reads a state's encoding, and refuses one whose parts contradict each other (ids
    /// past the next free one, an id both reserved and committed, runs that do not tile
    /// their stream from its base or name an object that is not committed, a name twice,
    /// a fork of a stream that is not there).
    pub fn decode(bytes: &[u8]) -> Result<MetaState, DecodeError> {
        let mut reader = Reader { rest: bytes };
        let mut state = MetaState { wal: option_text16(&mut reader)?, next_object_id: reader.u64()?, ..MetaState::default() };
        for _ in 0..reader.count(8)? {
            state.reserved.insert(reader.u64()?);
        }
        for _ in 0..reader.count(8)? {
            state.objects.insert(reader.u64()?, 0);
        }
        state.next_stream_id = reader.u64()?;
        for _ in 0..reader.count(8 + 4)? {
            let id = StreamId(reader.u64()?);
            let config = config(&mut reader)?;
            let soft_deleted = boolean(&mut reader)?;
            let committed = offset(&mut reader)?;
            let mut runs = Vec::new();
            for _ in 0..reader.count(40)? {
                runs.push((offset(&mut reader)?, offset(&mut reader)?, reader.u64()?));
            }
            let (closed, closed_by, stream_seq) = tail(&mut reader)?;
            let mut producers = ProducerTable::default();
            for _ in 0..reader.count(1 + 16)? {
                let producer = reader.text8(check_producer_id)?;
                let producer_state = ProducerState { epoch: reader.u64()?, last_seq: reader.u64()? };
                if producers.get(&producer).is_some() {
                    return Err(DecodeError::Inconsistent("a producer twice in one stream's table"));
                }
                producers.restore(&producer, producer_state);
            }
            let mut end = config.fork.map_or(Offset::START, |fork| fork.at);
            for &(start, run_end, object) in &runs {
                let Some(live) = state.objects.get_mut(&object) else {
                    return Err(DecodeError::Inconsistent("a run in an object that is not committed"));
                };
                if start != end || run_end.index <= start.index || run_end.bytes < start.bytes {
                    return Err(DecodeError::Inconsistent("a stream's runs do not tile it from its base"));
                }
                *live += 1;
                end = run_end;
            }
            if end != committed {
                return Err(DecodeError::Inconsistent("a stream's runs do not end at its committed end"));
            }
            if id.0 >= state.next_stream_id {
                return Err(DecodeError::Inconsistent("a stream number at or past the next free one"));
            }
            if state.names.insert(config.name.clone(), id).is_some() {
                return Err(DecodeError::Inconsistent("two streams with one name"));
            }
            let stream = StreamMeta { config, soft_deleted, forks: 0, committed, runs, closed, closed_by, stream_seq, producers };
            state.streams.insert(id, stream);
        }
        reader.finish()?;
        let sources: Vec<StreamId> = state.streams.values().filter_map(|s| s.config.fork.map(|f| f.source)).collect();
        for source in sources {
            match state.streams.get_mut(&source) {
                Some(stream) => stream.forks += 1,
                None => return Err(DecodeError::Inconsistent("a fork of a stream that is not there")),
            }
        }
        if state.streams.values().any(|s| s.soft_deleted && s.forks == 0) {
            return Err(DecodeError::Inconsistent("a soft-deleted stream no fork reads"));
        }
        let past_next = |id: &u64| *id >= state.next_object_id;
        if state.reserved.iter().any(past_next) || state.objects.keys().any(past_next) {
            return Err(DecodeError::Inconsistent("an object id at or past the next free id"));
        }
        if state.reserved.iter().any(|id| state.objects.contains_key(id)) {
            return Err(DecodeError::Inconsistent("an object id both reserved and committed"));
        }
        Ok(state)
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

fn put_offset(out: &mut Vec<u8>, offset: Offset) {
    put_u64(out, offset.index);
    put_u64(out, offset.bytes);
}

fn offset(reader: &mut Reader<'_>) -> Result<Offset, DecodeError> {
    Ok(Offset { index: reader.u64()?, bytes: reader.u64()? })
}

fn boolean(reader: &mut Reader<'_>) -> Result<bool, DecodeError> {
    match reader.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(DecodeError::Unknown { what: "flag", value: u64::from(other) }),
    }
}

fn put_option_text16(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => {
            out.push(1);
            put_bytes16(out, text.as_bytes());
        }
        None => out.push(0),
    }
}

fn any_text(_: &str) -> Result<(), NameError> {
    Ok(())
}

fn option_text16(reader: &mut Reader<'_>) -> Result<Option<String>, DecodeError> {
    Ok(if boolean(reader)? { Some(reader.text16(any_text)?) } else { None })
}

fn check_content_type(text: &str) -> Result<(), NameError> {
    if text.len() > CONTENT_TYPE_BYTES_MAX {
        return Err(NameError::TooLong { bytes: text.len(), max: CONTENT_TYPE_BYTES_MAX });
    }
    Ok(())
}

const EXPIRY_NEVER: u8 = 0;
const EXPIRY_TTL: u8 = 1;
const EXPIRY_AT: u8 = 2;

fn put_config(out: &mut Vec<u8>, config: &StreamConfig) {
    put_bytes16(out, config.name.as_bytes());
    put_bytes8(out, config.content_type.as_bytes());
    match config.expiry {
        Expiry::Never => out.push(EXPIRY_NEVER),
        Expiry::Ttl { seconds } => {
            out.push(EXPIRY_TTL);
            put_u64(out, seconds);
        }
        Expiry::At { unix_ms } => {
            out.push(EXPIRY_AT);
            put_u64(out, unix_ms);
        }
    }
    match &config.fork {
        Some(fork) => {
            out.push(1);
            put_u64(out, fork.source.0);
            put_offset(out, fork.at);
            put_u64(out, fork.sub_offset);
        }
        None => out.push(0),
    }
}

fn config(reader: &mut Reader<'_>) -> Result<StreamConfig, DecodeError> {
    let name = reader.text16(check_stream_name)?;
    let content_type = reader.text8(check_content_type)?;
    let expiry = match reader.u8()? {
        EXPIRY_NEVER => Expiry::Never,
        EXPIRY_TTL => Expiry::Ttl { seconds: reader.u64()? },
        EXPIRY_AT => Expiry::At { unix_ms: reader.u64()? },
        other => return Err(DecodeError::Unknown { what: "expiry", value: u64::from(other) }),
    };
    let fork = if boolean(reader)? {
        Some(ForkBase { source: StreamId(reader.u64()?), at: offset(reader)?, sub_offset: reader.u64()? })
    } else {
        None
    };
    Ok(StreamConfig { name, content_type, expiry, fork })
}

fn put_stamp(out: &mut Vec<u8>, stamp: Option<&ProducerStamp>) {
    match stamp {
        Some(stamp) => {
            out.push(1);
            put_bytes8(out, stamp.id.as_bytes());
            put_u64(out, stamp.epoch);
            put_u64(out, stamp.seq);
        }
        None => out.push(0),
    }
}

fn stamp(reader: &mut Reader<'_>) -> Result<Option<ProducerStamp>, DecodeError> {
    Ok(if boolean(reader)? {
        Some(ProducerStamp { id: reader.text8(check_producer_id)?, epoch: reader.u64()?, seq: reader.u64()? })
    } else {
        None
    })
}

/// Closure, the closing producer request and the last `Stream-Seq`.
fn put_tail(out: &mut Vec<u8>, closed: bool, closed_by: Option<&ProducerStamp>, stream_seq: Option<&str>) {
    out.push(u8::from(closed));
    put_stamp(out, closed_by);
    match stream_seq {
        Some(seq) => {
            out.push(1);
            put_bytes8(out, seq.as_bytes());
        }
        None => out.push(0),
    }
}

type Tail = (bool, Option<ProducerStamp>, Option<String>);

fn tail(reader: &mut Reader<'_>) -> Result<Tail, DecodeError> {
    let closed = boolean(reader)?;
    let closed_by = stamp(reader)?;
    let stream_seq = if boolean(reader)? { Some(reader.text8(any_text)?) } else { None };
    Ok((closed, closed_by, stream_seq))
}

const TAG_SNAPSHOT: u8 = 16;
const TAG_BIND: u8 = 17;
const TAG_RESERVE: u8 = 18;
const TAG_COMMIT: u8 = 19;
const TAG_EXPIRE: u8 = 20;
const TAG_CREATE: u8 = 21;
const TAG_DELETE: u8 = 22;
const TAG_FORGET: u8 = 23;
const TAG_COMPACT: u8 = 24;
/// Tags below this were written by `walab serve` before it spoke the Durable Streams
/// protocol (streams by name, no configuration); their logs are not read.
const TAG_FIRST: u8 = 16;

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

/// Bytes of an encoded commit's fixed fields.
pub const COMMIT_FIXED_BYTES: usize = 1 + 4 + 4;
/// Bytes one object entry adds to an encoded commit, runs aside.
pub const OBJECT_ENTRY_BYTES: usize = 8 + 4;
/// Bytes one run entry adds to an encoded commit.
pub const RUN_ENTRY_BYTES: usize = 8 + 16 + 16;

impl StreamEnd {
    /// Bytes this entry adds to an encoded commit.
    pub fn encoded_bytes(&self) -> usize {
        let stamp = |stamp: Option<&ProducerStamp>| 1 + stamp.map_or(0, |s| 1 + s.id.len() + 16);
        8 + 16
            + 1
            + stamp(self.closed_by.as_ref())
            + 1
            + self.stream_seq.as_ref().map_or(0, |seq| 1 + seq.len())
            + 4
            + self.producers.iter().map(|(id, _)| producer_entry_bytes(id)).sum::<usize>()
    }
}

/// Bytes one producer's state adds to a stream end.
pub fn producer_entry_bytes(producer: &str) -> usize {
    1 + producer.len() + 16
}

impl MetaCommand {
    /// Lays the command out as one metadata record.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            MetaCommand::Bind { wal } => {
                out.push(TAG_BIND);
                put_bytes16(&mut out, wal.as_bytes());
            }
            MetaCommand::Reserve { first, count } => {
                out.push(TAG_RESERVE);
                put_u64(&mut out, *first);
                put_u32(&mut out, *count);
            }
            MetaCommand::Commit { objects, ends } => {
                out.push(TAG_COMMIT);
                put_u32(&mut out, objects.len() as u32);
                for object in objects {
                    put_u64(&mut out, object.id);
                    put_u32(&mut out, object.runs.len() as u32);
                    for run in &object.runs {
                        put_u64(&mut out, run.stream.0);
                        put_offset(&mut out, run.start);
                        put_offset(&mut out, run.end);
                    }
                }
                put_u32(&mut out, ends.len() as u32);
                for end in ends {
                    put_u64(&mut out, end.stream.0);
                    put_offset(&mut out, end.end);
                    put_tail(&mut out, end.closed, end.closed_by.as_ref(), end.stream_seq.as_deref());
                    put_u32(&mut out, end.producers.len() as u32);
                    for (producer, state) in &end.producers {
                        put_bytes8(&mut out, producer.as_bytes());
                        put_u64(&mut out, state.epoch);
                        put_u64(&mut out, state.last_seq);
                    }
                }
            }
            MetaCommand::Expire { ids } | MetaCommand::Forget { ids } => {
                out.push(if matches!(self, MetaCommand::Expire { .. }) { TAG_EXPIRE } else { TAG_FORGET });
                put_u32(&mut out, ids.len() as u32);
                for id in ids {
                    put_u64(&mut out, *id);
                }
            }
            MetaCommand::Create { id, config } => {
                out.push(TAG_CREATE);
                put_u64(&mut out, id.0);
                put_config(&mut out, config);
            }
            MetaCommand::Delete { id } => {
                out.push(TAG_DELETE);
                put_u64(&mut out, id.0);
            }
            MetaCommand::Compact { id, runs } => {
                out.push(TAG_COMPACT);
                put_u64(&mut out, *id);
                put_u32(&mut out, runs.len() as u32);
                for run in runs {
                    put_u64(&mut out, run.stream.0);
                    put_offset(&mut out, run.start);
                    put_offset(&mut out, run.end);
                }
            }
            MetaCommand::Snapshot { part, parts, bytes } => {
                out.push(TAG_SNAPSHOT);
                put_u32(&mut out, *part);
                put_u32(&mut out, *parts);
                put_u32(&mut out, bytes.len() as u32);
                out.extend_from_slice(bytes);
            }
        }
        out
    }

    /// Reads one metadata record.
    pub fn decode(bytes: &[u8]) -> Result<MetaCommand, DecodeError> {
        let mut reader = Reader { rest: bytes };
        let command = match reader.u8()? {
            TAG_BIND => MetaCommand::Bind { wal: reader.text16(any_text)? },
            TAG_RESERVE => MetaCommand::Reserve { first: reader.u64()?, count: reader.u32()? },
            TAG_COMMIT => {
                let object_count = reader.count(OBJECT_ENTRY_BYTES)?;
                let mut objects = Vec::with_capacity(object_count);
                for _ in 0..object_count {
                    let id = reader.u64()?;
                    let run_count = reader.count(RUN_ENTRY_BYTES)?;
                    let mut runs = Vec::with_capacity(run_count);
                    for _ in 0..run_count {
                        runs.push(RunEntry { stream: StreamId(reader.u64()?), start: offset(&mut reader)?, end: offset(&mut reader)? });
                    }
                    objects.push(ObjectEntry { id, runs });
                }
                let end_count = reader.count(8 + 16 + 3 + 4)?;
                let mut ends = Vec::with_capacity(end_count);
                for _ in 0..end_count {
                    let stream = StreamId(reader.u64()?);
                    let end = offset(&mut reader)?;
                    let (closed, closed_by, stream_seq) = tail(&mut reader)?;
                    let mut producers = Vec::new();
                    for _ in 0..reader.count(1 + 16)? {
                        let producer = reader.text8(check_producer_id)?;
                        producers.push((producer, ProducerState { epoch: reader.u64()?, last_seq: reader.u64()? }));
                    }
                    ends.push(StreamEnd { stream, end, closed, closed_by, stream_seq, producers });
                }
                MetaCommand::Commit { objects, ends }
            }
            tag @ (TAG_EXPIRE | TAG_FORGET) => {
                let count = reader.count(8)?;
                let ids = (0..count).map(|_| reader.u64()).collect::<Result<Vec<u64>, DecodeError>>()?;
                if tag == TAG_EXPIRE {
                    MetaCommand::Expire { ids }
                } else {
                    MetaCommand::Forget { ids }
                }
            }
            TAG_CREATE => MetaCommand::Create { id: StreamId(reader.u64()?), config: config(&mut reader)? },
            TAG_DELETE => MetaCommand::Delete { id: StreamId(reader.u64()?) },
            TAG_COMPACT => {
                let id = reader.u64()?;
                let count = reader.count(RUN_ENTRY_BYTES)?;
                let mut runs = Vec::with_capacity(count);
                for _ in 0..count {
                    runs.push(RunEntry { stream: StreamId(reader.u64()?), start: offset(&mut reader)?, end: offset(&mut reader)? });
                }
                MetaCommand::Compact { id, runs }
            }
            TAG_SNAPSHOT => {
                let (part, parts) = (reader.u32()?, reader.u32()?);
                if part >= parts {
                    return Err(DecodeError::Inconsistent("a snapshot part past its count of parts"));
                }
                let len = reader.count(1)?;
                MetaCommand::Snapshot { part, parts, bytes: reader.take(len)?.to_vec() }
            }
            old if old < TAG_FIRST => {
                return Err(DecodeError::Unknown {
                    what: "metadata command of a walab serve from before the Durable Streams protocol (start on a new --wal and --meta)",
                    value: u64::from(old),
                })
            }
            other => return Err(DecodeError::Unknown { what: "metadata command", value: u64::from(other) }),
        };
        reader.finish()?;
        Ok(command)
    }
}

#[cfg(test)]
mod tests;
