//! Recovery plans for the segment files a crash can leave.

use super::*;

const FILE: u64 = 4096;
const TINY: SegmentLayout = SegmentLayout { file_bytes: FILE, fresh_segment_on_open: false };
const LEVELDB: SegmentLayout = SegmentLayout { file_bytes: FILE, fresh_segment_on_open: true };

fn file(number: u64, dirty_end: u64) -> SegmentFile {
    SegmentFile { number, bytes: FILE, dirty_end }
}

/// `count` records of 50 bytes from `offset` in file index `segment`, seqs from `seq`.
fn records(segment: usize, offset: u64, seq: u64, count: u64) -> Vec<FoundRecord> {
    (0..count).map(|n| FoundRecord { segment, offset: offset + 50 * n, len: 50, seq: seq + n }).collect()
}

fn planned(files: &[SegmentFile], found: &[FoundRecord], stop: ScanStop, layout: SegmentLayout) -> Result<RecoveryPlan, Corruption> {
    plan_recovery(files, &SegmentFound::summarize(files.len(), found), stop, layout)
}

fn stop(reason: StopReason, segment: usize, offset: u64) -> ScanStop {
    ScanStop { reason, segment, offset }
}

#[test]
fn an_empty_directory_starts_at_segment_one() {
    let plan = planned(&[], &[], stop(StopReason::End, 0, 0), TINY).unwrap();
    assert_eq!((plan.segment, plan.segment_bytes, plan.next_seq, plan.lsn), (1, 0, 1, 0));
    assert_eq!(plan.segments, [(1, None)]);
    assert_eq!((plan.remove.clone(), plan.spare, plan.torn_tail), (vec![], None, None));
}

#[test]
fn a_clean_log_resumes_after_its_last_record_and_keeps_its_spare() {
    let files = [file(1, 150), file(2, 100), file(3, 0)];
    let found = [records(0, 0, 1, 3), records(1, 0, 4, 2)].concat();
    let plan = planned(&files, &found, stop(StopReason::Zero, 2, 0), TINY).unwrap();
    assert_eq!((plan.segment, plan.segment_bytes, plan.next_seq, plan.lsn), (2, 100, 6, 250));
    assert_eq!(plan.spare, Some(3));
    assert_eq!(plan.remove, Vec::<u64>::new());
    assert_eq!(plan.segments, [(1, Some(3)), (2, Some(5))]);
    assert_eq!(plan.torn_tail, None);
}

#[test]
fn a_torn_tail_is_cut_from_the_last_good_record_to_the_last_non_zero_byte() {
    let files = [file(1, 180), file(2, 0)];
    let found = records(0, 0, 1, 2);
    let plan = planned(&files, &found, stop(StopReason::Checksum, 0, 100), TINY).unwrap();
    assert_eq!(plan.torn_tail, Some(TornTail { segment: 1, from: 100, to: 180, reason: StopReason::Checksum }));
    assert_eq!((plan.segment, plan.segment_bytes, plan.next_seq), (1, 100, 3));
    assert_eq!(plan.spare, Some(2));
}

#[test]
fn damage_before_a_segment_with_bytes_is_corruption() {
    let files = [file(1, 180), file(2, 50)];
    let found = [records(0, 0, 1, 2), records(1, 0, 3, 1)].concat();
    let error = planned(&files, &found, stop(StopReason::Checksum, 0, 100), TINY).unwrap_err();
    assert_eq!(error, Corruption { segment: 1, offset: 100, reason: StopReason::Checksum });
    assert_eq!(error.to_string(), "checksum mismatch at byte 100, and later segments hold records");
}

#[test]
fn empty_and_half_made_segments_past_the_resume_point_are_removed() {
    // Segment 3 is all zeros but short (its zero-fill was cut), segment 4 is an old spare.
    let files = [file(1, 100), file(2, 0), SegmentFile { number: 3, bytes: 1000, dirty_end: 0 }, file(4, 0)];
    let found = records(0, 0, 1, 2);
    let plan = planned(&files, &found, stop(StopReason::Zero, 3, 0), TINY).unwrap();
    assert_eq!((plan.segment, plan.segment_bytes), (1, 100));
    assert_eq!(plan.spare, Some(2));
    assert_eq!(plan.remove, [3, 4]);
    assert_eq!(plan.segments, [(1, Some(2))]);
}

#[test]
fn leveldb_appends_in_a_fresh_segment_and_counts_a_group_once() {
    let files = [file(1, 300)];
    // One group record of three writes at offset 0, 300 bytes long.
    let found: Vec<FoundRecord> = (1..=3).map(|seq| FoundRecord { segment: 0, offset: 0, len: 300, seq }).collect();
    let plan = planned(&files, &found, stop(StopReason::Zero, 0, 300), LEVELDB).unwrap();
    assert_eq!((plan.segment, plan.segment_bytes, plan.lsn, plan.next_seq), (2, 0, 300, 4));
    assert_eq!(plan.segments, [(1, Some(3)), (2, None)]);
    // The tiny format would go on in the same segment.
    let plan = planned(&files, &found, stop(StopReason::Zero, 0, 300), TINY).unwrap();
    assert_eq!((plan.segment, plan.segment_bytes), (1, 300));
}

#[test]
fn a_segment_of_another_size_is_kept_with_its_records_or_made_again_when_empty() {
    let other = SegmentFile { number: 1, bytes: 2 * FILE, dirty_end: 100 };
    let found = records(0, 0, 1, 2);
    let plan = planned(&[other], &found, stop(StopReason::Zero, 0, 100), TINY).unwrap();
    assert_eq!((plan.segment, plan.segment_bytes), (2, 0));
    assert_eq!(plan.segments, [(1, Some(2)), (2, None)]);
    // A short, all-zero segment after one with records: the crash came during its zero-fill.
    let short = SegmentFile { number: 2, bytes: 10, dirty_end: 0 };
    let damaged = SegmentFile { number: 2, bytes: 10, dirty_end: 7 };
    let plan = planned(&[file(1, 100), damaged], &found, stop(StopReason::Short, 1, 0), TINY).unwrap();
    assert_eq!((plan.segment, plan.segment_bytes), (2, 0));
    assert_eq!(plan.remove, [2], "remade at its full size");
    let plan = planned(&[file(1, 100), short], &found, stop(StopReason::Zero, 1, 0), TINY).unwrap();
    assert_eq!(plan.remove, [2]);
    assert_eq!((plan.segment, plan.segment_bytes), (1, 100));
}
