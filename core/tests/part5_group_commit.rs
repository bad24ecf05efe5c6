//! Part 5 of the teaching page, computed by running the group-commit simulator.

use expect_test::expect;
use walab_core::group_commit::{Config, Policy};
use walab_core::sim::commit::{run, tiny_store_setup, Arrivals, CommitRun, CommitSetup};
use walab_core::time::Nanos;
use walab_core::tiny_store::{SYNC_LATENCY, WRITES};

const MS: u64 = 1_000_000;

fn tiny(policy: Policy) -> CommitRun {
    let (setup, arrivals) = tiny_store_setup(Config::file(policy));
    run(&setup, &arrivals).unwrap()
}

/// Rounds nanoseconds to `decimals` decimals of a millisecond, half up, exactly.
fn ms_rounded(nanos: u64, decimals: u32) -> String {
    let scale = 1_000_000 / 10u64.pow(decimals);
    let units = (nanos + scale / 2) / scale;
    let whole = units / 10u64.pow(decimals);
    let fraction = units % 10u64.pow(decimals);
    if decimals == 0 {
        format!("{whole}")
    } else {
        format!("{whole}.{fraction:0width$}", width = decimals as usize)
    }
}

fn batch_table(run: &CommitRun) -> String {
    let mut table = String::new();
    for batch in &run.batches {
        let ids: Vec<String> = batch.write_ids().iter().map(u64::to_string).collect();
        table += &format!(
            "B{:<2} wal-{} {:>4} - {:>4}  {}\n",
            batch.id,
            batch.segment,
            ms_rounded(batch.start.0, 1),
            ms_rounded(batch.end.unwrap().0, 1),
            ids.join(",")
        );
    }
    table
}

#[test]
fn group_commit_runs_the_24_writes_in_14_syncs() {
    let run = tiny(Policy::Group);
    assert_eq!(run.summary.syncs, 14);
    expect![[r#"
        B1  wal-1  0.0 -  1.0  1
        B2  wal-1  1.0 -  2.0  2,3
        B3  wal-1  2.0 -  3.0  4
        B4  wal-2  3.0 -  4.0  5,6,7
        B5  wal-2  4.0 -  5.0  8
        B6  wal-3  5.0 -  6.0  9,10,11
        B7  wal-3  6.0 -  7.0  12
        B8  wal-4  7.0 -  8.0  13,14,15
        B9  wal-4  8.0 -  9.0  16
        B10 wal-5  9.0 - 10.0  17
        B11 wal-5 10.0 - 11.0  18,19,20
        B12 wal-6 11.0 - 12.0  21
        B13 wal-6 12.0 - 13.0  22
        B14 wal-6 13.0 - 14.0  23,24
    "#]]
    .assert_eq(&batch_table(&run));
    assert_eq!(run.batch_write_ids()[10], [18, 19, 20], "B11");
    assert_eq!(run.batch_write_ids()[13], [23, 24], "B14");
}

#[test]
fn group_commit_waits_total_33_2_ms_worst_1_9_for_write_4_best_1_0() {
    let run = tiny(Policy::Group);
    assert_eq!(ms_rounded(run.summary.wait_total.0, 1), "33.2");
    assert_eq!(ms_rounded(run.summary.wait_total.0 / 24, 1), "1.4");
    assert_eq!(ms_rounded(run.summary.wait_max.0, 1), "1.9");
    let worst = run.writes.iter().max_by_key(|write| write.wait().unwrap()).unwrap();
    assert_eq!(worst.id, 4);
    assert_eq!(ms_rounded(run.summary.wait_min.0, 1), "1.0");
    for write in &run.writes {
        let wait = write.wait().unwrap();
        assert!(wait >= SYNC_LATENCY, "write {} waits at least L", write.id);
        assert!(wait <= Nanos(2 * SYNC_LATENCY.0), "write {} waits at most 2L", write.id);
    }
}

#[test]
fn no_batch_crosses_a_segment_boundary_and_b1_to_b3_are_in_wal_1() {
    let run = tiny(Policy::Group);
    for batch in &run.batches {
        for id in batch.write_ids() {
            assert_eq!(WRITES[(id - 1) as usize].segment(), batch.segment, "B{} write {id}", batch.id);
        }
    }
    let first_three: Vec<u64> = run.batches[..3].iter().map(|batch| batch.segment).collect();
    assert_eq!(first_three, [1, 1, 1]);
}

#[test]
fn tie_rule_a_write_at_a_sync_completion_joins_the_next_batch() {
    // Write 2 arrives exactly when B1's sync completes.
    let setup = CommitSetup { keep: walab_core::sim::commit::Keep::ALL, ..CommitSetup::new(Config::file(Policy::Group), SYNC_LATENCY) };
    let run = run(&setup, &Arrivals::Given(vec![Nanos(0), Nanos(MS / 2), Nanos(MS)])).unwrap();
    assert_eq!(run.batch_write_ids(), [vec![1], vec![2, 3]]);
    assert_eq!(run.writes[2].ack, Some(Nanos(2 * MS)));
}

#[test]
fn sync_per_write_acknowledges_write_n_at_n_ms() {
    let run = tiny(Policy::PerWrite);
    assert_eq!(run.summary.syncs, 24);
    for write in &run.writes {
        assert_eq!(write.ack, Some(Nanos(write.id * MS)), "write {}", write.id);
    }
    let last_arrival = WRITES[23].arrival;
    assert_eq!(ms_rounded(last_arrival.0, 1), "12.7");
    // 24 writes in 12.7 ms: about 1,900 a second, above the 1,000-a-second ceiling.
    let rate = 24.0 * 1e9 / last_arrival.0 as f64;
    assert_eq!((rate / 100.0).round() * 100.0, 1900.0);
    let waiting = run.writes.iter().filter(|write| write.arrival <= last_arrival && write.ack.unwrap() > last_arrival).count();
    assert_eq!(waiting, 12, "writes waiting at 12.7 ms");
    assert_eq!(ms_rounded(run.writes[23].wait().unwrap().0, 1), "11.3");
    assert_eq!(ms_rounded(run.summary.wait_mean().0, 1), "6.4");
}

fn steady(policy: Policy, arrivals: Arrivals) -> CommitRun {
    let setup = CommitSetup { record_bytes: 100, ..CommitSetup::new(Config::file(policy), SYNC_LATENCY) };
    run(&setup, &arrivals).unwrap()
}

#[test]
fn steady_load_at_100000_per_s_evenly_spaced_and_poisson() {
    for arrivals in [
        Arrivals::Even { rate_per_s: 100_000, count: 200_000 },
        Arrivals::Poisson { rate_per_s: 100_000, count: 200_000, seed: 7 },
    ] {
        let summary = steady(Policy::Group, arrivals.clone()).summary;
        let label = format!("{arrivals:?}");
        assert_eq!(summary.syncs_per_s().round(), 1000.0, "{label}: syncs/s");
        assert_eq!(summary.batch_mean().round(), 100.0, "{label}: writes per batch");
        assert_eq!(ms_rounded(summary.wait_mean().0, 2), "1.50", "{label}: mean wait");
        assert_eq!(ms_rounded(summary.wait_max.0, 1), "2.0", "{label}: worst wait");
        assert_eq!((summary.bytes_per_sync_mean() / 1000.0).round(), 10.0, "{label}: about 10 KB per sync");
        assert_eq!((summary.in_flight_mean() / 10.0).round() * 10.0, 150.0, "{label}: writes in flight");
    }
}

#[test]
fn the_window_halves_the_syncs_at_high_load_and_adds_up_to_w_at_every_load() {
    let window = Policy::Window { window: Nanos(2 * MS) };
    let window_config = Config { batch_bytes_max: 64 * 1024, ..Config::file(window) };
    let high = Arrivals::Even { rate_per_s: 100_000, count: 200_000 };
    let group = steady(Policy::Group, high.clone()).summary;
    let setup = CommitSetup { record_bytes: 100, ..CommitSetup::new(window_config, SYNC_LATENCY) };
    let windowed = run(&setup, &high).unwrap().summary;
    assert_eq!((group.syncs_per_s() / windowed.syncs_per_s() * 10.0).round() / 10.0, 2.0, "half the syncs");
    for rate_per_s in [100, 1_000, 10_000, 100_000] {
        let arrivals = Arrivals::Even { rate_per_s, count: 20_000 };
        let group = steady(Policy::Group, arrivals.clone()).summary;
        let windowed = run(&setup, &arrivals).unwrap().summary;
        let added = windowed.wait_mean().0 as i64 - group.wait_mean().0 as i64;
        assert!(added > 0, "{rate_per_s}/s: the window adds latency");
        assert!(added <= 2 * MS as i64, "{rate_per_s}/s: at most W");
        if rate_per_s == 100 {
            assert_eq!(ms_rounded(added as u64, 1), "2.0", "an idle disk still waits the whole window");
        }
    }
}

/// The wasm32 build prints the same number (`core/benches/wasm/bench.mjs`): a seeded
/// Poisson run is the same simulation, bit for bit, on every target.
#[test]
fn poisson_run_is_the_same_on_every_target() {
    let setup = CommitSetup::new(Config::file(Policy::Group), SYNC_LATENCY);
    let run = run(&setup, &Arrivals::Poisson { rate_per_s: 100_000, count: 100_000, seed: 1 }).unwrap();
    assert_eq!(run.summary.wait_total.0, 149_963_077_994);
}
