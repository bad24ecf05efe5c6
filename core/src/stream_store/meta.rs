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
                        table.record(&entry.producer, entry.state.epoch, entry.state.last_seq, entry.state.last_offset);
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
        }
        Ok(())
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

const TAG_RESERVE: u8 = 1;
const TAG_COMMIT: u8 = 2;
const TAG_EXPIRE: u8 = 3;

/// Bytes one run entry adds to an encoded commit (the object's own entry is counted apart).
pub fn run_entry_bytes(stream: &str) -> usize {
    name_bytes(stream) + 16
}

/// Bytes one object entry adds to an encoded commit, runs aside.
pub const OBJECT_ENTRY_BYTES: usize = 8 + 4;

/// Bytes one producer entry adds to an encoded commit.
pub fn producer_entry_bytes(stream: &str, producer: &str) -> usize {
    name_bytes(stream) + name_bytes(producer) + 24
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
        }
        out
    }

    /// Reads one metadata record.
    pub fn decode(bytes: &[u8]) -> Result<MetaCommand, DecodeError> {
        let mut reader = Reader { rest: bytes };
        let command = match reader.u8()? {
            TAG_RESERVE => MetaCommand::Reserve { first: reader.u64()?, count: reader.u32()? },
            TAG_COMMIT => {
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
                let producer_count = reader.count(4 + 24)?;
                let mut producers = Vec::with_capacity(producer_count);
                for _ in 0..producer_count {
                    let stream = reader.name()?;
                    let producer = reader.name()?;
                    let state = ProducerState { epoch: reader.u64()?, last_seq: reader.u64()?, last_offset: reader.u64()? };
                    producers.push(ProducerEntry { stream, producer, state });
                }
                MetaCommand::Commit { objects, producers }
            }
            TAG_EXPIRE => {
                let count = reader.count(8)?;
                let ids = (0..count).map(|_| reader.u64()).collect::<Result<Vec<u64>, DecodeError>>()?;
                MetaCommand::Expire { ids }
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
            state: ProducerState { epoch: 2, last_seq: 7, last_offset: 4 },
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
                state: ProducerState { epoch: 1, last_seq: 2, last_offset: 1 },
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
}
