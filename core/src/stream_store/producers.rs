//! Idempotent producers: the epoch and seq check every request of a producer passes.
//!
//! A producer is a client that wants each of its requests in the stream exactly once even
//! though it retries: a request whose answer was lost (a timeout, a restarted server) is
//! sent again with the same `Producer-Seq`. One seq names one request, however many
//! messages it carries, and a request is one WAL record, so the whole request is in the
//! stream once or not at all. Per stream, the table remembers each producer's current
//! epoch and the last seq it appended:
//!
//! - a producer's first request must carry seq 0 (at any epoch);
//! - a higher epoch starts a new session at seq 0 and fences the older one, whose
//!   requests are refused from then on with the current epoch named (`403`);
//! - at the current epoch the next seq is the last plus 1; a seq at or below the last is
//!   a duplicate (`204`, nothing appended); a seq past the next is a gap (`409`, naming
//!   the expected and the received seq).
//!
//! The table changes only when a request is submitted, under the stream's lock, so its
//! state is the state of the submitted records in index order; replaying the WAL's
//! records through [`ProducerTable::record`] rebuilds it exactly, which is why a retry
//! is still recognised after a restart or a power cut. Forks start with an empty table.

use std::collections::BTreeMap;

/// The most producers one stream remembers; a new producer past it is refused.
pub const PRODUCERS_PER_STREAM_MAX: usize = 10_000;

/// What the table knows about one producer on one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProducerState {
    pub epoch: u64,
    pub last_seq: u64,
}

/// The answer to one request's epoch and seq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A new request: append it and [`ProducerTable::record`] it.
    Fresh,
    /// At or below the last seq: appended already; the last seq is `last_seq`.
    Duplicate { last_seq: u64 },
    /// A fenced session: the producer is at a higher epoch now.
    StaleEpoch { current: u64 },
    /// A new epoch (or a new producer) must start at seq 0.
    NewEpochNotAtZero { seq: u64 },
    /// Not the next seq.
    SeqGap { expected: u64, received: u64 },
    /// A new producer on a stream that already remembers [`PRODUCERS_PER_STREAM_MAX`].
    TooManyProducers,
}

/// One stream's producers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerTable {
    producers: BTreeMap<String, ProducerState>,
}

impl ProducerTable {
    /// Checks a request of `producer` at `epoch` with `seq`; changes nothing.
    pub fn check(&self, producer: &str, epoch: u64, seq: u64) -> Verdict {
        let Some(state) = self.producers.get(producer) else {
            if self.producers.len() >= PRODUCERS_PER_STREAM_MAX {
                return Verdict::TooManyProducers;
            }
            return match seq {
                0 => Verdict::Fresh,
                seq => Verdict::SeqGap { expected: 0, received: seq },
            };
        };
        if epoch < state.epoch {
            return Verdict::StaleEpoch { current: state.epoch };
        }
        if epoch > state.epoch {
            return match seq {
                0 => Verdict::Fresh,
                seq => Verdict::NewEpochNotAtZero { seq },
            };
        }
        if seq <= state.last_seq {
            return Verdict::Duplicate { last_seq: state.last_seq };
        }
        match state.last_seq.checked_add(1) {
            Some(next) if seq == next => Verdict::Fresh,
            Some(next) => Verdict::SeqGap { expected: next, received: seq },
            // Unreachable: a seq above the last exists only if the last has a successor.
            None => Verdict::Duplicate { last_seq: state.last_seq },
        }
    }

    /// Records a request that was submitted (after [`Verdict::Fresh`], or while replaying
    /// the WAL in index order).
    pub fn record(&mut self, producer: &str, epoch: u64, seq: u64) {
        match self.producers.get_mut(producer) {
            Some(known) => {
                assert!(epoch > known.epoch || (epoch == known.epoch && seq > known.last_seq), "a producer only goes forward");
                *known = ProducerState { epoch, last_seq: seq };
            }
            None => {
                self.producers.insert(producer.to_string(), ProducerState { epoch, last_seq: seq });
            }
        }
    }

    /// Sets a producer's state as a commit or a snapshot recorded it.
    pub fn restore(&mut self, producer: &str, state: ProducerState) {
        self.producers.insert(producer.to_string(), state);
    }

    pub fn get(&self, producer: &str) -> Option<&ProducerState> {
        self.producers.get(producer)
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Every producer, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ProducerState)> {
        self.producers.iter().map(|(id, state)| (id.as_str(), state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_s_validation_table() {
        let mut table = ProducerTable::default();
        assert_eq!(table.check("p", 0, 0), Verdict::Fresh);
        assert_eq!(table.check("p", 3, 1), Verdict::SeqGap { expected: 0, received: 1 });
        table.record("p", 0, 0);
        table.record("p", 0, 1);
        table.record("p", 0, 2);
        assert_eq!(table.check("p", 0, 3), Verdict::Fresh);
        assert_eq!(table.check("p", 0, 2), Verdict::Duplicate { last_seq: 2 });
        assert_eq!(table.check("p", 0, 0), Verdict::Duplicate { last_seq: 2 });
        assert_eq!(table.check("p", 0, 5), Verdict::SeqGap { expected: 3, received: 5 });
        assert_eq!(table.check("p", 1, 5), Verdict::NewEpochNotAtZero { seq: 5 });
        assert_eq!(table.check("p", 1, 0), Verdict::Fresh);
        table.record("p", 1, 0);
        assert_eq!(table.check("p", 0, 3), Verdict::StaleEpoch { current: 1 });
        assert_eq!(table.get("p"), Some(&ProducerState { epoch: 1, last_seq: 0 }));
        // Producers are independent.
        assert_eq!(table.check("q", 0, 0), Verdict::Fresh);
        assert_eq!(table.check("p", 1, u64::MAX), Verdict::SeqGap { expected: 1, received: u64::MAX });
    }

    #[test]
    fn a_full_table_refuses_a_new_producer_but_not_a_known_one() {
        let mut table = ProducerTable::default();
        for n in 0..PRODUCERS_PER_STREAM_MAX {
            table.record(&format!("p{n}"), 0, 0);
        }
        assert_eq!(table.check("new", 0, 0), Verdict::TooManyProducers);
        assert_eq!(table.check("p7", 0, 1), Verdict::Fresh);
    }
}
