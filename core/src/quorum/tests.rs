use super::*;
use expect_test::expect;

fn ms(tenths: u64) -> Nanos {
    Nanos::from_tenth_millis(tenths)
}

#[test]
fn the_main_timeline_acknowledges_write_20_at_11_ms() {
    let main = tiny_main_until_ack(20).unwrap();
    assert_eq!(main.writes.iter().find(|write| write.id == 20).unwrap().ack, ms(110));
    assert_eq!(main.batches.len(), 11);
}

#[test]
fn part10_each_batch_takes_1_4_ms_and_write_23_waits_2_7() {
    let run = branch_r(&QuorumSetup::branch_r(), 20).unwrap();
    assert_eq!(run.fork_at, ms(110));
    assert_eq!(run.setup.batch_latency(), ms(14));
    assert!(run.branch.batches.iter().all(|batch| batch.duration() == ms(14)));
    let groups: Vec<(u64, u64)> = run.branch.batches.iter().map(|batch| (batch.first_write, batch.writes)).collect();
    assert_eq!(groups, [(21, 1), (22, 1), (23, 2)], "the batches regroup: {{21}}, {{22}}, {{23, 24}}");
    let budget = run.budget(23).unwrap();
    assert_eq!(budget.arrival, ms(125));
    assert_eq!(budget.waited_for_batch_in_flight, ms(13));
    assert_eq!(budget.own_batch, ms(14));
    assert_eq!(budget.total, ms(27));
    assert_eq!(budget.naive_sum, ms(97));
    assert!(budget.naive_sum.0 > 3 * budget.total.0, "the naive sum is more than three times too high");
    assert_eq!(run.setup.replicas_waited_for(), [0, 1], "A and B; C does not count");
}

#[test]
fn part10_w3_costs_6_ms_per_batch_and_postgres_2_4() {
    let w3 = branch_r(&QuorumSetup { w: 3, ..QuorumSetup::branch_r() }, 20).unwrap();
    assert!(w3.branch.batches.iter().all(|batch| batch.duration() == ms(60)));
    let postgres = branch_r(&QuorumSetup { mode: QuorumMode::Postgres, ..QuorumSetup::branch_r() }, 20).unwrap();
    assert!(postgres.branch.batches.iter().all(|batch| batch.duration() == ms(24)));
}

#[test]
fn pipelined_batches_overlap_and_acks_stay_in_order() {
    let run = branch_r(&QuorumSetup { inflight_max: 4, ..QuorumSetup::branch_r() }, 20).unwrap();
    let acks: Vec<Nanos> = run.branch.writes.iter().map(|write| write.ack).collect();
    assert!(acks.windows(2).all(|pair| pair[0] <= pair[1]));
    assert!(run.branch.batches.windows(2).any(|pair| pair[1].start < pair[0].end), "some batches overlap");
    assert_eq!(run.budget(23).unwrap().total, ms(14), "write 23 no longer waits for a batch in flight");
}

#[test]
fn quorum_with_one_replica_is_plain_group_commit() {
    let run = branch_r(&QuorumSetup { legs: vec![ms(10)], w: 1, mode: QuorumMode::Raft, inflight_max: 1 }, 20).unwrap();
    // Part 5's B12 {21}, B13 {22}, B14 {23, 24}.
    let groups: Vec<(u64, u64)> = run.branch.batches.iter().map(|batch| (batch.first_write, batch.writes)).collect();
    assert_eq!(groups, [(21, 1), (22, 1), (23, 2)]);
    assert_eq!(run.branch.writes.last().unwrap().ack, ms(140));
}

#[test]
fn the_trace_shows_the_regrouped_batches() {
    let run = branch_r(&QuorumSetup::branch_r(), 20).unwrap();
    let trace = run.trace();
    assert!(trace.events.windows(2).all(|pair| pair[0].at <= pair[1].at));
    let formed: Vec<(Nanos, u64, u64)> = trace
        .events
        .iter()
        .filter_map(|event| match event.event {
            Event::BatchFormed { batch, first_write, .. } => Some((event.at, batch, first_write)),
            _ => None,
        })
        .filter(|(_, batch, _)| *batch > 11)
        .collect();
    assert_eq!(formed, [(ms(110), 12, 21), (ms(124), 13, 22), (ms(138), 14, 23)]);
    let acks = trace.events.iter().filter(|event| matches!(event.event, Event::Ack { .. })).count();
    assert_eq!(acks, 24);
}

#[test]
fn refuses_bad_setups() {
    let bad_w = QuorumSetup { w: 4, ..QuorumSetup::branch_r() };
    assert_eq!(branch_r(&bad_w, 20).unwrap_err(), QuorumError::BadW { w: 4, replicas: 3 });
    let zero = QuorumSetup { legs: vec![ms(10), Nanos::ZERO], ..QuorumSetup::branch_r() };
    assert_eq!(zero.validate(), Err(QuorumError::ZeroLeg { replica: 1 }));
    assert_eq!(branch_r(&QuorumSetup::branch_r(), 24).unwrap_err(), QuorumError::ForkOutOfRange { after_write: 24 });
    assert_eq!(QuorumSetup { legs: vec![], ..QuorumSetup::branch_r() }.validate(), Err(QuorumError::NoReplicas));
    assert!(matches!(QuorumSetup { inflight_max: usize::MAX, ..QuorumSetup::branch_r() }.validate(), Err(QuorumError::TooLarge { .. })));
    assert!(matches!(QuorumSetup { legs: vec![Nanos(u64::MAX / 2); 3], ..QuorumSetup::branch_r() }.validate(), Err(QuorumError::TooLarge { .. })));
}

#[test]
fn steady_load_gives_100_writes_per_batch() {
    let run = steady_group_commit(100_000, 3_000, 107, Nanos::from_millis(1)).unwrap();
    let steady = &run.batches[2..run.batches.len() - 1];
    assert!(steady.iter().all(|batch| batch.writes == 100), "{:?}", steady.iter().map(|b| b.writes).collect::<Vec<_>>());
}

#[test]
fn part10_what_survives_per_sync_policy() {
    let table = survival_table(&page_policies());
    let mut text = String::new();
    for row in &table {
        let answers: Vec<&str> = row.survives.iter().map(|(_, survives)| if *survives { "yes" } else { "NO" }).collect();
        text.push_str(&format!("{:<46} {:>7}  {}\n", row.policy, row.commit_latency.to_string(), answers.join(" | ")));
    }
    expect![[r#"
        one node, sync before OK                        1.0 ms  yes | NO | NO | yes
        one node, OK before sync                        0.0 ms  NO | NO | NO | NO
        async replicas (W = 1), leader syncs            1.0 ms  yes | NO | NO | yes
        W = 2 of 3, every replica syncs (Raft)          1.4 ms  yes | yes | yes | yes
        W = 2 of 3, nobody syncs before OK              0.4 ms  yes | yes | yes | NO
        W = 2 of 3, B in the leader's zone              1.4 ms  yes | yes | NO | yes
        W = 3 of 3, every replica syncs                 6.0 ms  yes | yes | yes | yes
        PostgreSQL synchronous_commit = on              2.4 ms  yes | yes | yes | yes
        PostgreSQL synchronous_commit = remote_write    1.4 ms  yes | yes | yes | yes
    "#]]
    .assert_eq(&text);
}
