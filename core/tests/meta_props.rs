//! Property tests of the metadata log's compaction: whatever the uploads and deletes,
//! wherever the snapshots fall and however far the log was trimmed below the last one
//! (or a crash cut a snapshot short), replay gives the state of applying every command;
//! and no bytes make the decoders panic.

use proptest::prelude::*;
use walab_core::stream_store::expiry::Expiry;
use walab_core::stream_store::meta::{
    replay, MetaCommand, MetaState, ObjectEntry, ReplayError, RunEntry, StreamConfig, StreamEnd,
};
use walab_core::stream_store::offset::Offset;
use walab_core::stream_store::producers::ProducerState;
use walab_core::stream_store::StreamId;

/// One step of a metadata log's writer.
#[derive(Clone, Debug)]
enum Step {
    /// An upload of one object holding a run of each of these (stream, length).
    Upload(Vec<(u8, u8)>),
    /// A reservation that crashed before its commit, expired or not.
    Orphan { expired: bool },
    /// A snapshot, or only its first `kept` parts (a crash while writing it).
    Snapshot { kept: Option<usize> },
    /// The stream is deleted (if it still exists), and the garbage it leaves forgotten.
    Delete(u8),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        4 => prop::collection::vec((0u8..6, 1u8..40), 1..4).prop_map(Step::Upload),
        1 => any::<bool>().prop_map(|expired| Step::Orphan { expired }),
        1 => prop::option::of(0usize..3).prop_map(|kept| Step::Snapshot { kept }),
        1 => (0u8..6).prop_map(Step::Delete),
    ];
    prop::collection::vec(step, 0..60)
}

/// The commands the steps write, the state applying them gives, and the index of the
/// first part of the last whole snapshot. `streams_wide`: 200 streams with long names
/// and producers first, a state that takes two snapshot parts.
fn written(steps: &[Step], streams_wide: bool) -> (Vec<MetaCommand>, MetaState, Option<usize>) {
    let wide_start = Step::Upload((0..200).map(|stream| (stream, 1)).collect());
    let steps: Vec<&Step> = streams_wide.then_some(&wide_start).into_iter().chain(steps).collect();
    let mut state = MetaState::default();
    let mut commands = Vec::new();
    let mut last_snapshot = None;
    let apply = |state: &mut MetaState, commands: &mut Vec<MetaCommand>, command: MetaCommand| {
        state.apply(&command).expect("the writer writes only commands that apply");
        commands.push(command);
    };
    apply(&mut state, &mut commands, MetaCommand::Bind { wal: "file:///wal/default/0".into() });
    for stream in 0..if streams_wide { 200 } else { 6 } {
        let name = if streams_wide { format!("{stream}-{}", "s".repeat(120)) } else { format!("s{stream}") };
        let config = StreamConfig { name, content_type: "application/json".into(), expiry: Expiry::Never, fork: None };
        apply(&mut state, &mut commands, MetaCommand::Create { id: StreamId(stream), config });
    }
    for step in steps {
        match step {
            Step::Upload(runs) => {
                let reserve = state.reserve(1);
                let MetaCommand::Reserve { first: id, .. } = reserve else { unreachable!() };
                apply(&mut state, &mut commands, reserve);
                let mut entries: Vec<RunEntry> = Vec::new();
                let mut ends: Vec<StreamEnd> = Vec::new();
                for &(stream, len) in runs {
                    let stream = StreamId(u64::from(stream));
                    let Some(meta) = state.stream(stream) else { continue };
                    let start = entries.iter().filter(|r| r.stream == stream).map(|r| r.end).max().unwrap_or(meta.committed);
                    let end = Offset::new(start.index + u64::from(len), start.bytes + 3 * u64::from(len));
                    let producer = if streams_wide { format!("{}-{}", stream.0, "p".repeat(120)) } else { format!("p{}", stream.0) };
                    ends.retain(|e| e.stream != stream);
                    ends.push(StreamEnd {
                        stream,
                        end,
                        closed: false,
                        closed_by: None,
                        stream_seq: Some(format!("{:08}", end.index)),
                        producers: vec![(producer, ProducerState { epoch: 1, last_seq: end.index })],
                    });
                    entries.push(RunEntry { stream, start, end });
                }
                apply(&mut state, &mut commands, MetaCommand::Commit { objects: vec![ObjectEntry { id, runs: entries }], ends });
            }
            Step::Orphan { expired } => {
                let reserve = state.reserve(1);
                let MetaCommand::Reserve { first: id, .. } = reserve else { unreachable!() };
                apply(&mut state, &mut commands, reserve);
                if *expired {
                    apply(&mut state, &mut commands, MetaCommand::Expire { ids: vec![id] });
                }
            }
            Step::Snapshot { kept } => {
                let parts = state.snapshot();
                let whole = kept.is_none_or(|kept| kept >= parts.len());
                if whole {
                    last_snapshot = Some(commands.len());
                }
                let kept = kept.unwrap_or(parts.len()).min(parts.len());
                commands.extend(parts.into_iter().take(kept));
            }
            Step::Delete(stream) => {
                let id = StreamId(u64::from(*stream));
                if state.stream(id).is_some() {
                    apply(&mut state, &mut commands, MetaCommand::Delete { id });
                    let garbage = state.garbage_ids();
                    if !garbage.is_empty() {
                        apply(&mut state, &mut commands, MetaCommand::Forget { ids: garbage });
                    }
                }
            }
        }
    }
    (commands, state, last_snapshot)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn replay_from_any_trim_below_the_last_snapshot_gives_the_whole_state(
        steps in steps(),
        wide in any::<bool>(),
        trim_fraction in 0.0f64..=1.0,
    ) {
        let (commands, state, last_snapshot) = written(&steps, wide);
        let numbered: Vec<(u64, MetaCommand)> =
            commands.iter().cloned().enumerate().map(|(n, command)| (n as u64 + 1, command)).collect();
        let next_seq = numbered.len() as u64 + 1;
        let whole = replay(&numbered, next_seq).expect("the whole log replays");
        prop_assert_eq!(&whole.state, &state);
        prop_assert_eq!(whole.snapshot_seq, last_snapshot.map(|index| index as u64 + 1));
        // Trimmed anywhere up to the last whole snapshot's first part: the same state.
        let trim_max = last_snapshot.unwrap_or(0);
        let trimmed = (trim_fraction * trim_max as f64) as usize;
        let replayed = replay(&numbered[trimmed..], next_seq).expect("a log trimmed below its snapshot replays");
        prop_assert_eq!(replayed, whole);
        // Trimmed past it (or trimmed at all without one): refused, never a wrong state.
        if trim_max < numbered.len() {
            let past = trim_max + 1;
            prop_assert_eq!(replay(&numbered[past..], next_seq), Err(ReplayError::NoStart { first_seq: past as u64 + 1 }));
        }
        if wide {
            prop_assert!(state.snapshot().len() >= 2, "a wide state takes several parts");
        }
    }

    #[test]
    fn no_bytes_make_the_decoders_panic(bytes in prop::collection::vec(any::<u8>(), 0..200), tag in 1u8..=24) {
        let _ = MetaState::decode(&bytes);
        let mut command = vec![tag];
        command.extend_from_slice(&bytes);
        let _ = MetaCommand::decode(&command);
    }

    #[test]
    fn a_cut_or_flipped_state_encoding_never_decodes_into_another_state(
        steps in steps(),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
    ) {
        let (_, state, _) = written(&steps, false);
        let bytes = state.encode();
        let cut = cut.index(bytes.len());
        prop_assert!(MetaState::decode(&bytes[..cut]).is_err(), "a cut at {} of {} decoded", cut, bytes.len());
        let mut flipped = bytes.clone();
        let at = flip.index(bytes.len());
        flipped[at] ^= 0x01;
        if let Ok(decoded) = MetaState::decode(&flipped) {
            // A flip may land in a value the checks cannot tell from another (an offset,
            // an epoch); then it decodes, but to a different state, never to this one.
            prop_assert_ne!(decoded, state);
        }
    }
}
