//! One stream's log cache: its records in offset order, what is assigned and what is
//! durable.
//!
//! A record enters the cache when it is submitted to the WAL, with its offset already
//! fixed, and becomes readable only once the WAL has acknowledged it. Three positions
//! describe a stream, and they only grow:
//!
//! ```text
//!  start            durable_end          end
//!    |  readable       |  in the WAL,      |  next offset to assign
//!    |  records        |  not acknowledged |
//! ```
//!
//! Acknowledgements come in WAL order, and one stream's records enter the WAL in offset
//! order (both under the stream's lock), so when the record at offset `o` is acknowledged
//! every record below `o` is durable too: [`StreamLog::mark_durable`] takes the largest
//! end it has been told, whatever order the acknowledged tasks run in.

use std::collections::VecDeque;

use super::record::ProducerStamp;

/// The most records one read returns.
pub const READ_RECORDS_MAX: usize = 1000;

/// One record in the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedRecord {
    pub offset: u64,
    pub producer: Option<ProducerStamp>,
    pub value: Vec<u8>,
    /// The WAL's seq of the record holding it (what trimming the WAL is counted in),
    /// known once the WAL has acknowledged it; 0 before.
    pub wal_seq: u64,
}

/// Why a read was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// `from` is past the durable end.
    PastEnd { from: u64, durable_end: u64 },
    /// `from` is below what the cache holds (older records are elsewhere).
    BelowCache { from: u64, start: u64 },
}

impl core::fmt::Display for ReadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReadError::PastEnd { from, durable_end } => {
                write!(f, "from {from} is past the stream's end {durable_end}")
            }
            ReadError::BelowCache { from, start } => write!(f, "from {from} is below the log cache's start {start}"),
        }
    }
}

/// One stream's cached records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamLog {
    start: u64,
    records: VecDeque<CachedRecord>,
    durable_end: u64,
}

impl StreamLog {
    /// An empty cache whose first record will get offset `start`, all below durable.
    pub fn starting_at(start: u64) -> StreamLog {
        StreamLog { start, records: VecDeque::new(), durable_end: start }
    }

    /// The offset of the oldest cached record.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The next offset to assign.
    pub fn end(&self) -> u64 {
        self.start + self.records.len() as u64
    }

    /// Everything below is durable.
    pub fn durable_end(&self) -> u64 {
        self.durable_end
    }

    /// Adds the next record; its offset must be [`StreamLog::end`].
    pub fn push(&mut self, record: CachedRecord) {
        assert_eq!(record.offset, self.end(), "offsets have no gaps");
        self.records.push_back(record);
    }

    /// The WAL acknowledged the record at `offset` as its record `wal_seq`, and with it
    /// every record of this stream below.
    pub fn mark_durable(&mut self, offset: u64, wal_seq: u64) {
        assert!(offset < self.end(), "only submitted records become durable");
        if offset >= self.start {
            self.records[(offset - self.start) as usize].wal_seq = wal_seq;
        }
        self.durable_end = self.durable_end.max(offset + 1);
    }

    /// The oldest cached record.
    pub fn first(&self) -> Option<&CachedRecord> {
        self.records.front()
    }

    /// Forgets the records below `offset` (they are committed elsewhere); returns the
    /// bytes they held as the upload counts them (value + 32 each).
    pub fn drop_below(&mut self, offset: u64) -> usize {
        assert!(offset <= self.durable_end, "only durable records are dropped");
        let mut bytes = 0;
        while self.start < offset {
            let record = self.records.pop_front().expect("records up to the durable end are cached");
            bytes += record.value.len() + 32;
            self.start += 1;
        }
        bytes
    }

    /// Every durable record from offset `from` (at least [`StreamLog::start`]), with no
    /// read bound: what the upload seals, which bounds its block by bytes itself.
    pub fn durable_from(&self, from: u64) -> impl Iterator<Item = &CachedRecord> {
        let skip = from.saturating_sub(self.start) as usize;
        let durable = (self.durable_end - self.start) as usize;
        self.records.range(skip.min(durable)..durable)
    }

    /// Up to `max` durable records from offset `from` (at most [`READ_RECORDS_MAX`]).
    pub fn read(&self, from: u64, max: usize) -> Result<impl Iterator<Item = &CachedRecord>, ReadError> {
        if from > self.durable_end {
            return Err(ReadError::PastEnd { from, durable_end: self.durable_end });
        }
        if from < self.start {
            return Err(ReadError::BelowCache { from, start: self.start });
        }
        let skip = (from - self.start) as usize;
        let count = (self.durable_end - from).min(max.min(READ_RECORDS_MAX) as u64) as usize;
        Ok(self.records.range(skip..skip + count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(offset: u64) -> CachedRecord {
        CachedRecord { offset, producer: None, value: vec![offset as u8], wal_seq: 0 }
    }

    fn offsets<'a>(records: impl Iterator<Item = &'a CachedRecord>) -> Vec<u64> {
        records.map(|r| r.offset).collect()
    }

    #[test]
    fn only_durable_records_are_read_whatever_order_the_acks_run_in() {
        let mut log = StreamLog::starting_at(10);
        for offset in 10..15 {
            log.push(record(offset));
        }
        assert_eq!(offsets(log.read(10, 100).unwrap()), Vec::<u64>::new());
        log.mark_durable(13, 113); // offset 13's answer ran first
        log.mark_durable(11, 111); // offset 11's later
        assert_eq!(log.durable_end(), 14);
        assert_eq!(offsets(log.read(10, 100).unwrap()), vec![10, 11, 12, 13]);
        assert_eq!(offsets(log.read(12, 1).unwrap()), vec![12]);
        assert_eq!(offsets(log.read(14, 5).unwrap()), Vec::<u64>::new());
        assert_eq!(log.read(15, 5).err(), Some(ReadError::PastEnd { from: 15, durable_end: 14 }));
        assert_eq!(log.read(9, 5).err(), Some(ReadError::BelowCache { from: 9, start: 10 }));
        assert_eq!(log.end(), 15);
        let wal_seqs: Vec<u64> = log.read(10, 100).unwrap().map(|r| r.wal_seq).collect();
        assert_eq!(wal_seqs, vec![0, 111, 0, 113]);
        // Committed records leave the cache; what is not durable stays.
        assert_eq!(log.drop_below(12), 2 * (1 + 32));
        assert_eq!((log.start(), log.first().map(|r| r.offset)), (12, Some(12)));
        assert_eq!(log.read(11, 5).err(), Some(ReadError::BelowCache { from: 11, start: 12 }));
        assert_eq!(offsets(log.read(12, 5).unwrap()), vec![12, 13]);
        assert_eq!(offsets(log.durable_from(13)), vec![13]);
        assert_eq!(offsets(log.durable_from(0)), vec![12, 13]);
    }

    #[test]
    #[should_panic(expected = "offsets have no gaps")]
    fn a_gap_is_a_bug() {
        let mut log = StreamLog::starting_at(0);
        log.push(record(1));
    }
}
