//! The walk over read objects: what recovery keeps, leaves out, deletes and refuses.

use super::*;
use crate::codec::stream::encode_frame_records;
use crate::codec::tiny;
use crate::codec::Op;
use crate::remote::layout::plan_chain;

fn session(epoch: u64, start_offset: u64, first_seq: u64) -> Session {
    Session { epoch, start_offset, first_seq }
}

/// An object of `epoch` at `start` holding records with seqs `seqs`, and its bytes.
fn object(epoch: u64, start: u64, seqs: std::ops::Range<u64>) -> (WalObject, Vec<u8>) {
    let records: Vec<Vec<u8>> = seqs.map(|seq| tiny::encode(seq, Op::Put, format!("k{seq}").as_bytes(), b"v")).collect();
    let bytes = encode_frame_records(start, records.iter().map(Vec::as_slice));
    (WalObject { epoch, start, end: start + bytes.len() as u64 }, bytes)
}

/// Plans the chain over `objects` and walks it with their bytes.
fn walk(objects: &[(WalObject, Vec<u8>)], sessions: &[Session], claimed: Option<u64>) -> Result<Walked, OutOfReach> {
    let listed: Vec<WalObject> = objects.iter().map(|(object, _)| *object).collect();
    let plan = plan_chain(&listed, sessions);
    let bodies: Vec<&[u8]> = plan
        .chain
        .iter()
        .map(|wanted| objects.iter().find(|(object, _)| object == wanted).map(|(_, b)| b.as_slice()).unwrap())
        .collect();
    walk_chain(&plan, &bodies, sessions, claimed)
}

fn seqs(walked: &Walked) -> Vec<u64> {
    walked.chain.iter().flat_map(|(_, records)| records.iter().map(|r| r.seq)).collect()
}

#[test]
fn a_whole_chain_is_kept_and_the_new_session_starts_after_it() {
    let a = object(1, 0, 1..4);
    let b = object(1, a.0.end, 4..6);
    let walked = walk(&[a.clone(), b.clone()], &[session(1, 0, 1)], Some(2)).unwrap();
    assert_eq!(seqs(&walked), [1, 2, 3, 4, 5]);
    assert_eq!((walked.start_offset, walked.next_seq), (b.0.end, 6));
    assert_eq!(walked.left_out, None);
    assert_eq!(walked.garbage, []);
}

#[test]
fn an_empty_log_resumes_at_the_last_session() {
    let walked = walk(&[], &[session(1, 0, 1), session(2, 500, 40)], Some(3)).unwrap();
    assert_eq!((walked.start_offset, walked.next_seq), (500, 40));
    assert!(walked.chain.is_empty());
}

#[test]
fn a_damaged_last_object_is_left_out_and_becomes_garbage() {
    let a = object(1, 0, 1..3);
    let mut b = object(1, a.0.end, 3..5);
    let last = b.1.len() - 1;
    b.1[last] ^= 0x40;
    let walked = walk(&[a.clone(), b.clone()], &[session(1, 0, 1)], Some(2)).unwrap();
    assert_eq!(seqs(&walked), [1, 2]);
    assert_eq!((walked.start_offset, walked.next_seq), (a.0.end, 3));
    assert!(matches!(walked.left_out, Some(LeftOut::LastObject { object, damage: ObjectDamage::Frame(StopReason::Checksum) }) if object == b.0));
    assert_eq!(walked.garbage, [b.0]);
    // A reader that claimed nothing deletes nothing.
    assert_eq!(walk(&[a, b], &[session(1, 0, 1)], None).unwrap().garbage, []);
}

#[test]
fn damage_with_a_valid_object_beyond_it_is_refused() {
    let a = object(1, 0, 1..3);
    let mut b = object(1, a.0.end, 3..5);
    b.1[20] ^= 0x01;
    let c = object(1, b.0.end, 5..6);
    let refusal = walk(&[a, b.clone(), c.clone()], &[session(1, 0, 1)], Some(2)).unwrap_err();
    assert!(matches!(refusal.stop, WalkStop::Damaged { object, .. } if object == b.0));
    assert_eq!(refusal.beyond, c.0);
}

#[test]
fn after_a_gap_the_same_session_s_tail_is_left_out_but_a_later_session_is_refused() {
    let a = object(1, 0, 1..3);
    let missing = object(1, a.0.end, 3..4);
    let tail = object(1, missing.0.end, 4..5);
    let walked = walk(&[a.clone(), tail.clone()], &[session(1, 0, 1)], Some(2)).unwrap();
    assert_eq!(seqs(&walked), [1, 2]);
    assert_eq!(walked.left_out, Some(LeftOut::AfterGap { offset: a.0.end, objects: 1 }));
    assert_eq!(walked.garbage, [tail.0]);
    // A later session started past the gap: what it recovered is out of reach.
    let later = object(2, missing.0.end, 4..5);
    let sessions = [session(1, 0, 1), session(2, missing.0.end, 4)];
    let refusal = walk(&[a.clone(), later.clone()], &sessions, Some(3)).unwrap_err();
    assert_eq!(refusal, OutOfReach { stop: WalkStop::Gap { offset: a.0.end }, beyond: later.0 });
}

#[test]
fn seqs_must_rise_by_one_across_objects() {
    let a = object(1, 0, 1..3);
    let b = object(1, a.0.end, 7..8);
    let walked = walk(&[a, b.clone()], &[session(1, 0, 1)], Some(2)).unwrap();
    assert_eq!(seqs(&walked), [1, 2]);
    assert!(matches!(
        walked.left_out,
        Some(LeftOut::LastObject { damage: ObjectDamage::SeqOrder { expected: 3, found: 7 }, .. })
    ));
}

#[test]
fn only_older_epochs_are_garbage() {
    // A fenced straggler of epoch 1 past session 2's start, and an unknown epoch's object.
    let a = object(1, 0, 1..3);
    let straggler = object(1, a.0.end, 3..4);
    let stranger = object(9, 0, 1..2);
    let sessions = [session(1, 0, 1), session(2, a.0.end, 3)];
    let walked = walk(&[a.clone(), straggler.clone(), stranger.clone()], &sessions, Some(2)).unwrap();
    assert_eq!(seqs(&walked), [1, 2]);
    assert_eq!(walked.garbage, [straggler.0], "epoch 9 is not older than the claim");
}

#[test]
fn damage_reads_as_one_line() {
    let damage = ObjectDamage::Size { expected: 100, found: 90 };
    assert_eq!(damage.to_string(), "90 bytes of frame, the key says 100");
    assert_eq!(ObjectDamage::Record(StopReason::Checksum).to_string(), "a record inside stops with checksum");
}

#[test]
fn a_chain_walk_hands_over_what_walk_chain_keeps_and_reads_nothing_past_damage() {
    let a = object(1, 0, 1..3);
    let mut b = object(1, a.0.end, 3..5);
    b.1[20] ^= 0x01;
    let c = object(1, b.0.end, 5..6);
    let sessions = [session(1, 0, 1)];
    // A whole chain: the same records, in order, and the same decisions.
    let whole = walk(&[a.clone(), object(1, a.0.end, 3..5)], &sessions, Some(2)).unwrap();
    let mut walker = ChainWalk::new();
    let mut seen = Vec::new();
    let plan_ab = plan_chain(&[a.0, b.0], &sessions);
    let good_b = object(1, a.0.end, 3..5);
    for (object, body) in plan_ab.chain.iter().zip([&a.1, &good_b.1]) {
        assert!(walker.object(object, body, &mut |record| seen.push(record.seq)));
    }
    let summary = walker.finish(&plan_ab, &sessions, Some(2)).unwrap();
    assert_eq!(seen, seqs(&whole));
    assert_eq!((summary.start_offset, summary.next_seq, summary.left_out), (whole.start_offset, whole.next_seq, whole.left_out));
    let record_bytes: u64 = (1..3).map(|seq| tiny::record_len(format!("k{seq}").len(), 1) as u64).sum();
    assert_eq!(summary.chain[0], KeptObject { object: a.0, record_bytes, last_seq: Some(2) });
    // Damage: the walk says stop, and hands over nothing of the damaged object.
    let plan = plan_chain(&[a.0, b.0, c.0], &sessions);
    let mut walker = ChainWalk::new();
    let mut seen = Vec::new();
    assert!(walker.object(&plan.chain[0], &a.1, &mut |record| seen.push(record.seq)));
    assert!(!walker.object(&plan.chain[1], &b.1, &mut |record| seen.push(record.seq)));
    assert!(!walker.object(&plan.chain[2], &c.1, &mut |record| seen.push(record.seq)), "nothing is read past damage");
    assert_eq!(seen, [1, 2]);
    let refusal = walker.finish(&plan, &sessions, Some(2)).unwrap_err();
    assert_eq!(refusal, walk(&[a, b, c], &sessions, Some(2)).unwrap_err());
}
