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
//! A batch (seqs `s..s+n`, appended under the stream's lock at consecutive offsets) passes
//! the same check as a whole ([`ProducerTable::check_batch`]): fresh if `s` is the next
//! seq; a duplicate if it ends at the last seq and starts within the producer's current
//! *run* (a retry of the last batch, or of its tail); a gap otherwise, also when it only
//! partly overlaps what is appended (the error names the next seq).
//!
//! The run is the producer's latest stretch of records at consecutive seqs *and*
//! consecutive offsets of one epoch: within it, seq `q` is at offset
//! `last_offset - (last_seq - q)`. A batch's records always form one (or extend the one
//! before it), so the last batch is always inside the run; a record of anyone else in
//! between starts a new run. The run is one more number and is decided by the records
//! alone, in offset order, so replaying the WAL (or a commit's snapshot followed by the
//! WAL) rebuilds it exactly, without knowing where batches began.
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
    /// The first seq of the current run (see the module's notes): seqs
    /// `first_seq..=last_seq` are at offsets ending with `last_offset`, one apart.
    pub first_seq: u64,
    pub last_seq: u64,
    /// The offset the last seq was given.
    pub last_offset: u64,
}

impl ProducerState {
    /// The state after a record at `offset` with `epoch` and `seq`, from the state before
    /// it (`None`: the producer's first record): the run goes on when the record follows
    /// the last one in seq and in offset at the same epoch, and starts anew otherwise.
    pub fn after(known: Option<&ProducerState>, epoch: u64, seq: u64, offset: u64) -> ProducerState {
        let first_seq = match known {
            Some(known) if known.continues_into(epoch, seq, offset) => known.first_seq,
            _ => seq,
        };
        ProducerState { epoch, first_seq, last_seq: seq, last_offset: offset }
    }

    /// Whether a record at `offset` with `epoch` and `seq` extends this run.
    fn continues_into(&self, epoch: u64, seq: u64, offset: u64) -> bool {
        epoch == self.epoch && self.last_seq.checked_add(1) == Some(seq) && self.last_offset.checked_add(1) == Some(offset)
    }

    /// The offset of the run's first seq.
    pub fn first_offset(&self) -> u64 {
        self.last_offset - (self.last_seq - self.first_seq)
    }
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
        self.check_batch(producer, epoch, seq, 1)
    }

    /// Checks a batch of `count` records (at least 1) of `producer` at `epoch` with seqs
    /// `seq..seq + count`; changes nothing. A duplicate names the offset its first seq got
    /// (the others follow it). The caller makes sure `seq + count - 1` fits a `u64`.
    pub fn check_batch(&self, producer: &str, epoch: u64, seq: u64, count: u64) -> Verdict {
        assert!(count >= 1, "a batch holds a record");
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
        let last = seq.saturating_add(count - 1);
        if state.first_seq <= seq && last == state.last_seq {
            return Verdict::Duplicate { offset: state.first_offset() + (seq - state.first_seq) };
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
        match self.producers.get_mut(producer) {
            Some(known) => {
                assert!(known.last_offset < offset, "a producer's offsets only grow");
                *known = ProducerState::after(Some(known), epoch, seq, offset);
            }
            None => {
                self.producers.insert(producer.to_string(), ProducerState::after(None, epoch, seq, offset));
            }
        }
    }

    /// Takes a producer's state from a commit's snapshot (its run as seen within the
    /// committed block): a run that starts right after the known state's last record
    /// joins the known run, as [`ProducerTable::record`] would have joined them.
    pub fn restore(&mut self, producer: &str, state: ProducerState) {
        match self.producers.get_mut(producer) {
            Some(known) => {
                assert!(known.last_offset < state.last_offset, "a producer's offsets only grow");
                let first_seq = match known.continues_into(state.epoch, state.first_seq, state.first_offset()) {
                    true => known.first_seq,
                    false => state.first_seq,
                };
                *known = ProducerState { first_seq, ..state };
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
        assert_eq!(table.get("p"), Some(&ProducerState { epoch: 2, first_seq: 0, last_seq: 1, last_offset: 3 }));
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
    fn a_batch_is_fresh_a_duplicate_or_a_gap_as_a_whole() {
        let mut table = ProducerTable::default();
        // Seqs 10..=13 at offsets 0..=3 (one batch), then 14..=15 at 4..=5 (another): one run.
        for (offset, seq) in (10..16).enumerate() {
            table.record("p", 1, seq, offset as u64);
        }
        assert_eq!(table.get("p"), Some(&ProducerState { epoch: 1, first_seq: 10, last_seq: 15, last_offset: 5 }));
        let verdicts = [
            ((16, 4), Verdict::Fresh),
            // The last batch again, the whole run, the tail of either.
            ((14, 2), Verdict::Duplicate { offset: 4 }),
            ((10, 6), Verdict::Duplicate { offset: 0 }),
            ((15, 1), Verdict::Duplicate { offset: 5 }),
            // Seqs appended but not ending at the last one: not a retry of the last batch.
            ((10, 4), Verdict::SeqGap { expected: 16 }),
            ((12, 1), Verdict::SeqGap { expected: 16 }),
            // Overlapping partly: some seqs are in, some are not.
            ((14, 3), Verdict::SeqGap { expected: 16 }),
            // Leaving a gap, or reaching below the run.
            ((17, 2), Verdict::SeqGap { expected: 16 }),
            ((9, 2), Verdict::SeqGap { expected: 16 }),
        ];
        for ((seq, count), expected) in verdicts {
            assert_eq!(table.check_batch("p", 1, seq, count), expected, "seq {seq} count {count}");
        }
        assert_eq!(table.check_batch("p", 0, 16, 2), Verdict::StaleEpoch { current: 1 });
        assert_eq!(table.check_batch("p", 2, 0, 5), Verdict::Fresh);
    }

    #[test]
    fn anyone_else_in_between_starts_a_new_run() {
        let mut table = ProducerTable::default();
        table.record("p", 1, 0, 0);
        table.record("p", 1, 1, 1);
        table.record("q", 1, 0, 2);
        table.record("p", 1, 2, 3);
        table.record("p", 1, 3, 4);
        assert_eq!(table.check_batch("p", 1, 2, 2), Verdict::Duplicate { offset: 3 });
        assert_eq!(table.check_batch("p", 1, 0, 2), Verdict::SeqGap { expected: 4 });
        // A new epoch starts a new run even at the next offset and seq.
        table.record("p", 2, 4, 5);
        assert_eq!(table.get("p").map(|p| p.first_seq), Some(4));
        // A snapshot taken within a later block joins the run it continues.
        table.restore("p", ProducerState { epoch: 2, first_seq: 5, last_seq: 6, last_offset: 7 });
        assert_eq!(table.get("p"), Some(&ProducerState { epoch: 2, first_seq: 4, last_seq: 6, last_offset: 7 }));
        table.restore("p", ProducerState { epoch: 2, first_seq: 7, last_seq: 7, last_offset: 9 });
        assert_eq!(table.get("p").map(|p| p.first_seq), Some(7));
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
