//! A session driven by hand: rollover into the machine's batches, removal of segments,
//! and the trace events with their numbering.

use super::*;
use crate::group_commit::{Batch, BatchId, Policy, Tickets};
use crate::ring::RingGeometry;
use crate::session::ring::{Admission, RingTrim, RingWait};

fn session(segment_bytes: u64, next_seq: NextSeq, resume: Resume) -> Session {
    let layout = Layout::segments(SegmentRule::Bytes { segment_bytes }, next_seq);
    Session::new(Config::file(Policy::Group), layout, resume).unwrap()
}

/// Drains every action; persists complete at `now`, removals succeed.
fn settle(session: &mut Session, now: Nanos) -> Vec<Action> {
    let mut seen = Vec::new();
    while let Some(action) = session.poll_action() {
        match &action {
            Action::Persist(batch) => {
                let id = batch.id;
                seen.push(action.clone());
                session.handle_persisted(now, id, Ok(())).unwrap();
                continue;
            }
            _ => {}
        }
        seen.push(action);
    }
    while let Some(segments) = session.poll_removal() {
        session.handle_removed(&segments, true);
    }
    seen
}

fn persisted_segments(actions: &[Action]) -> Vec<(u64, u64)> {
    actions
        .iter()
        .filter_map(|action| match action {
            Action::Persist(batch) => Some((batch.segment, batch.tickets.count)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_record_that_would_pass_a_segment_starts_the_next_and_closes_the_batch() {
    let mut session = session(100, NextSeq::InLog, Resume::fresh(1));
    let first = session.handle_append(Nanos(0), &[1; 60]).unwrap();
    assert_eq!((first.ticket, first.write, first.segment, first.opens_segment), (Ticket(1), 1, 1, true));
    let actions = settle(&mut session, Nanos(1));
    assert_eq!(persisted_segments(&actions), [(1, 1)]);
    // Two records gather while nothing runs... then a third crosses into segment 2.
    session.handle_append(Nanos(2), &[2; 30]).unwrap();
    let third = session.handle_append(Nanos(2), &[3; 30]).unwrap();
    assert_eq!((third.segment, third.opens_segment), (2, true));
    let actions = settle(&mut session, Nanos(3));
    assert_eq!(persisted_segments(&actions), [(1, 1), (2, 1)], "a batch never crosses a segment");
    assert_eq!(
        session.handle_append(Nanos(4), &[4; 101]),
        Err(Refusal::LargerThanSegment(LargerThanSegment { record_bytes: 101, segment_bytes: 100 }))
    );
}

#[test]
fn confirmed_segments_are_removed_oldest_first_and_a_failed_removal_is_asked_again() {
    let mut session = session(10, NextSeq::InLog, Resume::fresh(1));
    for at in 0..4 {
        session.handle_append(Nanos(at), &[7; 10]).unwrap();
        settle(&mut session, Nanos(at));
    }
    assert_eq!(session.segment(), 4);
    session.confirm_consumer(2);
    assert_eq!(session.poll_removal(), Some(vec![1, 2]));
    assert_eq!(session.poll_removal(), None, "one removal at a time");
    session.handle_removed(&[1, 2], false);
    assert_eq!(session.poll_removal(), None, "not again before another input");
    session.confirm_consumer(4);
    assert_eq!(session.poll_removal(), Some(vec![1, 2, 3]), "segment 4 holds the last seq");
    session.handle_removed(&[1, 2, 3], true);
    assert_eq!(session.poll_removal(), None);
}

#[test]
fn a_reopened_log_traces_its_writes_from_one_and_names_seqs_in_confirmations() {
    let resume = Resume {
        next_seq: 41,
        lsn: 400,
        segment: 3,
        segment_bytes: 20,
        segment_records: 2,
        kept: vec![KeptSegment { segment: 2, last_seq: Some(38) }, KeptSegment { segment: 3, last_seq: Some(40) }],
        ring: RingResume::default(),
    };
    let mut session = session(100, NextSeq::InLog, resume);
    session.set_tracing(true);
    let appended = session.handle_append(Nanos(5), &[9; 10]).unwrap();
    assert_eq!((appended.ticket, appended.write), (Ticket(41), 1));
    let reader = session.register_reader("cdc", 30);
    settle(&mut session, Nanos(6));
    session.confirm_reader(reader, 39);
    let events: Vec<Event> = std::iter::from_fn(|| session.poll_event()).collect();
    assert_eq!(
        events,
        [
            Event::Arrive { write: 1 },
            Event::ReaderConfirmed { reader: "cdc".into(), seq: 30 },
            Event::BatchFormed { batch: 1, segment: 3, first_write: 1, writes: 1, offset: 20, bytes: 10 },
            Event::Ack { first_write: 1, writes: 1 },
            Event::ReaderConfirmed { reader: "cdc".into(), seq: 39 },
        ]
    );
}

#[test]
fn the_tiny_stores_segments_may_all_go_once_flushed() {
    let layout = Layout::segments(SegmentRule::Records { records: 2 }, NextSeq::Elsewhere);
    let mut session = Session::new(Config::file(Policy::Group), layout, Resume::fresh(1)).unwrap();
    for at in 0..4 {
        session.handle_append(Nanos(at), &[1; 5]).unwrap();
        settle(&mut session, Nanos(at));
    }
    session.confirm_consumer(4);
    assert_eq!(session.poll_removal(), Some(vec![1, 2]), "the full current segment goes too");
}

/// A ring of 2 slots of 100 bytes, trimmed at most every 50 ns while nothing waits.
fn ring_session() -> Session {
    let geometry = RingGeometry { segments: 2, segment_bytes: 100 };
    let config = Config { inflight_max: 4, batch_bytes_max: 40, unflushed_bytes_max: 200, ..Config::file(Policy::Group) };
    Session::new(config, Layout::ring(geometry, Nanos(50)), Resume::fresh(0)).unwrap()
}

fn persisted(session: &mut Session) -> Vec<Batch> {
    std::iter::from_fn(|| session.poll_action())
        .filter_map(|action| match action {
            Action::Persist(batch) => Some(batch),
            _ => None,
        })
        .collect()
}

#[test]
fn a_ring_admits_a_generation_s_first_batch_only_after_every_earlier_one_settled() {
    let mut session = ring_session();
    session.handle_append(Nanos(0), &[1; 60]).unwrap();
    let first = persisted(&mut session);
    session.handle_append(Nanos(1), &[2; 30]).unwrap();
    session.handle_append(Nanos(1), &[3; 30]).unwrap();
    let later = persisted(&mut session);
    let (b1, b2, b3) = (first[0].id, later[0].id, later[1].id);
    assert_eq!((later[0].segment, later[1].segment), (0, 1), "the third record opens generation 1");
    assert_eq!(session.ring_admission(b1), Some(Admission::Insert));
    assert_eq!(session.ring_admission(b2), Some(Admission::Insert), "inside a generation: no wait");
    assert_eq!(session.ring_admission(b3), Some(Admission::Wait(RingWait::Drain)));
    session.handle_persisted(Nanos(2), b1, Ok(())).unwrap();
    assert_eq!(session.ring_admission(b3), Some(Admission::Wait(RingWait::Drain)), "b2 is still in flight");
    session.handle_persisted(Nanos(3), b2, Ok(())).unwrap();
    assert_eq!(session.ring_admission(b3), Some(Admission::Insert));
}

#[test]
fn a_ring_reports_a_failure_only_after_every_earlier_batch_settled_and_fails_the_rest_uninserted() {
    let mut session = ring_session();
    let mut ids = Vec::new();
    for at in 0..3 {
        session.handle_append(Nanos(at), &[7; 20]).unwrap();
        ids.extend(persisted(&mut session).iter().map(|batch| batch.id));
    }
    assert_eq!(ids.len(), 3);
    session.handle_append(Nanos(3), &[8; 20]).unwrap();
    let waiting = persisted(&mut session)[0].id;
    session.handle_persisted(Nanos(4), ids[1], Err(SyncError::Fenced)).unwrap();
    assert_eq!(session.machine().failed(), None, "b1 has not settled: the failure is held back");
    assert_eq!(session.ring_admission(waiting), Some(Admission::Fail(SyncError::Fenced)), "never inserted");
    session.handle_persisted(Nanos(5), ids[0], Ok(())).unwrap();
    assert_eq!(session.machine().failed(), Some(SyncError::Fenced), "reported once b1 settled");
    let answers: Vec<Action> = std::iter::from_fn(|| session.poll_action()).collect();
    assert_eq!(answers[0], Action::Ack(Tickets { first: Ticket(1), count: 1 }));
    assert!(matches!(answers[1], Action::Fail { tickets: Tickets { first: Ticket(2), count: 3 }, error: SyncError::Fenced }));
}

#[test]
fn a_ring_trims_behind_its_confirmations_paced_unless_a_batch_waits_for_its_slot() {
    let mut session = ring_session();
    // Appends one 40-byte record; inserts and commits it if the ring admits it.
    let append = |session: &mut Session, at: u64| -> (BatchId, Admission) {
        session.handle_append(Nanos(at), &[5; 40]).unwrap();
        let batch = persisted(session).remove(0);
        let admission = session.ring_admission(batch.id).unwrap();
        if admission == Admission::Insert {
            session.handle_persisted(Nanos(at), batch.id, Ok(())).unwrap();
        }
        while session.poll_action().is_some() {}
        (batch.id, admission)
    };
    append(&mut session, 0);
    append(&mut session, 1);
    session.confirm_consumer(1);
    let trim = session.poll_trim().expect("the first trim goes at once");
    assert_eq!(trim, RingTrim { to: 40, released: 0..0 });
    assert_eq!(session.poll_trim(), None, "one trim at a time");
    session.handle_trimmed(Nanos(2), 40, Ok(()));
    append(&mut session, 3); // 100..140: generation 1
    session.confirm_consumer(3);
    assert_eq!(session.poll_trim(), None, "the next waits out the pause");
    assert_eq!(session.poll_timeout(), Some(Nanos(51)), "50 after the first trim was asked for, at 1");
    session.handle_timeout(Nanos(51));
    assert_eq!(session.poll_trim(), Some(RingTrim { to: 140, released: 0..1 }));
    session.handle_trimmed(Nanos(52), 140, Ok(()));
    assert_eq!(session.ring_trim_offset(), Some(140));
    append(&mut session, 53); // 140..180
    append(&mut session, 54); // 200..240: generation 2, in slot 0 (generation 0 is released)
    append(&mut session, 55); // 240..280
    let (waiting, admission) = append(&mut session, 56); // 300..: generation 3 wants slot 1, still kept
    assert_eq!(admission, Admission::Wait(RingWait::Slot));
    session.confirm_consumer(6);
    assert_eq!(session.poll_trim(), Some(RingTrim { to: 280, released: 1..2 }), "a full ring trims at once");
    session.handle_trimmed(Nanos(57), 280, Ok(()));
    assert_eq!(session.ring_admission(waiting), Some(Admission::Insert));
}
