//! Part 3: a failed sync, handled the wrong way and the right way (E1), and a flushed
//! file's failed sync (E2).

use walab_core::group_commit::Policy;
use walab_core::sim::tiny::{run, LogSyncFault, SyncErrorHandling, TinyRun, TinySetup};
use walab_core::time::Nanos;
use walab_core::trace::Event;

const MS: u64 = 1_000_000;

fn e1(handling: SyncErrorHandling, power_cut: Option<Nanos>) -> TinyRun {
    let setup = TinySetup {
        log_sync_fault: Some(LogSyncFault { batch: 11, handling }),
        power_cut,
        ..TinySetup::new(Policy::Group)
    };
    run(&setup).unwrap()
}

/// The writes lost in every legal post-crash state of a cut at `at` (a set per state).
fn losses(handling: SyncErrorHandling, at: Nanos) -> Vec<Vec<u64>> {
    let run = e1(handling, Some(at));
    let mut losses: Vec<Vec<u64>> =
        run.post_crash_states().unwrap().into_iter().map(|state| state.lost_acknowledged).collect();
    losses.sort();
    losses.dedup();
    losses
}

fn cut_times() -> impl Iterator<Item = Nanos> {
    // Every 0.05 ms from 0 to 20 ms, plus the instants just after each tenth.
    (0..=400u64).map(|step| Nanos(step * MS / 20 + 1))
}

#[test]
fn e1_the_fdatasync_of_wal5_for_b11_returns_eio_and_the_pages_are_dropped() {
    let run = e1(SyncErrorHandling::FailStop, None);
    let wal5 = run.trace.file_index("wal-5").unwrap();
    let dropped = run.trace.events.iter().find_map(|event| match &event.event {
        Event::UnitsDropped { file, units } if *file == wal5 => Some((event.at, units.clone())),
        _ => None,
    });
    assert_eq!(dropped, Some((Nanos(11 * MS), vec![0, 1, 2, 3])));
    assert_eq!(run.failed()[..3], [18, 19, 20], "the right path fails B11's waiters");
    assert!(run.acknowledged().iter().all(|id| *id <= 17));
}

#[test]
fn e1_wrong_path_loses_3_if_power_precedes_f11_and_none_if_f11_comes_first() {
    let wrong = e1(SyncErrorHandling::RetryAndCarryOn, None);
    let acked_18 = wrong.ack_of(18).unwrap();
    // F11 counts once its manifest edit (9) is durable; its edit's sync starts 1 ms before.
    let (f11_recorded, edit) = wrong.manifest_durable.iter().find(|(_, edit)| edit.table == 11).copied().unwrap();
    assert_eq!(edit.edit, 9);
    let edit_sync_start = Nanos(f11_recorded.0 - MS);
    let mut lost_three = 0;
    let mut lost_none_after_f11 = 0;
    for at in cut_times() {
        let losses = losses(SyncErrorHandling::RetryAndCarryOn, at);
        if at > acked_18 && at <= edit_sync_start {
            assert_eq!(losses, [vec![18, 19, 20]], "power at {at} before F11 is written");
            lost_three += 1;
        } else if at > f11_recorded {
            assert_eq!(losses, [Vec::<u64>::new()], "power at {at} after F11");
            lost_none_after_f11 += 1;
        }
    }
    assert!(lost_three > 0);
    assert!(lost_none_after_f11 > 0);
}

#[test]
fn e1_right_path_no_timing_loses_an_acknowledged_write() {
    for at in cut_times() {
        assert_eq!(losses(SyncErrorHandling::FailStop, at), [Vec::<u64>::new()], "power at {at}");
    }
}

#[test]
fn e1_a_restarted_process_reading_through_the_page_cache_sees_17_to_20_the_disk_has_17() {
    let run = e1(SyncErrorHandling::FailStop, None);
    assert_eq!(run.recover_through_page_cache().scanned_in("wal-5"), [17, 18, 19, 20]);
    let after_reboot = walab_core::sim::tiny::recover(&run.device.media_image());
    assert_eq!(after_reboot.scanned_in("wal-5"), [17]);
}

#[test]
fn e2_a_failed_f11_fsync_writes_no_manifest_edit_9_and_keeps_wal5() {
    let setup = TinySetup { flush_sync_fault: Some(11), ..TinySetup::new(Policy::Group) };
    let run = run(&setup).unwrap();
    let f11 = run.trace.file_index("F11").unwrap();
    assert!(run.trace.events.iter().any(|event| matches!(event.event, Event::SyncEnd { file, ok: false, .. } if file == f11)));
    let edits: Vec<u64> = run
        .trace
        .events
        .iter()
        .filter_map(|event| match event.event {
            Event::ManifestEdit { edit, .. } => Some(edit),
            _ => None,
        })
        .collect();
    assert_eq!(edits, [5, 6, 7, 8], "no edit 9");
    let wal5 = run.trace.file_index("wal-5").unwrap();
    assert!(run.trace.state_at(run.ended_at).files[wal5 as usize].exists, "wal-5 kept");
    assert_eq!(run.segment_deleted_at[4], None);
    // Nothing acknowledged is lost after a reboot: 17-20 are still in wal-5.
    let recovery = walab_core::sim::tiny::recover(&run.device.media_image());
    assert!(run.acknowledged().iter().all(|id| recovery.recovered.contains(id)));
}
