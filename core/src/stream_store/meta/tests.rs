use super::*;
use super::codec::{TAG_COMMIT, TAG_EXPIRE, TAG_RESERVE};

fn at(index: u64, bytes: u64) -> Offset {
    Offset::new(index, bytes)
}

fn run(stream: u64, start: Offset, end: Offset) -> RunEntry {
    RunEntry { stream: StreamId(stream), start, end }
}

fn end_of(stream: u64, end: Offset) -> StreamEnd {
    StreamEnd { stream: StreamId(stream), end, closed: false, closed_by: None, stream_seq: None, producers: vec![] }
}

fn commit(objects: Vec<ObjectEntry>) -> MetaCommand {
    MetaCommand::Commit { objects, ends: vec![] }
}

fn config(name: &str) -> StreamConfig {
    StreamConfig { name: name.into(), content_type: "text/plain".into(), expiry: Expiry::Never, fork: None }
}

fn create(state: &mut MetaState, id: u64, name: &str) {
    state.apply(&MetaCommand::Create { id: StreamId(id), config: config(name) }).unwrap();
}

fn fork(state: &mut MetaState, id: u64, name: &str, source: u64, at: Offset) {
    let config = StreamConfig { fork: Some(ForkBase { source: StreamId(source), at, sub_offset: 0 }), ..config(name) };
    state.apply(&MetaCommand::Create { id: StreamId(id), config }).unwrap();
}

#[test]
fn a_commit_advances_every_stream_at_once_or_not_at_all() {
    let mut state = MetaState::default();
    create(&mut state, 0, "a");
    create(&mut state, 1, "b");
    state.apply(&state.reserve(2)).unwrap();
    let good = commit(vec![
        ObjectEntry { id: 0, runs: vec![run(0, at(0, 0), at(10, 100)), run(1, at(0, 0), at(3, 3))] },
        ObjectEntry { id: 1, runs: vec![run(0, at(10, 100), at(500, 600))] },
    ]);
    // A run that leaves a gap spoils the whole commit: nothing of it applies.
    let bad = commit(vec![
        ObjectEntry { id: 0, runs: vec![run(0, at(0, 0), at(10, 100))] },
        ObjectEntry { id: 1, runs: vec![run(1, at(1, 1), at(3, 3))] },
    ]);
    let before = state.clone();
    assert_eq!(state.apply(&bad), Err(MetaError::RunNotAtEnd { stream: StreamId(1), start: at(1, 1), committed: Offset::START }));
    assert_eq!(state, before);
    assert_eq!(state.apply(&good), Ok(Applied::default()));
    let committed = |state: &MetaState, id| state.stream(StreamId(id)).unwrap().committed;
    assert_eq!((committed(&state, 0), committed(&state, 1)), (at(500, 600), at(3, 3)));
    let a = state.stream(StreamId(0)).unwrap();
    assert_eq!(a.run_holding(0), Some((at(0, 0), at(10, 100), 0)));
    assert_eq!(a.run_holding(10), Some((at(10, 100), at(500, 600), 1)));
    assert_eq!(a.run_holding(499), Some((at(10, 100), at(500, 600), 1)));
    assert_eq!(a.run_holding(500), None);
    // Committed ids are no longer reserved: committing one again is refused.
    assert_eq!(state.apply(&good), Err(MetaError::NotReserved { id: 0 }));
    assert_eq!(state.reserved_ids(), Vec::<u64>::new());
    // A stream end must be where the commit leaves its stream.
    state.apply(&state.reserve(1)).unwrap();
    let wrong_end = MetaCommand::Commit { objects: vec![], ends: vec![end_of(1, at(4, 4))] };
    assert_eq!(state.apply(&wrong_end), Err(MetaError::EndNotAtCommit { stream: StreamId(1), end: at(4, 4), committed: at(3, 3) }));
}

#[test]
fn a_stream_end_carries_producers_closure_and_stream_seq() {
    let mut state = MetaState::default();
    create(&mut state, 0, "a");
    state.apply(&state.reserve(1)).unwrap();
    let stamp = ProducerStamp { id: "p".into(), epoch: 2, seq: 7 };
    let end = StreamEnd {
        stream: StreamId(0),
        end: at(5, 50),
        closed: true,
        closed_by: Some(stamp.clone()),
        stream_seq: Some("0042".into()),
        producers: vec![("p".into(), ProducerState { epoch: 2, last_seq: 7 })],
    };
    let command = MetaCommand::Commit { objects: vec![ObjectEntry { id: 0, runs: vec![run(0, Offset::START, at(5, 50))] }], ends: vec![end] };
    state.apply(&command).unwrap();
    let stream = state.stream(StreamId(0)).unwrap();
    assert_eq!((stream.closed, stream.closed_by.as_ref(), stream.stream_seq.as_deref()), (true, Some(&stamp), Some("0042")));
    assert_eq!(stream.producers.get("p"), Some(&ProducerState { epoch: 2, last_seq: 7 }));
    assert_eq!(MetaCommand::decode(&command.encode()), Ok(command));
}

#[test]
fn an_orphan_is_expired_and_its_id_never_comes_back() {
    let mut state = MetaState::default();
    create(&mut state, 0, "a");
    state.apply(&state.reserve(3)).unwrap();
    state.apply(&commit(vec![ObjectEntry { id: 1, runs: vec![run(0, Offset::START, at(1, 1))] }])).unwrap();
    assert_eq!(state.reserved_ids(), vec![0, 2]);
    state.apply(&MetaCommand::Expire { ids: vec![0, 2] }).unwrap();
    assert_eq!(state.reserve(1), MetaCommand::Reserve { first: 3, count: 1 });
    assert_eq!(state.apply(&commit(vec![ObjectEntry { id: 2, runs: vec![run(0, at(1, 1), at(2, 2))] }])), Err(MetaError::NotReserved { id: 2 }));
    assert_eq!(state.apply(&MetaCommand::Reserve { first: 1, count: 1 }), Err(MetaError::ReserveOutOfOrder { first: 1, next: 3 }));
}

#[test]
fn a_deleted_stream_leaves_nothing_behind_and_its_objects_become_garbage() {
    let mut state = MetaState::default();
    create(&mut state, 0, "a");
    create(&mut state, 1, "b");
    state.apply(&state.reserve(2)).unwrap();
    state
        .apply(&commit(vec![
            ObjectEntry { id: 0, runs: vec![run(0, Offset::START, at(1, 1)), run(1, Offset::START, at(2, 2))] },
            ObjectEntry { id: 1, runs: vec![run(0, at(1, 1), at(9, 9))] },
        ]))
        .unwrap();
    let empty = state.clone();
    assert_eq!(state.apply(&MetaCommand::Delete { id: StreamId(0) }), Ok(Applied { removed: vec![StreamId(0)], soft_deleted: None }));
    // Object 1 held only stream 0; object 0 still holds b's run.
    assert_eq!(state.garbage_ids(), vec![1]);
    assert_eq!((state.stream(StreamId(0)), state.id_of("a")), (None, None));
    assert_eq!(state.apply(&MetaCommand::Forget { ids: vec![0] }), Err(MetaError::NotGarbage { id: 0 }));
    state.apply(&MetaCommand::Forget { ids: vec![1] }).unwrap();
    state.apply(&MetaCommand::Delete { id: StreamId(1) }).unwrap();
    state.apply(&MetaCommand::Forget { ids: vec![0] }).unwrap();
    assert_eq!(state.objects().count(), 0);
    assert_eq!(state.apply(&MetaCommand::Delete { id: StreamId(1) }), Err(MetaError::NoStream { id: StreamId(1) }));
    // The name may be taken again, by a new number.
    create(&mut state, 2, "a");
    assert_eq!(state.apply(&MetaCommand::Create { id: StreamId(2), config: config("b") }), Err(MetaError::StreamIdTaken { id: StreamId(2) }));
    assert_eq!(state.id_of("a"), Some(StreamId(2)));
    assert_eq!(state.apply(&MetaCommand::Create { id: StreamId(3), config: config("a") }), Err(MetaError::NameTaken { name: "a".into() }));
    // Creations may finish out of order: a lower number that no stream has is fine.
    create(&mut state, 9, "late-but-higher");
    create(&mut state, 5, "early-but-slower");
    assert_eq!(state.next_stream_id(), 10);
    // A run of a stream removed while its upload was in flight is dropped: its object is garbage.
    state.apply(&state.reserve(1)).unwrap();
    state.apply(&commit(vec![ObjectEntry { id: 2, runs: vec![run(0, at(9, 9), at(10, 10))] }])).unwrap();
    assert_eq!(state.garbage_ids(), vec![2]);
    assert_ne!(state, empty);
}

#[test]
fn a_source_with_forks_is_soft_deleted_and_goes_with_its_last_fork() {
    let mut state = MetaState::default();
    create(&mut state, 0, "root");
    fork(&mut state, 1, "middle", 0, at(1, 4));
    fork(&mut state, 2, "leaf", 1, at(2, 8));
    assert_eq!(state.stream(StreamId(1)).unwrap().committed, at(1, 4));
    assert_eq!(state.stream(StreamId(0)).unwrap().forks, 1);
    assert_eq!(state.apply(&MetaCommand::Delete { id: StreamId(0) }), Ok(Applied { removed: vec![], soft_deleted: Some(StreamId(0)) }));
    assert_eq!(state.apply(&MetaCommand::Delete { id: StreamId(1) }), Ok(Applied { removed: vec![], soft_deleted: Some(StreamId(1)) }));
    // A soft-deleted stream keeps its name, refuses a second delete and a new fork.
    assert_eq!(state.id_of("root"), Some(StreamId(0)));
    assert_eq!(state.apply(&MetaCommand::Delete { id: StreamId(0) }), Err(MetaError::NoStream { id: StreamId(0) }));
    let refork = StreamConfig { fork: Some(ForkBase { source: StreamId(0), at: Offset::START, sub_offset: 0 }), ..config("other") };
    assert_eq!(state.apply(&MetaCommand::Create { id: StreamId(3), config: refork }), Err(MetaError::NoSource { source: StreamId(0) }));
    // The snapshot keeps all of it.
    assert_eq!(MetaState::decode(&state.encode()), Ok(state.clone()));
    // Deleting the leaf frees the middle, which frees the root.
    assert_eq!(
        state.apply(&MetaCommand::Delete { id: StreamId(2) }),
        Ok(Applied { removed: vec![StreamId(2), StreamId(1), StreamId(0)], soft_deleted: None })
    );
    assert_eq!(state.streams().count(), 0);
}

#[test]
fn a_log_belongs_to_one_wal() {
    let mut state = MetaState::default();
    state.apply(&MetaCommand::Bind { wal: "file:///a/default/0".into() }).unwrap();
    state.apply(&MetaCommand::Bind { wal: "file:///a/default/0".into() }).unwrap();
    let other = MetaCommand::Bind { wal: "s3://b/x/default/0".into() };
    let error = state.apply(&other).unwrap_err();
    assert_eq!(error.to_string(), "this metadata log belongs to the WAL file:///a/default/0, not to s3://b/x/default/0");
    assert_eq!(MetaState::decode(&state.encode()).unwrap().wal(), Some("file:///a/default/0"));
}

#[test]
fn commands_round_trip_and_a_reservation_is_golden() {
    let reserve = MetaCommand::Reserve { first: 5, count: 2 };
    assert_eq!(reserve.encode(), [TAG_RESERVE, 5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]);
    let stamp = ProducerStamp { id: "p".into(), epoch: 1, seq: 2 };
    let end = StreamEnd {
        stream: StreamId(9),
        end: at(3, 30),
        closed: true,
        closed_by: Some(stamp),
        stream_seq: Some("b".into()),
        producers: vec![("p".into(), ProducerState { epoch: 1, last_seq: 2 })],
    };
    let commit = MetaCommand::Commit {
        objects: vec![ObjectEntry { id: 9, runs: vec![run(9, Offset::START, at(3, 30)), run(4, at(7, 7), at(8, 9))] }],
        ends: vec![end.clone()],
    };
    let encoded = commit.encode();
    assert_eq!(encoded.len(), COMMIT_FIXED_BYTES + OBJECT_ENTRY_BYTES + 2 * RUN_ENTRY_BYTES + end.encoded_bytes());
    let with_fork = StreamConfig {
        expiry: Expiry::Ttl { seconds: 60 },
        fork: Some(ForkBase { source: StreamId(2), at: at(4, 40), sub_offset: 3 }),
        ..config("x/y")
    };
    for command in [
        reserve,
        commit,
        MetaCommand::Expire { ids: vec![1, 2] },
        MetaCommand::Forget { ids: vec![3] },
        MetaCommand::Bind { wal: "postgres://u@h:5432/db (c/0)".into() },
        MetaCommand::Create { id: StreamId(7), config: with_fork },
        MetaCommand::Create { id: StreamId(8), config: StreamConfig { expiry: Expiry::At { unix_ms: 1234 }, ..config("z") } },
        MetaCommand::Delete { id: StreamId(7) },
    ] {
        assert_eq!(MetaCommand::decode(&command.encode()), Ok(command));
    }
    assert_eq!(MetaCommand::decode(&[99]), Err(DecodeError::Unknown { what: "metadata command", value: 99 }));
    assert!(matches!(MetaCommand::decode(&[2, 0, 0, 0, 0]), Err(DecodeError::Unknown { value: 2, .. })));
    assert_eq!(MetaCommand::decode(&[TAG_COMMIT, 255, 255, 255, 255]), Err(DecodeError::Truncated));
    assert_eq!(MetaCommand::decode(&[TAG_EXPIRE, 0, 0, 0, 0, 1]), Err(DecodeError::TrailingBytes));
}

/// A state with `uploads` uploads of one object each over `streams` streams, with a
/// producer per stream, and one reservation left open; and the commands that made it.
fn built(uploads: u64, streams: u64) -> (MetaState, Vec<MetaCommand>) {
    let mut state = MetaState::default();
    let mut commands = Vec::new();
    let mut push = |state: &mut MetaState, command: MetaCommand| {
        state.apply(&command).unwrap();
        commands.push(command);
    };
    push(&mut state, MetaCommand::Bind { wal: "file:///w".into() });
    for stream in 0..streams {
        push(&mut state, MetaCommand::Create { id: StreamId(stream), config: config(&format!("stream-{stream:04}")) });
    }
    for upload in 0..uploads {
        let reserve = state.reserve(1);
        push(&mut state, reserve);
        let mut runs = Vec::new();
        let mut ends = Vec::new();
        for stream in 0..streams {
            let start = state.stream(StreamId(stream)).unwrap().committed;
            let end = Offset::new(start.index + 1 + upload % 3, start.bytes + 10);
            runs.push(run(stream, start, end));
            ends.push(StreamEnd {
                producers: vec![(format!("p{stream}"), ProducerState { epoch: 1, last_seq: upload })],
                ..end_of(stream, end)
            });
        }
        push(&mut state, MetaCommand::Commit { objects: vec![ObjectEntry { id: upload, runs }], ends });
    }
    let reserve = state.reserve(2);
    push(&mut state, reserve);
    (state, commands)
}

fn numbered(commands: Vec<MetaCommand>, first_seq: u64) -> Vec<(u64, MetaCommand)> {
    commands.into_iter().enumerate().map(|(n, command)| (first_seq + n as u64, command)).collect()
}

/// Replays records that are the whole tail of their log.
fn replay_all(records: &[(u64, MetaCommand)]) -> Result<Replayed, ReplayError> {
    replay(records, records.last().map_or(1, |&(seq, _)| seq + 1))
}

#[test]
fn a_snapshot_round_trips_the_state_in_as_many_parts_as_it_needs() {
    let (small, _) = built(3, 2);
    assert_eq!(small.snapshot().len(), 1);
    // A state bigger than a record: 300 streams x 40 uploads of runs.
    let (big, _) = built(40, 300);
    let parts = big.snapshot();
    assert!(parts.len() > 1, "{} parts", parts.len());
    for (n, part) in parts.iter().enumerate() {
        let encoded = part.encode();
        assert!(encoded.len() <= COMMAND_BYTES_MAX, "part {n}: {} bytes", encoded.len());
        assert_eq!(MetaCommand::decode(&encoded).as_ref(), Ok(part));
        assert!(matches!(part, MetaCommand::Snapshot { part, parts: count, .. } if *part as usize == n && *count as usize == parts.len()));
    }
    for state in [small, big, MetaState::default()] {
        assert_eq!(MetaState::decode(&state.encode()), Ok(state));
    }
}

#[test]
fn a_state_whose_parts_contradict_each_other_is_refused() {
    let (state, _) = built(2, 1);
    let inconsistent = |state: &MetaState| matches!(MetaState::decode(&state.encode()), Err(DecodeError::Inconsistent(_)));
    // The stream's first run names object 0: drop object 0 from the committed set.
    let mut broken = state.clone();
    broken.objects.remove(&0);
    assert!(inconsistent(&broken));
    let mut broken = state.clone();
    broken.reserved.insert(0);
    assert!(inconsistent(&broken));
    let mut broken = state.clone();
    broken.next_object_id = 1;
    assert!(inconsistent(&broken));
    let mut broken = state.clone();
    broken.next_stream_id = 0;
    assert!(inconsistent(&broken));
    let mut broken = state.clone();
    broken.streams.get_mut(&StreamId(0)).unwrap().soft_deleted = true;
    assert!(inconsistent(&broken));
    let encoded = state.encode();
    assert_eq!(MetaState::decode(&encoded[..encoded.len() - 1]), Err(DecodeError::Truncated));
    assert_eq!(
        MetaCommand::decode(&MetaCommand::Snapshot { part: 2, parts: 2, bytes: vec![] }.encode()),
        Err(DecodeError::Inconsistent("a snapshot part past its count of parts"))
    );
}

#[test]
fn replay_starts_at_the_last_complete_snapshot() {
    let (before, mut commands) = built(10, 3);
    let snapshot = before.snapshot();
    let snapshot_at = commands.len() as u64 + 1;
    commands.extend(snapshot.clone());
    let mut after = before.clone();
    let reserve = after.reserve(1);
    after.apply(&reserve).unwrap();
    commands.push(reserve);
    let whole = replay_all(&numbered(commands.clone(), 1)).unwrap();
    assert_eq!(whole, Replayed { state: after.clone(), snapshot_seq: Some(snapshot_at), since_snapshot: 1 });
    // Trimmed below the snapshot, or only partly: the same state.
    for first in [snapshot_at, snapshot_at - 5] {
        let kept = numbered(commands[(first - 1) as usize..].to_vec(), first);
        assert_eq!(replay_all(&kept).unwrap(), whole);
    }
    // Without the snapshot, from record 1: the same state by applying every command.
    let plain: Vec<MetaCommand> = commands.iter().filter(|c| !matches!(c, MetaCommand::Snapshot { .. })).cloned().collect();
    let from_start = replay_all(&numbered(plain.clone(), 1)).unwrap();
    assert_eq!((from_start.state, from_start.snapshot_seq), (after, None));
    // A new log is empty; an empty log that took records lost them all.
    assert_eq!(replay(&[], 1).map(|r| r.state), Ok(MetaState::default()));
    assert_eq!(replay(&[], 9), Err(ReplayError::NoStart { first_seq: 9 }));
    // A log that does not start at record 1 and holds no snapshot is refused.
    assert_eq!(replay_all(&numbered(plain[3..].to_vec(), 4)), Err(ReplayError::NoStart { first_seq: 4 }));
}

#[test]
fn a_snapshot_cut_short_is_ignored() {
    let (big, mut commands) = built(40, 300);
    let parts = big.snapshot();
    assert!(parts.len() >= 3);
    // A crash after two parts, then more commands: the state comes from the commands.
    commands.extend(parts[..2].iter().cloned());
    let mut after = big.clone();
    let reserve = after.reserve(1);
    after.apply(&reserve).unwrap();
    commands.push(reserve.clone());
    let replayed = replay_all(&numbered(commands.clone(), 1)).unwrap();
    assert_eq!((&replayed.state, replayed.snapshot_seq), (&after, None));
    // Parts out of order do not make one.
    let mut mixed = commands.clone();
    mixed.truncate(mixed.len() - 3);
    mixed.extend([parts[0].clone(), parts[2].clone(), parts[1].clone()]);
    mixed.extend(parts[3..].iter().cloned());
    assert_eq!(replay_all(&numbered(mixed, 1)).unwrap().snapshot_seq, None);
    // A whole snapshot written after the cut one counts.
    let first = commands.len() as u64 + 1;
    commands.extend(after.snapshot());
    let replayed = replay_all(&numbered(commands, 1)).unwrap();
    assert_eq!((replayed.state, replayed.snapshot_seq, replayed.since_snapshot), (after, Some(first), 0));
}

#[test]
fn a_compaction_joins_runs_and_their_objects_become_garbage() {
    let mut state = MetaState::default();
    create(&mut state, 0, "a");
    create(&mut state, 1, "b");
    state.apply(&state.reserve(3)).unwrap();
    state.apply(&commit(vec![ObjectEntry { id: 0, runs: vec![run(0, Offset::START, at(2, 20)), run(1, Offset::START, at(1, 1))] }])).unwrap();
    state.apply(&commit(vec![ObjectEntry { id: 1, runs: vec![run(0, at(2, 20), at(3, 30)), run(1, at(1, 1), at(2, 2))] }])).unwrap();
    state.apply(&commit(vec![ObjectEntry { id: 2, runs: vec![run(0, at(3, 30), at(5, 50))] }])).unwrap();
    assert_eq!(state.object_bytes().into_iter().collect::<Vec<_>>(), vec![(0, 21), (1, 11), (2, 20)]);
    state.apply(&state.reserve(1)).unwrap();
    // Not whole runs, or two runs of a stream that overlap: refused, nothing changes.
    let before = state.clone();
    for runs in [
        vec![run(0, at(1, 10), at(3, 30))],
        vec![run(0, Offset::START, at(4, 40))],
        vec![run(0, Offset::START, at(3, 30)), run(0, at(2, 20), at(3, 30))],
    ] {
        assert!(matches!(state.apply(&MetaCommand::Compact { id: 3, runs }), Err(MetaError::CompactNotAtRuns { .. })));
        assert_eq!(state, before);
    }
    // Objects 0 and 1 as one: a's two runs there join, and so do b's.
    let compact = MetaCommand::Compact { id: 3, runs: vec![run(0, Offset::START, at(3, 30)), run(1, Offset::START, at(2, 2))] };
    state.apply(&compact).unwrap();
    assert_eq!(state.stream(StreamId(0)).unwrap().runs, vec![(Offset::START, at(3, 30), 3), (at(3, 30), at(5, 50), 2)]);
    assert_eq!(state.stream(StreamId(1)).unwrap().runs, vec![(Offset::START, at(2, 2), 3)]);
    assert_eq!(state.garbage_ids(), vec![0, 1]);
    assert_eq!(MetaCommand::decode(&compact.encode()), Ok(compact));
    assert_eq!(MetaState::decode(&state.encode()), Ok(state.clone()));
    let again = MetaCommand::Compact { id: 3, runs: vec![run(0, Offset::START, at(5, 50))] };
    assert_eq!(state.apply(&again), Err(MetaError::NotReserved { id: 3 }));
}
