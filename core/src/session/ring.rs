//! When a batch may go into a ring of slot tables, what a failure fails, and how far the
//! consumer's confirmations let the ring trim: the Postgres WAL's ring admission.
//!
//! The group-commit machine hands out up to `inflight` batches at once and releases
//! acknowledgements in order; it cannot know the ring ([`crate::ring`]: generations of
//! `segment_bytes` in `segments` slot tables). Three rules of the ring sit on top of it,
//! and they are decided here, with no I/O, for every driver of a ring (the native
//! Postgres WAL, the simulator of Parts 13 and 14):
//!
//! - **Admission** ([`RingSchedule::admission`]): a batch goes in only when its slot
//!   holds no older kept generation (the trim offset has released it), and a batch that
//!   opens a generation goes in only once every earlier batch has committed. That drain
//!   is what lets recovery jump over a generation's slack: a row at a generation's start
//!   proves that nothing before it is missing. A batch that waits says why
//!   ([`RingWait`]): its slot, or the drain.
//! - **A failed batch fails every later one** ([`RingSchedule::record_failure`]): once a
//!   batch has failed, no later batch is inserted (its row would follow a hole); each is
//!   failed with the first failure instead.
//! - **Failures are reported in submission order**
//!   ([`RingSchedule::may_report_failure`]): a failed batch tells the machine only once
//!   every earlier batch has settled, so the machine sees failures in the order it
//!   submitted the batches, fails the tickets from the first failed batch on, and the
//!   writers learn their outcomes in order.
//!
//! And one for the consumer: a confirmed seq trims the ring up to the end of the last
//! batch it wholly covers ([`RingSchedule::confirmed`], [`RingSchedule::next_trim`]).
//!
//! A [`super::Session`] on a ring keeps the schedule: it records each batch it hands
//! out, answers [`super::Session::ring_admission`], holds back a failure until its turn,
//! and names the next trim ([`super::Session::poll_trim`]). The driver only inserts,
//! waits and truncates as told.

use std::collections::{BTreeSet, VecDeque};
use std::ops::Range;

use crate::group_commit::SyncError;
use crate::ring::RingGeometry;

/// Batches remembered for mapping confirmed seqs to offsets. Older ones are dropped: the
/// trim offset then lags a little, never runs ahead.
pub const CONFIRM_MAP_MAX: usize = 1 << 18;

/// Why a batch waits before its insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum RingWait {
    /// Its slot still holds an older generation: wait for the trim (the ring is full).
    Slot,
    /// It opens a generation and earlier batches are still in flight: wait for them.
    Drain,
}

/// What a batch waiting to be inserted must do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Insert it.
    Insert,
    /// Not yet, for this reason.
    Wait(RingWait),
    /// An earlier batch (or the trim) failed: fail this one with that error, uninserted.
    Fail(SyncError),
}

/// A trim to carry out: record trim offset `to` and truncate the slots of the
/// `released` generations, in one transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingTrim {
    pub to: u64,
    pub released: Range<u64>,
}

/// The next step of the trim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextTrim {
    /// The log has failed (a fence, a failed batch): the trim task ends.
    Stop,
    /// The trim offset is where the confirmations allow: wait for a change.
    Wait,
    /// Record trim offset `to` and truncate the slots of the `released` generations, in
    /// one transaction.
    Run { to: u64, released: Range<u64> },
}

/// The ring's bookkeeping for the batches in flight and the trim. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingSchedule {
    geometry: RingGeometry,
    /// Durable trim offset, with every slot it released truncated.
    trim_offset: u64,
    /// Where confirmations allow the trim offset to go next.
    trim_target: u64,
    /// Start offsets of the batches submitted and not yet settled.
    inflight: BTreeSet<u64>,
    /// The first failure: every later batch fails with it.
    failure: Option<SyncError>,
    /// (last seq, end offset) of each batch, oldest first, at most [`CONFIRM_MAP_MAX`].
    confirmations: VecDeque<(u64, u64)>,
}

impl RingSchedule {
    /// A schedule for a ring whose trim offset is `trim_offset`; `confirmations` are the
    /// (last seq, end offset) of the batches already in the log, oldest first.
    pub fn new(geometry: RingGeometry, trim_offset: u64, confirmations: VecDeque<(u64, u64)>) -> RingSchedule {
        let mut confirmations = confirmations;
        while confirmations.len() > CONFIRM_MAP_MAX {
            confirmations.pop_front();
        }
        RingSchedule {
            geometry,
            trim_offset,
            trim_target: trim_offset,
            inflight: BTreeSet::new(),
            failure: None,
            confirmations,
        }
    }

    pub fn geometry(&self) -> &RingGeometry {
        &self.geometry
    }

    pub fn trim_offset(&self) -> u64 {
        self.trim_offset
    }

    /// The first failure, once the log has failed.
    pub fn failure(&self) -> Option<SyncError> {
        self.failure
    }

    /// The batch `start..end` (its last record's seq `last_seq`, none for an empty batch)
    /// was handed to the backend.
    pub fn submitted(&mut self, start: u64, end: u64, last_seq: Option<u64>) {
        self.inflight.insert(start);
        if let Some(last_seq) = last_seq {
            if self.confirmations.len() >= CONFIRM_MAP_MAX {
                self.confirmations.pop_front();
            }
            self.confirmations.push_back((last_seq, end));
        }
    }

    /// What the batch at `start` of `generation` must do now (see [`Admission`]).
    pub fn admission(&self, generation: u64, start: u64) -> Admission {
        if let Some(error) = self.failure {
            return Admission::Fail(error);
        }
        if !self.geometry.may_write(generation, self.trim_offset) {
            return Admission::Wait(RingWait::Slot);
        }
        let opens_generation = start == self.geometry.generation_start(generation);
        let earlier_in_flight = self.inflight.range(..start).next().is_some();
        if opens_generation && earlier_in_flight {
            return Admission::Wait(RingWait::Drain);
        }
        Admission::Insert
    }

    /// A batch (or the trim) failed with `error`: every batch not yet inserted fails with
    /// the first failure, and the trim stops.
    pub fn record_failure(&mut self, error: SyncError) {
        self.failure.get_or_insert(error);
    }

    /// May the failed batch at `start` report its failure now? Only once every earlier
    /// batch has settled, so that the machine hears failures in submission order.
    pub fn may_report_failure(&self, start: u64) -> bool {
        self.inflight.range(..start).next().is_none()
    }

    /// The batch at `start` has reported its result.
    pub fn settled(&mut self, start: u64) {
        self.inflight.remove(&start);
    }

    /// The consumer confirmed every seq up to `seq`: the trim target moves to the end of
    /// the last batch wholly confirmed. True when it moved.
    pub fn confirmed(&mut self, seq: u64) -> bool {
        let mut target = self.trim_target;
        // Bounded by the map: each step removes one batch.
        while let Some(&(last_seq, end)) = self.confirmations.front() {
            if last_seq > seq {
                break;
            }
            target = target.max(end);
            self.confirmations.pop_front();
        }
        let moved = target > self.trim_target;
        self.trim_target = target;
        moved
    }

    /// What the trim task does next (see [`NextTrim`]).
    pub fn next_trim(&self) -> NextTrim {
        if self.failure.is_some() {
            NextTrim::Stop
        } else if self.trim_target <= self.trim_offset {
            NextTrim::Wait
        } else {
            NextTrim::Run { to: self.trim_target, released: self.geometry.released(self.trim_offset, self.trim_target) }
        }
    }

    /// The trim transaction to `to` committed: the slots it released are free.
    pub fn trimmed(&mut self, to: u64) {
        self.trim_offset = self.trim_offset.max(to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3 slots of 100 bytes.
    fn ring() -> RingGeometry {
        RingGeometry { segments: 3, segment_bytes: 100 }
    }

    #[test]
    fn a_batch_opening_a_generation_waits_for_every_earlier_one() {
        let mut schedule = RingSchedule::new(ring(), 0, VecDeque::new());
        schedule.submitted(0, 40, Some(1));
        schedule.submitted(40, 90, Some(2));
        schedule.submitted(100, 150, Some(3));
        assert_eq!(schedule.admission(0, 40), Admission::Insert, "inside a generation: no wait");
        assert_eq!(schedule.admission(1, 100), Admission::Wait(RingWait::Drain));
        schedule.settled(0);
        assert_eq!(schedule.admission(1, 100), Admission::Wait(RingWait::Drain), "one earlier batch is still in flight");
        schedule.settled(40);
        assert_eq!(schedule.admission(1, 100), Admission::Insert);
    }

    #[test]
    fn a_full_ring_waits_for_the_trim_to_release_the_slot() {
        let mut schedule = RingSchedule::new(ring(), 0, VecDeque::new());
        schedule.submitted(300, 320, Some(9));
        assert_eq!(schedule.admission(3, 300), Admission::Wait(RingWait::Slot), "generation 3 wants generation 0's slot");
        schedule.trimmed(100);
        assert_eq!(schedule.admission(3, 300), Admission::Wait(RingWait::Slot), "the trim offset must pass generation 0's end");
        schedule.trimmed(101);
        assert_eq!(schedule.admission(3, 300), Admission::Insert);
    }

    #[test]
    fn a_failed_batch_fails_every_later_one_with_the_first_error() {
        let mut schedule = RingSchedule::new(ring(), 0, VecDeque::new());
        for (start, seq) in [(0, 1), (10, 2), (20, 3)] {
            schedule.submitted(start, start + 10, Some(seq));
        }
        schedule.record_failure(SyncError::Mismatch);
        schedule.record_failure(SyncError::Fenced);
        assert_eq!(schedule.failure(), Some(SyncError::Mismatch));
        assert_eq!(schedule.admission(0, 20), Admission::Fail(SyncError::Mismatch));
        assert_eq!(schedule.next_trim(), NextTrim::Stop);
    }

    #[test]
    fn a_failure_is_reported_only_after_every_earlier_batch_settled() {
        let mut schedule = RingSchedule::new(ring(), 0, VecDeque::new());
        for (start, seq) in [(0, 1), (10, 2), (20, 3)] {
            schedule.submitted(start, start + 10, Some(seq));
        }
        assert!(schedule.may_report_failure(0), "the oldest batch reports at once");
        assert!(!schedule.may_report_failure(20));
        schedule.settled(0);
        assert!(!schedule.may_report_failure(20));
        schedule.settled(10);
        assert!(schedule.may_report_failure(20));
    }

    #[test]
    fn confirmations_trim_to_the_end_of_the_last_whole_batch() {
        let mut schedule = RingSchedule::new(ring(), 0, VecDeque::from([(3, 40)]));
        schedule.submitted(40, 90, Some(5));
        schedule.submitted(100, 120, Some(8));
        assert_eq!(schedule.next_trim(), NextTrim::Wait);
        assert!(!schedule.confirmed(2), "no batch is wholly confirmed");
        assert!(schedule.confirmed(6));
        assert_eq!(schedule.next_trim(), NextTrim::Run { to: 90, released: 0..0 });
        schedule.trimmed(90);
        assert!(schedule.confirmed(8));
        assert_eq!(schedule.next_trim(), NextTrim::Run { to: 120, released: 0..1 });
        schedule.trimmed(120);
        assert_eq!(schedule.next_trim(), NextTrim::Wait);
        assert!(!schedule.confirmed(8), "confirming again moves nothing");
    }

    #[test]
    fn the_confirmation_map_keeps_only_the_newest_batches() {
        let mut schedule = RingSchedule::new(ring(), 0, VecDeque::new());
        for n in 0..CONFIRM_MAP_MAX as u64 + 1 {
            schedule.submitted(n, n + 1, Some(n + 1));
            schedule.settled(n);
        }
        assert!(!schedule.confirmed(1), "the oldest batch was dropped: its confirmation moves nothing");
        assert!(schedule.confirmed(2), "seq 2's batch still maps");
        assert_eq!(schedule.next_trim(), NextTrim::Run { to: 2, released: 0..0 });
    }
}
