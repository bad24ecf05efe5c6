//! A session driven by hand: rollover into the machine's batches, removal of segments,
//! and the trace events with their numbering.

use super::*;
use crate::group_commit::Policy;

fn session(segment_bytes: u64, next_seq: NextSeq, resume: Resume) -> Session {
    let layout = Layout { segments: SegmentRule::Bytes { segment_bytes }, next_seq };
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
    let layout = Layout { segments: SegmentRule::Records { records: 2 }, next_seq: NextSeq::Elsewhere };
    let mut session = Session::new(Config::file(Policy::Group), layout, Resume::fresh(1)).unwrap();
    for at in 0..4 {
        session.handle_append(Nanos(at), &[1; 5]).unwrap();
        settle(&mut session, Nanos(at));
    }
    session.confirm_consumer(4);
    assert_eq!(session.poll_removal(), Some(vec![1, 2]), "the full current segment goes too");
}
