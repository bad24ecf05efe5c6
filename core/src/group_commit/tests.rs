//! The machine driven by a fake driver: every policy, pipelining, failure and bound.

use super::*;

mod served;

const MS: u64 = 1_000_000;

/// Four persists in flight, as the remote WALs run.
fn pipelined(policy: Policy) -> Config {
    Config { inflight_max: 4, ..Config::file(policy) }
}

fn at(tenths: u64) -> Nanos {
    Nanos::from_tenth_millis(tenths)
}

/// A driver that performs nothing: it collects the actions so tests can complete
/// persists by hand and read what was acknowledged.
struct FakeDriver {
    machine: GroupCommit,
    persists: Vec<Batch>,
    writes: Vec<Batch>,
    syncs: Vec<(BatchId, u64, u64)>,
    acked: Vec<u64>,
    failed: Vec<(u64, SyncError)>,
}

impl FakeDriver {
    fn new(config: Config) -> FakeDriver {
        FakeDriver {
            machine: GroupCommit::new(config).unwrap(),
            persists: Vec::new(),
            writes: Vec::new(),
            syncs: Vec::new(),
            acked: Vec::new(),
            failed: Vec::new(),
        }
    }

    fn append(&mut self, now: Nanos, segment: u64, bytes: usize) -> Ticket {
        self.machine.handle_append(now, segment, &vec![7u8; bytes]).unwrap()
    }

    fn drain(&mut self) {
        while let Some(action) = self.machine.poll_action() {
            match action {
                Action::Persist(batch) => self.persists.push(batch),
                Action::Write(batch) => self.writes.push(batch),
                Action::Sync { batch, first_segment, last_segment, .. } => {
                    self.syncs.push((batch, first_segment, last_segment))
                }
                Action::Ack(tickets) => self.acked.extend(tickets.iter().map(|t| t.0)),
                Action::Fail { tickets, error } => self.failed.extend(tickets.iter().map(|t| (t.0, error))),
            }
        }
    }

    fn complete(&mut self, now: Nanos, batch: u64, result: Result<(), SyncError>) {
        self.machine.handle_persisted(now, BatchId(batch), result).unwrap();
    }

    /// Tickets of each persisted batch, in submission order.
    fn batches(&self) -> Vec<Vec<u64>> {
        self.persists.iter().map(|batch| batch.tickets.iter().map(|t| t.0).collect()).collect()
    }
}

#[test]
fn group_leader_takes_the_whole_queue() {
    let mut driver = FakeDriver::new(Config::file(Policy::Group));
    driver.append(at(0), 1, 10);
    driver.drain();
    assert_eq!(driver.batches(), [vec![1]], "an idle log leads a batch of one at once");
    driver.append(at(5), 1, 10);
    driver.drain();
    driver.append(at(7), 1, 10);
    driver.drain();
    assert_eq!(driver.batches().len(), 1, "followers wait while the sync runs");
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.acked, [1]);
    assert_eq!(driver.batches(), [vec![1], vec![2, 3]]);
    assert_eq!(driver.persists[1].offset, 10);
    assert_eq!(driver.persists[1].lsn_start, 10);
    driver.complete(at(20), 2, Ok(()));
    driver.drain();
    assert_eq!(driver.acked, [1, 2, 3]);
    assert_eq!(driver.machine.durable_lsn(), 30);
    assert_eq!(driver.machine.unflushed_bytes(), 0);
}

#[test]
fn tie_rule_holds_in_either_input_order() {
    for completion_first in [true, false] {
        let mut driver = FakeDriver::new(Config::file(Policy::Group));
        driver.append(at(0), 1, 10);
        driver.drain();
        driver.append(at(5), 1, 10);
        driver.drain();
        // At 1.0 ms the sync of B1 completes and write 3 arrives: both inputs are fed
        // before polling, in either order.
        if completion_first {
            driver.complete(at(10), 1, Ok(()));
            driver.append(at(10), 1, 10);
        } else {
            driver.append(at(10), 1, 10);
            driver.complete(at(10), 1, Ok(()));
        }
        driver.drain();
        assert_eq!(driver.acked, [1], "write 3 is not covered by the sync that just ended");
        assert_eq!(driver.batches(), [vec![1], vec![2, 3]], "it joins the batch formed at that instant");
    }
}

#[test]
fn per_write_queues_one_persist_per_record() {
    let mut driver = FakeDriver::new(Config::file(Policy::PerWrite));
    for tenths in [0, 1, 2] {
        driver.append(at(tenths), 1, 5);
        driver.drain();
    }
    assert_eq!(driver.batches(), [vec![1]]);
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    driver.complete(at(20), 2, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2], vec![3]]);
    assert_eq!(driver.acked, [1, 2]);
}

#[test]
fn window_closes_after_w_and_a_write_at_the_close_opens_the_next() {
    let config = Config { batch_bytes_max: 100, ..Config::file(Policy::Window { window: Nanos(2 * MS) }) };
    let mut driver = FakeDriver::new(config);
    driver.append(at(0), 1, 10);
    driver.append(at(5), 1, 10);
    driver.drain();
    assert!(driver.persists.is_empty(), "nothing persists before the window closes");
    assert_eq!(driver.machine.poll_timeout(), Some(at(20)));
    // Write 3 arrives exactly as the window closes: it opens the next window.
    driver.append(at(20), 1, 10);
    driver.machine.handle_timeout(at(20));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2]]);
    assert_eq!(driver.machine.poll_timeout(), Some(at(40)));
    // The byte cap closes a window early: 10 + 90 = 100 bytes.
    driver.append(at(21), 1, 90);
    driver.complete(at(30), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2], vec![3, 4]]);
    assert_eq!(driver.acked, [1, 2]);
    assert_eq!(driver.machine.poll_timeout(), None, "no window is open");
}

#[test]
fn a_window_only_when_busy_starts_a_batch_at_once_while_a_slot_is_free() {
    let window = Policy::Window { window: Nanos(MS) };
    let config = Config { inflight_max: 2, window_only_when_busy: true, ..pipelined(window) };
    let mut driver = FakeDriver::new(config);
    // Both slots free: each record starts at once, no window waited out.
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(1), 1, 10);
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2]]);
    // Both slots busy: records gather; the window closes the batch at 1 ms, and it waits
    // for a slot; the next one gathers in a new window.
    driver.append(at(2), 1, 10);
    driver.append(at(3), 1, 10);
    driver.drain();
    assert_eq!(driver.batches().len(), 2, "no slot is free");
    assert_eq!(driver.machine.poll_timeout(), Some(at(12)));
    driver.machine.handle_timeout(at(12));
    driver.append(at(13), 1, 10);
    driver.drain();
    assert_eq!(driver.batches().len(), 2, "the closed batch still waits for a slot");
    // A slot frees before the second window closes: the closed batch goes, and the one
    // gathering behind it waits for the next slot, not for its window.
    driver.complete(at(14), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2], vec![3, 4]]);
    driver.complete(at(15), 2, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2], vec![3, 4], vec![5]]);
    assert_eq!(driver.acked, [1, 2]);
}

#[test]
fn without_window_only_when_busy_a_free_slot_still_waits_out_the_window() {
    let window = Policy::Window { window: Nanos(MS) };
    let mut driver = FakeDriver::new(Config { inflight_max: 2, ..pipelined(window) });
    driver.append(at(0), 1, 10);
    driver.drain();
    assert!(driver.persists.is_empty(), "the window is waited out although both slots are free");
    driver.machine.handle_timeout(at(10));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1]]);
}

#[test]
fn a_record_larger_than_the_cap_travels_alone() {
    let config = Config { batch_bytes_max: 20, ..Config::file(Policy::Group) };
    let mut driver = FakeDriver::new(config);
    driver.append(at(0), 1, 5);
    driver.drain();
    driver.append(at(1), 1, 15);
    driver.append(at(2), 1, 50);
    driver.append(at(3), 1, 5);
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    driver.complete(at(20), 2, Ok(()));
    driver.drain();
    driver.complete(at(30), 3, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2], vec![3], vec![4]]);
}

#[test]
fn no_sync_acknowledges_on_write() {
    let mut driver = FakeDriver::new(Config::file(Policy::NoSync));
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(1), 2, 10);
    driver.drain();
    assert_eq!(driver.acked, [1, 2]);
    assert_eq!(driver.writes.len(), 2);
    assert_eq!(driver.writes[1].segment, 2);
    assert_eq!(driver.writes[1].offset, 0);
    assert!(driver.persists.is_empty());
    assert_eq!(driver.machine.poll_timeout(), None);
    assert_eq!(driver.machine.durable_lsn(), 0, "nothing is known durable");
    assert_eq!(driver.machine.written_lsn(), 20);
}

#[test]
fn periodic_acknowledges_on_write_and_syncs_every_interval() {
    let mut driver = FakeDriver::new(Config::file(Policy::Periodic { interval: Nanos(5 * MS) }));
    driver.append(at(1), 1, 10);
    driver.drain();
    driver.append(at(2), 2, 10);
    driver.drain();
    assert_eq!(driver.acked, [1, 2]);
    assert_eq!(driver.machine.poll_timeout(), Some(at(51)));
    driver.machine.handle_timeout(at(51));
    driver.drain();
    assert_eq!(driver.syncs, [(BatchId(3), 1, 2)], "one sync covers both segments written");
    driver.complete(at(61), 3, Ok(()));
    driver.drain();
    assert_eq!(driver.machine.durable_lsn(), 20);
    driver.machine.handle_timeout(at(101));
    driver.drain();
    assert_eq!(driver.syncs.len(), 1, "nothing new to sync");
    assert_eq!(driver.machine.poll_timeout(), None, "an idle log's timer sleeps");
    driver.append(at(500), 2, 10);
    driver.drain();
    assert_eq!(driver.machine.poll_timeout(), Some(at(550)), "the next append arms it again");
}

#[test]
fn with_pipeline_min_records_a_batch_runs_beside_others_only_once_it_is_big_enough() {
    let mut driver = FakeDriver::new(Config { pipeline_min_records: 3, ..pipelined(Policy::Group) });
    driver.append(at(0), 1, 10);
    driver.drain();
    assert_eq!(driver.batches(), [vec![1]], "nothing running: a batch of one starts at once");
    for tenths in 1..3 {
        driver.append(at(tenths), 1, 10);
        driver.drain();
    }
    assert_eq!(driver.batches().len(), 1, "two records are not worth a second persist");
    driver.append(at(3), 1, 10);
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2, 3, 4]], "the third makes it worth one");
    driver.append(at(4), 1, 10);
    driver.drain();
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.batches().len(), 2, "one still running: the lone record keeps gathering");
    driver.complete(at(11), 2, Ok(()));
    driver.drain();
    assert_eq!(driver.batches()[2], vec![5], "none running: it starts whatever it holds");
    driver.complete(at(12), 3, Ok(()));
    driver.drain();
    assert_eq!(driver.acked, [1, 2, 3, 4, 5]);
}

#[test]
fn with_pipeline_running_percent_a_batch_beside_others_carries_as_many_as_they_do() {
    let config = Config { pipeline_min_records: 2, pipeline_running_percent: 100, ..pipelined(Policy::Group) };
    let mut driver = FakeDriver::new(config);
    for tenths in 0..15 {
        driver.append(at(tenths), 1, 10);
        driver.drain();
    }
    // Each bulk beside the running ones waits until it carries as many as they do
    // together: 1, then 2 (at least pipeline_min_records), 3, 6.
    let sizes: Vec<usize> = driver.batches().iter().map(Vec::len).collect();
    assert_eq!(sizes, [1, 2, 3, 6]);
    for batch in 1..=3 {
        driver.complete(at(20), batch, Ok(()));
    }
    driver.drain();
    assert_eq!(driver.batches().len(), 4, "three slots free, but 3 waiting are fewer than the 6 running");
    driver.complete(at(21), 4, Ok(()));
    driver.drain();
    assert_eq!(driver.batches()[4], vec![13, 14, 15], "none running: it starts whatever it holds");
    assert_eq!(driver.acked, (1..=12).collect::<Vec<u64>>());

    // Without it the same arrivals fill all four slots with small bulks.
    let mut driver = FakeDriver::new(Config { pipeline_min_records: 2, ..pipelined(Policy::Group) });
    for tenths in 0..15 {
        driver.append(at(tenths), 1, 10);
        driver.drain();
    }
    let sizes: Vec<usize> = driver.batches().iter().map(Vec::len).collect();
    assert_eq!(sizes, [1, 2, 2, 2]);
}

#[test]
fn with_pipeline_round_trip_percent_a_batch_beside_others_waits_for_a_round_trip_s_arrivals() {
    let config = Config { pipeline_min_records: 2, pipeline_round_trip_percent: 100, ..pipelined(Policy::Group) };
    let mut driver = FakeDriver::new(config);
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(1), 1, 10);
    driver.append(at(2), 1, 10);
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2, 3]], "no round trip measured yet: pipeline_min_records alone");
    for tenths in 3..7 {
        driver.append(at(tenths), 1, 10);
    }
    driver.drain();
    assert_eq!(driver.batches().len(), 3, "four records beside the two running");
    // Batch 1 returns: records 2 to 7 arrived while it ran, so a round trip brings six.
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.batches()[2], vec![4, 5, 6, 7], "started beside with four (before any round trip was measured)");
    driver.append(at(11), 1, 10);
    driver.append(at(12), 1, 10);
    driver.drain();
    assert_eq!(driver.batches().len(), 3, "two are not a round trip's six");
    for tenths in 13..17 {
        driver.append(at(tenths), 1, 10);
    }
    driver.drain();
    assert_eq!(driver.batches().len(), 4, "six are");
    assert_eq!(driver.batches()[3], (8..=13).collect::<Vec<u64>>());
    // With none running a batch starts at once, whatever it holds.
    for batch in 2..=4 {
        driver.complete(at(30), batch, Ok(()));
    }
    driver.append(at(31), 1, 10);
    driver.drain();
    assert_eq!(driver.batches()[4], vec![14], "none running: the one record goes");
}

#[test]
fn above_100_percent_a_batch_gathers_after_an_acknowledgement_until_its_first_record_waited_that_share() {
    let config = Config { pipeline_min_records: 2, pipeline_round_trip_percent: 150, ..pipelined(Policy::Group) };
    let mut driver = FakeDriver::new(config);
    for _ in 0..3 {
        driver.append(at(0), 1, 10);
    }
    driver.drain();
    driver.append(at(2), 1, 10);
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.acked, [1, 2, 3]);
    // A round trip is 1 ms: record 4's batch gathers until 1.5 ms after it arrived (at
    // 0.2 ms), or until the three writers answered are back.
    assert_eq!(driver.batches().len(), 1, "held");
    assert_eq!(driver.machine.poll_timeout(), Some(at(17)));
    driver.machine.handle_timeout(at(17));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2, 3], vec![4]], "its first record waited a round trip and a half");
    // Writers that come back end it sooner, as a cohort hold's do.
    driver.append(at(18), 1, 10);
    driver.complete(at(27), 2, Ok(()));
    driver.drain();
    assert_eq!(driver.batches().len(), 2, "record 4 answered, record 5 gathering: held");
    driver.append(at(28), 1, 10);
    driver.drain();
    assert_eq!(driver.batches()[2], vec![5, 6], "the answered writer is back");
    // A load that brings fewer than pipeline_min_records is not held.
    let mut lone = FakeDriver::new(config);
    lone.append(at(0), 1, 10);
    lone.drain();
    lone.complete(at(10), 1, Ok(()));
    lone.append(at(12), 1, 10);
    lone.drain();
    assert_eq!(lone.batches(), [vec![1], vec![2]], "a lone writer starts at once");
}

/// Closed-loop writers whose next appends come back spread out after each answer (as
/// through HTTP): `writers` of them, persists of 10 ms, a writer appending again 0.1 to
/// 3 ms after its answer. The sizes of the bulks that started in the second second.
fn closed_loop_bulk_sizes(config: Config, writers: u64) -> Vec<u64> {
    let mut driver = FakeDriver::new(config);
    let mut appends_at: std::collections::BTreeMap<u64, u64> = Default::default();
    for w in 0..writers {
        *appends_at.entry(w % 30).or_default() += 1;
    }
    let mut started: Vec<(u64, u64)> = Vec::new();
    let mut completes: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for tick in 0..20_000u64 {
        let (persists_before, acked_before) = (driver.persists.len(), driver.acked.len());
        for batch in completes.remove(&tick).unwrap_or_default() {
            driver.complete(at(tick), batch, Ok(()));
        }
        driver.drain();
        for _ in 0..appends_at.remove(&tick).unwrap_or(0) {
            driver.append(at(tick), 1, 10);
        }
        driver.drain();
        for &ticket in &driver.acked[acked_before..] {
            *appends_at.entry(tick + 1 + ticket % 30).or_default() += 1;
        }
        for batch in &driver.persists[persists_before..] {
            completes.entry(tick + 100).or_default().push(batch.id.0);
            started.push((tick, batch.tickets.count));
        }
    }
    started.into_iter().filter(|(tick, _)| *tick >= 10_000).map(|(_, count)| count).collect()
}

#[test]
fn closed_loop_writers_share_fewer_larger_bulks_with_pipeline_running_percent() {
    let writers = 1024;
    let by_load = |percent| closed_loop_bulk_sizes(Config { pipeline_min_records: 32, pipeline_running_percent: percent, ..pipelined(Policy::Group) }, writers);
    let (all, half) = (by_load(100), by_load(50));
    let by_slot = closed_loop_bulk_sizes(Config { pipeline_min_records: 32, ..pipelined(Policy::Group) }, writers);
    let mean = |sizes: &[u64]| sizes.iter().sum::<u64>() as f64 / sizes.len() as f64;
    // By slot each free slot sends whoever came back: bulks of a sixth of the writers.
    // By load, at 100% two or three bulks take turns, at 50% three or four.
    let n = writers as f64;
    assert!(mean(&by_slot) <= n / 5.0, "by slot: {} bulks of {:.0}", by_slot.len(), mean(&by_slot));
    assert!(mean(&all) >= n / 3.0, "100%: {} bulks of {:.0}", all.len(), mean(&all));
    assert!(mean(&half) >= n / 4.0, "50%: {} bulks of {:.0}", half.len(), mean(&half));
    // The same writers in fewer persists per record.
    let records = |sizes: &[u64]| sizes.iter().sum::<u64>() as f64;
    let per_record = |sizes: &[u64]| sizes.len() as f64 / records(sizes);
    assert!(per_record(&all) <= per_record(&by_slot) * 0.5);
    assert!(per_record(&half) <= per_record(&by_slot) * 0.7);
}

#[test]
fn pipelined_batches_are_acknowledged_in_submission_order() {
    let mut driver = FakeDriver::new(pipelined(Policy::Group));
    for tenths in 0..6 {
        driver.append(at(tenths), 1, 10);
        driver.drain();
    }
    assert_eq!(driver.batches(), [vec![1], vec![2], vec![3], vec![4]], "four in flight");
    driver.complete(at(10), 3, Ok(()));
    driver.complete(at(10), 2, Ok(()));
    driver.drain();
    assert!(driver.acked.is_empty(), "B1 is not yet durable, so nothing after it is acknowledged");
    assert_eq!(driver.batches().len(), 5, "a freed slot takes the whole queue as one batch");
    assert_eq!(driver.batches()[4], vec![5, 6]);
    driver.complete(at(11), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.acked, [1, 2, 3]);
    assert_eq!(driver.machine.durable_lsn(), 30);
    driver.complete(at(12), 5, Ok(()));
    driver.complete(at(12), 4, Ok(()));
    driver.drain();
    assert_eq!(driver.acked, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn backpressure_refuses_past_unflushed_bytes_max_and_recovers() {
    let config = Config { batch_bytes_max: 20, unflushed_bytes_max: 30, ..Config::file(Policy::Group) };
    let mut driver = FakeDriver::new(config);
    driver.append(at(0), 1, 20);
    driver.drain();
    driver.append(at(1), 1, 10);
    let refused = driver.machine.handle_append(at(2), 1, &[1u8; 1]);
    assert_eq!(refused, Err(AppendError::Backpressure { unflushed_bytes: 30, record_bytes: 1 }));
    assert_eq!(driver.machine.handle_append(at(2), 1, &[1u8; 31]), Err(AppendError::RecordTooLarge { record_bytes: 31 }));
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.machine.unflushed_bytes(), 10);
    driver.append(at(11), 1, 20);
    assert_eq!(driver.machine.counters().refused, 2);
}

#[test]
fn waiters_are_bounded() {
    let config = Config { waiters_max: 2, ..Config::file(Policy::Group) };
    let mut driver = FakeDriver::new(config);
    driver.append(at(0), 1, 1);
    driver.append(at(0), 1, 1);
    assert_eq!(driver.machine.handle_append(at(0), 1, b"x"), Err(AppendError::TooManyWaiters));
    driver.drain();
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    driver.append(at(10), 1, 1);
}

#[test]
fn a_failed_persist_fails_its_writers_and_every_later_one_and_stops_the_log() {
    let mut driver = FakeDriver::new(pipelined(Policy::Group));
    for tenths in 0..5 {
        driver.append(at(tenths), 1, 10);
        driver.drain();
    }
    // B1..B4 in flight, write 5 queued. B2 fails with EIO.
    driver.complete(at(10), 2, Err(SyncError::Io));
    driver.drain();
    let failed: Vec<u64> = driver.failed.iter().map(|(ticket, _)| *ticket).collect();
    assert_eq!(failed, [2, 3, 4, 5]);
    assert!(driver.failed.iter().all(|(_, error)| *error == SyncError::Io));
    assert_eq!(
        driver.machine.handle_append(at(11), 1, b"x"),
        Err(AppendError::Failed(SyncError::Io)),
        "no appends until reopened"
    );
    // B1 was submitted before the failure and does not depend on it.
    driver.complete(at(12), 1, Ok(()));
    // Later batches still return from the backend; their results are ignored.
    driver.complete(at(12), 3, Ok(()));
    driver.complete(at(12), 4, Err(SyncError::Io));
    driver.drain();
    assert_eq!(driver.acked, [1]);
    assert_eq!(driver.failed.len(), 4, "each writer is failed once");
    assert_eq!(driver.machine.durable_lsn(), 10);
    assert_eq!(driver.machine.poll_action(), None);
    assert_eq!(
        driver.machine.handle_persisted(at(13), BatchId(3), Ok(())),
        Err(CompletionError::UnknownBatch(BatchId(3)))
    );
}

#[test]
fn an_earlier_failure_after_a_later_one_fails_only_the_rest() {
    let mut driver = FakeDriver::new(pipelined(Policy::Group));
    for tenths in 0..3 {
        driver.append(at(tenths), 1, 10);
        driver.drain();
    }
    driver.complete(at(10), 3, Err(SyncError::Unavailable));
    driver.complete(at(10), 1, Err(SyncError::Io));
    driver.drain();
    assert_eq!(driver.failed, [(3, SyncError::Unavailable), (1, SyncError::Io), (2, SyncError::Io)]);
    assert_eq!(driver.machine.failed(), Some(SyncError::Unavailable));
}

#[test]
fn a_batch_never_crosses_a_segment_boundary() {
    let mut driver = FakeDriver::new(Config::file(Policy::Group));
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(1), 1, 10);
    driver.append(at(2), 2, 12);
    driver.append(at(3), 2, 12);
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    driver.complete(at(20), 2, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2], vec![3, 4]]);
    let places: Vec<(u64, u64, u64)> =
        driver.persists.iter().map(|batch| (batch.segment, batch.offset, batch.lsn_start)).collect();
    assert_eq!(places, [(1, 0, 0), (1, 10, 10), (2, 0, 20)]);
    assert_eq!(
        driver.machine.handle_append(at(30), 1, b"x"),
        Err(AppendError::SegmentWentBack { current: 2, given: 1 })
    );
}

#[test]
fn resume_continues_tickets_and_positions() {
    let machine = GroupCommit::resume(Config::file(Policy::Group), Ticket(18), 500, 5, 27).unwrap();
    let mut driver = FakeDriver { machine, ..FakeDriver::new(Config::file(Policy::Group)) };
    assert_eq!(driver.append(at(0), 5, 10), Ticket(18));
    driver.drain();
    assert_eq!((driver.persists[0].offset, driver.persists[0].lsn_start), (27, 500));
}

#[test]
fn bad_configs_are_refused() {
    let base = Config::file(Policy::Group);
    assert_eq!(GroupCommit::new(Config { inflight_max: 0, ..base }).err(), Some(ConfigError::InflightMaxZero));
    assert_eq!(
        GroupCommit::new(Config { unflushed_bytes_max: 1, ..base }).err(),
        Some(ConfigError::UnflushedBelowBatch)
    );
    assert_eq!(
        GroupCommit::new(Config::file(Policy::Window { window: Nanos::ZERO })).err(),
        Some(ConfigError::WindowZero)
    );
    let mut machine = GroupCommit::new(base).unwrap();
    assert_eq!(machine.handle_append(Nanos::ZERO, 1, b""), Err(AppendError::EmptyRecord));
    assert_eq!(
        machine.handle_persisted(Nanos::ZERO, BatchId(9), Ok(())),
        Err(CompletionError::UnknownBatch(BatchId(9)))
    );
}

#[test]
fn a_batch_carries_each_record_s_boundaries() {
    let mut driver = FakeDriver::new(Config::file(Policy::Group));
    driver.machine.handle_append(at(0), 1, b"first").unwrap();
    driver.drain();
    for record in [&b"ab"[..], b"cde", b"f"] {
        driver.machine.handle_append(at(1), 1, record).unwrap();
    }
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    let records: Vec<Vec<&[u8]>> = driver.persists.iter().map(|batch| batch.records().collect()).collect();
    assert_eq!(records, [vec![&b"first"[..]], vec![&b"ab"[..], b"cde", b"f"]]);
    assert_eq!(driver.persists[1].record_ends, [2, 5, 6]);
    assert_eq!(driver.persists[1].records().len() as u64, driver.persists[1].tickets.count);
    // The no-sync policies' writes carry them too.
    let mut driver = FakeDriver::new(Config::file(Policy::NoSync));
    driver.machine.handle_append(at(0), 1, b"xy").unwrap();
    driver.machine.handle_append(at(0), 1, b"z").unwrap();
    driver.drain();
    assert_eq!(driver.writes[0].records().collect::<Vec<_>>(), [&b"xy"[..], b"z"]);
}

/// The cohort hold at 50% of the answered persist's duration, one sync at a time.
fn held(policy: Policy) -> Config {
    Config { cohort_hold_percent: 50, ..Config::file(policy) }
}

#[test]
fn a_cohort_hold_waits_for_the_answered_writers_then_takes_everyone() {
    let mut driver = FakeDriver::new(held(Policy::Group));
    for _ in 0..3 {
        driver.append(at(0), 1, 10);
    }
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2, 3]], "nothing answered yet: an idle log starts at once");
    // Writer 4 arrives during B1's sync (1 ms); when it ends, 1-3 are answered and B2
    // waits for them rather than start with 4 alone.
    driver.append(at(3), 1, 10);
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.acked, [1, 2, 3]);
    assert_eq!(driver.batches().len(), 1, "held: the answered writers have not appended again");
    assert_eq!(driver.machine.poll_timeout(), Some(at(15)), "at most half of B1's 1 ms");
    driver.append(at(11), 1, 10);
    driver.append(at(11), 1, 10);
    driver.drain();
    assert_eq!(driver.batches().len(), 1, "two of the three are back: still held");
    driver.append(at(12), 1, 10);
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2, 3], vec![4, 5, 6, 7]], "both cohorts ride one sync");
    assert_eq!(driver.machine.poll_timeout(), None, "the hold ended with the third append");
}

#[test]
fn no_hold_when_half_as_many_wait_as_were_answered() {
    let mut driver = FakeDriver::new(held(Policy::Group));
    driver.append(at(0), 1, 10);
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(3), 1, 10);
    driver.append(at(4), 1, 10);
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2], vec![3, 4]], "a cohort as large waits: it starts at once");
}

#[test]
fn without_a_cohort_hold_the_waiting_cohort_starts_the_instant_a_sync_ends() {
    let mut driver = FakeDriver::new(Config::file(Policy::Group));
    driver.append(at(0), 1, 10);
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(3), 1, 10);
    driver.append(at(4), 1, 10);
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2], vec![3, 4]], "the two cohorts take turns");
}

#[test]
fn a_cohort_hold_ends_at_its_bound_when_the_writers_do_not_come_back() {
    let mut driver = FakeDriver::new(held(Policy::Group));
    driver.append(at(0), 1, 10);
    driver.append(at(0), 1, 10);
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(2), 1, 10);
    // B1 was handed out at 0 and took 0.8 ms: the hold lasts at most 0.4 ms.
    driver.complete(at(8), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.batches().len(), 1);
    assert_eq!(driver.machine.poll_timeout(), Some(at(12)));
    driver.machine.handle_timeout(at(11));
    driver.drain();
    assert_eq!(driver.batches().len(), 1, "not yet");
    driver.machine.handle_timeout(at(12));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2, 3], vec![4]], "the bound passed: writer 4 goes alone");
    // B2 answers writer 4 with none waiting: a hold starts, and its next append ends it.
    driver.complete(at(20), 2, Ok(()));
    driver.drain();
    driver.append(at(40), 1, 10);
    driver.append(at(40), 1, 10);
    driver.drain();
    assert_eq!(driver.batches(), [vec![1, 2, 3], vec![4], vec![5, 6]]);
}

#[test]
fn a_lone_writer_ends_its_own_hold() {
    let mut driver = FakeDriver::new(held(Policy::Group));
    for round in 0..3u64 {
        driver.append(at(10 * round), 1, 10);
        driver.drain();
        driver.complete(at(10 * round + 5), round + 1, Ok(()));
        driver.drain();
    }
    assert_eq!(driver.batches(), [vec![1], vec![2], vec![3]], "each append starts its batch at once");
    assert_eq!(driver.acked, [1, 2, 3]);
}

#[test]
fn a_cohort_hold_leaves_closed_batches_and_failures_alone() {
    // A batch closed full goes when a slot frees, held or not.
    let config = Config { batch_bytes_max: 20, ..held(Policy::Group) };
    let mut driver = FakeDriver::new(config);
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(1), 1, 10);
    driver.append(at(2), 1, 10);
    driver.complete(at(10), 1, Ok(()));
    driver.drain();
    assert_eq!(driver.batches(), [vec![1], vec![2, 3]], "closed at 20 bytes: not held");
    // A failed persist ends the hold with the log.
    let mut driver = FakeDriver::new(Config { inflight_max: 2, ..held(Policy::Group) });
    driver.append(at(0), 1, 10);
    driver.drain();
    driver.append(at(1), 1, 10);
    driver.drain();
    driver.complete(at(10), 1, Ok(()));
    driver.append(at(11), 1, 10);
    driver.complete(at(12), 2, Err(SyncError::Io));
    driver.drain();
    assert_eq!(driver.acked, [1]);
    assert_eq!(driver.failed, [(2, SyncError::Io), (3, SyncError::Io)]);
    assert_eq!(driver.machine.poll_timeout(), None);
}

/// Closed-loop writers on the simulator's clock: each appends again `think` after its
/// answer; every persist takes `persist`.
struct ClosedLoop {
    machine: GroupCommit,
    persist: Nanos,
    think: Nanos,
    running: Vec<(Nanos, BatchId)>,
    due: Vec<Nanos>,
    appended_at: std::collections::BTreeMap<u64, Nanos>,
    appends_left: u64,
    latencies: Vec<Nanos>,
    batches: Vec<u64>,
}

impl ClosedLoop {
    fn run(config: Config, writers: u64, appends: u64, persist: Nanos, think: Nanos) -> ClosedLoop {
        let mut sim = ClosedLoop {
            machine: GroupCommit::new(config).unwrap(),
            persist,
            think,
            running: Vec::new(),
            // Writers start 1 us apart, as real ones never start together: the first
            // batch takes the first of them alone.
            due: (0..writers).map(Nanos::from_micros).collect(),
            appended_at: Default::default(),
            appends_left: appends - writers,
            latencies: Vec::new(),
            batches: Vec::new(),
        };
        let bound = crate::sim::clock::InstantBound { name: "closed-loop test", instants_max: 10 * appends };
        crate::sim::clock::run(&mut sim, bound).unwrap();
        sim
    }

    /// Mean records per batch and the median latency, leaving out the first batches
    /// while the writers settle into their cohorts and the last as they run out.
    fn steady(&self) -> (u64, Nanos) {
        let batches = &self.batches[4..self.batches.len() - 4];
        let mut latencies = self.latencies[self.latencies.len() / 4..].to_vec();
        latencies.sort();
        (batches.iter().sum::<u64>() / batches.len() as u64, latencies[latencies.len() / 2])
    }
}

impl crate::sim::clock::Simulation for ClosedLoop {
    type Stop = ();

    fn next_arrival(&self) -> Option<Nanos> {
        self.due.iter().min().copied()
    }
    fn next_completion(&self) -> Option<Nanos> {
        self.running.iter().map(|(at, _)| *at).min()
    }
    fn next_timeout(&self) -> Option<Nanos> {
        self.machine.poll_timeout()
    }
    fn complete(&mut self, now: Nanos) -> core::ops::ControlFlow<()> {
        let (done, running): (Vec<_>, Vec<_>) = self.running.drain(..).partition(|(at, _)| *at == now);
        self.running = running;
        for (_, batch) in done {
            self.machine.handle_persisted(now, batch, Ok(())).unwrap();
        }
        core::ops::ControlFlow::Continue(())
    }
    fn arrive(&mut self, now: Nanos) -> core::ops::ControlFlow<()> {
        let arriving = self.due.iter().filter(|at| **at == now).count();
        self.due.retain(|at| *at != now);
        for _ in 0..arriving {
            let ticket = self.machine.handle_append(now, 1, &[1u8; 100]).unwrap();
            self.appended_at.insert(ticket.0, now);
        }
        core::ops::ControlFlow::Continue(())
    }
    fn time_out(&mut self, now: Nanos) {
        self.machine.handle_timeout(now);
    }
    fn act(&mut self, now: Nanos) -> core::ops::ControlFlow<()> {
        while let Some(action) = self.machine.poll_action() {
            match action {
                Action::Persist(batch) => {
                    self.batches.push(batch.tickets.count);
                    self.running.push((now + self.persist, batch.id));
                }
                Action::Ack(tickets) => {
                    for ticket in tickets.iter() {
                        let appended = self.appended_at.remove(&ticket.0).expect("an appended ticket");
                        self.latencies.push(now - appended);
                        if self.appends_left > 0 {
                            self.appends_left -= 1;
                            self.due.push(now + self.think);
                        }
                    }
                }
                other => panic!("a group policy asks for no {other:?}"),
            }
        }
        core::ops::ControlFlow::Continue(())
    }
}

#[test]
fn closed_loop_writers_split_into_two_cohorts_and_the_hold_merges_them() {
    // 64 writers, 100 us syncs, each writer back 20 us after its answer.
    let (persist, think) = (Nanos::from_micros(100), Nanos::from_micros(20));
    let split = ClosedLoop::run(Config::file(Policy::Group), 64, 6_400, persist, think);
    let (batch, p50) = split.steady();
    assert_eq!(batch, 32, "half the writers per sync on average (here cohorts of 1 and 63)");
    assert_eq!(p50, Nanos::from_micros(180), "two syncs per append, less the 20 us before it: the one running, then its own");
    let merged = ClosedLoop::run(held(Policy::Group), 64, 6_400, persist, think);
    let (batch, p50) = merged.steady();
    assert_eq!(batch, 64, "every writer in every sync");
    assert_eq!(p50, Nanos::from_micros(100), "one sync per append (the wait for the others is before the append)");
    assert!(merged.batches.len() < split.batches.len() * 6 / 10, "about half the syncs for the same appends");
    // Writers slower than the bound: the hold gives up after half a persist, and the
    // latency is what it costs, not more.
    let slow = ClosedLoop::run(held(Policy::Group), 64, 6_400, persist, Nanos::from_micros(80));
    let (_, p50) = slow.steady();
    assert!(p50 <= Nanos::from_micros(200 + 50), "p50 {p50:?}: at most the split's two syncs plus the bound");
}
