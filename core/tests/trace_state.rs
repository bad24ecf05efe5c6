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
