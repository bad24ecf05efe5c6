//! Part 10's drawing: one batch's legs to the three replicas, Raft-style (send while the
//! leader syncs; commit at the W-th fastest leg) beside PostgreSQL's (flush, then ship).

use walab_core::quorum::{replica_name, BatchTiming, BranchR, QuorumMode, QuorumSetup};
use walab_core::time::Nanos;

/// One replica's leg of a batch, from the batch's start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leg {
    pub replica: String,
    pub zone: String,
    /// What the leg is: the leader's own sync, or send + the follower's sync + its ack.
    pub what: &'static str,
    pub starts_after: Nanos,
    pub length: Nanos,
    /// The commit waits for this leg (it is among the W fastest).
    pub waited: bool,
    /// The W-th fastest: the leg whose end is the commit.
    pub decisive: bool,
}

impl Leg {
    pub fn ends_after(&self) -> Nanos {
        self.starts_after + self.length
    }
}

/// The legs of one batch under a commit rule, and when it commits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchLegs {
    pub mode: QuorumMode,
    pub legs: Vec<Leg>,
    pub commit_after: Nanos,
    /// Every leg added up, as if they ran one after another.
    pub sum: Nanos,
}

pub fn mode_name(mode: QuorumMode) -> &'static str {
    match mode {
        QuorumMode::Raft => "raft",
        QuorumMode::Postgres => "postgres",
    }
}

/// The legs of a batch under `setup` in `mode`.
pub fn batch_legs(setup: &QuorumSetup, mode: QuorumMode) -> BatchLegs {
    let setup = QuorumSetup { mode, ..setup.clone() };
    let arrivals = setup.arrival_of_each_leg();
    let waited = setup.replicas_waited_for();
    let commit_after = setup.batch_latency();
    let decisive = waited.iter().copied().max_by_key(|index| (arrivals[*index], *index));
    let legs = setup
        .legs
        .iter()
        .enumerate()
        .map(|(index, leg)| {
            let starts_after = if index > 0 && mode == QuorumMode::Postgres { setup.legs[0] } else { Nanos::ZERO };
            Leg {
                replica: replica_name(index),
                zone: format!("zone {}", (b'a' + (index % 26) as u8) as char),
                what: if index == 0 { "leader: its own log sync" } else { "send, the follower syncs, ack" },
                starts_after,
                length: *leg,
                waited: waited.contains(&index),
                decisive: decisive == Some(index),
            }
        })
        .collect();
    BatchLegs { mode, legs, commit_after, sum: setup.legs_sum() }
}

/// The branch's batch running at `now` (or the last one started, or the first).
pub fn batch_at(branch: &BranchR, now: Nanos) -> Option<&BatchTiming> {
    branch.branch.batches.iter().rev().find(|batch| batch.start <= now).or(branch.branch.batches.first())
}

/// The caption for a step of branch R: the trace's words, and at a batch's start the
/// commit rule with its numbers.
pub fn quorum_caption(branch: &BranchR, mark: Nanos, trace_caption: &str) -> String {
    let legs = batch_legs(&branch.setup, branch.setup.mode);
    match branch.branch.batches.iter().find(|batch| batch.start == mark) {
        Some(batch) => {
            let named: Vec<String> = legs.legs.iter().map(|leg| format!("{} {:.1} ms", leg.replica, leg.length.as_millis_f64())).collect();
            format!(
                "{trace_caption} B{} goes to all three replicas at once ({}); at W = {} it commits when the {} fastest hold it, after {:.1} ms, not the {:.1} ms sum.",
                batch.batch,
                named.join(", "),
                branch.setup.w,
                ordinal(branch.setup.w),
                legs.commit_after.as_millis_f64(),
                legs.sum.as_millis_f64()
            )
        }
        None => trace_caption.to_string(),
    }
}

fn ordinal(n: usize) -> String {
    match n {
        1 => "1st".into(),
        2 => "2nd".into(),
        3 => "3rd".into(),
        n => format!("{n}th"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_w_2_the_leg_to_c_is_6_ms_and_not_waited_for() {
        let raft = batch_legs(&QuorumSetup::branch_r(), QuorumMode::Raft);
        let c = raft.legs.iter().find(|leg| leg.replica == "C").unwrap();
        assert_eq!(c.length, Nanos::from_millis(6));
        assert!(!c.waited && !c.decisive);
        let b = raft.legs.iter().find(|leg| leg.replica == "B").unwrap();
        assert!(b.decisive);
        assert_eq!(raft.commit_after, Nanos::from_micros(1_400));
        assert_eq!(raft.sum, Nanos::from_micros(8_400));
        let postgres = batch_legs(&QuorumSetup::branch_r(), QuorumMode::Postgres);
        assert_eq!(postgres.commit_after, Nanos::from_micros(2_400));
        let b = postgres.legs.iter().find(|leg| leg.replica == "B").unwrap();
        assert_eq!(b.starts_after, Nanos::from_millis(1));
        let at_3 = batch_legs(&QuorumSetup { w: 3, ..QuorumSetup::branch_r() }, QuorumMode::Raft);
        assert!(at_3.legs.iter().find(|leg| leg.replica == "C").unwrap().decisive);
    }
}
