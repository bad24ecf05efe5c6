//! Idempotent producers: the epoch and seq check every append of a producer passes.
//!
//! A producer is a client that wants each of its records in the stream exactly once even
//! though it retries: a request whose answer was lost (a timeout, a restarted server) is
//! sent again with the same seq. The table remembers, per producer, the epoch of its
//! current session, the last seq it appended and the offset that seq got:
//!
//! - the first append of a producer (or of a producer at a higher epoch) registers the
//!   epoch and its seq, whatever the seq is; a higher epoch fences the older session, whose
//!   appends are refused from then on;
//! - at the current epoch the next seq must be the last one plus 1; the last one again is
//!   a duplicate, answered with the offset it got the first time; anything else is a gap;
//! - a lower epoch is a fenced session and is refused, naming the current epoch.
//!
//! The table changes only when an append is submitted, under the stream's lock, so its
//! state is the state of the submitted records in offset order; replaying the WAL's
//! records through [`ProducerTable::record`] rebuilds it exactly, which is why a retry
//! is still recognised after a restart.

use std::collections::BTreeMap;

/// The most producers one stream remembers; a new producer past it is refused.
pub const PRODUCERS_PER_STREAM_MAX: usize = 10_000;

/// What the table knows about one producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProducerState {
    pub epoch: u64,
    pub last_seq: u64,
    /// The offset the last seq was given.
    pub last_offset: u64,
}

/// The answer to one append's epoch and seq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A new record: give it the next offset and [`ProducerTable::record`] it.
    Fresh,
    /// The last seq again: answer with the offset it got the first time.
    Duplicate { offset: u64 },
    /// A fenced session: the producer is at a higher epoch now.
    StaleEpoch { current: u64 },
    /// Not the next seq.
    SeqGap { expected: u64 },
    /// A new producer on a stream that already remembers [`PRODUCERS_PER_STREAM_MAX`].
    TooManyProducers,
}

/// One stream's producers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerTable {
    producers: BTreeMap<String, ProducerState>,
}

impl ProducerTable {
    /// Checks an append of `producer` at `epoch` with `seq`; changes nothing.
    pub fn check(&self, producer: &str, epoch: u64, seq: u64) -> Verdict {
        let Some(state) = self.producers.get(producer) else {
            if self.producers.len() >= PRODUCERS_PER_STREAM_MAX {
                return Verdict::TooManyProducers;
            }
            return Verdict::Fresh;
        };
        if epoch < state.epoch {
            return Verdict::StaleEpoch { current: state.epoch };
        }
        if epoch > state.epoch {
            return Verdict::Fresh;
        }
        if seq == state.last_seq {
            return Verdict::Duplicate { offset: state.last_offset };
        }
        match state.last_seq.checked_add(1) {
            Some(next) if seq == next => Verdict::Fresh,
            Some(next) => Verdict::SeqGap { expected: next },
            // A session that used every seq: only a new epoch goes on.
            None => Verdict::StaleEpoch { current: state.epoch },
        }
    }

    /// Records an append that was submitted at `offset` (after [`Verdict::Fresh`], or
    /// while replaying the WAL in offset order).
    pub fn record(&mut self, producer: &str, epoch: u64, seq: u64, offset: u64) {
        let state = ProducerState { epoch, last_seq: seq, last_offset: offset };
        match self.producers.get_mut(producer) {
            Some(known) => {
                assert!(known.last_offset < offset, "a producer's offsets only grow");
                *known = state;
            }
            None => {
                self.producers.insert(producer.to_string(), state);
            }
        }
    }

    pub fn get(&self, producer: &str) -> Option<&ProducerState> {
        self.producers.get(producer)
    }

    /// Every producer, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ProducerState)> {
        self.producers.iter().map(|(id, state)| (id.as_str(), state))
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_goes_seq_by_seq_and_a_retry_is_a_duplicate() {
        let mut table = ProducerTable::default();
        // (epoch, seq) in, verdict out; each Fresh one is recorded at the next offset.
        let steps = [
            (1, 5, Verdict::Fresh),
            (1, 6, Verdict::Fresh),
            (1, 6, Verdict::Duplicate { offset: 1 }),
            (1, 8, Verdict::SeqGap { expected: 7 }),
            (1, 4, Verdict::SeqGap { expected: 7 }),
            (2, 0, Verdict::Fresh),
            (1, 7, Verdict::StaleEpoch { current: 2 }),
            (2, 1, Verdict::Fresh),
        ];
        let mut offset = 0;
        for (epoch, seq, expected) in steps {
            let verdict = table.check("p", epoch, seq);
            assert_eq!(verdict, expected, "epoch {epoch} seq {seq}");
            if verdict == Verdict::Fresh {
                table.record("p", epoch, seq, offset);
                offset += 1;
            }
        }
        assert_eq!(table.get("p"), Some(&ProducerState { epoch: 2, last_seq: 1, last_offset: 3 }));
    }

    #[test]
    fn replaying_the_records_rebuilds_the_table() {
        let mut live = ProducerTable::default();
        let appends = [("a", 1, 0), ("b", 3, 10), ("a", 1, 1), ("b", 4, 0)];
        for (offset, &(id, epoch, seq)) in appends.iter().enumerate() {
            assert_eq!(live.check(id, epoch, seq), Verdict::Fresh);
            live.record(id, epoch, seq, offset as u64);
        }
        let mut replayed = ProducerTable::default();
        for (offset, &(id, epoch, seq)) in appends.iter().enumerate() {
            replayed.record(id, epoch, seq, offset as u64);
        }
        assert_eq!(replayed, live);
        assert_eq!(replayed.check("a", 1, 1), Verdict::Duplicate { offset: 2 });
        assert_eq!(replayed.check("b", 3, 11), Verdict::StaleEpoch { current: 4 });
    }

    #[test]
    fn the_table_has_a_bound() {
        let mut table = ProducerTable::default();
        for n in 0..PRODUCERS_PER_STREAM_MAX {
            table.record(&format!("p{n}"), 1, 0, n as u64);
        }
        assert_eq!(table.check("new", 1, 0), Verdict::TooManyProducers);
        assert_eq!(table.check("p0", 1, 1), Verdict::Fresh);
    }
}
