//! When the log cache is sealed into a block, and how a block becomes objects and one
//! commit.
//!
//! The durable records above each stream's committed end are the pending ones. Once
//! they reach [`SealPolicy::block_bytes`], or the oldest has waited
//! [`SealPolicy::block_age`], the upload task seals a block: from each stream, in number
//! order, the run of pending records from its committed end, until the block holds
//! `block_bytes` or its commit would no longer fit one metadata record
//! ([`super::meta::COMMAND_BYTES_MAX`]). A run of at least
//! [`SealPolicy::stream_object_bytes`] becomes a stream object of its own; the other runs
//! share one stream-set object. Every run starts at its stream's committed end, which is
//! what lets the commit advance each stream without a gap. With each stream the block
//! carries its state at the new end ([`StreamEnd`]): the producers its records moved,
//! its last `Stream-Seq`, and whether it is closed (a close-only request after its last
//! record is committed with it, even without records).

use std::collections::BTreeMap;

use super::log_cache::CachedRecord;
use super::meta::{
    producer_entry_bytes, MetaCommand, ObjectEntry, RunEntry, StreamEnd, COMMAND_BYTES_MAX, COMMIT_FIXED_BYTES,
    OBJECT_ENTRY_BYTES, RUN_ENTRY_BYTES,
};
use super::object::Run;
use super::offset::Offset;
use super::producers::ProducerState;
use super::record::ProducerStamp;
use super::StreamId;
use crate::time::Nanos;

/// What the upload counts a record as: its body and room for its fields.
pub fn pending_bytes_of(body_bytes: usize) -> usize {
    body_bytes + 32
}

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

/// One stream's durable records above its committed end, as the upload takes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub stream: StreamId,
    /// The committed end: where the first record starts.
    pub start: Offset,
    pub records: Vec<CachedRecord>,
    /// A durable close-only request after the last record, with its producer if it had
    /// one.
    pub close: Option<Option<ProducerStamp>>,
}

/// A sealed block: its objects (each a list of runs) and each stream's state at its new
/// end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub objects: Vec<Vec<Run>>,
    pub ends: Vec<StreamEnd>,
}

impl Block {
    /// The objects' entries in the commit, under `ids` (one per object, in order).
    pub fn commit_entries(&self, ids: &[u64]) -> Vec<ObjectEntry> {
        assert_eq!(ids.len(), self.objects.len(), "one id per object");
        self.objects
            .iter()
            .zip(ids)
            .map(|(runs, &id)| ObjectEntry {
                id,
                runs: runs.iter().map(|run| RunEntry { stream: run.stream, start: run.start, end: run.end() }).collect(),
            })
            .collect()
    }

    /// The commit registering this block's objects under `ids`.
    pub fn commit(&self, ids: &[u64]) -> MetaCommand {
        MetaCommand::Commit { objects: self.commit_entries(ids), ends: self.ends.clone() }
    }

    /// Records the block holds.
    pub fn records(&self) -> u64 {
        self.objects.iter().flatten().map(|run| run.bodies.len() as u64).sum()
    }
}

/// What a stream's records taken so far say about its end.
struct EndState {
    end: StreamEnd,
    producers: BTreeMap<String, ProducerState>,
}

impl EndState {
    fn new(stream: StreamId, start: Offset) -> EndState {
        EndState {
            end: StreamEnd { stream, end: start, closed: false, closed_by: None, stream_seq: None, producers: Vec::new() },
            producers: BTreeMap::new(),
        }
    }

    /// Bytes the stream's entry takes in the commit now.
    fn bytes(&self) -> usize {
        self.end.encoded_bytes() + self.producers.keys().map(|id| producer_entry_bytes(id)).sum::<usize>()
    }

    /// Bytes it would take with one more request (at most: a new producer, the closing
    /// stamp and the whole `Stream-Seq` are counted as added).
    fn bytes_with(&self, stamp: Option<&ProducerStamp>, stream_seq: Option<&String>, closes: bool) -> usize {
        let mut bytes = self.bytes();
        if let Some(stamp) = stamp {
            if !self.producers.contains_key(&stamp.id) {
                bytes += producer_entry_bytes(&stamp.id);
            }
            if closes {
                bytes += 1 + stamp.id.len() + 16;
            }
        }
        bytes + stream_seq.map_or(0, |seq| 1 + seq.len())
    }

    fn take(&mut self, stamp: Option<&ProducerStamp>, stream_seq: Option<&String>, closes: bool) {
        if let Some(stamp) = stamp {
            self.producers.insert(stamp.id.clone(), ProducerState { epoch: stamp.epoch, last_seq: stamp.seq });
            if closes {
                self.end.closed_by = Some(stamp.clone());
            }
        }
        if let Some(seq) = stream_seq {
            self.end.stream_seq = Some(seq.clone());
        }
        self.end.closed |= closes;
    }

    fn finish(mut self, end: Offset) -> StreamEnd {
        self.end.end = end;
        self.end.producers = self.producers.into_iter().collect();
        self.end
    }
}

/// Bytes a run adds to the commit besides its stream's entry (its run entry, and an
/// object entry should it get an object of its own).
const RUN_BYTES: usize = RUN_ENTRY_BYTES + OBJECT_ENTRY_BYTES;

/// Seals a block from the pending streams (each starting at its committed end). Returns
/// `None` when there is nothing to upload.
pub fn seal(pending: Vec<Pending>, policy: &SealPolicy) -> Option<Block> {
    let mut commit_bytes = COMMIT_FIXED_BYTES + OBJECT_ENTRY_BYTES;
    let mut block_bytes = 0;
    let mut runs: Vec<Run> = Vec::new();
    let mut ends: Vec<StreamEnd> = Vec::new();
    for stream in pending {
        let mut state = EndState::new(stream.stream, stream.start);
        let mut run = Run { stream: stream.stream, start: stream.start, bodies: Vec::new() };
        let mut full = false;
        for record in &stream.records {
            let first_of_block = runs.is_empty() && ends.is_empty() && run.bodies.is_empty();
            let entry = state.bytes_with(record.producer.as_ref(), record.stream_seq.as_ref(), record.closes) + RUN_BYTES;
            let record_bytes = pending_bytes_of(record.body.len());
            if !first_of_block && (commit_bytes + entry > COMMAND_BYTES_MAX || block_bytes + record_bytes > policy.block_bytes) {
                full = true;
                break;
            }
            block_bytes += record_bytes;
            state.take(record.producer.as_ref(), record.stream_seq.as_ref(), record.closes);
            run.bodies.push(record.body.clone());
        }
        let run_bytes = if run.bodies.is_empty() { 0 } else { RUN_BYTES };
        if let (false, Some(close)) = (full, &stream.close) {
            let first_of_block = runs.is_empty() && ends.is_empty() && run.bodies.is_empty();
            if first_of_block || commit_bytes + state.bytes_with(close.as_ref(), None, true) + run_bytes <= COMMAND_BYTES_MAX {
                state.take(close.as_ref(), None, true);
            } else {
                full = true;
            }
        }
        if !run.bodies.is_empty() || state.end.closed {
            commit_bytes += state.bytes() + run_bytes;
            let end = if run.bodies.is_empty() { stream.start } else { run.end() };
            ends.push(state.finish(end));
            if !run.bodies.is_empty() {
                runs.push(run);
            }
        }
        if full {
            break;
        }
    }
    if runs.is_empty() && ends.is_empty() {
        return None;
    }
    let (own, shared): (Vec<Run>, Vec<Run>) = runs.into_iter().partition(|run| run.record_bytes() >= policy.stream_object_bytes);
    let mut objects: Vec<Vec<Run>> = Vec::new();
    if !shared.is_empty() {
        objects.push(shared);
    }
    objects.extend(own.into_iter().map(|run| vec![run]));
    Some(Block { objects, ends })
}

/// Objects of one size tier that wait before they are compacted into one.
pub const COMPACT_OBJECTS: usize = 16;

/// An object's size tier, `base` being a block's bytes: tier 0 below `2 x base` (every
/// upload is there, so a stream's runs in uploads are never split between two tiers), and
/// above it sizes within a factor of 16 share one (tier `t` from `2 x base x 16^(t-1)`).
pub fn tier_of(bytes: u64, base: u64) -> u32 {
    let floor = base.max(1).saturating_mul(2);
    let mut tier = 0;
    let mut bound = floor;
    while bytes >= bound {
        tier += 1;
        bound = bound.saturating_mul(16);
        if bound == u64::MAX {
            break;
        }
    }
    tier
}

/// Which committed objects (by id, with the live data bytes each holds) to rewrite as
/// one: the oldest [`COMPACT_OBJECTS`] of the lowest size tier ([`tier_of`]) that has that
/// many, taken oldest first while together they stay within `bytes_max` (at least two).
/// Objects holding nothing live are garbage, not candidates. Within a tier the objects
/// are each stream's consecutive runs (a tier's objects are older than the tier below's),
/// so the runs join.
///
/// Size-tiered, as an LSM tree's compaction: an object is rewritten at most once per tier
/// it passes (a handful, from a small upload to `bytes_max`), and at most
/// `COMPACT_OBJECTS - 1` objects wait in each tier below the top. A stream's runs, one
/// per object it has records in, are then bounded by those waiting objects plus one per
/// top-tier object (`bytes_max` or near it), however many uploads wrote it.
pub fn compaction(objects: &BTreeMap<u64, u64>, bytes_max: u64, block_bytes: u64) -> Option<Vec<u64>> {
    let mut tiers: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for (&id, &bytes) in objects.iter().filter(|&(_, &bytes)| bytes > 0) {
        tiers.entry(tier_of(bytes, block_bytes)).or_default().push((id, bytes));
    }
    for candidates in tiers.values().filter(|candidates| candidates.len() >= COMPACT_OBJECTS) {
        let mut chosen = Vec::new();
        let mut total = 0;
        for &(id, bytes) in candidates.iter().take(COMPACT_OBJECTS) {
            if total + bytes > bytes_max {
                break;
            }
            total += bytes;
            chosen.push(id);
        }
        if chosen.len() >= 2 {
            return Some(chosen);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream_store::meta::{MetaCommand, MetaState, StreamConfig};
    use crate::stream_store::expiry::Expiry;

    fn pending(stream: u64, start: Offset, sizes: &[usize]) -> Pending {
        let mut at = start;
        let records = sizes
            .iter()
            .enumerate()
            .map(|(n, &bytes)| {
                let record = CachedRecord {
                    start: at,
                    body: vec![0u8; bytes].into(),
                    producer: Some(ProducerStamp { id: format!("p{}", n % 2), epoch: 1, seq: n as u64 }),
                    stream_seq: None,
                    closes: false,
                    wal_seq: 0,
                };
                at = record.end();
                record
            })
            .collect();
        Pending { stream: StreamId(stream), start, records, close: None }
    }

    fn shape(block: &Block) -> Vec<Vec<(u64, u64, u64)>> {
        block.objects.iter().map(|runs| runs.iter().map(|r| (r.stream.0, r.start.index, r.end().index)).collect()).collect()
    }

    const POLICY: SealPolicy = SealPolicy { block_bytes: 10_000, block_age: Nanos(1_000_000), stream_object_bytes: 3_000 };

    #[test]
    fn a_big_run_gets_its_own_object_and_the_rest_share_one() {
        let block = seal(
            vec![pending(1, Offset::new(5, 50), &[100; 3]), pending(2, Offset::START, &[1000; 4]), pending(3, Offset::new(2, 2), &[10])],
            &POLICY,
        )
        .unwrap();
        assert_eq!(shape(&block), vec![vec![(1, 5, 8), (3, 2, 3)], vec![(2, 0, 4)]]);
        // Each stream's end: where its run stops, and its producers' last seqs.
        let one = &block.ends[0];
        assert_eq!(one.end, Offset::new(8, 350));
        assert_eq!(
            one.producers,
            vec![("p0".into(), ProducerState { epoch: 1, last_seq: 2 }), ("p1".into(), ProducerState { epoch: 1, last_seq: 1 })]
        );
        assert_eq!(block.records(), 8);
    }

    #[test]
    fn a_close_goes_with_the_records_before_it_even_alone() {
        let mut closing = pending(1, Offset::START, &[10]);
        closing.records[0].stream_seq = Some("s9".into());
        closing.close = Some(Some(ProducerStamp { id: "p1".into(), epoch: 1, seq: 1 }));
        let alone = Pending { stream: StreamId(2), start: Offset::new(4, 4), records: vec![], close: Some(None) };
        let block = seal(vec![closing, alone], &POLICY).unwrap();
        assert_eq!(shape(&block), vec![vec![(1, 0, 1)]]);
        assert_eq!(block.ends.len(), 2);
        let (one, two) = (&block.ends[0], &block.ends[1]);
        assert!(one.closed && two.closed);
        assert_eq!(one.closed_by.as_ref().map(|s| s.seq), Some(1));
        assert_eq!(one.stream_seq.as_deref(), Some("s9"));
        assert_eq!(two.end, Offset::new(4, 4));
        // The commit applies: both streams end closed.
        let mut state = MetaState::default();
        for (id, name) in [(1, "a"), (2, "b")] {
            let config = StreamConfig { name: name.into(), content_type: "x".into(), expiry: Expiry::Never, fork: None };
            state.apply(&MetaCommand::Create { id: StreamId(id), config }).unwrap();
        }
        // Stream b's committed end is at its start here, as its pending start said.
        let mut at_its_end = block.clone();
        at_its_end.ends[1].end = Offset::START;
        state.apply(&state.reserve(1)).unwrap();
        state.apply(&at_its_end.commit(&[0])).unwrap();
        assert!(state.stream(StreamId(1)).unwrap().closed && state.stream(StreamId(2)).unwrap().closed);
    }

    #[test]
    fn a_block_stops_at_its_bytes_but_always_takes_one_record() {
        let block = seal(vec![pending(1, Offset::START, &[4000; 3]), pending(2, Offset::START, &[10])], &POLICY).unwrap();
        assert_eq!(shape(&block), vec![vec![(1, 0, 2)]]);
        let huge = seal(vec![pending(1, Offset::START, &[20_000, 10])], &POLICY).unwrap();
        assert_eq!(shape(&huge), vec![vec![(1, 0, 1)]]);
        assert_eq!(seal(vec![], &POLICY), None);
        assert_eq!(seal(vec![pending(1, Offset::START, &[])], &POLICY), None);
    }

    #[test]
    fn the_commit_always_fits_one_metadata_record() {
        // Many streams with many long producer ids: the block ends where the commit
        // would outgrow its record.
        let pending: Vec<Pending> = (0..2000)
            .map(|n| {
                let mut p = pending(n, Offset::START, &[1, 1]);
                p.records[1].producer = Some(ProducerStamp { id: "q".repeat(255), epoch: 1, seq: 0 });
                p
            })
            .collect();
        let policy = SealPolicy { block_bytes: 1 << 30, ..POLICY };
        let block = seal(pending, &policy).unwrap();
        let ids: Vec<u64> = (0..block.objects.len() as u64).collect();
        let bytes = block.commit(&ids).encode().len();
        assert!(bytes <= COMMAND_BYTES_MAX, "{bytes}");
        assert!(bytes > COMMAND_BYTES_MAX * 9 / 10, "the block is not cut early: {bytes}");
    }

    #[test]
    fn objects_compact_by_size_tier_oldest_first() {
        // Blocks of 100 bytes: tier 0 below 200, tier 1 to 3,199, tier 2 to 51,199.
        let tiers: Vec<u32> = [0, 1, 199, 200, 3199, 3200, 51_200].iter().map(|&bytes| tier_of(bytes, 100)).collect();
        assert_eq!(tiers, vec![0, 0, 0, 1, 1, 2, 3]);
        assert_eq!(tier_of(u64::MAX, 1 << 30), 9);
        let objects = |sizes: &[u64]| -> BTreeMap<u64, u64> { sizes.iter().enumerate().map(|(id, &bytes)| (id as u64, bytes)).collect() };
        assert_eq!(compaction(&objects(&[100; COMPACT_OBJECTS - 1]), 1 << 20, 100), None, "a tier waits for 16");
        let mut sizes = vec![5000, 0, 100, 120];
        sizes.extend([110; COMPACT_OBJECTS]);
        let chosen = compaction(&objects(&sizes), 1 << 20, 100).unwrap();
        assert_eq!(chosen, (2..2 + COMPACT_OBJECTS as u64).collect::<Vec<_>>(), "the oldest of the small tier; garbage and the big one not");
        assert_eq!(compaction(&objects(&[400; 20]), 1000, 100), Some(vec![0, 1]), "within the bytes");
        assert_eq!(compaction(&objects(&[600; 20]), 1000, 100), None, "one alone is the top");
        // Compacting whatever it proposes, upload after upload: objects stay few.
        let mut live: BTreeMap<u64, u64> = BTreeMap::new();
        let mut next_id = 0;
        for upload in 0..5000u64 {
            live.insert(next_id, 100 + upload % 50);
            next_id += 1;
            while let Some(chosen) = compaction(&live, 1 << 20, 150) {
                let bytes = chosen.iter().map(|id| live.remove(id).unwrap()).sum();
                live.insert(next_id, bytes);
                next_id += 1;
            }
        }
        let total: u64 = live.values().sum();
        assert!(live.len() as u64 <= 15 * 5 + 2 * total / (1 << 20), "{} objects for {total} bytes", live.len());
    }

    #[test]
    fn a_block_is_due_by_bytes_or_by_age() {
        assert!(!POLICY.due(0, None, Nanos(5)));
        assert!(POLICY.due(10_000, Some(Nanos(5)), Nanos(5)));
        assert!(!POLICY.due(10, Some(Nanos(5)), Nanos(999_999)));
        assert!(POLICY.due(10, Some(Nanos(5)), Nanos(1_000_005)));
    }
}
