use super::*;
use crate::tiny_store::WRITES;

/// A zero-filled segment holding these writes' records, `segment_bytes` long.
fn segment(ids: std::ops::RangeInclusive<u64>, segment_bytes: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for id in ids {
        bytes.extend(crate::tiny_store::write_by_id(id).unwrap().record());
    }
    assert!(bytes.len() <= segment_bytes);
    bytes.resize(segment_bytes, 0);
    bytes
}

fn seqs(scan: &TinyScan) -> Vec<u64> {
    scan.records.iter().map(|accepted| accepted.record.seq).collect()
}

#[test]
fn wal1_scans_to_its_zero_tail() {
    let wal1 = segment(1..=4, 256);
    let scan = scan_tiny(&[&wal1], 0);
    assert_eq!(seqs(&scan), [1, 2, 3, 4]);
    let offsets: Vec<u64> = scan.records.iter().map(|accepted| accepted.offset).collect();
    assert_eq!(offsets, [0, 29, 56, 85]);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::Zero, segment: 0, offset: 114 });
    assert_eq!(scan.next_seq, 5);
    assert_eq!(scan.records[0].record.key, WRITES[0].key.as_bytes());
}

#[test]
fn exact_end_is_end() {
    let wal1 = segment(1..=4, 114);
    let scan = scan_tiny(&[&wal1], 0);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::End, segment: 0, offset: 114 });
}

#[test]
fn clean_ends_lead_into_the_next_segment() {
    let wal5 = segment(17..=20, 256);
    let wal6 = segment(21..=24, 256);
    let scan = scan_tiny(&[&wal5, &wal6], 18);
    assert_eq!(seqs(&scan), [17, 18, 19, 20, 21, 22, 23, 24]);
    assert!(scan.records[1].already_flushed);
    assert!(!scan.records[2].already_flushed);
    assert_eq!(scan.applied().count(), 6);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::Zero, segment: 1, offset: 109 });
    assert_eq!(scan.next_seq, 25);
    let wal5_end = wal5.iter().rposition(|&b| b != 0).unwrap() as u64 + 1;
    assert!(scan.checks.contains(&ScanCheck::SegmentEnd { segment: 0, offset: wal5_end, reason: StopReason::Zero }));
}

#[test]
fn part7_case1_stops_at_record_24_with_a_checksum_mismatch() {
    // Units 1 and 2 (bytes 32..96) reached the media, unit 3 (96..128) did not: record
    // 24 (82..109) keeps its header and its first 7 payload bytes, then zeros.
    let written = segment(21..=24, 128);
    let mut on_media = written.clone();
    on_media[96..128].fill(0);
    let scan = scan_tiny(&[&on_media], 20);
    assert_eq!(seqs(&scan), [21, 22, 23]);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::Checksum, segment: 0, offset: 82 });
    assert_eq!(scan.next_seq, 24);
    let mismatch = scan.checks.iter().find(|check| matches!(check, ScanCheck::Checksum { ok: false, .. }));
    assert!(mismatch.is_some());
}

#[test]
fn a_torn_segment_ends_the_whole_replay() {
    let mut wal5 = segment(17..=20, 256);
    wal5[40] ^= 1;
    let wal6 = segment(21..=24, 256);
    let scan = scan_tiny(&[&wal5, &wal6], 0);
    assert_eq!(seqs(&scan), [17]);
    assert_eq!(scan.stop.segment, 0);
    assert_eq!(scan.stop.reason, StopReason::Checksum);
    assert!(!scan.checks.iter().any(|check| matches!(check, ScanCheck::SegmentStart { segment: 1, .. })));
}

#[test]
fn already_flushed_records_are_reported_and_skipped() {
    let wal1 = segment(1..=4, 114);
    let scan = scan_tiny(&[&wal1], 4);
    assert_eq!(scan.records.len(), 4);
    assert!(scan.records.iter().all(|accepted| accepted.already_flushed));
    assert_eq!(scan.applied().count(), 0);
    assert_eq!(scan.next_seq, 5);
    let skips = scan.checks.iter().filter(|check| matches!(check, ScanCheck::AlreadyFlushed { .. })).count();
    assert_eq!(skips, 4);
}

#[test]
fn short_header_and_payload() {
    let wal1 = segment(1..=2, 56);
    let scan = scan_tiny(&[&wal1[..33]], 0);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::Short, segment: 0, offset: 29 });
    let scan = scan_tiny(&[&wal1[..40]], 0);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::Short, segment: 0, offset: 29 });
    let mut zero_tail = wal1[..29].to_vec();
    zero_tail.extend([0; 5]);
    assert_eq!(scan_tiny(&[&zero_tail], 0).stop.reason, StopReason::Zero);
}

#[test]
fn bad_length_and_bad_fragment() {
    let mut record = WRITES[0].record();
    record[4] = 3;
    record[5] = 0;
    assert_eq!(scan_tiny(&[&record], 0).stop.reason, StopReason::BadLength);
    // A FIRST-type record with a valid checksum: the tiny store never writes one.
    let mut record = WRITES[0].record();
    record[6] = 2;
    let crc = crc32c(&[&record[6..]]);
    record[..4].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(scan_tiny(&[&record], 0).stop.reason, StopReason::BadFragment);
}

#[test]
fn checks_are_in_order_for_one_record() {
    let record = WRITES[0].record();
    let scan = scan_tiny(&[&record], 0);
    let kinds: Vec<&str> = scan
        .checks
        .iter()
        .map(|check| match check {
            ScanCheck::SegmentStart { .. } => "segment_start",
            ScanCheck::Header { .. } => "header",
            ScanCheck::LengthBound { .. } => "length_bound",
            ScanCheck::PayloadPresent { .. } => "payload_present",
            ScanCheck::Checksum { .. } => "checksum",
            ScanCheck::Fragment { .. } => "fragment",
            ScanCheck::Payload { .. } => "payload",
            ScanCheck::Accept { .. } => "accept",
            ScanCheck::Stop { .. } => "stop",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["segment_start", "header", "length_bound", "payload_present", "checksum", "fragment", "payload", "accept", "stop"]
    );
}

#[cfg(feature = "serde")]
#[test]
fn checks_serialize_for_the_browser() {
    let mut record = WRITES[0].record();
    record[20] ^= 1;
    let scan = scan_tiny(&[&record], 0);
    let lines: Vec<String> = scan.checks.iter().map(|check| serde_json::to_string(check).unwrap()).collect();
    expect_test::expect![[r#"
        {"check":"segment_start","segment":0,"bytes":29}
        {"check":"header","segment":0,"offset":0,"header_bytes":7,"stored_checksum":291183855,"length":22,"record_type":1,"log_number":null,"frame_offset":null}
        {"check":"length_bound","segment":0,"offset":0,"length":22,"min":11,"max":65535,"ok":true}
        {"check":"payload_present","segment":0,"offset":0,"length":22,"available":22,"ok":true}
        {"check":"checksum","segment":0,"offset":0,"stored":291183855,"computed":3848653479,"ok":false}
        {"check":"stop","stop":{"reason":"checksum","segment":0,"offset":0}}"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn no_segments_is_an_empty_end() {
    let scan = scan_tiny(&[], 7);
    assert_eq!(scan.stop, ScanStop { reason: StopReason::End, segment: 0, offset: 0 });
    assert_eq!(scan.next_seq, 8);
    assert!(scan.records.is_empty());
}
