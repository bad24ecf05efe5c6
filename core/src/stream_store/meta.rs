//! The metadata log's state machine: which objects exist, which offsets of which stream
//! each one holds, how far every stream is committed, and the producers' state as of
//! those ends.
//!
//! The metadata is a log of [`MetaCommand`]s; the state is what applying them in order
//! gives, so a restart replays the log and arrives at the same state. Two commands carry
//! an upload:
//!
//! 1. [`MetaCommand::Reserve`] takes object ids before anything is uploaded. An upload that
//!    crashes leaves an object under a reserved id that no commit names: an orphan, which
//!    the next start deletes and expires ([`MetaCommand::Expire`]). Ids are never reused.
//! 2. [`MetaCommand::Commit`] registers the uploaded objects and advances the committed end
//!    of every stream in them at once: one command, so a reader sees all of it or none.
//!    It also carries the producers' state at those ends, so a retried seq is still
//!    recognised once the WAL records that held it are trimmed.
//!
//! A commit is checked whole before any of it applies: its ids must be reserved and not
//! committed, and each stream's runs must start exactly at its committed end and follow
//! one another, so the objects of a stream tile its offsets from 0 with no gap or overlap.
//!
//! # Compaction
//!
//! Left alone the log grows by two records per upload. [`MetaState::snapshot`] writes
//! the whole state as [`MetaCommand::Snapshot`] parts (a state larger than one record
//! takes several, written one after the other); once the last part is durable, every
//! record before the first part may be trimmed. [`replay`] starts from the last complete
//! snapshot in what the log holds and applies only the commands after it; a snapshot cut
//! short by a crash is ignored (the records before it are still there, since nothing is
//! trimmed until a snapshot is whole), and a log that no longer starts at its first
//! record but holds no complete snapshot is refused: something trimmed it wrongly.

use std::collections::{BTreeMap, BTreeSet};

use super::bytes::{name_bytes, put_name, put_u32, put_u64, DecodeError, Reader};
use super::producers::{ProducerState, ProducerTable};

/// The most bytes one encoded command may take: it is one record of the metadata WAL
/// (the tiny record's payload holds 65,535 bytes, with room for its own fields).
pub const COMMAND_BYTES_MAX: usize = 60_000;

/// One run of one stream in one object: offsets `start..end`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RunEntry {
    pub stream: String,
    pub start: u64,
    pub end: u64,
}

/// One uploaded object and the runs it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ObjectEntry {
    pub id: u64,
    pub runs: Vec<RunEntry>,
}

/// A producer's state on one stream, as of the committed end.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProducerEntry {
    pub stream: String,
    pub producer: String,
    pub state: ProducerState,
}

/// One entry of the metadata log.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MetaCommand {
    /// Object ids `first..first + count` are taken.
    Reserve { first: u64, count: u32 },
    /// These objects are in place: register them and advance their streams' ends.
    Commit { objects: Vec<ObjectEntry>, producers: Vec<ProducerEntry> },
    /// These reserved ids were never committed; their objects (if any) are deleted.
    Expire { ids: Vec<u64> },
    /// Part `part` (from 0) of `parts` of the state's encoding: the whole state as of
    /// this point of the log, once every part is there. Changes nothing when applied.
    Snapshot { part: u32, parts: u32, bytes: Vec<u8> },
}

/// Why a command does not apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaError {
    /// A reservation that does not start at the next free id.
    ReserveOutOfOrder { first: u64, next: u64 },
    /// An id that is not reserved (or is committed already).
    NotReserved { id: u64 },
    /// A run that does not start at its stream's committed end.
    RunNotAtEnd { stream: String, start: u64, committed: u64 },
    /// A run with no records.
    EmptyRun { stream: String },
}

impl core::fmt::Display for MetaError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MetaError::ReserveOutOfOrder { first, next } => write!(f, "reservation at id {first}, the next free id is {next}"),
            MetaError::NotReserved { id } => write!(f, "object id {id} is not reserved"),
            MetaError::RunNotAtEnd { stream, start, committed } => {
                write!(f, "stream {stream}: a run at offset {start}, its committed end is {committed}")
            }
            MetaError::EmptyRun { stream } => write!(f, "stream {stream}: an empty run"),
        }
    }
}

/// What the metadata says about one stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamMeta {
    /// Offsets below are in committed objects.
    pub committed: u64,
    /// `(start, end, object id)` by start: they tile `0..committed`.
    pub runs: Vec<(u64, u64, u64)>,
}

/// The state the metadata log gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaState {
    next_id: u64,
    reserved: BTreeSet<u64>,
    objects: BTreeSet<u64>,
    streams: BTreeMap<String, StreamMeta>,
    producers: BTreeMap<String, ProducerTable>,
}

impl MetaState {
    /// The command that reserves the next `count` ids.
    pub fn reserve(&self, count: u32) -> MetaCommand {
        MetaCommand::Reserve { first: self.next_id, count }
    }

    /// Applies one command, or changes nothing and says why not.
    pub fn apply(&mut self, command: &MetaCommand) -> Result<(), MetaError> {
        match command {
            MetaCommand::Reserve { first, count } => {
                if *first != self.next_id {
                    return Err(MetaError::ReserveOutOfOrder { first: *first, next: self.next_id });
                }
                self.reserved.extend(*first..*first + u64::from(*count));
                self.next_id = first + u64::from(*count);
            }
            MetaCommand::Commit { objects, producers } => {
                let mut ends: BTreeMap<&str, u64> = BTreeMap::new();
                for object in objects {
                    if !self.reserved.contains(&object.id) || objects.iter().filter(|o| o.id == object.id).count() > 1 {
                        return Err(MetaError::NotReserved { id: object.id });
                    }
                    for run in &object.runs {
                        let committed = *ends.entry(&run.stream).or_insert_with(|| self.committed(&run.stream));
                        if run.start != committed {
                            return Err(MetaError::RunNotAtEnd { stream: run.stream.clone(), start: run.start, committed });
                        }
                        if run.end <= run.start {
                            return Err(MetaError::EmptyRun { stream: run.stream.clone() });
                        }
                        ends.insert(&run.stream, run.end);
                    }
                }
                for object in objects {
                    self.reserved.remove(&object.id);
                    self.objects.insert(object.id);
                    for run in &object.runs {
                        let stream = self.streams.entry(run.stream.clone()).or_default();
                        stream.runs.push((run.start, run.end, object.id));
                        stream.committed = run.end;
                    }
                }
                for entry in producers {
                    let table = self.producers.entry(entry.stream.clone()).or_default();
                    let known = table.get(&entry.producer).copied();
                    if known.is_none_or(|known| known.last_offset < entry.state.last_offset) {
                        table.restore(&entry.producer, entry.state);
                    }
                }
            }
            MetaCommand::Expire { ids } => {
                if let Some(&id) = ids.iter().find(|id| !self.reserved.contains(id)) {
                    return Err(MetaError::NotReserved { id });
                }
                for id in ids {
                    self.reserved.remove(id);
                }
            }
            MetaCommand::Snapshot { .. } => {}
        }
        Ok(())
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
        put_u64(&mut out, self.next_id);
        put_u32(&mut out, self.reserved.len() as u32);
        for id in &self.reserved {
            put_u64(&mut out, *id);
        }
        put_u32(&mut out, self.objects.len() as u32);
        for id in &self.objects {
            put_u64(&mut out, *id);
        }
        put_u32(&mut out, self.streams.len() as u32);
        for (name, stream) in &self.streams {
            put_name(&mut out, name);
            put_u64(&mut out, stream.committed);
            put_u32(&mut out, stream.runs.len() as u32);
            for &(start, end, id) in &stream.runs {
                put_u64(&mut out, start);
                put_u64(&mut out, end);
                put_u64(&mut out, id);
            }
        }
        put_u32(&mut out, self.producers.len() as u32);
        for (stream, table) in &self.producers {
            put_name(&mut out, stream);
            put_u32(&mut out, table.len() as u32);
            for (producer, state) in table.iter() {
                put_name(&mut out, producer);
                put_u64(&mut out, state.epoch);
                put_u64(&mut out, state.first_seq);
                put_u64(&mut out, state.last_seq);
                put_u64(&mut out, state.last_offset);
            }
        }
        out
    }

    /// Reads a state's encoding, and refuses one whose parts contradict each other (ids
    /// past the next free one, an id both reserved and committed, runs that do not tile
    /// their stream from 0 or name an object that is not committed).
    pub fn decode(bytes: &[u8]) -> Result<MetaState, DecodeError> {
        let mut reader = Reader { rest: bytes };
        let mut state = MetaState { next_id: reader.u64()?, ..MetaState::default() };
        for _ in 0..reader.count(8)? {
            state.reserved.insert(reader.u64()?);
        }
        for _ in 0..reader.count(8)? {
            state.objects.insert(reader.u64()?);
        }
        for _ in 0..reader.count(2 + 12)? {
            let name = reader.name()?;
            let committed = reader.u64()?;
            let mut runs = Vec::new();
            for _ in 0..reader.count(24)? {
                runs.push((reader.u64()?, reader.u64()?, reader.u64()?));
            }
            let mut end = 0;
            for &(start, run_end, id) in &runs {
                if start != end || run_end <= start || !state.objects.contains(&id) {
                    return Err(DecodeError::Inconsistent("a stream's runs do not tile it from 0 in committed objects"));
                }
                end = run_end;
            }
            if end != committed {
                return Err(DecodeError::Inconsistent("a stream's runs do not end at its committed end"));
            }
            state.streams.insert(name, StreamMeta { committed, runs });
        }
        for _ in 0..reader.count(2 + 4)? {
            let stream = reader.name()?;
            let mut table = ProducerTable::default();
            for _ in 0..reader.count(2 + 32)? {
                let producer = reader.name()?;
                let state = producer_state(&mut reader, true)?;
                if table.get(&producer).is_some() {
                    return Err(DecodeError::Inconsistent("a producer twice in one stream's table"));
                }
                table.restore(&producer, state);
            }
            state.producers.insert(stream, table);
        }
        reader.finish()?;
        let past_next = |id: &u64| *id >= state.next_id;
        if state.reserved.iter().any(past_next) || state.objects.iter().any(past_next) {
            return Err(DecodeError::Inconsistent("an object id at or past the next free id"));
        }
        if state.reserved.intersection(&state.objects).next().is_some() {
            return Err(DecodeError::Inconsistent("an object id both reserved and committed"));
        }
        Ok(state)
    }

    /// Offsets of `stream` below this are committed.
    pub fn committed(&self, stream: &str) -> u64 {
        self.streams.get(stream).map_or(0, |s| s.committed)
    }

    /// Every stream the metadata knows, by name.
    pub fn streams(&self) -> impl Iterator<Item = (&str, &StreamMeta)> {
        self.streams.iter().map(|(name, meta)| (name.as_str(), meta))
    }

    /// The run holding `offset` of `stream`: `(start, end, object id)`.
    pub fn run_holding(&self, stream: &str, offset: u64) -> Option<(u64, u64, u64)> {
        let runs = &self.streams.get(stream)?.runs;
        let at = runs.partition_point(|&(_, end, _)| end <= offset);
        runs.get(at).copied().filter(|&(start, _, _)| start <= offset)
    }

    /// The producers' state of `stream` as of its committed end.
    pub fn producers(&self, stream: &str) -> Option<&ProducerTable> {
        self.producers.get(stream)
    }

    /// Ids reserved and never committed nor expired: orphans once no upload is running.
    pub fn reserved_ids(&self) -> Vec<u64> {
        self.reserved.iter().copied().collect()
    }

    /// Committed object ids.
    pub fn objects(&self) -> impl Iterator<Item = u64> + '_ {
        self.objects.iter().copied()
    }
}

/// A producer's state: epoch, first seq of its run (when `runs`; else the run is the
/// last seq alone), last seq, last offset.
fn producer_state(reader: &mut Reader<'_>, runs: bool) -> Result<ProducerState, DecodeError> {
    let epoch = reader.u64()?;
    let first_seq = if runs { Some(reader.u64()?) } else { None };
    let (last_seq, last_offset) = (reader.u64()?, reader.u64()?);
    let first_seq = first_seq.unwrap_or(last_seq);
    if first_seq > last_seq || last_seq - first_seq > last_offset {
        return Err(DecodeError::Inconsistent("a producer's run starts after its last seq or before offset 0"));
    }
    Ok(ProducerState { epoch, first_seq, last_seq, last_offset })
}

const TAG_RESERVE: u8 = 1;
/// A commit whose producer entries have no run start (read as a run of one record).
const TAG_COMMIT_WITHOUT_RUNS: u8 = 2;
const TAG_EXPIRE: u8 = 3;
const TAG_SNAPSHOT: u8 = 4;
const TAG_COMMIT: u8 = 5;

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

/// Bytes one run entry adds to an encoded commit (the object's own entry is counted apart).
pub fn run_entry_bytes(stream: &str) -> usize {
    name_bytes(stream) + 16
}

/// Bytes one object entry adds to an encoded commit, runs aside.
pub const OBJECT_ENTRY_BYTES: usize = 8 + 4;

/// Bytes one producer entry adds to an encoded commit.
pub fn producer_entry_bytes(stream: &str, producer: &str) -> usize {
    name_bytes(stream) + name_bytes(producer) + 32
}

/// Bytes of an encoded commit's fixed fields.
pub const COMMIT_FIXED_BYTES: usize = 1 + 4 + 4;

impl MetaCommand {
    /// Lays the command out as one metadata record.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            MetaCommand::Reserve { first, count } => {
                out.push(TAG_RESERVE);
                put_u64(&mut out, *first);
                put_u32(&mut out, *count);
            }
            MetaCommand::Commit { objects, producers } => {
                out.push(TAG_COMMIT);
                put_u32(&mut out, objects.len() as u32);
                for object in objects {
                    put_u64(&mut out, object.id);
                    put_u32(&mut out, object.runs.len() as u32);
                    for run in &object.runs {
                        put_name(&mut out, &run.stream);
                        put_u64(&mut out, run.start);
                        put_u64(&mut out, run.end);
                    }
                }
                put_u32(&mut out, producers.len() as u32);
                for entry in producers {
                    put_name(&mut out, &entry.stream);
                    put_name(&mut out, &entry.producer);
                    put_u64(&mut out, entry.state.epoch);
                    put_u64(&mut out, entry.state.first_seq);
                    put_u64(&mut out, entry.state.last_seq);
                    put_u64(&mut out, entry.state.last_offset);
                }
            }
            MetaCommand::Expire { ids } => {
                out.push(TAG_EXPIRE);
                put_u32(&mut out, ids.len() as u32);
                for id in ids {
                    put_u64(&mut out, *id);
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
            TAG_RESERVE => MetaCommand::Reserve { first: reader.u64()?, count: reader.u32()? },
            tag @ (TAG_COMMIT | TAG_COMMIT_WITHOUT_RUNS) => {
                let object_count = reader.count(OBJECT_ENTRY_BYTES)?;
                let mut objects = Vec::with_capacity(object_count);
                for _ in 0..object_count {
                    let id = reader.u64()?;
                    let run_count = reader.count(2 + 16)?;
                    let mut runs = Vec::with_capacity(run_count);
                    for _ in 0..run_count {
                        runs.push(RunEntry { stream: reader.name()?, start: reader.u64()?, end: reader.u64()? });
                    }
                    objects.push(ObjectEntry { id, runs });
                }
                let runs = tag == TAG_COMMIT;
                let producer_count = reader.count(4 + if runs { 32 } else { 24 })?;
                let mut producers = Vec::with_capacity(producer_count);
                for _ in 0..producer_count {
                    let stream = reader.name()?;
                    let producer = reader.name()?;
                    let state = producer_state(&mut reader, runs)?;
                    producers.push(ProducerEntry { stream, producer, state });
                }
                MetaCommand::Commit { objects, producers }
            }
            TAG_EXPIRE => {
                let count = reader.count(8)?;
                let ids = (0..count).map(|_| reader.u64()).collect::<Result<Vec<u64>, DecodeError>>()?;
                MetaCommand::Expire { ids }
            }
            TAG_SNAPSHOT => {
                let (part, parts) = (reader.u32()?, reader.u32()?);
                if part >= parts {
                    return Err(DecodeError::Inconsistent("a snapshot part past its count of parts"));
                }
                let len = reader.count(1)?;
                MetaCommand::Snapshot { part, parts, bytes: reader.take(len)?.to_vec() }
            }
            other => return Err(DecodeError::Unknown { what: "metadata command", value: u64::from(other) }),
        };
        reader.finish()?;
        Ok(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stream: &str, start: u64, end: u64) -> RunEntry {
        RunEntry { stream: stream.into(), start, end }
    }

    fn commit(objects: Vec<ObjectEntry>) -> MetaCommand {
        MetaCommand::Commit { objects, producers: vec![] }
    }

    #[test]
    fn a_commit_advances_every_stream_at_once_or_not_at_all() {
        let mut state = MetaState::default();
        assert_eq!(state.apply(&state.reserve(2)), Ok(()));
        let good = commit(vec![
            ObjectEntry { id: 0, runs: vec![run("a", 0, 10), run("b", 0, 3)] },
            ObjectEntry { id: 1, runs: vec![run("a", 10, 500)] },
        ]);
        // A run that leaves a gap spoils the whole commit: nothing of it applies.
        let bad = commit(vec![
            ObjectEntry { id: 0, runs: vec![run("a", 0, 10)] },
            ObjectEntry { id: 1, runs: vec![run("b", 1, 3)] },
        ]);
        let before = state.clone();
        assert_eq!(state.apply(&bad), Err(MetaError::RunNotAtEnd { stream: "b".into(), start: 1, committed: 0 }));
        assert_eq!(state, before);
        assert_eq!(state.apply(&good), Ok(()));
        assert_eq!((state.committed("a"), state.committed("b"), state.committed("c")), (500, 3, 0));
        assert_eq!(state.run_holding("a", 0), Some((0, 10, 0)));
        assert_eq!(state.run_holding("a", 10), Some((10, 500, 1)));
        assert_eq!(state.run_holding("a", 499), Some((10, 500, 1)));
        assert_eq!(state.run_holding("a", 500), None);
        // Committed ids are no longer reserved: committing one again is refused.
        assert_eq!(state.apply(&good), Err(MetaError::NotReserved { id: 0 }));
        assert_eq!(state.reserved_ids(), Vec::<u64>::new());
    }

    #[test]
    fn an_orphan_is_expired_and_its_id_never_comes_back() {
        let mut state = MetaState::default();
        state.apply(&state.reserve(3)).unwrap();
        state.apply(&commit(vec![ObjectEntry { id: 1, runs: vec![run("a", 0, 1)] }])).unwrap();
        assert_eq!(state.reserved_ids(), vec![0, 2]);
        state.apply(&MetaCommand::Expire { ids: vec![0, 2] }).unwrap();
        assert_eq!(state.reserve(1), MetaCommand::Reserve { first: 3, count: 1 });
        assert_eq!(state.apply(&commit(vec![ObjectEntry { id: 2, runs: vec![run("a", 1, 2)] }])), Err(MetaError::NotReserved { id: 2 }));
        assert_eq!(state.apply(&MetaCommand::Reserve { first: 1, count: 1 }), Err(MetaError::ReserveOutOfOrder { first: 1, next: 3 }));
    }

    #[test]
    fn producers_survive_in_the_commit() {
        let mut state = MetaState::default();
        state.apply(&state.reserve(1)).unwrap();
        let entry = ProducerEntry {
            stream: "a".into(),
            producer: "p".into(),
            state: ProducerState { epoch: 2, first_seq: 5, last_seq: 7, last_offset: 4 },
        };
        let command = MetaCommand::Commit {
            objects: vec![ObjectEntry { id: 0, runs: vec![run("a", 0, 5)] }],
            producers: vec![entry.clone()],
        };
        state.apply(&command).unwrap();
        assert_eq!(state.producers("a").and_then(|t| t.get("p")), Some(&entry.state));
    }

    #[test]
    fn commands_round_trip_and_a_reservation_is_golden() {
        let reserve = MetaCommand::Reserve { first: 5, count: 2 };
        assert_eq!(reserve.encode(), [1, 5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]);
        let commit = MetaCommand::Commit {
            objects: vec![ObjectEntry { id: 9, runs: vec![run("ab", 0, 3), run("c", 7, 8)] }],
            producers: vec![ProducerEntry {
                stream: "ab".into(),
                producer: "p".into(),
                state: ProducerState { epoch: 1, first_seq: 1, last_seq: 2, last_offset: 1 },
            }],
        };
        let encoded = commit.encode();
        let expected_bytes = COMMIT_FIXED_BYTES
            + OBJECT_ENTRY_BYTES
            + run_entry_bytes("ab")
            + run_entry_bytes("c")
            + producer_entry_bytes("ab", "p");
        assert_eq!(encoded.len(), expected_bytes);
        for command in [reserve, commit, MetaCommand::Expire { ids: vec![1, 2] }] {
            assert_eq!(MetaCommand::decode(&command.encode()), Ok(command));
        }
        assert_eq!(MetaCommand::decode(&[9]), Err(DecodeError::Unknown { what: "metadata command", value: 9 }));
        assert_eq!(MetaCommand::decode(&[2, 255, 255, 255, 255]), Err(DecodeError::Truncated));
        assert_eq!(MetaCommand::decode(&[3, 0, 0, 0, 0, 1]), Err(DecodeError::TrailingBytes));
    }

    /// A state with `uploads` uploads of one object each over `streams` streams, with a
    /// producer per stream, and one reservation left open; and the commands that made it.
    fn built(uploads: u64, streams: usize) -> (MetaState, Vec<MetaCommand>) {
        let mut state = MetaState::default();
        let mut commands = Vec::new();
        let mut push = |state: &mut MetaState, command: MetaCommand| {
            state.apply(&command).unwrap();
            commands.push(command);
        };
        for upload in 0..uploads {
            let reserve = state.reserve(1);
            push(&mut state, reserve);
            let runs: Vec<RunEntry> = (0..streams)
                .map(|s| {
                    let name = format!("stream-{s:04}");
                    let start = state.committed(&name);
                    run(&name, start, start + 1 + upload % 3)
                })
                .collect();
            let producers = (0..streams)
                .map(|s| ProducerEntry {
                    stream: format!("stream-{s:04}"),
                    producer: format!("p{s}"),
                    state: ProducerState { epoch: 1, first_seq: upload, last_seq: upload, last_offset: upload },
                })
                .collect();
            push(&mut state, MetaCommand::Commit { objects: vec![ObjectEntry { id: upload, runs }], producers });
        }
        let reserve = state.reserve(2);
        push(&mut state, reserve);
        (state, commands)
    }

    fn numbered(commands: Vec<MetaCommand>, first_seq: u64) -> Vec<(u64, MetaCommand)> {
        commands.into_iter().enumerate().map(|(n, command)| (first_seq + n as u64, command)).collect()
    }

    /// Replays records that are the whole tail of their log.
    fn replay_all(records: &[(u64, MetaCommand)]) -> Result<Replayed, ReplayError> {
        replay(records, records.last().map_or(1, |&(seq, _)| seq + 1))
    }

    #[test]
    fn a_snapshot_round_trips_the_state_in_as_many_parts_as_it_needs() {
        let (small, _) = built(3, 2);
        let parts = small.snapshot();
        assert_eq!(parts.len(), 1);
        // A state bigger than a record: 300 streams x 200 uploads of runs.
        let (big, _) = built(200, 300);
        let parts = big.snapshot();
        assert!(parts.len() > 1, "{} parts", parts.len());
        for (n, part) in parts.iter().enumerate() {
            let encoded = part.encode();
            assert!(encoded.len() <= COMMAND_BYTES_MAX, "part {n}: {} bytes", encoded.len());
            assert_eq!(MetaCommand::decode(&encoded).as_ref(), Ok(part));
            assert!(matches!(part, MetaCommand::Snapshot { part, parts: count, .. } if *part as usize == n && *count as usize == parts.len()));
        }
        for state in [small, big, MetaState::default()] {
            assert_eq!(MetaState::decode(&state.encode()), Ok(state));
        }
    }

    #[test]
    fn a_state_whose_parts_contradict_each_other_is_refused() {
        let (state, _) = built(2, 1);
        // The first stream's first run names object 0: drop object 0 from the committed set.
        let mut broken = state.clone();
        broken.objects.remove(&0);
        assert!(matches!(MetaState::decode(&broken.encode()), Err(DecodeError::Inconsistent(_))));
        let mut broken = state.clone();
        broken.reserved.insert(0);
        assert!(matches!(MetaState::decode(&broken.encode()), Err(DecodeError::Inconsistent(_))));
        let mut broken = state.clone();
        broken.next_id = 1;
        assert!(matches!(MetaState::decode(&broken.encode()), Err(DecodeError::Inconsistent(_))));
        let encoded = state.encode();
        assert_eq!(MetaState::decode(&encoded[..encoded.len() - 1]), Err(DecodeError::Truncated));
        assert_eq!(
            MetaCommand::decode(&MetaCommand::Snapshot { part: 2, parts: 2, bytes: vec![] }.encode()),
            Err(DecodeError::Inconsistent("a snapshot part past its count of parts"))
        );
    }

    #[test]
    fn replay_starts_at_the_last_complete_snapshot() {
        let (before, mut commands) = built(10, 3);
        let snapshot = before.snapshot();
        let snapshot_at = commands.len() as u64 + 1;
        commands.extend(snapshot.clone());
        let mut after = before.clone();
        let reserve = after.reserve(1);
        after.apply(&reserve).unwrap();
        commands.push(reserve);
        let whole = replay_all(&numbered(commands.clone(), 1)).unwrap();
        assert_eq!(whole, Replayed { state: after.clone(), snapshot_seq: Some(snapshot_at), since_snapshot: 1 });
        // Trimmed below the snapshot, or only partly: the same state.
        for first in [snapshot_at, snapshot_at - 5] {
            let kept = numbered(commands[(first - 1) as usize..].to_vec(), first);
            assert_eq!(replay_all(&kept).unwrap(), whole);
        }
        // Without the snapshot, from record 1: the same state by applying every command.
        let plain: Vec<MetaCommand> = commands.iter().filter(|c| !matches!(c, MetaCommand::Snapshot { .. })).cloned().collect();
        let from_start = replay_all(&numbered(plain.clone(), 1)).unwrap();
        assert_eq!((from_start.state, from_start.snapshot_seq), (after, None));
        // A new log is empty; an empty log that took records lost them all.
        assert_eq!(replay(&[], 1).map(|r| r.state), Ok(MetaState::default()));
        assert_eq!(replay(&[], 9), Err(ReplayError::NoStart { first_seq: 9 }));
        // A log that does not start at record 1 and holds no snapshot is refused.
        assert_eq!(replay_all(&numbered(plain[3..].to_vec(), 4)), Err(ReplayError::NoStart { first_seq: 4 }));
    }

    #[test]
    fn a_snapshot_cut_short_is_ignored() {
        let (big, mut commands) = built(200, 300);
        let parts = big.snapshot();
        assert!(parts.len() >= 3);
        // A crash after two parts, then more commands: the state comes from the commands.
        commands.extend(parts[..2].iter().cloned());
        let mut after = big.clone();
        let reserve = after.reserve(1);
        after.apply(&reserve).unwrap();
        commands.push(reserve.clone());
        let replayed = replay_all(&numbered(commands.clone(), 1)).unwrap();
        assert_eq!((&replayed.state, replayed.snapshot_seq), (&after, None));
        // Parts out of order or of two snapshots do not make one.
        let mut mixed = commands.clone();
        mixed.truncate(mixed.len() - 3);
        mixed.extend([parts[0].clone(), parts[2].clone(), parts[1].clone()]);
        mixed.extend(parts[3..].iter().cloned());
        assert_eq!(replay_all(&numbered(mixed, 1)).unwrap().snapshot_seq, None);
        // A whole snapshot written after the cut one counts.
        let first = commands.len() as u64 + 1;
        commands.extend(after.snapshot());
        let replayed = replay_all(&numbered(commands, 1)).unwrap();
        assert_eq!((replayed.state, replayed.snapshot_seq, replayed.since_snapshot), (after, Some(first), 0));
    }

    /// A commit's producer entry as bytes: (tag, epoch, first seq if the tag has it, last
    /// seq, last offset), no objects, stream "a", producer "p".
    fn producer_commit_bytes(tag: u8, fields: &[u64]) -> Vec<u8> {
        let mut out = vec![tag];
        put_u32(&mut out, 0);
        put_u32(&mut out, 1);
        put_name(&mut out, "a");
        put_name(&mut out, "p");
        for &field in fields {
            put_u64(&mut out, field);
        }
        out
    }

    #[test]
    fn a_commit_without_runs_reads_as_runs_of_one_and_a_bad_run_is_refused() {
        let old = MetaCommand::decode(&producer_commit_bytes(TAG_COMMIT_WITHOUT_RUNS, &[1, 9, 4])).unwrap();
        let MetaCommand::Commit { producers, .. } = old else { panic!("a commit") };
        assert_eq!(producers[0].state, ProducerState { epoch: 1, first_seq: 9, last_seq: 9, last_offset: 4 });
        let inconsistent = Err(DecodeError::Inconsistent("a producer's run starts after its last seq or before offset 0"));
        assert_eq!(MetaCommand::decode(&producer_commit_bytes(TAG_COMMIT, &[1, 10, 9, 4])), inconsistent);
        assert_eq!(MetaCommand::decode(&producer_commit_bytes(TAG_COMMIT, &[1, 0, 9, 4])), inconsistent);
        assert!(MetaCommand::decode(&producer_commit_bytes(TAG_COMMIT, &[1, 5, 9, 4])).is_ok());
    }

    #[test]
    fn a_run_that_goes_on_in_the_next_commit_joins_the_known_one() {
        let mut state = MetaState::default();
        state.apply(&state.reserve(3)).unwrap();
        let commit = |id: u64, start: u64, end: u64, producer: ProducerState| MetaCommand::Commit {
            objects: vec![ObjectEntry { id, runs: vec![run("a", start, end)] }],
            producers: vec![ProducerEntry { stream: "a".into(), producer: "p".into(), state: producer }],
        };
        // Seqs 0..=3 at offsets 0..=3, then 4..=5 at 4..=5: one run.
        state.apply(&commit(0, 0, 4, ProducerState { epoch: 1, first_seq: 0, last_seq: 3, last_offset: 3 })).unwrap();
        state.apply(&commit(1, 4, 6, ProducerState { epoch: 1, first_seq: 4, last_seq: 5, last_offset: 5 })).unwrap();
        let joined = ProducerState { epoch: 1, first_seq: 0, last_seq: 5, last_offset: 5 };
        assert_eq!(state.producers("a").and_then(|t| t.get("p")), Some(&joined));
        // Seq 6 at offset 7 (someone else's record at 6): a new run.
        state.apply(&commit(2, 6, 8, ProducerState { epoch: 1, first_seq: 6, last_seq: 6, last_offset: 7 })).unwrap();
        let table = state.producers("a").unwrap();
        assert_eq!(table.get("p").map(|p| p.first_seq), Some(6));
        assert_eq!(table.check_batch("p", 1, 4, 2), crate::stream_store::producers::Verdict::SeqGap { expected: 7 });
    }
}
