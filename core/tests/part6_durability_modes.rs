//! Part 6: the power fails at 13.5 ms under four durability modes.

use walab_core::group_commit::Policy;
use walab_core::sim::tiny::{run, TinyRun, TinySetup};
use walab_core::time::Nanos;
use walab_core::tiny_store::POWER_CUT;

const MS: u64 = 1_000_000;

fn cut(policy: Policy) -> TinyRun {
    run(&TinySetup::new(policy).with_power_cut(POWER_CUT)).unwrap()
}

/// Acknowledged count and the writes lost, the same in every legal post-crash state.
fn outcome(run: &TinyRun) -> (usize, Vec<u64>) {
    let states = run.post_crash_states().expect("few enough uncertain units to list");
    assert!(!states.is_empty());
    let lost = states[0].lost_acknowledged.clone();
    for state in &states {
        assert_eq!(state.lost_acknowledged, lost, "the loss does not depend on which units landed");
    }
    (run.acknowledged().len(), lost)
}

#[test]
fn group_commit_acknowledged_22_and_lost_none() {
    assert_eq!(outcome(&cut(Policy::Group)), (22, vec![]));
}

#[test]
fn sync_per_write_acknowledged_13_and_lost_none() {
    assert_eq!(outcome(&cut(Policy::PerWrite)), (13, vec![]));
}

#[test]
fn the_two_fast_modes_acknowledged_24_and_lost_21_to_24() {
    for policy in [Policy::NoSync, Policy::Periodic { interval: Nanos(1_000 * MS) }] {
        assert_eq!(outcome(&cut(policy)), (24, vec![21, 22, 23, 24]), "{policy:?}");
    }
}

#[test]
fn f12_starts_when_write_24_arrives_and_is_not_durable_before_13_7_ms() {
    let full = run(&TinySetup::new(Policy::NoSync)).unwrap();
    let f12 = full.trace.file_index("F12").unwrap();
    let flush_start = full
        .trace
        .events
        .iter()
        .find(|event| matches!(event.event, walab_core::trace::Event::FlushStart { file, .. } if file == f12))
        .unwrap()
        .at;
    assert_eq!(flush_start, Nanos(12_700_000));
    let synced = full
        .trace
        .events
        .iter()
        .find(|event| matches!(event.event, walab_core::trace::Event::SyncEnd { file, ok: true, .. } if file == f12))
        .unwrap()
        .at;
    assert_eq!(synced, Nanos(13_700_000));
    // And at the cut, wal-6's pages are still only in the page cache.
    let at_cut = cut(Policy::NoSync);
    let wal6 = at_cut.trace.file_index("wal-6").unwrap();
    let state = at_cut.trace.state_at(POWER_CUT);
    assert!(state.files[wal6 as usize].units.contains(&walab_core::trace::UnitState::Dirty));
    assert!(at_cut.device.uncertain_units().iter().all(|unit| unit.file != wal6), "nothing of wal-6 is on its way");
}
