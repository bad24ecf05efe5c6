//! The Postgres WAL's figures, computed from simulated runs: the ring filling while the
//! upload stalls, a lost INSERT answer retried and compared, a takeover fenced inside the
//! insert, the timeline table at a restart, and what each event loses.

use walab_core::ring::{RingGeometry, Severity, TimelineVerdict};
use walab_core::sim::remote::{
    event_loss, restart_after, run, Load, RemoteBackend, RemoteRun, RemoteSetup, RingWait, Standby,
    TimelineCase, WalEvent,
};
use walab_core::sim::SyncLatency;
use walab_core::time::Nanos;

fn ms(millis: u64) -> Nanos {
    Nanos::from_millis(millis)
}

fn postgres(load: Load, count: u64) -> RemoteSetup {
    RemoteSetup {
        latency: SyncLatency::fixed(ms(1)),
        ..RemoteSetup::new(RemoteBackend::Postgres, load, count)
    }
}

#[test]
fn a_ring_of_two_slots_waits_exactly_when_the_head_reaches_the_untrimmed_slot() {
    let setup = RemoteSetup {
        ring: RingGeometry {
            segments: 2,
            segment_bytes: 4096,
        },
        upload_stall: Some((Nanos::ZERO, ms(500))),
        ..postgres(Load::Writers { writers: 8 }, 200)
    };
    let run = run(&setup).unwrap();
    let first_wait = run
        .batches
        .iter()
        .position(|b| b.waited == Some(RingWait::Slot))
        .expect("the ring fills");
    let waiting = &run.batches[first_wait];
    assert_eq!(waiting.generation, Some(2), "the head reached generation 2");
    assert_eq!(waiting.slot, Some(0), "whose slot still holds generation 0");
    assert_eq!(
        waiting.first_offset,
        2 * 4096,
        "it is the first batch of generation 2"
    );
    assert!(
        run.batches[..first_wait]
            .iter()
            .all(|b| b.generation < Some(2)),
        "no earlier batch waited for a slot"
    );
    let trim = run
        .trims
        .iter()
        .find(|t| t.truncated_slots.contains(&0))
        .expect("slot 0 truncated once the upload resumes");
    assert_eq!(trim.at, ms(500));
    assert_eq!(
        waiting.sent,
        Some(ms(500)),
        "the insert goes the instant slot 0 is truncated"
    );
    assert_eq!(run.records_acked, 200);
    assert_eq!(setup.ring.capacity_bytes(), 4096);
}

#[test]
fn the_default_ring_holds_448_mib() {
    assert_eq!(RingGeometry::default().capacity_bytes(), 448 << 20);
}

#[test]
fn a_lost_insert_answer_is_retried_compared_and_counts_as_stored() {
    let setup = RemoteSetup {
        fail_put: Some(3),
        ..postgres(
            Load::Rate {
                rate_per_s: 5_000,
                poisson: false,
            },
            100,
        )
    };
    let run = run(&setup).unwrap();
    let third = run.batches.iter().find(|b| b.request == Some(3)).unwrap();
    assert!(third.retried);
    assert!(
        third.acked.unwrap() >= third.stored.unwrap() + ms(1),
        "acknowledged after the retry's round trip"
    );
    assert_eq!(run.puts, run.batches.len() as u64 + 1, "one extra INSERT");
    assert_eq!(run.records_acked, 100);
}

#[test]
fn a_takeover_fences_the_old_writer_inside_its_insert_with_no_straggler() {
    let setup = RemoteSetup {
        takeover_at: Some(ms(30)),
        ..postgres(
            Load::Rate {
                rate_per_s: 5_000,
                poisson: true,
            },
            400,
        )
    };
    let run = run(&setup).unwrap();
    let takeover = run.takeover.clone().unwrap();
    assert_eq!((takeover.old_epoch, takeover.new_epoch), (5, 6));
    assert!(!takeover.fenced_batches.is_empty());
    assert_eq!(takeover.stragglers_ignored, 0);
    let acked: Vec<u64> = run
        .records
        .iter()
        .filter(|r| r.acked.is_some())
        .map(|r| r.record)
        .collect();
    assert_eq!(acked.len() as u64, takeover.acked_by_old);
    assert!(acked.iter().all(|r| takeover.recovered_records.contains(r)));
    assert!(takeover.recovered_by_new >= takeover.acked_by_old);
}

#[test]
fn node_bs_claim_waits_for_the_inserts_holding_the_row_then_takes_a_request_and_its_scan_another() {
    let rate = Load::Rate { rate_per_s: 5_000, poisson: true };
    // The last insert A sends before the takeover, in a run of the same setup without it.
    let last_before = |setup: RemoteSetup| {
        let base = run(&RemoteSetup { takeover_at: Some(ms(30)), ..setup }).unwrap();
        base.batches.iter().filter(|b| b.sent.is_some_and(|sent| sent < ms(30))).filter_map(|b| b.request).max().unwrap()
    };
    let drawn = RemoteSetup::new(RemoteBackend::Postgres, rate, 400);
    let (last_fixed, last_drawn) = (last_before(postgres(rate, 400)), last_before(drawn.clone()));
    let mut lines = Vec::new();
    for (name, setup) in [
        ("idle", RemoteSetup { takeover_at: Some(ms(30)), ..postgres(rate, 20) }),
        ("busy", RemoteSetup { takeover_at: Some(ms(30)), ..postgres(rate, 400) }),
        ("held", RemoteSetup { takeover_at: Some(ms(30)), slow_puts: vec![(last_fixed, ms(20))], ..postgres(rate, 400) }),
        ("drawn", RemoteSetup { takeover_at: Some(ms(30)), slow_puts: vec![(last_drawn, ms(20))], ..drawn }),
    ] {
        let run = run(&setup).unwrap();
        let takeover = run.takeover.clone().unwrap();
        // The inserts A sent before the takeover hold the node row until they commit.
        let released = run
            .batches
            .iter()
            .filter(|b| b.sent.is_some_and(|sent| sent < ms(30)))
            .filter_map(|b| b.answered)
            .max()
            .unwrap_or(Nanos::ZERO)
            .max(ms(30));
        let claim = takeover.claimed_at - released;
        let scan = takeover.listed_at - takeover.claimed_at;
        let (lo, hi) = match setup.latency {
            SyncLatency::Uniform { min, max } => (min, max),
            _ => (ms(1), ms(1)),
        };
        assert!(lo <= claim && claim <= hi && lo <= scan && scan <= hi, "{name}: each of B's requests is one draw");
        assert!(run.records.iter().filter_map(|r| r.acked).all(|acked| acked <= takeover.claimed_at), "{name}: A acknowledges nothing after the claim");
        lines.push(format!(
            "{name}: takeover {:.3} row free {:.3} claimed {:.3} scanned {:.3} recovered {} of {} acknowledged",
            takeover.at.as_millis_f64(),
            released.as_millis_f64(),
            takeover.claimed_at.as_millis_f64(),
            takeover.listed_at.as_millis_f64(),
            takeover.recovered_by_new,
            takeover.acked_by_old
        ));
    }
    expect_test::expect![[r#"
        idle: takeover 30.000 row free 30.000 claimed 31.000 scanned 32.000 recovered 20 of 20 acknowledged
        busy: takeover 30.000 row free 30.677 claimed 31.677 scanned 32.677 recovered 145 of 145 acknowledged
        held: takeover 30.000 row free 49.677 claimed 50.677 scanned 51.677 recovered 145 of 145 acknowledged
        drawn: takeover 30.000 row free 49.843 claimed 51.842 scanned 53.112 recovered 146 of 146 acknowledged"#]].assert_eq(&lines.join("\n"));
}

/// 2,000 records a second; the upload confirms only once a second, so at 150 ms every
/// acknowledged record is still only in the WAL.
fn steady() -> RemoteRun {
    run(&RemoteSetup {
        trim_every: ms(1000),
        ..postgres(
            Load::Rate {
                rate_per_s: 2_000,
                poisson: false,
            },
            400,
        )
    })
    .unwrap()
}

#[test]
fn each_timeline_case_gives_the_seeds_outcome() {
    let run = steady();
    let at = ms(150);
    let equal = restart_after(&run, TimelineCase::Equal, at);
    assert!(matches!(equal.verdict, TimelineVerdict::Equal { .. }));
    assert_eq!((equal.severity, equal.lost.len()), (Severity::Info, 0));
    let lower = restart_after(&run, TimelineCase::Lower { backup_at: ms(50) }, at);
    assert!(matches!(lower.verdict, TimelineVerdict::Lower { .. }));
    assert_eq!(lower.severity, Severity::Warning);
    let after_backup = run
        .records
        .iter()
        .filter(|r| r.acked.is_some_and(|t| t <= at && t > ms(51)))
        .count();
    assert!(
        lower.lost.len() >= after_backup && after_backup > 0,
        "records after the backup point are gone"
    );
    let sync = restart_after(&run, TimelineCase::HigherSynchronous, at);
    assert!(matches!(
        sync.verdict,
        TimelineVerdict::HigherSynchronous { .. }
    ));
    assert_eq!((sync.severity, sync.lost.len()), (Severity::Info, 0));
    let asynchronous = restart_after(&run, TimelineCase::HigherAsynchronous { lag: ms(10) }, at);
    assert!(matches!(
        asynchronous.verdict,
        TimelineVerdict::HigherAsynchronous { .. }
    ));
    assert_eq!(asynchronous.severity, Severity::Error);
    assert!(
        !asynchronous.lost.is_empty(),
        "records acknowledged after the standby's last replayed commit are lost"
    );
    assert!(asynchronous
        .lost
        .iter()
        .all(|r| run.records[*r as usize - 1].acked.unwrap() > ms(138)));
}

#[test]
fn what_each_event_loses() {
    let pg = steady();
    let at = ms(150);
    for event in [WalEvent::NodeCrash, WalEvent::PostgresCrash] {
        let loss = event_loss(&pg, event, at, Standby::None, false);
        assert!(
            loss.applicable && loss.acked > 0 && loss.lost.is_empty(),
            "{event:?}"
        );
    }
    let no_standby = event_loss(&pg, WalEvent::PrimaryHostLost, at, Standby::None, false);
    assert_eq!(
        no_standby.lost.len() as u64,
        no_standby.acked,
        "nothing uploaded, no standby: every acknowledged record"
    );
    let lagging = event_loss(
        &pg,
        WalEvent::PrimaryHostLost,
        at,
        Standby::Asynchronous { lag: ms(10) },
        false,
    );
    assert!(!lagging.lost.is_empty() && (lagging.lost.len() as u64) < lagging.acked);
    let sync = event_loss(
        &pg,
        WalEvent::PrimaryHostLost,
        at,
        Standby::Synchronous,
        false,
    );
    assert!(sync.lost.is_empty());
    let s3 = run(&RemoteSetup {
        latency: SyncLatency::fixed(ms(25)),
        ..RemoteSetup::new(
            RemoteBackend::S3,
            Load::Rate {
                rate_per_s: 2_000,
                poisson: false,
            },
            400,
        )
    })
    .unwrap();
    let crash = event_loss(&s3, WalEvent::NodeCrash, at, Standby::None, false);
    assert!(crash.acked > 0 && crash.lost.is_empty());
    assert!(!event_loss(&s3, WalEvent::PostgresCrash, at, Standby::None, false).applicable);
    assert!(
        event_loss(&s3, WalEvent::ZoneLost, at, Standby::None, false)
            .lost
            .is_empty(),
        "a regional bucket"
    );
    let one_zone = event_loss(&s3, WalEvent::ZoneLost, at, Standby::None, true);
    assert_eq!(
        one_zone.lost.len() as u64,
        one_zone.acked,
        "an S3 Express One Zone bucket"
    );
}

#[test]
fn a_seed_gives_the_same_run_every_time() {
    let setup = RemoteSetup {
        latency: walab_core::sim::remote::LatencyProfile::S3Standard.latency(),
        takeover_at: Some(ms(80)),
        seed: 42,
        ..RemoteSetup::new(
            RemoteBackend::S3,
            Load::Rate {
                rate_per_s: 10_000,
                poisson: true,
            },
            1_000,
        )
    };
    assert_eq!(run(&setup).unwrap(), run(&setup).unwrap());
}

/// Part 14's run: 20,000 records/s, 600 of them, 4 inserts in flight, a ring of four
/// 4 KiB slot tables, the Postgres latency profile, seed 1.
fn part_14() -> RemoteRun {
    run(&RemoteSetup {
        latency: walab_core::sim::remote::LatencyProfile::Postgres.latency(),
        ring: RingGeometry {
            segments: 4,
            segment_bytes: 4096,
        },
        inflight_max: 4,
        seed: 1,
        ..RemoteSetup::new(
            RemoteBackend::Postgres,
            Load::Rate {
                rate_per_s: 20_000,
                poisson: false,
            },
            600,
        )
    })
    .unwrap()
}

#[test]
fn a_restore_counts_the_records_past_the_backup_and_those_already_uploaded() {
    let run = part_14();
    let backup_at = ms(20);
    let end = run.records.iter().filter_map(|r| r.acked).max().unwrap();
    let (mut some_lost, mut all_uploaded) = (false, false);
    let mut at = Nanos::ZERO;
    while at <= end {
        let restart = restart_after(&run, TimelineCase::Lower { backup_at }, at);
        // Every acknowledged record committed after the backup point is past the database.
        let past: Vec<u64> = run
            .acked_by(at)
            .filter(|r| {
                let batch = run.batches.iter().find(|b| Some(b.batch) == r.batch).unwrap();
                batch.stored.unwrap() > backup_at
            })
            .map(|r| r.record)
            .collect();
        assert_eq!(restart.past_database, past.len() as u64, "at {at:?}");
        assert!(restart.past_database_uploaded <= restart.past_database);
        assert_eq!(
            restart.lost.len() as u64,
            restart.past_database - restart.past_database_uploaded + restart.lost_past_gap,
            "at {at:?}"
        );
        some_lost |= !restart.lost.is_empty() && restart.past_database_uploaded < restart.past_database;
        all_uploaded |= restart.past_database > 0 && restart.lost.is_empty();
        at = at + Nanos::from_micros(250);
    }
    assert!(some_lost, "a restore mid-run loses what the upload had not reached");
    assert!(all_uploaded, "a restore late in the run loses nothing: the upload has it all");
    let equal = restart_after(&run, TimelineCase::Equal, end);
    assert_eq!((equal.past_database, equal.lost.len()), (0, 0));
}
