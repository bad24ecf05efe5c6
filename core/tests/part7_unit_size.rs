//! Part 7 with another atomic unit: the unit size decides what a power cut can tear.
//! With the tiny store's 32-byte units B14's sync tears record 24 mid-payload; with a
//! 512-byte or 4 KiB unit (one unit covers a whole 128-byte segment) a sync lands whole or
//! not at all, so a cut loses whole units and never leaves half a record.

use walab_core::group_commit::Policy;
use walab_core::scan::StopReason;
use walab_core::sim::tiny::{run, CrashState, TinyRun, TinySetup, TinySetupError};
use walab_core::time::Nanos;
use walab_core::tiny_store::{POWER_CUT, UNIT_BYTES, WRITES};

fn branch_p(unit_bytes: usize) -> TinyRun {
    run(&TinySetup::new(Policy::Group).with_power_cut(POWER_CUT).with_unit_bytes(unit_bytes)).unwrap()
}

/// Offsets in wal-6 where a record starts or the last one ends: 0, 27, 55, 82, 109.
fn wal6_boundaries() -> Vec<u64> {
    WRITES[20..]
        .iter()
        .scan(0u64, |offset, write| {
            *offset += write.record().len() as u64;
            Some(*offset)
        })
        .fold(vec![0], |mut boundaries, end| {
            boundaries.push(end);
            boundaries
        })
}

/// The scan stopped inside what was written: a record's checksum failed.
fn torn(state: &CrashState) -> bool {
    state.recovery.stop.reason == StopReason::Checksum
}

#[test]
fn the_default_unit_is_the_tiny_stores_32_bytes() {
    assert_eq!(UNIT_BYTES, 32);
    let run = branch_p(UNIT_BYTES);
    assert_eq!(TinySetup::new(Policy::Group).unit_bytes, UNIT_BYTES);
    assert_eq!(run.device.unit_bytes(), UNIT_BYTES);
    assert_eq!(run.trace.unit_bytes, 32);
}

#[test]
fn with_32_byte_units_the_cut_tears_record_24_mid_payload() {
    let run = branch_p(32);
    assert_eq!(run.device.uncertain_units().len(), 3);
    let states = run.post_crash_states().unwrap();
    let torn_24 = states
        .iter()
        .find(|state| torn(state) && state.recovery.stop.offset == 82)
        .expect("a legal state where the scan stops at record 24");
    assert_eq!(torn_24.recovery.scanned_in("wal-6"), [21, 22, 23]);
}

#[test]
fn with_512_or_4096_byte_units_the_cut_loses_whole_units_only() {
    let boundaries = wal6_boundaries();
    assert_eq!(boundaries, [0, 27, 55, 82, 109]);
    for unit_bytes in [512, 4096] {
        let run = branch_p(unit_bytes);
        assert_eq!(run.trace.unit_bytes as usize, unit_bytes);
        // B14's sync covers wal-6's only unit.
        assert_eq!(run.device.uncertain_units().len(), 1, "{unit_bytes}");
        let states = run.post_crash_states().unwrap();
        assert_eq!(states.len(), 2);
        let mut scanned: Vec<Vec<u64>> = states.iter().map(|state| state.recovery.scanned_in("wal-6")).collect();
        scanned.sort();
        assert_eq!(scanned, [vec![21, 22], vec![21, 22, 23, 24]], "{unit_bytes}: all of B14 or none of it");
        for state in &states {
            assert!(!torn(state), "{unit_bytes}: {:?}", state.recovery.stop);
            assert_eq!(state.recovery.stop.reason, StopReason::Zero);
            assert!(boundaries.contains(&state.recovery.stop.offset), "{unit_bytes}: {:?}", state.recovery.stop);
            assert!(state.lost_acknowledged.is_empty());
        }
    }
}

#[test]
fn over_every_cut_only_small_units_tear_a_record() {
    // A cut every 0.1 ms across the run, every legal post-crash state of each.
    let cuts = (1..=140u64).map(|tenth| Nanos(tenth * 100_000));
    let mut torn_cuts = [0usize; 3];
    for at in cuts {
        for (index, unit_bytes) in [32usize, 512, 4096].into_iter().enumerate() {
            let run = run(&TinySetup::new(Policy::Group).with_power_cut(at).with_unit_bytes(unit_bytes)).unwrap();
            let states = run.post_crash_states().unwrap();
            if states.iter().any(torn) {
                torn_cuts[index] += 1;
            }
        }
    }
    assert!(torn_cuts[0] > 0, "32-byte units tear a record at some cut");
    assert_eq!(torn_cuts[1..], [0, 0], "a unit larger than a segment never tears a record");
}

#[test]
fn a_zero_unit_is_refused() {
    let error = run(&TinySetup::new(Policy::Group).with_unit_bytes(0)).unwrap_err();
    assert_eq!(error, TinySetupError::UnitZero);
}
