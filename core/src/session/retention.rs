//! Which segments a log may remove: the gates a segment passes before it goes.
//!
//! A log is kept for whoever still needs its records. The *consumer* (the engine that
//! applies the log: the tiny store's flushes, `walab serve`'s upload, a test's
//! `confirm_consumer`) confirms the seq through which everything is applied elsewhere;
//! each registered *reader* (a CDC client, a replica, a backup shipper) confirms the seq
//! through which it has read. A whole segment may be removed only once every record in
//! it is at or below the consumer's position *and* every reader's: the two gates of
//! Part 8. A stuck reader pins every segment from the one holding its position on, which
//! is the page's lesson: the disk fills behind a slow CDC client.
//!
//! Two more rules keep what must stay:
//!
//! - Only a *closed* segment goes: one no record will be appended to again (every
//!   segment before the current one, and the current one once [`super::rollover`]
//!   says it is full). Segments go oldest first, so what is kept is always a run that
//!   ends at the head.
//! - Where the log itself is the only memory of the next seq ([`NextSeq::InLog`]: the
//!   file WAL, whose recovery resumes after the last record it finds), the newest
//!   segment holding records stays, whatever is confirmed; otherwise a log trimmed to
//!   nothing would hand out seq 1 again. A store that records its position elsewhere
//!   ([`NextSeq::Elsewhere`]: the tiny store's manifest names the seq every flush covered)
//!   may remove every segment.
//!
//! A ring of slot tables is trimmed by offset rather than by segment; its rule is
//! [`super::ring`]'s.

use std::collections::{BTreeMap, VecDeque};

/// Where a reopened log learns its next seq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextSeq {
    /// From its last record: the newest segment with records is never removed.
    InLog,
    /// From something else (a manifest): every segment may be removed.
    Elsewhere,
}

/// A registered reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReaderId(pub u64);

/// The two gates of one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gates {
    /// Every record in it is at or below the consumer's position (the tiny store:
    /// flushed into a file the durable manifest lists).
    pub consumer: bool,
    /// Every registered reader has confirmed its last record.
    pub readers: bool,
}

impl Gates {
    /// A segment whose last record is `last_seq` (`None`: it holds none), with the
    /// consumer at `consumer` and the readers at `readers`.
    pub fn of(last_seq: Option<u64>, consumer: u64, mut readers: impl Iterator<Item = u64>) -> Gates {
        match last_seq {
            None => Gates { consumer: true, readers: true },
            Some(last) => Gates { consumer: last <= consumer, readers: readers.all(|seq| seq >= last) },
        }
    }

    pub fn passed(&self) -> bool {
        self.consumer && self.readers
    }
}

/// A segment the log still keeps, and the seq of its last record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptSegment {
    pub segment: u64,
    /// `None` while it holds no record. Under a record-count rule, the last record it
    /// will hold, from its first record on.
    pub last_seq: Option<u64>,
}

/// The kept segments and the positions that gate them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retention {
    next_seq: NextSeq,
    /// Oldest first, each number above the one before.
    kept: VecDeque<KeptSegment>,
    consumer: u64,
    readers: BTreeMap<ReaderId, (String, u64)>,
    next_reader: u64,
}

impl Retention {
    /// A log keeping `kept` (oldest first), as its storage found them.
    pub fn new(next_seq: NextSeq, kept: impl IntoIterator<Item = KeptSegment>) -> Retention {
        let mut kept: VecDeque<KeptSegment> = kept.into_iter().collect();
        crate::sort::sort_by_key(kept.make_contiguous(), |segment| segment.segment);
        Retention { next_seq, kept, consumer: 0, readers: BTreeMap::new(), next_reader: 1 }
    }

    /// A record with `seq` went to `segment`; `planned_last_seq` is the last seq the
    /// segment will hold, where the rule fixes it.
    pub fn appended(&mut self, segment: u64, seq: u64, planned_last_seq: Option<u64>) {
        match self.kept.back_mut() {
            Some(back) if back.segment == segment => {
                if planned_last_seq.is_none() || back.last_seq.is_none() {
                    back.last_seq = Some(planned_last_seq.unwrap_or(seq));
                }
            }
            _ => self.kept.push_back(KeptSegment { segment, last_seq: Some(planned_last_seq.unwrap_or(seq)) }),
        }
    }

    /// Appending resumes in `segment`: it is kept even while empty.
    pub fn keep(&mut self, segment: u64) {
        if self.kept.back().is_none_or(|back| back.segment < segment) {
            self.kept.push_back(KeptSegment { segment, last_seq: None });
        }
    }

    /// The consumer has applied everything through `seq`; true when its position moved.
    pub fn confirm_consumer(&mut self, seq: u64) -> bool {
        let moved = seq > self.consumer;
        self.consumer = self.consumer.max(seq);
        moved
    }

    /// A new reader positioned after `seq`.
    pub fn register_reader(&mut self, name: &str, seq: u64) -> ReaderId {
        let id = ReaderId(self.next_reader);
        self.next_reader += 1;
        self.readers.insert(id, (name.to_string(), seq));
        id
    }

    /// A reader has read everything through `seq`; its name when its position moved.
    pub fn confirm_reader(&mut self, reader: ReaderId, seq: u64) -> Option<&str> {
        let (name, position) = self.readers.get_mut(&reader)?;
        let moved = seq > *position;
        *position = (*position).max(seq);
        moved.then_some(name.as_str())
    }

    /// The position every gate has passed: the lowest of the consumer's and the readers'.
    pub fn confirmed(&self) -> u64 {
        self.readers.values().map(|(_, seq)| *seq).fold(self.consumer, u64::min)
    }

    /// Every kept segment with its gates, oldest first.
    pub fn gates(&self) -> impl Iterator<Item = (u64, Gates)> + '_ {
        self.kept.iter().map(|kept| {
            (kept.segment, Gates::of(kept.last_seq, self.consumer, self.readers.values().map(|(_, seq)| *seq)))
        })
    }

    /// The segments that may be removed now, oldest first, given the segment being
    /// appended to and whether it is closed.
    pub fn removable(&self, current: u64, current_closed: bool) -> Vec<u64> {
        let confirmed = self.confirmed();
        if confirmed == 0 {
            return Vec::new();
        }
        let newest_with_records = self.kept.iter().rev().find(|kept| kept.last_seq.is_some()).map(|kept| kept.segment);
        self.kept
            .iter()
            .take_while(|kept| kept.segment < current || (kept.segment == current && current_closed))
            .take_while(|kept| self.next_seq == NextSeq::Elsewhere || newest_with_records.is_some_and(|newest| kept.segment < newest))
            .take_while(|kept| kept.last_seq.is_none_or(|last| last <= confirmed))
            .map(|kept| kept.segment)
            .collect()
    }

    /// These segments (the oldest kept) were removed.
    pub fn removed(&mut self, segments: &[u64]) {
        self.kept.retain(|kept| !segments.contains(&kept.segment));
    }

    /// The segments kept, oldest first.
    pub fn kept(&self) -> impl Iterator<Item = &KeptSegment> {
        self.kept.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(segments: &[(u64, Option<u64>)]) -> Vec<KeptSegment> {
        segments.iter().map(|&(segment, last_seq)| KeptSegment { segment, last_seq }).collect()
    }

    #[test]
    fn a_segment_goes_once_the_consumer_and_every_reader_passed_its_last_record() {
        let mut retention = Retention::new(NextSeq::InLog, kept(&[(1, Some(4)), (2, Some(8)), (3, Some(12))]));
        assert_eq!(retention.removable(3, false), Vec::<u64>::new(), "nothing confirmed");
        retention.confirm_consumer(9);
        assert_eq!(retention.removable(3, false), [1, 2]);
        let reader = retention.register_reader("cdc", 5);
        assert_eq!(retention.removable(3, false), [1], "the reader pins segment 2");
        assert_eq!(retention.confirm_reader(reader, 8), Some("cdc"));
        assert_eq!(retention.confirm_reader(reader, 7), None, "a position never goes back");
        assert_eq!(retention.removable(3, false), [1, 2]);
        retention.removed(&[1, 2]);
        assert_eq!(retention.kept().map(|kept| kept.segment).collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn a_log_that_remembers_its_next_seq_only_in_itself_keeps_its_newest_records() {
        let segments = kept(&[(1, Some(4)), (2, Some(8)), (3, None)]);
        let mut in_log = Retention::new(NextSeq::InLog, segments.clone());
        in_log.confirm_consumer(8);
        assert_eq!(in_log.removable(3, false), [1], "segment 2 holds the last seq");
        let mut elsewhere = Retention::new(NextSeq::Elsewhere, segments);
        elsewhere.confirm_consumer(8);
        assert_eq!(elsewhere.removable(3, false), [1, 2], "the empty current segment is still open");
        assert_eq!(elsewhere.removable(3, true), [1, 2, 3]);
    }

    #[test]
    fn a_planned_last_seq_gates_a_segment_that_is_still_filling() {
        let mut retention = Retention::new(NextSeq::Elsewhere, []);
        retention.appended(1, 1, Some(4));
        retention.appended(1, 2, Some(4));
        retention.register_reader("cdc", 2);
        retention.confirm_consumer(2);
        assert_eq!(retention.gates().collect::<Vec<_>>(), [(1, Gates { consumer: false, readers: false })]);
    }
}
