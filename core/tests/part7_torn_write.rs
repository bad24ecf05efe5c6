//! Part 7, branch P: the power fails while B14's sync runs.

use walab_core::group_commit::Policy;
use walab_core::scan::StopReason;
use walab_core::sim::tiny::{run, CrashState, TinySetup};
use walab_core::tiny_store::{POWER_CUT, UNIT_BYTES};
use walab_core::trace::Event;

fn branch_p() -> walab_core::sim::tiny::TinyRun {
    run(&TinySetup::new(Policy::Group).with_power_cut(POWER_CUT)).unwrap()
}

fn kept(state: &CrashState) -> Vec<u32> {
    state.kept_units.iter().map(|(file, unit)| {
        assert_eq!(file, "wal-6");
        *unit
    }).collect()
}

#[test]
fn wal6_byte_ranges() {
    let run = branch_p();
    let wal6 = run.trace.file_index("wal-6").unwrap();
    let mut ranges = Vec::new();
    for event in &run.trace.events {
        if let Event::Write { file, offset, bytes } = event.event {
            if file == wal6 {
                ranges.push((offset, offset + bytes));
            }
        }
    }
    // B12 = {21}, B13 = {22}, B14 = {23, 24}: record 21 at 0-27, 22 at 27-55, 23 and 24 at 55-109.
    assert_eq!(ranges, [(0, 27), (27, 55), (55, 109)]);
    let records: Vec<(u64, u64)> = walab_core::tiny_store::WRITES[20..]
        .iter()
        .scan(0u64, |offset, write| {
            let start = *offset;
            *offset += write.record().len() as u64;
            Some((start, *offset))
        })
        .collect();
    assert_eq!(records, [(0, 27), (27, 55), (55, 82), (82, 109)]);
}

#[test]
fn units_0_and_1_are_on_the_media_after_b13_and_b14_dirties_1_2_3() {
    let run = branch_p();
    let wal6 = run.trace.file_index("wal-6").unwrap();
    let mut persisted_before_b14 = Vec::new();
    let mut b14_units = None;
    for event in &run.trace.events {
        match &event.event {
            Event::UnitPersisted { file, unit } if *file == wal6 => persisted_before_b14.push(*unit),
            Event::SyncStart { batch: Some(14), units, .. } => {
                b14_units = Some(units.clone());
                break;
            }
            _ => {}
        }
    }
    persisted_before_b14.sort_unstable();
    persisted_before_b14.dedup();
    assert_eq!(persisted_before_b14, [0, 1]);
    assert_eq!(b14_units, Some(vec![1, 2, 3]));
    assert_eq!(run.device.uncertain_units().len(), 3, "only B14's units are in doubt at 13.5 ms");
}

#[test]
fn case_1_units_1_and_2_land_and_unit_3_does_not() {
    let run = branch_p();
    let states = run.post_crash_states().unwrap();
    let case_1 = states.iter().find(|state| kept(state) == [1, 2]).unwrap();
    assert_eq!(case_1.recovery.scanned_in("wal-6"), [21, 22, 23]);
    assert_eq!(case_1.recovery.stop.reason, StopReason::Checksum);
    assert_eq!(case_1.recovery.stop.segment.as_deref(), Some("wal-6"));
    assert_eq!(case_1.recovery.stop.offset, 82, "the scan stops at record 24");
    // Record 24 on the media: its header and first 7 payload bytes, then zeros.
    let (_, image) = run
        .device
        .enumerate_power_cuts()
        .unwrap()
        .into_iter()
        .find(|(units, _)| units.iter().map(|unit| unit.unit).collect::<Vec<_>>() == [1, 2])
        .unwrap();
    let wal6 = image.file("wal-6").unwrap();
    let record_24 = walab_core::tiny_store::WRITES[23].record();
    let unit_3 = 3 * UNIT_BYTES;
    assert_eq!(unit_3 - 82, 7 + 7, "header and 7 payload bytes before unit 3");
    assert_eq!(&wal6[82..unit_3], &record_24[..14]);
    assert!(wal6[unit_3..109].iter().all(|&byte| byte == 0));
    assert!(case_1.lost_acknowledged.is_empty());
}

#[test]
fn case_2_the_sync_finished_23_and_24_survive_without_their_ok() {
    let run = branch_p();
    let states = run.post_crash_states().unwrap();
    let case_2 = states.iter().find(|state| kept(state) == [1, 2, 3]).unwrap();
    assert_eq!(case_2.recovery.recovered, (1..=24).collect::<Vec<u64>>());
    let acknowledged = run.acknowledged();
    assert!(!acknowledged.contains(&23));
    assert!(!acknowledged.contains(&24));
    assert_eq!(case_2.recovery.stop.reason, StopReason::Zero);
}

#[test]
fn every_legal_post_crash_state_is_listed_and_none_loses_an_acknowledged_write() {
    let run = branch_p();
    let states = run.post_crash_states().unwrap();
    let table: Vec<String> = states
        .iter()
        .map(|state| {
            format!(
                "units {:?} -> log has {:?}, stop {} at wal-6:{}",
                kept(state),
                state.recovery.scanned_in("wal-6"),
                state.recovery.stop.reason.name(),
                state.recovery.stop.offset
            )
        })
        .collect();
    expect_test::expect![[r#"
        units [] -> log has [21, 22], stop zero at wal-6:55
        units [1] -> log has [21, 22], stop checksum at wal-6:55
        units [2] -> log has [21, 22], stop zero at wal-6:55
        units [1, 2] -> log has [21, 22, 23], stop checksum at wal-6:82
        units [3] -> log has [21, 22], stop zero at wal-6:55
        units [1, 3] -> log has [21, 22], stop checksum at wal-6:55
        units [2, 3] -> log has [21, 22], stop zero at wal-6:55
        units [1, 2, 3] -> log has [21, 22, 23, 24], stop zero at wal-6:109"#]]
    .assert_eq(&table.join("\n"));
    assert!(states.iter().all(|state| state.lost_acknowledged.is_empty()));
}
