//! A commit group of tiny-store records as one LevelDB log record.
//!
//! The file WAL's `--format leveldb` writes what LevelDB itself would write: like
//! LevelDB's `BuildBatchGroup`, a whole group-commit batch becomes *one* logical record
//! whose payload is a [`WriteBatch`](super::write_batch), framed by the core's
//! [`LogWriter`](super::leveldb::LogWriter). After a torn write the group is kept or lost
//! as a unit, where the tiny-store format tears record by record.
//!
//! The writers and the group-commit machine still speak tiny-store records (seq =
//! ticket), so the batch header's seq is the first record's. Nothing needs decoding on the
//! way: a tiny put's payload after its seq is `op | klen | key | vlen | value`, and a
//! `WriteBatch` put entry is `tag | klen | key | vlen | value` with the same LEB128
//! lengths and tag 1 = the tiny store's PUT. So the group's payload is the batch header
//! followed by each record's bytes after its seq, copied. A delete's entry is the same
//! without the (empty) value; the tiny store's DEL is LevelDB's tag 0.
//!
//! Recovery goes the other way, from the [`WriteBatch`] the scan decoded back to tiny
//! records ([`group_records`]).

use super::leveldb::BLOCK_BYTES;
use super::tiny::{self, TinyRecord, OP_DEL, OP_PUT, SEQ_OFFSET};
use super::varint::get_varint;
use super::write_batch::{BatchOp, WriteBatch, BATCH_HEADER_BYTES};
use super::Op;

/// Bytes of a segment file that holds `tiny_bytes` of tiny-store records as group
/// records. A group record is never more than a fifth larger than the same writes as
/// tiny-store records (a one-write group: 22 bytes against 18, plus at most a 6-byte
/// trailer per block), so a quarter more plus two blocks always suffices.
pub fn log_bytes_max(tiny_bytes: u64) -> u64 {
    tiny_bytes + tiny_bytes / 4 + 2 * BLOCK_BYTES as u64
}

/// Writes the `WriteBatch` payload of one group into `out` (cleared first): the first
/// record's seq, the count, then each record's entry. The records are whole tiny records
/// made by this process (a batch's [`records`](crate::group_commit::Batch::records));
/// one that is not is a bug upstream, and panics.
pub fn encode_group<'a>(out: &mut Vec<u8>, records: impl ExactSizeIterator<Item = &'a [u8]>) {
    out.clear();
    let count = u32::try_from(records.len()).expect("a group's count fits in u32");
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&count.to_le_bytes());
    for (index, record) in records.enumerate() {
        assert!(record.len() > SEQ_OFFSET + 8, "a batch holds whole tiny records");
        if index == 0 {
            out[..8].copy_from_slice(&record[SEQ_OFFSET..SEQ_OFFSET + 8]);
        }
        let entry = &record[SEQ_OFFSET + 8..];
        match entry[0] {
            OP_PUT => out.extend_from_slice(entry),
            OP_DEL => {
                let (key_bytes, used) = get_varint(&entry[1..]).expect("a tiny record's key length");
                out.extend_from_slice(&entry[..1 + used + key_bytes as usize]);
            }
            other => panic!("a tiny record with op {other}"),
        }
    }
    debug_assert!(out.len() >= BATCH_HEADER_BYTES);
}

/// The writes of a recovered group, as tiny-store records (seq of the first, + 1 ...).
pub fn group_records(batch: &WriteBatch) -> Vec<TinyRecord> {
    let mut seq = batch.seq;
    let mut records = Vec::with_capacity(batch.ops.len());
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

/// Bytes of tiny-store records the writes of a recovered group took.
pub fn group_tiny_bytes(records: &[TinyRecord]) -> u64 {
    records.iter().map(|record| tiny::record_len(record.key.len(), record.value.len()) as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::tiny::HEADER_BYTES;
    use crate::codec::leveldb::{scan_log, HeaderKind, LogFormat, LogSegment, LogWriter};
    use crate::codec::write_batch::encode_batch;

    fn group(records: &[(u64, Op, &[u8], &[u8])]) -> Vec<Vec<u8>> {
        records.iter().map(|(seq, op, key, value)| tiny::encode(*seq, *op, key, value)).collect()
    }

    /// What the group is as a decoded batch, encoded by the batch codec.
    fn as_write_batch(records: &[Vec<u8>]) -> Vec<u8> {
        let decoded: Vec<TinyRecord> =
            records.iter().map(|record| tiny::decode_payload(&record[HEADER_BYTES..]).unwrap()).collect();
        let ops = decoded
            .iter()
            .map(|record| match record.op {
                Op::Put => BatchOp::Put { column_family: 0, key: record.key.clone(), value: record.value.clone() },
                Op::Del => BatchOp::Delete { column_family: 0, key: record.key.clone() },
            })
            .collect();
        encode_batch(&WriteBatch::new(decoded.first().map_or(0, |record| record.seq), ops))
    }

    #[test]
    fn a_group_s_payload_is_the_write_batch_of_its_records() {
        let long_key = vec![b'k'; 200];
        let long_value = vec![9u8; 5_000];
        let records = group(&[
            (41, Op::Put, b"user:1", b"alice"),
            (42, Op::Del, b"user:2", b""),
            (43, Op::Put, &long_key, &long_value),
            (44, Op::Put, b"", b""),
            (45, Op::Del, &long_key, b""),
        ]);
        let mut payload = Vec::new();
        encode_group(&mut payload, records.iter().map(Vec::as_slice));
        assert_eq!(payload, as_write_batch(&records));
        assert_eq!(&payload[..8], &41u64.to_le_bytes());
        assert_eq!(&payload[8..12], &5u32.to_le_bytes());
        // And back: the scan's batch gives the same records.
        let mut writer = LogWriter::new(HeaderKind::Legacy);
        writer.add_record(&payload);
        let scan = scan_log(LogFormat::LevelDb, &[LogSegment { bytes: writer.bytes(), log_number: None }], 0);
        let back = group_records(&scan.records[0].batch);
        let expected: Vec<TinyRecord> =
            records.iter().map(|record| tiny::decode_payload(&record[HEADER_BYTES..]).unwrap()).collect();
        assert_eq!(back, expected);
        assert_eq!(group_tiny_bytes(&back), records.iter().map(|r| r.len() as u64).sum::<u64>());
    }

    #[test]
    fn a_group_record_stays_within_the_segment_bound() {
        // The worst case: one-write groups of the smallest record.
        let tiny_bytes = 64 * 1024u64;
        let smallest = tiny::encode(1, Op::Put, b"", b"");
        let groups = tiny_bytes / smallest.len() as u64;
        let mut writer = LogWriter::new(HeaderKind::Legacy);
        let mut payload = Vec::new();
        for _ in 0..groups {
            encode_group(&mut payload, std::iter::once(smallest.as_slice()));
            writer.add_record(&payload);
        }
        let written = writer.bytes().len() as u64;
        assert!(written <= log_bytes_max(tiny_bytes), "{written}");
        assert!(written > tiny_bytes, "{written}: the bound is not trivially loose");
    }
}
