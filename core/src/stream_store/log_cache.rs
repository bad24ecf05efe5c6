//! One stream's log cache: its records above the committed end, what is assigned and
//! what is durable.
//!
//! A record enters the cache when it is submitted to the WAL, with its place already
//! fixed, and becomes readable only once the WAL has acknowledged it. Three positions
//! describe a stream's cache, and they only grow:
//!
//! ```text
//!  start            durable              end
//!    |  readable       |  in the WAL,      |  next position to assign
//!    |  records        |  not acknowledged |
//! ```
//!
//! Acknowledgements come in WAL order, and one stream's records enter the WAL in index
//! order (both under the stream's lock), so when a record is acknowledged every record
//! before it is durable too: [`StreamLog::mark_durable`] takes the largest position it
//! has been told, whatever order the acknowledged requests' tasks run in.
//!
//! A close-only request takes no index: it sits after the last record as
//! [`StreamLog::close`] until it is committed with the records before it.

use std::collections::VecDeque;
use std::sync::Arc;

use super::offset::Offset;
use super::record::ProducerStamp;

/// One record in the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedRecord {
    /// Its position: its index and the bytes before it.
    pub start: Offset,
    pub body: Arc<[u8]>,
    pub producer: Option<ProducerStamp>,
    pub stream_seq: Option<String>,
    /// The stream closes after this record.
    pub closes: bool,
    /// The WAL seq of the record's first fragment (what trimming the WAL is counted in).
    pub wal_seq: u64,
}

impl CachedRecord {
    /// The position after it.
    pub fn end(&self) -> Offset {
        Offset { index: self.start.index + 1, bytes: self.start.bytes + self.body.len() as u64 }
    }
}

/// A close-only request after the last cached record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedClose {
    pub producer: Option<ProducerStamp>,
    pub wal_seq: u64,
    pub durable: bool,
}

/// Why a read was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// `from` is past the durable end.
    PastEnd { from: Offset, durable: Offset },
    /// `from` is below what the cache holds (older records are elsewhere).
    BelowCache { from: Offset, start: Offset },
    /// `from`'s index is a record's, but its bytes are not where that record starts.
    NotABoundary { from: Offset },
}

impl core::fmt::Display for ReadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReadError::PastEnd { from, durable } => write!(f, "offset {from} is past the stream's end {durable}"),
            ReadError::BelowCache { from, start } => write!(f, "offset {from} is below the log cache's start {start}"),
            ReadError::NotABoundary { from } => write!(f, "offset {from} is not where a record starts"),
        }
    }
}

/// One stream's cached records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamLog {
    start: Offset,
    records: VecDeque<CachedRecord>,
    durable: Offset,
    close: Option<CachedClose>,
}

impl StreamLog {
    /// An empty cache whose first record will be at `start`, all before it durable.
    pub fn starting_at(start: Offset) -> StreamLog {
        StreamLog { start, records: VecDeque::new(), durable: start, close: None }
    }

    /// The position of the oldest cached record.
    pub fn start(&self) -> Offset {
        self.start
    }

    /// The next position to assign.
    pub fn end(&self) -> Offset {
        self.records.back().map_or(self.start, CachedRecord::end)
    }

    /// Everything before is durable.
    pub fn durable(&self) -> Offset {
        self.durable
    }

    /// Records cached.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.close.is_none()
    }

    /// Adds the next record; its position must be [`StreamLog::end`].
    pub fn push(&mut self, record: CachedRecord) {
        assert_eq!(record.start, self.end(), "records have no gaps");
        assert!(self.close.is_none(), "nothing follows a close");
        self.records.push_back(record);
    }

    /// Adds a close-only request after the last record.
    pub fn push_close(&mut self, close: CachedClose) {
        assert!(self.close.is_none(), "a stream closes once");
        self.close = Some(close);
    }

    /// The close-only request after the last record, if one was submitted.
    pub fn close(&self) -> Option<&CachedClose> {
        self.close.as_ref()
    }

    /// The WAL acknowledged everything up to `through` (a record's end).
    pub fn mark_durable(&mut self, through: Offset) {
        assert!(through <= self.end(), "only submitted records become durable");
        self.durable = self.durable.max(through);
    }

    /// The WAL acknowledged the close-only request.
    pub fn mark_close_durable(&mut self) {
        let close = self.close.as_mut().expect("a close was submitted");
        close.durable = true;
    }

    /// The WAL seq of the oldest cached request.
    pub fn first_wal_seq(&self) -> Option<u64> {
        self.records.front().map(|record| record.wal_seq).or(self.close.as_ref().map(|close| close.wal_seq))
    }

    /// Forgets the records before `end` (committed elsewhere), and the close-only request
    /// too when `with_close`; returns how many records they were and the body bytes they
    /// held.
    pub fn drop_below(&mut self, end: Offset, with_close: bool) -> (usize, usize) {
        assert!(end <= self.durable, "only durable records are dropped");
        let mut bytes = 0;
        let mut records = 0;
        while self.start < end {
            let record = self.records.pop_front().expect("records up to the durable end are cached");
            bytes += record.body.len();
            records += 1;
            self.start = record.end();
        }
        assert_eq!(self.start, end, "a commit ends where a record ends");
        if with_close {
            assert!(self.records.is_empty(), "a close follows the last record");
            self.close = None;
        }
        (records, bytes)
    }

    /// Every durable record from the start: what the upload seals, which bounds its block
    /// by bytes itself.
    pub fn durable_records(&self) -> impl Iterator<Item = &CachedRecord> {
        let count = (self.durable.index - self.start.index) as usize;
        self.records.range(..count)
    }

    /// The durable records from `from`, until they hold at least `bytes_max` bytes (at
    /// least one record when there is one).
    pub fn read(&self, from: Offset, bytes_max: usize) -> Result<Vec<CachedRecord>, ReadError> {
        if from.index > self.durable.index {
            return Err(ReadError::PastEnd { from, durable: self.durable });
        }
        if from.index < self.start.index {
            return Err(ReadError::BelowCache { from, start: self.start });
        }
        let skip = (from.index - self.start.index) as usize;
        let expected = self.records.get(skip).map_or(self.end(), |record| record.start);
        if expected != from {
            return Err(ReadError::NotABoundary { from });
        }
        let durable = (self.durable.index - self.start.index) as usize;
        let mut out = Vec::new();
        let mut bytes = 0;
        for record in self.records.range(skip..durable) {
            if bytes >= bytes_max && !out.is_empty() {
                break;
            }
            bytes += record.body.len();
            out.push(record.clone());
        }
        Ok(out)
    }

    /// The durable record at `index` (for a fork's sub-offset).
    pub fn record_at(&self, index: u64) -> Option<&CachedRecord> {
        if index < self.start.index || index >= self.durable.index {
            return None;
        }
        self.records.get((index - self.start.index) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(start: Offset, body: &[u8]) -> CachedRecord {
        CachedRecord { start, body: body.into(), producer: None, stream_seq: None, closes: false, wal_seq: start.index + 100 }
    }

    fn indexes(records: &[CachedRecord]) -> Vec<u64> {
        records.iter().map(|r| r.start.index).collect()
    }

    #[test]
    fn only_durable_records_are_read_whatever_order_the_acks_run_in() {
        let mut log = StreamLog::starting_at(Offset::new(10, 50));
        let mut at = log.end();
        for body in [&b"a"[..], b"bb", b"ccc", b"dddd", b"e"] {
            let next = record(at, body);
            at = next.end();
            log.push(next);
        }
        assert_eq!(log.end(), Offset::new(15, 61));
        assert_eq!(indexes(&log.read(Offset::new(10, 50), 100).unwrap()), Vec::<u64>::new());
        log.mark_durable(Offset::new(14, 60)); // the fourth record's answer ran first
        log.mark_durable(Offset::new(12, 53)); // the second's later
        assert_eq!(log.durable(), Offset::new(14, 60));
        assert_eq!(indexes(&log.read(Offset::new(10, 50), 100).unwrap()), vec![10, 11, 12, 13]);
        // A byte bound stops after the record that reaches it, never before the first.
        assert_eq!(indexes(&log.read(Offset::new(11, 51), 1).unwrap()), vec![11]);
        assert_eq!(indexes(&log.read(Offset::new(11, 51), 3).unwrap()), vec![11, 12]);
        assert_eq!(indexes(&log.read(Offset::new(14, 60), 5).unwrap()), Vec::<u64>::new());
        assert_eq!(log.read(Offset::new(15, 61), 5), Err(ReadError::PastEnd { from: Offset::new(15, 61), durable: Offset::new(14, 60) }));
        assert_eq!(log.read(Offset::new(9, 40), 5), Err(ReadError::BelowCache { from: Offset::new(9, 40), start: Offset::new(10, 50) }));
        assert_eq!(log.read(Offset::new(12, 54), 5), Err(ReadError::NotABoundary { from: Offset::new(12, 54) }));
        assert_eq!(log.record_at(13).map(|r| &*r.body), Some(&b"dddd"[..]));
        assert_eq!(log.record_at(14), None);
        // Committed records leave the cache; what is not durable stays.
        assert_eq!(log.drop_below(Offset::new(12, 53), false), (2, 3));
        assert_eq!((log.start(), log.first_wal_seq()), (Offset::new(12, 53), Some(112)));
        assert_eq!(indexes(&log.durable_records().cloned().collect::<Vec<_>>()), vec![12, 13]);
    }

    #[test]
    fn a_close_follows_the_last_record_and_leaves_with_it() {
        let mut log = StreamLog::starting_at(Offset::START);
        log.push(record(Offset::START, b"x"));
        log.push_close(CachedClose { producer: None, wal_seq: 7, durable: false });
        assert_eq!(log.end(), Offset::new(1, 1));
        log.mark_durable(Offset::new(1, 1));
        log.mark_close_durable();
        assert!(log.close().unwrap().durable);
        assert_eq!(log.drop_below(Offset::new(1, 1), true), (1, 1));
        assert!(log.is_empty());
        assert_eq!(log.first_wal_seq(), None);
    }

    #[test]
    #[should_panic(expected = "records have no gaps")]
    fn a_gap_is_a_bug() {
        let mut log = StreamLog::starting_at(Offset::START);
        log.push(record(Offset::new(1, 0), b"x"));
    }
}
