use super::*;
use crate::codec::write_batch::BatchOp;

fn put(seq: u64, key: &str, value: &[u8]) -> WriteBatch {
    WriteBatch::new(seq, vec![BatchOp::Put { column_family: 0, key: key.into(), value: value.to_vec() }])
}

fn one(bytes: &[u8]) -> [LogSegment<'_>; 1] {
    [LogSegment { bytes, log_number: None }]
}

#[test]
fn golden_full_record() {
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_batch(&put(1, "a", b"b"));
    let bytes = writer.into_bytes();
    let payload = [1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, b'a', 1, b'b'];
    let crc = mask_crc32c(crc32c(&[&[TYPE_FULL], &payload]));
    let mut expected = crc.to_le_bytes().to_vec();
    expected.extend([payload.len() as u8, 0, TYPE_FULL]);
    expected.extend(payload);
    assert_eq!(bytes, expected);
}

#[test]
fn golden_recyclable_record_checksums_the_log_number() {
    let mut writer = LogWriter::new(HeaderKind::Recyclable { log_number: 10 });
    writer.add_record(b"xyz");
    let bytes = writer.into_bytes();
    let crc = mask_crc32c(crc32c(&[&[TYPE_RECYCLABLE_FULL], &[10, 0, 0, 0], b"xyz"]));
    let mut expected = crc.to_le_bytes().to_vec();
    expected.extend([3, 0, TYPE_RECYCLABLE_FULL, 10, 0, 0, 0]);
    expected.extend(b"xyz");
    assert_eq!(bytes, expected);
}

#[test]
fn a_big_record_is_first_middle_last_and_reads_back() {
    let value = vec![0x5a; 80_000];
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_batch(&put(1, "small", b"x"));
    writer.add_batch(&put(2, "big", &value));
    writer.add_batch(&put(3, "after", b"y"));
    let bytes = writer.into_bytes();
    let scan = scan_log(LogFormat::LevelDb, &one(&bytes), 0);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::End, segment: 0, offset: bytes.len() as u64 });
    assert_eq!(scan.records.len(), 3);
    assert_eq!(scan.records[1].fragments, 3);
    assert_eq!(scan.records[1].batch, put(2, "big", &value));
    assert_eq!(scan.next_seq, 4);
    let types: Vec<u8> = scan
        .checks
        .iter()
        .filter_map(|check| match check {
            ScanCheck::Header { record_type, .. } => Some(*record_type),
            _ => None,
        })
        .collect();
    assert_eq!(types, [TYPE_FULL, TYPE_FIRST, TYPE_MIDDLE, TYPE_LAST, TYPE_FULL]);
}

#[test]
fn block_tails_are_zero_filled_and_exactly_a_header_gives_an_empty_first() {
    // Fill the first block so that exactly 7 bytes are left: payload of
    // BLOCK - 7 - 7 bytes, then the next record must start with an empty FIRST.
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_record(&vec![1u8; BLOCK_BYTES - 2 * LEGACY_HEADER_BYTES]);
    assert_eq!(writer.bytes().len(), BLOCK_BYTES - LEGACY_HEADER_BYTES);
    writer.add_record(b"next");
    let bytes = writer.bytes();
    assert_eq!(&bytes[BLOCK_BYTES - 3..BLOCK_BYTES - 1], &[0, 0]);
    assert_eq!(bytes[BLOCK_BYTES - 1], TYPE_FIRST);
    assert_eq!(bytes[BLOCK_BYTES + 6], TYPE_LAST);
    let (records, stop) = read_records(LogFormat::LevelDb, one(bytes)[0]);
    assert_eq!(records.len(), 2);
    assert_eq!(records[1], ((BLOCK_BYTES - 7) as u64, b"next".to_vec()));
    assert_eq!(stop.reason, StopReason::End);

    // Leave 3 bytes: they become a zero trailer.
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_record(&vec![1u8; BLOCK_BYTES - LEGACY_HEADER_BYTES - 3]);
    writer.add_record(b"next");
    let bytes = writer.bytes();
    assert_eq!(&bytes[BLOCK_BYTES - 3..BLOCK_BYTES], &[0, 0, 0]);
    assert_eq!(bytes[BLOCK_BYTES + 6], TYPE_FULL);
    let (records, _) = read_records(LogFormat::LevelDb, one(bytes)[0]);
    assert_eq!(records[1].0, BLOCK_BYTES as u64);
}

#[test]
fn a_resumed_writer_lays_out_what_one_writer_would() {
    let payloads: Vec<Vec<u8>> = (0..40usize).map(|n| vec![n as u8; (n * 997) % 70_000]).collect();
    let mut whole = LogWriter::new(HeaderKind::Legacy);
    let mut pieces = Vec::new();
    let mut buffer = Vec::new();
    for payload in &payloads {
        whole.add_record(payload);
        let mut writer = LogWriter::resume(HeaderKind::Legacy, pieces.len() as u64, buffer);
        writer.add_record(payload);
        assert_eq!(writer.start_offset(), pieces.len() as u64);
        pieces.extend_from_slice(writer.bytes());
        assert_eq!(writer.end_offset(), pieces.len() as u64);
        buffer = writer.into_bytes();
    }
    assert_eq!(pieces, whole.bytes());
    assert_eq!(read_records(LogFormat::LevelDb, one(&pieces)[0]).0.len(), 40);
}

#[test]
fn recycled_file_stops_at_the_old_log_number() {
    let mut old = LogWriter::new(HeaderKind::Recyclable { log_number: 4 });
    for seq in 1..=5 {
        old.add_batch(&put(seq, "old", b"value-from-the-old-log"));
    }
    let mut new = LogWriter::new(HeaderKind::Recyclable { log_number: 9 });
    new.add_batch(&put(100, "new", b"value-from-the-old-log"));
    new.add_batch(&put(101, "new", b"value-from-the-old-log"));
    let mut file = old.into_bytes();
    let new_len = new.bytes().len();
    file[..new_len].copy_from_slice(new.bytes());
    let scan = scan_log(LogFormat::RocksDb, &[LogSegment { bytes: &file, log_number: Some(9) }], 0);
    assert_eq!(scan.records.len(), 2);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::OldRecord, segment: 0, offset: new_len as u64 });
    assert_eq!(scan.next_seq, 102);
    // Without a log number the first record's is taken.
    let scan = scan_log(LogFormat::RocksDb, &one(&file), 0);
    assert_eq!(scan.stop.reason, StopReason::OldRecord);
    // LevelDB does not know types 5-8.
    let scan = scan_log(LogFormat::LevelDb, &one(&file), 0);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::BadFragment, segment: 0, offset: 0 });
}

#[test]
fn torn_fragmented_record_is_short_at_its_first_fragment() {
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_batch(&put(1, "a", b"b"));
    let first_len = writer.bytes().len() as u64;
    writer.add_batch(&put(2, "big", &vec![7u8; 50_000]));
    let bytes = writer.into_bytes();
    let cut = &bytes[..BLOCK_BYTES + 100];
    let scan = scan_log(LogFormat::LevelDb, &one(cut), 0);
    assert_eq!(scan.records.len(), 1);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::Short, segment: 0, offset: first_len });
    // Zeros where the LAST fragment should be: still torn, not clean.
    let mut zeroed = bytes.clone();
    zeroed[BLOCK_BYTES..].fill(0);
    let scan = scan_log(LogFormat::LevelDb, &one(&zeroed), 0);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::Short, segment: 0, offset: first_len });
}

#[test]
fn legacy_after_recyclable_is_an_old_record() {
    let mut new = LogWriter::new(HeaderKind::Recyclable { log_number: 2 });
    new.add_batch(&put(5, "k", b"v"));
    let mut old = LogWriter::new(HeaderKind::Legacy);
    old.add_batch(&put(1, "k", b"v"));
    let mut file = new.into_bytes();
    let cut = file.len() as u64;
    file.extend(old.into_bytes());
    let scan = scan_log(LogFormat::RocksDb, &one(&file), 0);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::OldRecord, segment: 0, offset: cut });
}

#[test]
fn zero_tail_and_segments() {
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_batch(&put(1, "a", b"b"));
    let mut first = writer.into_bytes();
    let end = first.len() as u64;
    first.resize(4096, 0);
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_batch(&put(2, "c", b"d"));
    let second = writer.into_bytes();
    let segments = [LogSegment { bytes: &first, log_number: None }, LogSegment { bytes: &second, log_number: None }];
    let scan = scan_log(LogFormat::LevelDb, &segments, 1);
    assert_eq!(scan.records.len(), 2);
    assert!(scan.records[0].already_flushed);
    assert!(!scan.records[1].already_flushed);
    assert!(scan.checks.contains(&ScanCheck::SegmentEnd { segment: 0, offset: end, reason: StopReason::Zero }));
    assert_eq!(scan.stop, ScanStop { reason: StopReason::End, segment: 1, offset: second.len() as u64 });
    assert_eq!(scan.next_seq, 3);
}

#[test]
fn bad_batch_is_bad_length_and_checksum_flip_is_checksum() {
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_record(b"not a batch");
    let scan = scan_log(LogFormat::LevelDb, &one(writer.bytes()), 0);
    assert_eq!(scan.stop.reason, StopReason::BadLength);
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    writer.add_batch(&put(1, "a", b"b"));
    let mut bytes = writer.into_bytes();
    bytes[10] ^= 0x10;
    assert_eq!(scan_log(LogFormat::LevelDb, &one(&bytes), 0).stop.reason, StopReason::Checksum);
}
