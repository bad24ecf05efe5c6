//! The tiny store: the one scenario that every Part of the teaching page follows.
//!
//! Twenty-four writes, puts and deletes on keys such as `user:1` and `order:9`: few enough
//! to show every byte and every sync. The MemTable holds four writes; each full MemTable
//! is flushed to a sorted file and a new log segment starts, so segment `wal-k` holds
//! writes `4k-3 ..= 4k` (wal-6 = writes 21-24). The sync latency is 1.0 ms, the device's
//! atomic unit is 32 bytes and new segments are zero-filled.
//!
//! The page lost its tables, so the arrival times, keys and values below were *chosen*.
//! They are the one place in walab where the scenario is written down, and every figure
//! of Parts 2 to 10 is computed from them by running the simulator, never typed in. The
//! choice is tightly constrained; here is why each piece is what it is.
//!
//! **Record sizes.** A put is `18 + key + value` bytes, a delete `18 + key` (see
//! [`crate::codec::tiny`]). wal-1's records must start at 0, 29, 56, 85 and end at 114
//! (Part 4), so writes 1-4 are 29, 27, 29 and 29 bytes: `user:1 alice`, `user:2 bob`,
//! `order:9 book`, `user:3 carol`. wal-6's records sit at 0-27, 27-55, 55-82 and 82-109
//! (Part 7), so writes 21-24 are 27, 28, 27 and 27 bytes.
//!
//! **Part 9 (two B-tree pages).** P1 holds the `order:` keys, P2 the `user:` keys. The
//! checkpoint after write 4 leaves P1 at pageLSN 3 and P2 at pageLSN 4, so write 3 is the
//! last `order:` write of 1-4 (`order:9 book`, "written before the checkpoint") and
//! write 4 a `user:` write. Writes 5, 6 and 8 change P2 and write 7 changes P1 (its
//! first change after the checkpoint, `order:7 pen`); P2 must end as `user:1 alicia`,
//! `user:3 carol`, `user:4 dave`, so 5, 6 and 8 rename user:1, delete user:2 and add
//! user:4.
//!
//! **Part 5 (group commit, L = 1.0 ms).** The syncs run back to back from 0 ms: batch k
//! occupies `[k-1, k]` ms, and the writes of batch k arrive during batch k-1. The
//! batches are B1 {1}, B2 {2,3}, B3 {4}, B4 {5,6,7}, B5 {8}, B6 {9,10,11}, B7 {12},
//! B8 {13,14,15}, B9 {16}, B10 {17}, B11 {18,19,20}, B12 {21}, B13 {22}, B14 {23,24}:
//! 14 syncs, every batch inside one MemTable. Write 4 arrives 0.1 ms after B2 starts and
//! waits 1.9 ms, the worst; write 1 finds the log idle and waits 1.0 ms, the best. The
//! sum of the waits is 33.2 ms. With a sync per write, the same arrivals give write n
//! its acknowledgement at n ms (every `arrival(n) <= n - 1`), an average wait of
//! 154.2 / 24 = 6.425 ms and 11.3 ms for write 24.
//!
//! **Part 6 (power at 13.5 ms).** B13 ends at 13.0 ms and B14 at 14.0 ms, so group commit
//! has acknowledged 22 writes; sync per write has acknowledged 13.
//!
//! **Part 10 (quorum, 1.4 ms per batch, forked after write 20).** Write 20 is acknowledged
//! at 11.0 ms; B12' = {21} runs 11.0-12.4, B13' = {22} runs 12.4-13.8. Write 23 arrives at
//! 12.5 ms, 0.1 ms after B13' starts: it waits 1.3 ms for the batch in flight and 1.4 ms
//! for its own. That is why write 23 arrives at exactly 12.5 ms.
//!
//! **Names from the companion page.** The page calls the flush of writes 17-20 "F11", that
//! of 21-24 "F12", and F11's manifest record "edit 9": earlier flushes and compactions on
//! the LSM page used up the smaller numbers. So the tiny store's first flush (writes 1-4)
//! is F7 ([`FIRST_FILE_NUMBER`]) recorded as manifest edit 5 ([`FIRST_MANIFEST_EDIT`]).
//!
//! **Checked by running.** The simulator (`crate::sim`) runs these writes through the
//! group-commit machine and the simulated device, and `core/tests/part{3..8}_*.rs`
//! compute every figure above from those runs; each one holds with the data as chosen
//! here, so nothing had to change.

use crate::codec::tiny;
use crate::codec::Op;
use crate::time::Nanos;

/// One write of the scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TinyWrite {
    /// 1-based write number, which is also the record's sequence number.
    pub id: u64,
    /// When the write reaches the engine.
    pub arrival: Nanos,
    pub op: Op,
    pub key: &'static str,
    /// Empty for a delete.
    pub value: &'static str,
}

impl TinyWrite {
    /// The record exactly as the tiny-store codec frames it (seq = id).
    pub fn record(&self) -> Vec<u8> {
        tiny::encode(self.id, self.op, self.key.as_bytes(), self.value.as_bytes())
    }

    /// The MemTable (and so the log segment `wal-k`) this write belongs to, from 1.
    pub fn segment(&self) -> u64 {
        (self.id - 1) / MEMTABLE_WRITES as u64 + 1
    }
}

const fn write(id: u64, tenth_millis: u64, op: Op, key: &'static str, value: &'static str) -> TinyWrite {
    TinyWrite { id, arrival: Nanos::from_tenth_millis(tenth_millis), op, key, value }
}

use Op::{Del, Put};

/// The 24 writes, in arrival order.
pub const WRITES: [TinyWrite; 24] = [
    write(1, 0, Put, "user:1", "alice"),
    write(2, 5, Put, "user:2", "bob"),
    write(3, 7, Put, "order:9", "book"),
    write(4, 11, Put, "user:3", "carol"),
    write(5, 24, Put, "user:1", "alicia"),
    write(6, 25, Del, "user:2", ""),
    write(7, 29, Put, "order:7", "pen"),
    write(8, 36, Put, "user:4", "dave"),
    write(9, 45, Put, "order:4", "lamp"),
    write(10, 46, Put, "user:5", "erin"),
    write(11, 48, Del, "order:4", ""),
    write(12, 55, Put, "user:6", "frank"),
    write(13, 65, Put, "order:5", "desk"),
    write(14, 67, Put, "user:7", "gina"),
    write(15, 69, Put, "order:6", "mug"),
    write(16, 75, Del, "user:5", ""),
    write(17, 88, Put, "user:8", "hank"),
    write(18, 95, Put, "order:8", "sofa"),
    write(19, 96, Put, "user:9", "ivan"),
    write(20, 99, Put, "order:2", "rug"),
    write(21, 106, Put, "user:2", "amy"),
    write(22, 115, Put, "order:3", "ink"),
    write(23, 125, Put, "user:6", "fay"),
    write(24, 127, Put, "user:7", "gus"),
];

/// Sync latency of the log and of every flushed file: 1.0 ms.
pub const SYNC_LATENCY: Nanos = Nanos::from_millis(1);
/// The device's atomic unit in the tiny store: 32 bytes, so tearing shows at small scale.
pub const UNIT_BYTES: usize = 32;
/// Writes per MemTable, and so per log segment.
pub const MEMTABLE_WRITES: usize = 4;
/// The flushed-file number of the tiny store's first flush (writes 1-4): F7.
pub const FIRST_FILE_NUMBER: u64 = 7;
/// The manifest edit number that records the first flush: edit 5.
pub const FIRST_MANIFEST_EDIT: u64 = 5;
/// The instant the power fails in Part 6: 13.5 ms.
pub const POWER_CUT: Nanos = Nanos(13_500_000);

/// The write with this 1-based id.
pub fn write_by_id(id: u64) -> Option<&'static TinyWrite> {
    WRITES.get(usize::try_from(id).ok()?.checked_sub(1)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_arrivals_are_ordered() {
        for (index, write) in WRITES.iter().enumerate() {
            assert_eq!(write.id, index as u64 + 1);
            if index > 0 {
                assert!(write.arrival > WRITES[index - 1].arrival);
            }
            if write.op == Op::Del {
                assert!(write.value.is_empty());
            }
        }
        assert_eq!(WRITES[23].arrival, Nanos(12_700_000));
    }

    #[test]
    fn wal1_record_offsets_match_part_4() {
        let mut offsets = vec![0];
        for write in &WRITES[..4] {
            offsets.push(offsets.last().unwrap() + write.record().len());
        }
        assert_eq!(offsets, [0, 29, 56, 85, 114]);
    }

    #[test]
    fn wal6_record_offsets_match_part_7() {
        let mut offsets = vec![0];
        for write in &WRITES[20..] {
            offsets.push(offsets.last().unwrap() + write.record().len());
        }
        assert_eq!(offsets, [0, 27, 55, 82, 109]);
    }

    #[test]
    fn segments_hold_four_writes() {
        assert_eq!(WRITES[0].segment(), 1);
        assert_eq!(WRITES[3].segment(), 1);
        assert_eq!(WRITES[4].segment(), 2);
        assert_eq!(WRITES[20].segment(), 6);
    }
}
