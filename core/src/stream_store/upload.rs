//! When the log cache is sealed into a block, and how a block becomes objects and one
//! commit.
//!
//! The durable records above each stream's committed end are the pending ones. Once
//! they reach [`SealPolicy::block_bytes`], or the oldest has waited
//! [`SealPolicy::block_age`], the upload task seals a block: from each stream, in name
//! order, the run of pending records from its committed end, until the block holds
//! `block_bytes` or its commit would no longer fit one metadata record
//! ([`super::meta::COMMAND_BYTES_MAX`]). A run of at least
//! [`SealPolicy::stream_object_bytes`] becomes a stream object of its own; the other runs
//! share one stream-set object. Every run starts at its stream's committed end, which is
//! what lets the commit advance each stream without a gap.

use std::collections::BTreeMap;

use super::meta::{
    producer_entry_bytes, run_entry_bytes, ObjectEntry, ProducerEntry, RunEntry, COMMAND_BYTES_MAX,
    COMMIT_FIXED_BYTES, OBJECT_ENTRY_BYTES,
};
use super::object::Run;
use super::producers::ProducerState;
use crate::time::Nanos;

/// When to seal and how to split a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealPolicy {
    /// Seal once this many record bytes are pending; also a block's most bytes.
    pub block_bytes: usize,
    /// Seal once the oldest pending record has waited this long.
    pub block_age: Nanos,
    /// A run this large gets a stream object of its own.
    pub stream_object_bytes: usize,
}

impl SealPolicy {
    /// Whether a block is due: `pending_bytes` wait, the oldest since `pending_since`.
    pub fn due(&self, pending_bytes: usize, pending_since: Option<Nanos>, now: Nanos) -> bool {
        match pending_since {
            None => false,
            Some(_) if pending_bytes >= self.block_bytes => true,
            Some(since) => pending_bytes > 0 && now.0.saturating_sub(since.0) >= self.block_age.0,
        }
    }
}

/// A sealed block: its objects (each a list of runs) and the producers' state at the
/// new committed ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub objects: Vec<Vec<Run>>,
    pub producers: Vec<ProducerEntry>,
}

impl Block {
    /// The commit registering this block's objects under `ids` (one per object, in order).
    pub fn commit_entries(&self, ids: &[u64]) -> Vec<ObjectEntry> {
        assert_eq!(ids.len(), self.objects.len(), "one id per object");
        self.objects
            .iter()
            .zip(ids)
            .map(|(runs, &id)| ObjectEntry {
                id,
                runs: runs
                    .iter()
                    .map(|run| RunEntry { stream: run.stream.clone(), start: run.start, end: run.end() })
                    .collect(),
            })
            .collect()
    }
}

/// Seals a block from the pending runs (one per stream, each starting at its stream's
/// committed end). Returns `None` when there is nothing to upload.
pub fn seal(pending: Vec<Run>, policy: &SealPolicy) -> Option<Block> {
    let mut commit_bytes = COMMIT_FIXED_BYTES;
    let mut block_bytes = 0;
    let mut runs = Vec::new();
    let mut producers = Vec::new();
    'streams: for mut run in pending {
        let mut taken = 0;
        let mut last: BTreeMap<String, ProducerState> = BTreeMap::new();
        let run_bytes_fixed = OBJECT_ENTRY_BYTES + run_entry_bytes(&run.stream);
        for (index, record) in run.records.iter().enumerate() {
            let mut extra = if taken == 0 { run_bytes_fixed } else { 0 };
            if let Some(stamp) = &record.producer {
                if !last.contains_key(&stamp.id) {
                    extra += producer_entry_bytes(&run.stream, &stamp.id);
                }
            }
            let record_bytes = record.value.len() + 32;
            let full = commit_bytes + extra > COMMAND_BYTES_MAX || block_bytes + record_bytes > policy.block_bytes;
            if full && !(runs.is_empty() && taken == 0) {
                if taken > 0 {
                    run.records.truncate(taken);
                    push_run(&mut runs, &mut producers, run, last);
                }
                break 'streams;
            }
            commit_bytes += extra;
            block_bytes += record_bytes;
            taken += 1;
            if let Some(stamp) = &record.producer {
                let offset = run.start + index as u64;
                let state = ProducerState::after(last.get(&stamp.id), stamp.epoch, stamp.seq, offset);
                last.insert(stamp.id.clone(), state);
            }
        }
        if taken > 0 {
            run.records.truncate(taken);
            push_run(&mut runs, &mut producers, run, last);
        }
    }
    if runs.is_empty() {
        return None;
    }
    let (own, shared): (Vec<Run>, Vec<Run>) =
        runs.into_iter().partition(|run| run.record_bytes() >= policy.stream_object_bytes);
    let mut objects: Vec<Vec<Run>> = Vec::new();
    if !shared.is_empty() {
        objects.push(shared);
    }
    objects.extend(own.into_iter().map(|run| vec![run]));
    Some(Block { objects, producers })
}

fn push_run(runs: &mut Vec<Run>, producers: &mut Vec<ProducerEntry>, run: Run, last: BTreeMap<String, ProducerState>) {
    producers.extend(last.into_iter().map(|(producer, state)| ProducerEntry { stream: run.stream.clone(), producer, state }));
    runs.push(run);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream_store::meta::MetaCommand;
    use crate::stream_store::object::StoredRecord;
    use crate::stream_store::record::ProducerStamp;

    fn run(stream: &str, start: u64, values: &[usize]) -> Run {
        Run {
            stream: stream.into(),
            start,
            records: values
                .iter()
                .enumerate()
                .map(|(n, &bytes)| StoredRecord {
                    producer: Some(ProducerStamp { id: format!("p{}", n % 2), epoch: 1, seq: n as u64 }),
                    value: vec![0; bytes],
                })
                .collect(),
        }
    }

    fn shape(block: &Block) -> Vec<Vec<(String, u64, u64)>> {
        block.objects.iter().map(|runs| runs.iter().map(|r| (r.stream.clone(), r.start, r.end())).collect()).collect()
    }

    const POLICY: SealPolicy = SealPolicy { block_bytes: 10_000, block_age: Nanos(1_000_000), stream_object_bytes: 3_000 };

    #[test]
    fn a_big_run_gets_its_own_object_and_the_rest_share_one() {
        let block = seal(vec![run("a", 5, &[100; 3]), run("b", 0, &[1000; 4]), run("c", 2, &[10])], &POLICY).unwrap();
        assert_eq!(
            shape(&block),
            vec![vec![("a".into(), 5, 8), ("c".into(), 2, 3)], vec![("b".into(), 0, 4)]]
        );
        // The producers' last seq in each stream, at the offset it got.
        let a: Vec<(String, u64, u64)> =
            block.producers.iter().filter(|p| p.stream == "a").map(|p| (p.producer.clone(), p.state.last_seq, p.state.last_offset)).collect();
        assert_eq!(a, vec![("p0".into(), 2, 7), ("p1".into(), 1, 6)]);
    }

    #[test]
    fn a_producers_entry_carries_its_run_within_the_block() {
        // p at offsets 3, 4, 5 with seqs 7, 8, 9, q at 6, p again at 7 with seq 10: the
        // run of p broken by q starts anew at seq 10.
        let stamp = |id: &str, seq| Some(ProducerStamp { id: id.into(), epoch: 1, seq });
        let records = [stamp("p", 7), stamp("p", 8), stamp("p", 9), stamp("q", 0), stamp("p", 10)];
        let pending = Run { stream: "a".into(), start: 3, records: records.into_iter().map(|producer| StoredRecord { producer, value: vec![1] }).collect() };
        let block = seal(vec![pending.clone()], &POLICY).unwrap();
        let p = block.producers.iter().find(|e| e.producer == "p").unwrap();
        assert_eq!(p.state, ProducerState { epoch: 1, first_seq: 10, last_seq: 10, last_offset: 7 });
        let block = seal(vec![Run { records: pending.records[..3].to_vec(), ..pending }], &POLICY).unwrap();
        assert_eq!(block.producers[0].state, ProducerState { epoch: 1, first_seq: 7, last_seq: 9, last_offset: 5 });
    }

    #[test]
    fn a_block_stops_at_its_bytes_but_always_takes_one_record() {
        let block = seal(vec![run("a", 0, &[4000; 3]), run("b", 0, &[10])], &POLICY).unwrap();
        assert_eq!(shape(&block), vec![vec![("a".into(), 0, 2)]]);
        let huge = seal(vec![run("a", 0, &[20_000, 10])], &POLICY).unwrap();
        assert_eq!(shape(&huge), vec![vec![("a".into(), 0, 1)]]);
        assert_eq!(seal(vec![], &POLICY), None);
    }

    #[test]
    fn the_commit_always_fits_one_metadata_record() {
        // Many streams with long names and many producers: the block ends where the
        // commit would outgrow its record.
        let pending: Vec<Run> = (0..2000)
            .map(|n| {
                let mut r = run(&format!("{n:0>120}"), 0, &[1, 1]);
                r.records[1].producer = Some(ProducerStamp { id: "q".repeat(128), epoch: 1, seq: 0 });
                r
            })
            .collect();
        let policy = SealPolicy { block_bytes: 1 << 30, ..POLICY };
        let block = seal(pending, &policy).unwrap();
        let ids: Vec<u64> = (0..block.objects.len() as u64).collect();
        let commit = MetaCommand::Commit { objects: block.commit_entries(&ids), producers: block.producers.clone() };
        let bytes = commit.encode().len();
        assert!(bytes <= COMMAND_BYTES_MAX, "{bytes}");
        assert!(bytes > COMMAND_BYTES_MAX * 9 / 10, "the block is not cut early: {bytes}");
    }

    #[test]
    fn a_block_is_due_by_bytes_or_by_age() {
        assert!(!POLICY.due(0, None, Nanos(5)));
        assert!(POLICY.due(10_000, Some(Nanos(5)), Nanos(5)));
        assert!(!POLICY.due(10, Some(Nanos(5)), Nanos(999_999)));
        assert!(POLICY.due(10, Some(Nanos(5)), Nanos(1_000_005)));
    }
}
