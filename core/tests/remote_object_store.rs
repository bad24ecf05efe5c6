//! The object-store WAL's figures, computed from simulated runs: batches pipelining, a slow
//! PUT holding back acknowledgements, PUTs per record falling as writers rise, and a
//! takeover that fences the old node without losing anything it acknowledged.

use walab_core::remote::layout::Ignored;
use walab_core::sim::remote::{run, BatchOutcome, Load, RemoteBackend, RemoteRun, RemoteSetup};
use walab_core::sim::SyncLatency;
use walab_core::time::Nanos;

fn ms(millis: u64) -> Nanos {
    Nanos::from_millis(millis)
}

fn s3(load: Load, count: u64) -> RemoteSetup {
    RemoteSetup {
        latency: SyncLatency::fixed(ms(25)),
        ..RemoteSetup::new(RemoteBackend::S3, load, count)
    }
}

fn batch(run: &RemoteRun, n: u64) -> &walab_core::sim::remote::BatchRow {
    run.batches.iter().find(|b| b.batch == n).unwrap()
}

#[test]
fn a_slow_third_put_holds_back_the_acknowledgements_of_the_batches_behind_it() {
    let setup = RemoteSetup {
        slow_puts: vec![(3, ms(200))],
        ..s3(
            Load::Rate {
                rate_per_s: 20_000,
                poisson: false,
            },
            2_000,
        )
    };
    assert_eq!(setup.inflight_max, 4);
    let run = run(&setup).unwrap();
    let ms_of =
        |t: Option<Nanos>| t.map_or("-".to_string(), |t| format!("{:.3}", t.as_millis_f64()));
    let table: Vec<String> = run
        .batches
        .iter()
        .take(8)
        .map(|b| {
            format!(
                "batch {} records {:>3} sent {:>7} stored {:>7} acked {:>7}",
                b.batch,
                b.records,
                ms_of(b.sent),
                ms_of(b.stored),
                ms_of(b.acked)
            )
        })
        .collect();
    expect_test::expect![[r#"
        batch 1 records   1 sent   0.025 stored  25.025 acked  50.025
        batch 2 records  32 sent   1.625 stored  26.625 acked  51.625
        batch 3 records  32 sent   3.225 stored 203.225 acked 228.225
        batch 4 records  32 sent   4.825 stored  29.825 acked 228.225
        batch 5 records 904 sent  50.025 stored  75.025 acked 228.225
        batch 6 records  32 sent  51.625 stored  76.625 acked 228.225
        batch 7 records  64 sent  54.825 stored  79.825 acked 228.225
        batch 8 records 903 sent 100.025 stored 125.025 acked 228.225"#]]
    .assert_eq(&table.join("\n"));
    let third = batch(&run, 3);
    for n in [4, 5] {
        let later = batch(&run, n);
        assert!(
            later.stored.unwrap() < third.stored.unwrap(),
            "batch {n} is stored before batch 3"
        );
        assert_eq!(
            later.acked, third.acked,
            "batch {n} is acknowledged only with batch 3"
        );
        assert!(
            later.acked.unwrap() > later.stored.unwrap(),
            "batch {n} waited, stored but not acknowledged"
        );
    }
    // A batch is reported once the fence read after its PUT answers (25 ms here).
    assert_eq!(third.checked, Some(third.stored.unwrap() + ms(25)));
    assert_eq!(third.checked, third.acked);
    assert_eq!(
        batch(&run, 1).acked,
        batch(&run, 1).checked,
        "nothing holds batch 1 back"
    );
    assert_eq!(run.records_acked, 2_000);
}

#[test]
fn puts_per_record_fall_as_writers_rise() {
    let mut previous = f64::INFINITY;
    let mut rows = Vec::new();
    // Closed-loop writers all wait on the one batch in flight and come back together.
    for writers in [1, 4, 16, 64, 256] {
        let run = run(&s3(Load::Writers { writers }, 2_048)).unwrap();
        let per_record = run.puts_per_record().unwrap();
        rows.push(format!("{writers}: {} puts, {per_record:.4}", run.puts));
        assert!(
            per_record < previous,
            "{writers} writers: {per_record} not below {previous}"
        );
        previous = per_record;
    }
    expect_test::expect![[r#"
        1: 2048 puts, 1.0000
        4: 512 puts, 0.2500
        16: 128 puts, 0.0625
        64: 32 puts, 0.0156
        256: 8 puts, 0.0039"#]]
    .assert_eq(&rows.join("\n"));
}

#[test]
fn after_a_takeover_the_new_owner_recovers_every_acknowledged_record_and_no_straggler() {
    // B's claim, read-back and LIST take a request each, so an upload in flight at the
    // takeover usually lands before the LIST: a straggler is a PUT slower than those.
    let base = run(&RemoteSetup {
        takeover_at: Some(ms(60)),
        ..s3(
            Load::Rate {
                rate_per_s: 20_000,
                poisson: true,
            },
            4_000,
        )
    })
    .unwrap();
    let last_before = base
        .batches
        .iter()
        .filter(|b| b.sent.is_some_and(|sent| sent < ms(60)))
        .filter_map(|b| b.request)
        .max()
        .unwrap();
    let setup = RemoteSetup {
        takeover_at: Some(ms(60)),
        slow_puts: vec![(last_before, ms(300))],
        ..s3(
            Load::Rate {
                rate_per_s: 20_000,
                poisson: true,
            },
            4_000,
        )
    };
    let run = run(&setup).unwrap();
    let takeover = run.takeover.clone().unwrap();
    assert_eq!((takeover.old_epoch, takeover.new_epoch), (5, 6));
    let acked: Vec<u64> = run
        .records
        .iter()
        .filter(|r| r.acked.is_some())
        .map(|r| r.record)
        .collect();
    assert!(!acked.is_empty());
    assert!(acked.iter().all(|r| takeover.recovered_records.contains(r)));
    assert!(
        run.records
            .iter()
            .filter(|r| r.acked.is_some())
            .all(|r| r.acked.unwrap() <= takeover.claimed_at),
        "nothing acknowledged after the claim"
    );
    assert_eq!(takeover.claimed_at, ms(85), "the claim is one 25 ms PUT");
    assert_eq!(takeover.listed_at, ms(135), "then a read-back and a LIST");
    assert!(takeover.stragglers_ignored >= 1);
    for (object, why) in &takeover.ignored {
        assert_eq!(object.epoch, 5);
        assert!(
            matches!(why, Ignored::FencedBeyondTakeover { .. }),
            "{why:?}"
        );
        let straggler = run
            .batches
            .iter()
            .find(|b| b.first_offset == object.start)
            .unwrap();
        assert_eq!(straggler.outcome, Some(BatchOutcome::StoredNotAcked));
        assert!(
            (straggler.first_record..straggler.first_record + straggler.records)
                .all(|r| !takeover.recovered_records.contains(&r))
        );
    }
    assert!(
        !takeover.fenced_batches.is_empty(),
        "A's next check fences it"
    );
}

#[test]
fn a_trace_of_a_run_reads_back_into_the_same_batches_records_and_takeover() {
    use walab_core::sim::remote::{from_trace, to_trace};
    let setup = RemoteSetup {
        takeover_at: Some(ms(60)),
        slow_puts: vec![(8, ms(300))],
        ..s3(
            Load::Rate {
                rate_per_s: 20_000,
                poisson: true,
            },
            4_000,
        )
    };
    let run = run(&setup).unwrap();
    let back = from_trace(&to_trace(&run, "group")).unwrap();
    let times = |run: &RemoteRun| -> Vec<_> {
        run.batches
            .iter()
            .map(|b| (b.batch, b.records, b.first_offset, b.end_offset, b.formed, b.sent, b.stored, b.checked, b.acked, b.outcome))
            .collect()
    };
    assert_eq!(times(&back), times(&run));
    assert_eq!(back.records, run.records);
    assert_eq!((back.puts, back.records_acked), (run.puts, run.records_acked));
    let (original, read) = (run.takeover.clone().unwrap(), back.takeover.clone().unwrap());
    assert_eq!((read.at, read.claimed_at, read.listed_at), (original.at, original.claimed_at, original.listed_at));
    assert_eq!((read.old_epoch, read.new_epoch, read.new_session_start), (original.old_epoch, original.new_epoch, original.new_session_start));
    assert_eq!(read.fenced_batches, original.fenced_batches);
    assert_eq!(read.stragglers_ignored, original.stragglers_ignored);
    assert!(read.stragglers_ignored >= 1);
    assert_eq!(read.recovered_by_new, original.recovered_by_new);
    let mut not_remote = to_trace(&back, "group");
    not_remote.scenario = "tiny-store".into();
    assert_eq!(
        from_trace(&not_remote).unwrap_err().to_string(),
        "scenario 'tiny-store' is not a run of walab sim remote (remote-s3 or remote-postgres)"
    );
}

/// JSON written before batches were called batches (`bulks`, `bulk`, `fenced_bulks`)
/// still reads back as the same run; new JSON carries only the new names.
#[cfg(feature = "serde")]
#[test]
fn a_run_in_json_with_the_old_bulk_names_reads_back_the_same() {
    use serde_json::Value;
    let mut run = run(&RemoteSetup {
        takeover_at: Some(ms(60)),
        ..s3(Load::Rate { rate_per_s: 20_000, poisson: false }, 2_000)
    })
    .unwrap();
    run.takeover.as_mut().unwrap().fenced_batches = vec![7, 8];
    let new = serde_json::to_value(&run).unwrap();
    assert!(new.get("batches").is_some() && new.get("bulks").is_none(), "new JSON names batches");
    assert!(new["batches"][0].get("batch").is_some() && new["batches"][0].get("bulk").is_none());
    fn rename(value: &mut Value, from: &str, to: &str) {
        let object = value.as_object_mut().unwrap();
        let moved = object.remove(from).unwrap();
        object.insert(to.to_string(), moved);
    }
    let mut old = new.clone();
    rename(&mut old, "batches", "bulks");
    for list in ["bulks", "records"] {
        for row in old[list].as_array_mut().unwrap() {
            rename(row, "batch", "bulk");
        }
    }
    rename(&mut old["takeover"], "fenced_batches", "fenced_bulks");
    assert_ne!(old, new);
    let back: RemoteRun = serde_json::from_value(old).unwrap();
    assert_eq!(back, run);
}

#[test]
fn under_the_lease_a_single_append_on_an_idle_stream_pays_one_round_trip() {
    let idle = Load::Rate { rate_per_s: 1, poisson: false };
    let read = run(&s3(idle, 1)).unwrap();
    let lease = run(&RemoteSetup { fence_read: false, ..s3(idle, 1) }).unwrap();
    let waited = |run: &RemoteRun| {
        let record = &run.records[0];
        Nanos(record.acked.unwrap().0 - record.arrived.unwrap().0)
    };
    assert_eq!(waited(&lease), ms(25), "one PUT, acknowledged as it returns");
    assert_eq!(waited(&read), ms(50), "the PUT, then the fence read");
    assert_eq!(lease.fence_checks, 0);
    // A takeover needs the fence read: the simulator does not wait out a lease.
    let taken = run(&RemoteSetup { fence_read: false, takeover_at: Some(ms(10)), ..s3(idle, 1) }).unwrap();
    assert_eq!(taken.fence_checks, read.fence_checks);
}
