//! The metadata log as the upload simulator meets it.

use std::collections::BTreeMap;

use super::stream_name;
use crate::stream_store::expiry::Expiry;
use crate::stream_store::meta::{MetaCommand, MetaError, MetaState, StreamConfig};
use crate::stream_store::StreamId;
use crate::time::Nanos;

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

    /// Applies a block's commit (the command `walab serve` appends: its objects under
    /// their ids, every stream in it advanced), or changes nothing.
    pub fn commit(&mut self, now: Nanos, epoch: u64, command: &MetaCommand) -> Result<(), CommitError> {
        self.expire(now);
        if epoch != self.epoch {
            return Err(CommitError::Fenced { epoch, current: self.epoch });
        }
        self.state.apply(command).map(|_| ()).map_err(CommitError::Refused)
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
