//! The acknowledged records as the log cache holds them for the upload simulator: what
//! is pending above the committed ends, when a block is due, and what the seal is handed.

use super::{ObjectKind, StreamRange};
use crate::sim::clock::earliest;
use crate::stream_store::cycle::confirm_through;
use crate::stream_store::log_cache::CachedRecord;
use crate::stream_store::offset::Offset;
use crate::stream_store::upload::{Block, Pending, SealPolicy};
use crate::stream_store::StreamId;
use crate::time::Nanos;

/// The acknowledged records as the log cache holds them for the upload.
pub(super) struct Cache {
    /// Acknowledgement instants in record order (they never decrease: writers are
    /// acknowledged in submission order).
    pub(super) acked: Vec<Nanos>,
    /// Per stream, by offset: when the record was acknowledged, and its number.
    streams: Vec<Vec<(Nanos, u64)>>,
    record_bytes: u64,
    value_bytes: usize,
}

impl Cache {
    pub(super) fn new(acked: Vec<Nanos>, record_stream: &[u64], streams: u64, record_bytes: u64) -> Cache {
        let mut by_stream = vec![Vec::new(); streams as usize];
        for (index, &at) in acked.iter().enumerate() {
            by_stream[record_stream[index] as usize].push((at, index as u64 + 1));
        }
        Cache { acked, streams: by_stream, record_bytes, value_bytes: record_bytes.saturating_sub(32) as usize }
    }

    /// Records acknowledged by `t`.
    pub(super) fn acked_by(&self, t: Nanos) -> usize {
        self.acked.partition_point(|&at| at <= t)
    }

    /// The bytes pending at `t` above the committed `ends`, and since when the oldest waits.
    pub(super) fn pending(&self, ends: &[u64], t: Nanos) -> (usize, Option<Nanos>) {
        let committed: u64 = ends.iter().sum();
        // Committed records were acknowledged before their seal, so before `t`.
        let records = (self.acked_by(t) as u64).saturating_sub(committed);
        let oldest = self
            .streams
            .iter()
            .zip(ends)
            .filter_map(|(records, &end)| records.get(end as usize).map(|&(at, _)| at).filter(|&at| at <= t))
            .min();
        ((records * self.record_bytes) as usize, oldest)
    }

    /// The first instant from `from` on at which a block is due, if one ever is.
    pub(super) fn next_due(&self, ends: &[u64], from: Nanos, policy: &SealPolicy) -> Option<Nanos> {
        let mut t = from;
        // Bounded by the acknowledgements. A pass that finds no block due moves either to
        // the next acknowledgement instant (there are at most `acked.len()` of them after
        // `from`) or to the oldest pending record's age limit, where a block is due (it is
        // still pending there: nothing is committed while the search runs). So the passes
        // are the one at `from`, one per acknowledgement instant, and the last one at an
        // age limit.
        let passes_max = self.acked.len() + 2;
        for _ in 0..passes_max {
            let (bytes, oldest) = self.pending(ends, t);
            if policy.due(bytes, oldest, t) {
                return Some(t);
            }
            let next_ack = self.acked.get(self.acked_by(t)).copied();
            t = earliest(next_ack, oldest.map(|since| since + policy.block_age))?;
        }
        unreachable!("a block is due once the oldest pending record is old enough")
    }

    /// The pending runs at `t`, in stream-name order, copied until `bytes_max` (as
    /// `walab serve` hands them to the seal).
    pub(super) fn pending_runs(&self, ends: &[u64], t: Nanos, bytes_max: usize) -> Vec<Pending> {
        let mut runs = Vec::new();
        let mut bytes = 0;
        for (stream, records) in self.streams.iter().enumerate() {
            let start = ends[stream];
            let value_bytes = self.value_bytes as u64;
            let mut at = Offset::new(start, start * value_bytes);
            let mut run = Pending { stream: StreamId(stream as u64), start: at, records: Vec::new(), close: None };
            for _ in records[start as usize..].iter().take_while(|&&(at, _)| at <= t) {
                if bytes >= bytes_max {
                    break;
                }
                bytes += self.value_bytes + 32;
                let record = CachedRecord {
                    start: at,
                    body: vec![0; self.value_bytes].into(),
                    producer: None,
                    stream_seq: None,
                    closes: false,
                    wal_seq: 0,
                };
                at = record.end();
                run.records.push(record);
            }
            if !run.records.is_empty() {
                runs.push(run);
            }
        }
        runs
    }

    /// The records the trim may confirm: every one below the oldest above the committed
    /// `ends` ([`confirm_through`], the rule `walab serve` confirms its WAL by).
    pub(super) fn confirm_through(&self, ends: &[u64]) -> u64 {
        let first_uncommitted = self.streams.iter().zip(ends).filter_map(|(records, &end)| records.get(end as usize).map(|&(_, record)| record));
        confirm_through(self.acked.len() as u64 + 1, first_uncommitted)
    }

    /// The lowest record number in `block`.
    pub(super) fn first_record(&self, block: &Block) -> u64 {
        block
            .objects
            .iter()
            .flatten()
            .map(|run| self.streams[run.stream.0 as usize][run.start.index as usize].1)
            .min()
            .expect("a sealed block holds a record")
    }
}

/// A sealed block's objects: the seal puts the shared stream-set object first, then one
/// stream object per run of at least `stream_object_bytes`.
pub(super) fn block_objects(block: &Block, policy: &SealPolicy) -> Vec<(ObjectKind, Vec<StreamRange>)> {
    block
        .objects
        .iter()
        .map(|runs| {
            let kind = match runs.as_slice() {
                [run] if run.record_bytes() >= policy.stream_object_bytes => ObjectKind::Stream,
                _ => ObjectKind::StreamSet,
            };
            let ranges = runs.iter().map(|run| StreamRange { stream: run.stream.0, start: run.start.index, end: run.end().index }).collect();
            (kind, ranges)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::{stream_name, UploadSetup, STREAMS};
    use crate::stream_store::upload::seal;

    #[test]
    fn a_block_is_due_when_its_bytes_are_pending_or_its_oldest_record_is_old_enough() {
        let policy = UploadSetup::lab().seal_policy();
        let ms = Nanos::from_millis;
        // Ten records of 110 bytes at 1 ms, 190 more at 5 ms, streams taking turns.
        let acked: Vec<Nanos> = (0..200).map(|i| if i < 10 { ms(1) } else { ms(5) }).collect();
        let streams: Vec<u64> = (0..200).map(|i| i % STREAMS).collect();
        let cache = Cache::new(acked, &streams, STREAMS, 110);
        // 1,100 bytes wait from 1 ms; at 5 ms 22,000 do, more than a block's 16,384.
        assert_eq!(cache.next_due(&[0; 4], Nanos::ZERO, &policy), Some(ms(5)));
        let few = Cache::new(vec![ms(1); 10], &streams[..10], STREAMS, 110);
        assert_eq!(few.next_due(&[0; 4], Nanos::ZERO, &policy), Some(ms(41)), "40 ms after the oldest");
        assert_eq!(few.next_due(&[3, 3, 2, 2], ms(2), &policy), None, "nothing pending, nothing to come");
        // One record, acknowledged after the search starts: one pass finds nothing
        // pending, one reaches its acknowledgement, one its age limit.
        let one = Cache::new(vec![ms(58)], &streams[..1], STREAMS, 110);
        assert_eq!(one.next_due(&[0; 4], Nanos::ZERO, &policy), Some(ms(98)));
        // Every record acknowledged at its own instant, all after the start.
        let apart: Vec<Nanos> = (1..=10).map(ms).collect();
        let spread = Cache::new(apart, &streams[..10], STREAMS, 110);
        assert_eq!(spread.next_due(&[0; 4], Nanos::ZERO, &policy), Some(ms(41)));
        // The seal takes the streams' runs in name order and stops at the block's 148
        // records; runs of 50 records (82 bytes each in an object) reach 4 KiB and get
        // objects of their own, s3's 48 share the stream-set object, which comes first.
        let block = seal(cache.pending_runs(&[0; 4], ms(5), policy.block_bytes), &policy).unwrap();
        let runs: Vec<(String, u64, u64)> =
            block.objects.iter().flatten().map(|r| (stream_name(r.stream.0), r.start.index, r.end().index)).collect();
        assert_eq!(runs, vec![("s3".into(), 0, 48), ("s1".into(), 0, 50), ("s2".into(), 0, 50)]);
        let kinds: Vec<ObjectKind> = block_objects(&block, &policy).into_iter().map(|(kind, _)| kind).collect();
        assert_eq!(kinds, vec![ObjectKind::StreamSet, ObjectKind::Stream, ObjectKind::Stream]);
        assert_eq!(cache.first_record(&block), 1);
        // Record 4n + 1 is s1's offset n: with s1 committed to 50 and the others not, the
        // oldest uncommitted record is s2's first, record 2, so only record 1 is confirmed.
        assert_eq!(cache.confirm_through(&[50, 0, 0, 0]), 1);
        assert_eq!(cache.confirm_through(&[50, 50, 50, 50]), 200);
    }
}
