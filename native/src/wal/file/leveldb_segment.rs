//! Segments in LevelDB's log format: one logical record per commit group.
//!
//! With `--format leveldb` the file backend writes what LevelDB itself would write:
//! 32 KiB blocks, legacy 7-byte headers with masked CRC32C, records cut into FIRST /
//! MIDDLE / LAST fragments at block boundaries, zero trailers, and in each logical
//! record a `WriteBatch` (seq, count, then a tag, key and value per put). Like LevelDB's
//! `BuildBatchGroup`, the whole group-commit batch becomes *one* logical record: after a
//! torn write the group is kept or lost as a unit, where the tiny-store format tears
//! record by record (Part 4 and Part 7 of the teaching page).
//!
//! The driver and the machine still speak tiny-store records (seq = ticket); the backend
//! transcodes each batch as it persists it. Because the physical bytes differ from the
//! machine's, the backend keeps its own write position in the segment and makes each
//! segment file [`physical_segment_bytes`] long, enough for any batch mix. Recovery
//! uses the core's [`walab_core::codec::leveldb::scan_log`] and then appends in a fresh
//! segment, so the writer never has to resume in the middle of a block.

use walab_core::checksum::{crc32c, mask_crc32c};
use walab_core::codec::leveldb::{BLOCK_BYTES, LEGACY_HEADER_BYTES, TYPE_FIRST, TYPE_FULL, TYPE_LAST, TYPE_MIDDLE};
use walab_core::codec::tiny::{self, TinyRecord, HEADER_BYTES};
use walab_core::codec::write_batch::{encode_batch, BatchOp, WriteBatch};
use walab_core::codec::Op;

/// The file size for a segment whose machine-side (tiny-store) capacity is `logical`.
/// A LevelDB group record is never more than a fifth larger than the same writes as
/// tiny-store records (a one-write group: 22 bytes against 19, plus at most a 6-byte
/// trailer per block), so a quarter more plus two blocks always suffices.
pub fn physical_segment_bytes(logical: u64) -> u64 {
    logical + logical / 4 + 2 * BLOCK_BYTES as u64
}

/// One group-commit batch (tiny-store records back to back) as a LevelDB `WriteBatch`
/// payload. The records were made by this process, so a malformed one is a bug.
pub fn transcode_batch(tiny_bytes: &[u8]) -> Vec<u8> {
    let mut ops = Vec::new();
    let mut first_seq = None;
    let mut rest = tiny_bytes;
    while !rest.is_empty() {
        let length = u16::from_le_bytes([rest[4], rest[5]]) as usize;
        let payload = &rest[HEADER_BYTES..HEADER_BYTES + length];
        let record = tiny::decode_payload(payload).expect("the driver framed this record");
        first_seq.get_or_insert(record.seq);
        ops.push(match record.op {
            Op::Put => BatchOp::Put { column_family: 0, key: record.key, value: record.value },
            Op::Del => BatchOp::Delete { column_family: 0, key: record.key },
        });
        rest = &rest[HEADER_BYTES + length..];
    }
    encode_batch(&WriteBatch::new(first_seq.unwrap_or(0), ops))
}

/// The physical bytes of one logical record written at `file_offset`: fragments with
/// legacy headers, a zero trailer where fewer than 7 bytes are left in a block, exactly
/// as LevelDB's `log::Writer::AddRecord` lays them out.
pub fn frame_at(file_offset: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 2 * LEGACY_HEADER_BYTES + 8);
    let mut position = file_offset as usize;
    let mut rest = payload;
    let mut begin = true;
    // Bounded: each pass emits a fragment (at least its header) or a trailer.
    loop {
        let block_left = BLOCK_BYTES - position % BLOCK_BYTES;
        if block_left < LEGACY_HEADER_BYTES {
            out.resize(out.len() + block_left, 0);
            position += block_left;
            continue;
        }
        let room = block_left - LEGACY_HEADER_BYTES;
        let (now, later) = rest.split_at(rest.len().min(room));
        let end = later.is_empty();
        let record_type = match (begin, end) {
            (true, true) => TYPE_FULL,
            (true, false) => TYPE_FIRST,
            (false, false) => TYPE_MIDDLE,
            (false, true) => TYPE_LAST,
        };
        let crc = mask_crc32c(crc32c(&[&[record_type], now]));
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&(now.len() as u16).to_le_bytes());
        out.push(record_type);
        out.extend_from_slice(now);
        position += LEGACY_HEADER_BYTES + now.len();
        rest = later;
        begin = false;
        if end {
            return out;
        }
    }
}

/// The writes of a recovered `WriteBatch`, as tiny-store records (seq of the first, + 1 ...).
pub fn batch_records(batch: &WriteBatch) -> Vec<TinyRecord> {
    let mut seq = batch.seq;
    let mut records = Vec::new();
    for op in &batch.ops {
        let (op, key, value) = match op {
            BatchOp::Put { key, value, .. } => (Op::Put, key.clone(), value.clone()),
            BatchOp::Delete { key, .. } | BatchOp::SingleDelete { key, .. } => (Op::Del, key.clone(), Vec::new()),
            _ => continue,
        };
        records.push(TinyRecord { seq, op, key, value });
        seq += 1;
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::codec::leveldb::{scan_log, HeaderKind, LogFormat, LogSegment, LogWriter};

    fn batch_of(records: &[(u64, &[u8], &[u8])]) -> Vec<u8> {
        records.iter().flat_map(|(seq, key, value)| tiny::encode(*seq, Op::Put, key, value)).collect()
    }

    #[test]
    fn framing_at_running_offsets_matches_the_codec_s_writer() {
        let payloads: Vec<Vec<u8>> = (0..40u64)
            .map(|n| transcode_batch(&batch_of(&[(n * 3 + 1, b"key", &vec![n as u8; (n as usize * 997) % 70_000]), (n * 3 + 2, b"k2", b"v"), (n * 3 + 3, b"k3", b"")])))
            .collect();
        let mut ours = Vec::new();
        let mut theirs = LogWriter::new(HeaderKind::Legacy);
        for payload in &payloads {
            ours.extend_from_slice(&frame_at(ours.len() as u64, payload));
            theirs.add_record(payload);
        }
        assert_eq!(ours, theirs.bytes());
        let scan = scan_log(LogFormat::LevelDb, &[LogSegment { bytes: &ours, log_number: None }], 0);
        assert_eq!(scan.records.len(), 40);
        let records = batch_records(&scan.records[1].batch);
        assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![4, 5, 6]);
        assert_eq!(records[1].key, b"k2");
    }

    #[test]
    fn a_group_record_stays_within_the_physical_bound() {
        // The worst case: one-write groups of the smallest record.
        let logical = 64 * 1024u64;
        let tiny_record = tiny::encode(1, Op::Put, b"", b"");
        let groups = logical / tiny_record.len() as u64;
        let mut physical = 0u64;
        for _ in 0..groups {
            physical += frame_at(physical, &transcode_batch(&tiny_record)).len() as u64;
        }
        assert!(physical <= physical_segment_bytes(logical), "{physical}");
    }
}
