//! The trace rebuilds the state of a run at any instant.

use walab_core::group_commit::Policy;
use walab_core::sim::tiny::{run, TinySetup};
use walab_core::time::Nanos;
use walab_core::tiny_store::POWER_CUT;
use walab_core::trace::{UnitState, WriteState};

#[test]
fn state_at_13_5_ms_under_group_commit() {
    let run = run(&TinySetup::new(Policy::Group)).unwrap();
    let state = run.trace.state_at(POWER_CUT);
    assert_eq!(state.acked, 22);
    assert_eq!(state.writes[22], WriteState::InBatch { batch: 14 });
    assert_eq!(state.writes[23], WriteState::InBatch { batch: 14 });
    let wal6 = run.trace.file_index("wal-6").unwrap() as usize;
    assert_eq!(state.files[wal6].units, [UnitState::Clean, UnitState::Syncing, UnitState::Syncing, UnitState::Syncing]);
    assert_eq!(state.syncs_running.len(), 1);
    assert_eq!(state.manifest_durable, Some(9));
    let wal5 = run.trace.file_index("wal-5").unwrap() as usize;
    assert!(!state.files[wal5].exists, "wal-5 was deleted once edit 9 was durable");
    // Before anything happened, and at the end.
    let start = run.trace.state_at(Nanos::ZERO);
    assert_eq!(start.writes[0], WriteState::InBatch { batch: 1 });
    assert_eq!(start.writes[1], WriteState::Future);
    let end = run.trace.state_at(run.ended_at);
    assert_eq!(end.acked, 24);
    assert!(end.applied.iter().all(|applied| *applied));
    assert!(run.trace.instants().windows(2).all(|pair| pair[0] < pair[1]));
}

#[test]
fn the_same_scenario_gives_the_same_trace() {
    let a = run(&TinySetup::new(Policy::Group).with_power_cut(POWER_CUT)).unwrap();
    let b = run(&TinySetup::new(Policy::Group).with_power_cut(POWER_CUT)).unwrap();
    assert_eq!(a.trace, b.trace);
}

#[cfg(feature = "serde")]
#[test]
fn the_trace_round_trips_through_json() {
    let run = run(&TinySetup::new(Policy::Group)).unwrap();
    let json = serde_json::to_string(&run.trace).unwrap();
    assert!(json.contains(r#""event":"sync_start""#));
    let back: walab_core::trace::Trace = serde_json::from_str(&json).unwrap();
    assert_eq!(back, run.trace);
}

#[cfg(feature = "serde")]
#[test]
fn every_event_reads_back_and_a_bad_one_is_named() {
    use walab_core::group_commit::SyncError;
    use walab_core::trace::{Event, TraceEvent, TraceScanStop};
    let events = vec![
        Event::Create { file: 1 },
        Event::Arrive { write: 2 },
        Event::Refuse { write: 3, reason: "full".into() },
        Event::BatchFormed { batch: 4, segment: 5, first_write: 6, writes: 7, offset: 8, bytes: 9 },
        Event::Write { file: 1, offset: 10, bytes: 11 },
        Event::SyncStart { sync: 12, file: 1, batch: Some(4), units: vec![0, 1] },
        Event::SyncStart { sync: 13, file: 1, batch: None, units: vec![] },
        Event::UnitPersisted { file: 1, unit: 1 },
        Event::UnitsDropped { file: 1, units: vec![2] },
        Event::SyncEnd { sync: 12, file: 1, ok: false, error: Some(SyncError::Io) },
        Event::SyncEnd { sync: 13, file: 1, ok: true, error: None },
        Event::Ack { first_write: 6, writes: 7 },
        Event::Fail { first_write: 13, writes: 1, error: SyncError::NoSpace },
        Event::Apply { write: 6 },
        Event::FlushStart { file: 2, first_write: 1, last_write: 6 },
        Event::ManifestEdit { edit: 9, table: 2, flushed_through: 6 },
        Event::ManifestDurable { edit: 9 },
        Event::Gates { file: 1, flushed: true, readers_done: false },
        Event::Delete { file: 1 },
        Event::ReaderConfirmed { reader: "cdc".into(), seq: 5 },
        Event::BlockSealed { block: 3, records: 40, bytes: 4000, objects: 2 },
        Event::Committed { block: 3, records: 40 },
        Event::PowerCut,
        Event::Recovery {
            acknowledged: vec![1, 2],
            recovered: vec![1],
            lost_acknowledged: vec![2],
            stop: TraceScanStop { reason: "checksum".into(), file: Some(1), offset: 4096 },
        },
        Event::Note { text: "E1".into() },
    ];
    for (i, event) in events.into_iter().enumerate() {
        let timed = TraceEvent { at: Nanos(i as u64 * 1_000), event };
        let json = serde_json::to_string(&timed).unwrap();
        let back: TraceEvent = serde_json::from_str(&json).unwrap();
        assert_eq!(back, timed, "{json}");
    }
    let missing = serde_json::from_str::<TraceEvent>(r#"{"at": 5, "event": "write", "file": 1, "offset": 0}"#).unwrap_err();
    assert!(missing.to_string().contains("event \"write\" at 5 ns: missing field `bytes`"), "{missing}");
    let unknown = serde_json::from_str::<TraceEvent>(r#"{"at": 5, "event": "teleport"}"#).unwrap_err();
    assert!(unknown.to_string().contains("\"teleport\""), "{unknown}");
}
