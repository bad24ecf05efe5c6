//! Property tests of the group-commit machine under a random driver: whatever the
//! arrivals, record sizes, segments, completion order and failures, every writer is
//! settled exactly once, acknowledgements come in ticket order and only for durable
//! batches, batches respect their caps and segments, and the bounds hold.

use proptest::prelude::*;
use walab_core::group_commit::{Action, AppendError, BatchId, Config, GroupCommit, Policy, SyncError};
use walab_core::time::Nanos;

#[derive(Clone, Debug)]
enum Step {
    /// Append a record of this size; `next_segment` moves to the next segment first.
    Append { bytes: usize, next_segment: bool },
    /// Complete the in-flight persist at this index (mod the number running).
    Complete { pick: usize, fail: bool },
    /// Let time pass (window deadlines, periodic ticks).
    Wait { micros: u64 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1usize..300, prop::bool::weighted(0.1)).prop_map(|(bytes, next_segment)| Step::Append { bytes, next_segment }),
        3 => (0usize..8, prop::bool::weighted(0.03)).prop_map(|(pick, fail)| Step::Complete { pick, fail }),
        1 => (1u64..3000).prop_map(|micros| Step::Wait { micros }),
    ]
}

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        Just(Policy::PerWrite),
        Just(Policy::Group),
        (1u64..2000).prop_map(|micros| Policy::Window { window: Nanos::from_micros(micros) }),
        Just(Policy::NoSync),
        (1u64..2000).prop_map(|micros| Policy::Periodic { interval: Nanos::from_micros(micros) }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn every_writer_is_settled_once_and_in_order(
        policy in policy(),
        inflight_max in 1usize..5,
        batch_bytes_max in 100usize..1000,
        pipeline_min_records in 0u64..6,
        pipeline_running_percent in prop_oneof![Just(0u32), 1u32..300],
        pipeline_round_trip_percent in prop_oneof![Just(0u32), 1u32..300],
        window_only_when_busy in any::<bool>(),
        cohort_hold_percent in prop_oneof![Just(0u32), 1u32..200],
        steps in prop::collection::vec(step(), 1..200),
    ) {
        let config = Config {
            policy,
            inflight_max,
            batch_bytes_max,
            unflushed_bytes_max: 2000,
            waiters_max: 50,
            pipeline_min_records,
            pipeline_running_percent,
            pipeline_round_trip_percent,
            inline_persists: false,
            window_only_when_busy,
            cohort_hold_percent,
        };
        let mut machine = GroupCommit::new(config).unwrap();
        let mut now = Nanos::ZERO;
        let mut segment = 1u64;
        let mut appended: Vec<usize> = Vec::new(); // record sizes by ticket - 1
        let mut settled: Vec<Option<bool>> = Vec::new(); // Some(true) acked, Some(false) failed
        let mut running: Vec<BatchId> = Vec::new();
        let mut next_ack = 1u64;
        let mut failed = false;
        let drain = |machine: &mut GroupCommit, running: &mut Vec<BatchId>, settled: &mut Vec<Option<bool>>, next_ack: &mut u64, failed: &mut bool, appended: &Vec<usize>| {
            while let Some(action) = machine.poll_action() {
                match action {
                    Action::Persist(batch) | Action::Write(batch) => {
                        let sizes: usize = batch.tickets.iter().map(|t| appended[(t.0 - 1) as usize]).sum();
                        prop_assert_eq!(sizes, batch.bytes.len());
                        prop_assert!(batch.bytes.len() <= batch_bytes_max || batch.tickets.count == 1, "cap");
                        if policy.syncs_before_ack() {
                            running.push(batch.id);
                        }
                    }
                    Action::Sync { batch, .. } => running.push(batch),
                    Action::Ack(tickets) => {
                        prop_assert_eq!(tickets.first.0, *next_ack, "acks in ticket order");
                        for ticket in tickets.iter() {
                            prop_assert_eq!(settled[(ticket.0 - 1) as usize], None);
                            settled[(ticket.0 - 1) as usize] = Some(true);
                        }
                        *next_ack = tickets.end().0;
                    }
                    Action::Fail { tickets, .. } => {
                        *failed = true;
                        for ticket in tickets.iter() {
                            prop_assert_eq!(settled[(ticket.0 - 1) as usize], None);
                            settled[(ticket.0 - 1) as usize] = Some(false);
                        }
                    }
                }
                prop_assert!(running.len() <= inflight_max, "at most inflight_max running");
                prop_assert!(machine.durable_lsn() <= machine.written_lsn());
                prop_assert!(machine.written_lsn() <= machine.appended_lsn());
            }
            Ok(())
        };
        for step in steps {
            match step {
                Step::Append { bytes, next_segment } => {
                    if next_segment {
                        segment += 1;
                    }
                    match machine.handle_append(now, segment, &vec![1u8; bytes]) {
                        Ok(ticket) => {
                            prop_assert_eq!(ticket.0, appended.len() as u64 + 1);
                            appended.push(bytes);
                            settled.push(None);
                        }
                        Err(AppendError::Failed(_)) => prop_assert!(failed || machine.failed().is_some()),
                        Err(AppendError::Backpressure { unflushed_bytes, record_bytes }) => {
                            prop_assert!(unflushed_bytes + record_bytes > 2000)
                        }
                        Err(AppendError::TooManyWaiters) | Err(AppendError::RecordTooLarge { .. }) => {}
                        Err(other) => prop_assert!(false, "unexpected refusal {:?}", other),
                    }
                }
                Step::Complete { pick, fail } => {
                    if !running.is_empty() {
                        let batch = running.remove(pick % running.len());
                        let result = if fail { Err(SyncError::Io) } else { Ok(()) };
                        prop_assert!(machine.handle_persisted(now, batch, result).is_ok());
                    }
                }
                Step::Wait { micros } => {
                    now += Nanos::from_micros(micros);
                    if machine.poll_timeout().is_some_and(|deadline| deadline <= now) {
                        machine.handle_timeout(now);
                    }
                }
            }
            drain(&mut machine, &mut running, &mut settled, &mut next_ack, &mut failed, &appended)?;
        }
        // Finish: complete everything running (successfully) and fire timers until quiet.
        for _ in 0..10_000 {
            if let Some(batch) = running.first().copied() {
                running.remove(0);
                machine.handle_persisted(now, batch, Ok(())).unwrap();
            } else if let Some(deadline) = machine.poll_timeout() {
                now = now.max(deadline);
                machine.handle_timeout(now);
            } else {
                break;
            }
            drain(&mut machine, &mut running, &mut settled, &mut next_ack, &mut failed, &appended)?;
            if running.is_empty() && machine.poll_timeout().is_none() {
                break;
            }
            if running.is_empty() && !matches!(policy, Policy::Window { .. }) && machine.durable_lsn() == machine.appended_lsn() {
                break;
            }
        }
        // Every writer got exactly one answer; once one failed, none after it was acknowledged.
        prop_assert!(settled.iter().all(Option::is_some), "every writer settled: {:?}", settled);
        if let Some(first_failed) = settled.iter().position(|s| *s == Some(false)) {
            prop_assert!(settled[first_failed..].iter().all(|s| *s == Some(false)));
        }
    }
}
