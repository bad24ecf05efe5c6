//! Property tests of the recovery scan, for every format: whatever happens to the tail
//! of a valid log (cut at any byte) or to any one of its bits (flipped), the scan
//! recovers a prefix of what was written, never a record that was not written, and it
//! recovers exactly the records that the damage did not touch.

use proptest::prelude::*;
use walab_core::codec::leveldb::{scan_log, HeaderKind, LogFormat, LogSegment, LogWriter};
use walab_core::codec::stream::{scan_stream, StreamWriter};
use walab_core::codec::tiny;
use walab_core::codec::write_batch::{BatchOp, WriteBatch};
use walab_core::codec::Op;
use walab_core::scan::{scan_tiny, ScanCheck};

// ---- the tiny store -------------------------------------------------------------------

#[derive(Clone, Debug)]
struct TinyWrite {
    op: Op,
    key: Vec<u8>,
    value: Vec<u8>,
}

fn tiny_writes(max: usize, value_bytes_max: usize) -> impl Strategy<Value = Vec<TinyWrite>> {
    prop::collection::vec(
        (any::<bool>(), prop::collection::vec(any::<u8>(), 0..12), prop::collection::vec(any::<u8>(), 0..value_bytes_max))
            .prop_map(|(put, key, value)| TinyWrite {
                op: if put { Op::Put } else { Op::Del },
                key,
                value: if put { value } else { Vec::new() },
            }),
        0..max,
    )
}

/// The log bytes, each record's end offset, and the written records.
fn tiny_log(writes: &[TinyWrite], zero_tail: usize) -> (Vec<u8>, Vec<usize>, Vec<tiny::TinyRecord>) {
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    let mut records = Vec::new();
    for (index, write) in writes.iter().enumerate() {
        let seq = index as u64 + 1;
        bytes.extend(tiny::encode(seq, write.op, &write.key, &write.value));
        ends.push(bytes.len());
        records.push(tiny::TinyRecord { seq, op: write.op, key: write.key.clone(), value: write.value.clone() });
    }
    bytes.resize(bytes.len() + zero_tail, 0);
    (bytes, ends, records)
}

fn tiny_recovered(bytes: &[u8]) -> Vec<tiny::TinyRecord> {
    scan_tiny(&[bytes], 0).records.into_iter().map(|accepted| accepted.record).collect()
}

/// How many records lie wholly before byte `at`.
fn whole_before(ends: &[usize], at: usize) -> usize {
    ends.iter().take_while(|&&end| end <= at).count()
}

/// The index of the record holding byte `at` (records.len() if it is past them all).
fn holding(ends: &[usize], at: usize) -> usize {
    ends.iter().take_while(|&&end| end <= at).count()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn tiny_every_truncation_recovers_the_whole_records_before_the_cut(
        writes in tiny_writes(8, 40),
        zero_tail in 0usize..40,
    ) {
        let (bytes, ends, records) = tiny_log(&writes, zero_tail);
        for cut in 0..=bytes.len() {
            let recovered = tiny_recovered(&bytes[..cut]);
            prop_assert_eq!(&recovered[..], &records[..whole_before(&ends, cut)]);
        }
    }

    #[test]
    fn tiny_every_bit_flip_recovers_exactly_the_untouched_prefix(
        writes in tiny_writes(6, 30),
        zero_tail in 0usize..16,
    ) {
        let (bytes, ends, records) = tiny_log(&writes, zero_tail);
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let recovered = tiny_recovered(&damaged);
            prop_assert_eq!(&recovered[..], &records[..holding(&ends, bit / 8)], "bit {}", bit);
        }
    }
}

// ---- LevelDB / RocksDB ----------------------------------------------------------------

fn batch_ops() -> impl Strategy<Value = Vec<BatchOp>> {
    let op = (0u8..4, prop::collection::vec(any::<u8>(), 0..10), prop::collection::vec(any::<u8>(), 0..40), 0u32..3)
        .prop_map(|(kind, key, value, column_family)| match kind {
            0 => BatchOp::Put { column_family, key, value },
            1 => BatchOp::Delete { column_family, key },
            2 => BatchOp::Merge { column_family, key, value },
            _ => BatchOp::SingleDelete { column_family, key },
        });
    prop::collection::vec(op, 1..4)
}

/// Batches numbered from seq 1, with `big_value_bytes` put into the middle one.
fn numbered(batches: Vec<Vec<BatchOp>>, big_value_bytes: usize) -> Vec<WriteBatch> {
    let middle = batches.len() / 2;
    let mut seq = 1;
    batches
        .into_iter()
        .enumerate()
        .map(|(index, mut ops)| {
            if index == middle && big_value_bytes > 0 {
                ops.push(BatchOp::Put { column_family: 0, key: b"big".to_vec(), value: vec![0xab; big_value_bytes] });
            }
            let batch = WriteBatch::new(seq, ops);
            seq = batch.next_seq();
            batch
        })
        .collect()
}

fn block_log(kind: HeaderKind, batches: &[WriteBatch]) -> (Vec<u8>, Vec<usize>) {
    let mut writer = LogWriter::new(kind);
    let mut ends = Vec::new();
    for batch in batches {
        writer.add_batch(batch);
        ends.push(writer.bytes().len());
    }
    (writer.into_bytes(), ends)
}

fn block_recovered(format: LogFormat, bytes: &[u8], log_number: Option<u32>) -> Vec<WriteBatch> {
    scan_log(format, &[LogSegment { bytes, log_number }], 0).records.into_iter().map(|record| record.batch).collect()
}

/// The byte ranges of block trailers in a valid log (their contents are ignored by
/// every reader, so flipping them changes nothing).
fn trailers(format: LogFormat, bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    scan_log(format, &[LogSegment { bytes, log_number: None }], 0)
        .checks
        .iter()
        .filter_map(|check| match check {
            ScanCheck::BlockTrailer { offset, bytes, .. } => Some(*offset as usize..(*offset + *bytes) as usize),
            _ => None,
        })
        .collect()
}

fn header_kind(recyclable: bool) -> (HeaderKind, LogFormat, Option<u32>) {
    if recyclable {
        (HeaderKind::Recyclable { log_number: 77 }, LogFormat::RocksDb, Some(77))
    } else {
        (HeaderKind::Legacy, LogFormat::LevelDb, None)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn block_log_every_truncation_recovers_the_whole_records_before_the_cut(
        batches in prop::collection::vec(batch_ops(), 0..6),
        recyclable in any::<bool>(),
    ) {
        let (kind, format, log_number) = header_kind(recyclable);
        let batches = numbered(batches, 0);
        let (bytes, ends) = block_log(kind, &batches);
        for cut in 0..=bytes.len() {
            let recovered = block_recovered(format, &bytes[..cut], log_number);
            prop_assert_eq!(&recovered[..], &batches[..whole_before(&ends, cut)]);
        }
    }

    #[test]
    fn block_log_every_bit_flip_recovers_exactly_the_untouched_prefix(
        batches in prop::collection::vec(batch_ops(), 0..4),
        recyclable in any::<bool>(),
    ) {
        let (kind, format, log_number) = header_kind(recyclable);
        let batches = numbered(batches, 0);
        let (bytes, ends) = block_log(kind, &batches);
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let recovered = block_recovered(format, &damaged, log_number);
            prop_assert_eq!(&recovered[..], &batches[..holding(&ends, bit / 8)], "bit {}", bit);
        }
    }
}

proptest! {
    // Logs with a record over two blocks (FIRST, MIDDLE, LAST) are too long to damage at
    // every byte, so proptest picks the cut and the bit.
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn fragmented_log_truncation_and_bit_flip(
        batches in prop::collection::vec(batch_ops(), 1..5),
        big_value_bytes in 32_000usize..80_000,
        recyclable in any::<bool>(),
        cut_fraction in 0.0f64..=1.0,
        bit_fraction in 0.0f64..1.0,
    ) {
        let (kind, format, log_number) = header_kind(recyclable);
        let batches = numbered(batches, big_value_bytes);
        let (bytes, ends) = block_log(kind, &batches);
        prop_assert_eq!(&block_recovered(format, &bytes, log_number)[..], &batches[..]);

        let cut = ((bytes.len() as f64) * cut_fraction) as usize;
        let recovered = block_recovered(format, &bytes[..cut], log_number);
        prop_assert_eq!(&recovered[..], &batches[..whole_before(&ends, cut)]);

        let bit = ((bytes.len() * 8) as f64 * bit_fraction) as usize;
        let mut damaged = bytes.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        let recovered = block_recovered(format, &damaged, log_number);
        if trailers(format, &bytes).iter().any(|range| range.contains(&(bit / 8))) {
            prop_assert_eq!(&recovered[..], &batches[..]);
        } else {
            prop_assert_eq!(&recovered[..], &batches[..holding(&ends, bit / 8)]);
        }
    }
}

// ---- the stream WAL -------------------------------------------------------------------

fn stream_log(frames: &[Vec<Vec<u8>>], zero_tail: usize) -> (Vec<u8>, Vec<usize>) {
    let mut writer = StreamWriter::new(1 << 20);
    let mut ends = Vec::new();
    for records in frames {
        writer.add_batch(records.clone());
        ends.push(writer.bytes().len());
    }
    let mut bytes = writer.into_bytes();
    bytes.resize(bytes.len() + zero_tail, 0);
    (bytes, ends)
}

fn stream_recovered(bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    scan_stream(&[bytes], Some(1 << 20), 0).frames.into_iter().map(|accepted| accepted.frame.records).collect()
}

fn stream_frames() -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
    prop::collection::vec(prop::collection::vec(prop::collection::vec(any::<u8>(), 0..30), 0..4), 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn stream_every_truncation_recovers_the_whole_frames_before_the_cut(
        frames in stream_frames(),
        zero_tail in 0usize..40,
    ) {
        let (bytes, ends) = stream_log(&frames, zero_tail);
        for cut in 0..=bytes.len() {
            prop_assert_eq!(&stream_recovered(&bytes[..cut])[..], &frames[..whole_before(&ends, cut)]);
        }
    }

    #[test]
    fn stream_every_bit_flip_recovers_exactly_the_untouched_prefix(
        frames in stream_frames(),
        zero_tail in 0usize..20,
    ) {
        let (bytes, ends) = stream_log(&frames, zero_tail);
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            prop_assert_eq!(&stream_recovered(&damaged)[..], &frames[..holding(&ends, bit / 8)], "bit {}", bit);
        }
    }
}
