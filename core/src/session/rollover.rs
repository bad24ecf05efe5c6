//! Which segment a record goes to: where a log is cut.
//!
//! Every log here is a run of segments: a file WAL's segment files, an object store's
//! trim units, a Postgres ring's generations, the tiny store's `wal-k`. A segment is
//! what is removed whole once every record in it is confirmed ([`super::retention`]),
//! and a batch never crosses one (the machine closes its batch when a record names the
//! next segment), so each persist touches one file, one unit, one slot table.
//!
//! Two rules cut a log:
//!
//! - [`SegmentRule::Bytes`]: a segment holds at most so many bytes of records, and a
//!   record that would pass the end goes to the next one, from its first byte. That is
//!   the file WAL (its files are created zero-filled at that size), the object store's
//!   trim units and the ring's generations. A record larger than a segment can never be
//!   placed, and is refused by name.
//! - [`SegmentRule::Records`]: a segment holds so many records. The tiny store starts a
//!   new log segment for every MemTable, as LevelDB starts a new log file at every
//!   MemTable switch: `wal-k` holds writes `4k-3 ..= 4k`, whatever their sizes. Such a
//!   segment's last record is known as soon as its first is placed, which is what lets
//!   the page draw the deletion gates of a segment that is still filling.
//!
//! The rule is decided here and nowhere else: the native driver, the tiny store and the
//! remote simulator all ask [`Rollover::place`].

use core::fmt;

/// How a log is cut into segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentRule {
    /// At most `segment_bytes` bytes of records per segment (`u64::MAX`: one segment).
    Bytes { segment_bytes: u64 },
    /// Exactly `records` records per segment.
    Records { records: u64 },
}

impl SegmentRule {
    /// A log that is never cut (a storage without segments).
    pub const ONE_SEGMENT: SegmentRule = SegmentRule::Bytes { segment_bytes: u64::MAX };
}

/// A record no segment can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LargerThanSegment {
    pub record_bytes: u64,
    pub segment_bytes: u64,
}

impl fmt::Display for LargerThanSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "record of {} bytes exceeds the segment size {}", self.record_bytes, self.segment_bytes)
    }
}

impl std::error::Error for LargerThanSegment {}

/// Where the next record goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub segment: u64,
    /// Whether the record opens its segment (the segment's first record).
    pub opens_segment: bool,
}

/// The segment being appended to and how full it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rollover {
    rule: SegmentRule,
    segment: u64,
    segment_bytes: u64,
    segment_records: u64,
}

impl Rollover {
    /// Appending continues in `segment`, which already holds `segment_bytes` bytes in
    /// `segment_records` records.
    pub fn new(rule: SegmentRule, segment: u64, segment_bytes: u64, segment_records: u64) -> Rollover {
        Rollover { rule, segment, segment_bytes, segment_records }
    }

    pub fn rule(&self) -> SegmentRule {
        self.rule
    }

    /// The segment the last record went to (or appending resumes in).
    pub fn segment(&self) -> u64 {
        self.segment
    }

    /// The segment the next record of `record_bytes` goes to.
    pub fn place(&self, record_bytes: u64) -> Result<Placement, LargerThanSegment> {
        let next = match self.rule {
            SegmentRule::Bytes { segment_bytes } => {
                if record_bytes > segment_bytes {
                    return Err(LargerThanSegment { record_bytes, segment_bytes });
                }
                self.segment_bytes + record_bytes > segment_bytes
            }
            SegmentRule::Records { records } => self.segment_records >= records,
        };
        Ok(match next {
            true => Placement { segment: self.segment + 1, opens_segment: true },
            false => Placement { segment: self.segment, opens_segment: self.segment_records == 0 },
        })
    }

    /// The record was taken where [`Rollover::place`] said.
    pub fn placed(&mut self, placement: Placement, record_bytes: u64) {
        if placement.segment != self.segment {
            self.segment = placement.segment;
            self.segment_bytes = 0;
            self.segment_records = 0;
        }
        self.segment_bytes += record_bytes;
        self.segment_records += 1;
    }

    /// Whether no record will go to the current segment again: under
    /// [`SegmentRule::Records`] once it holds its count (under [`SegmentRule::Bytes`] a
    /// segment closes only when the next record does not fit, which is not known before).
    pub fn current_is_closed(&self) -> bool {
        matches!(self.rule, SegmentRule::Records { records } if self.segment_records >= records)
    }

    /// Under [`SegmentRule::Records`], the seq of the last record a segment whose first
    /// record is `first_seq` will hold; `None` under [`SegmentRule::Bytes`].
    pub fn planned_last_seq(&self, first_seq: u64) -> Option<u64> {
        match self.rule {
            SegmentRule::Records { records } => Some(first_seq + records.max(1) - 1),
            SegmentRule::Bytes { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_that_would_pass_the_end_opens_the_next_segment() {
        let mut rollover = Rollover::new(SegmentRule::Bytes { segment_bytes: 100 }, 1, 0, 0);
        let first = rollover.place(60).unwrap();
        assert_eq!(first, Placement { segment: 1, opens_segment: true });
        rollover.placed(first, 60);
        assert_eq!(rollover.place(40).unwrap(), Placement { segment: 1, opens_segment: false }, "exactly full still fits");
        assert_eq!(rollover.place(41).unwrap(), Placement { segment: 2, opens_segment: true });
        assert_eq!(rollover.place(101), Err(LargerThanSegment { record_bytes: 101, segment_bytes: 100 }));
        assert!(!rollover.current_is_closed());
    }

    #[test]
    fn the_tiny_store_starts_a_segment_every_fourth_record() {
        let mut rollover = Rollover::new(SegmentRule::Records { records: 4 }, 1, 0, 0);
        let segments: Vec<u64> = (0..9)
            .map(|_| {
                let placement = rollover.place(30).unwrap();
                rollover.placed(placement, 30);
                placement.segment
            })
            .collect();
        assert_eq!(segments, [1, 1, 1, 1, 2, 2, 2, 2, 3]);
        assert_eq!(rollover.planned_last_seq(9), Some(12));
        assert!(!rollover.current_is_closed());
    }
}
