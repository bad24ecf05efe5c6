//! The quorum's drawing: one batch's legs to the three replicas, Raft-style (send while the
//! leader syncs; commit at the W-th fastest leg) beside PostgreSQL's (flush, then ship).

use walab_core::quorum::{replica_name, BatchTiming, BranchR, QuorumMode, QuorumSetup, LEG_MAX};
use walab_core::time::Nanos;

use super::captions::{id_runs, id_span};
use crate::player::format_fixed_millis;

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
    /// A lost follower: its leg never ends (the model gives it the longest leg there is).
    pub fn lost(&self) -> bool {
        self.length >= LEG_MAX
    }

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
    // A lost follower's leg is not a time: the sum adds the legs that answer.
    let sum = setup.legs.iter().filter(|leg| **leg < LEG_MAX).fold(Nanos::ZERO, |sum, leg| sum + *leg);
    BatchLegs { mode, legs, commit_after, sum }
}

/// The branch's batch running at `now` (or the last one started, or the first).
pub fn batch_at(branch: &BranchR, now: Nanos) -> Option<&BatchTiming> {
    branch.branch.batches.iter().rev().find(|batch| batch.start <= now).or(branch.branch.batches.first())
}

/// Which of the branch's batches `batch_at` is: (1-based place, how many batches).
pub fn batch_place(branch: &BranchR, batch: &BatchTiming) -> (usize, usize) {
    let place = branch.branch.batches.iter().position(|each| each.batch == batch.batch).map_or(0, |index| index + 1);
    (place, branch.branch.batches.len())
}

/// The caption for a step of branch R. Before the fork, the single-disk trace's words;
/// from the fork on, the replicas' own: the leader's local sync, the send and ack legs,
/// and the commit at the W-th fastest.
pub fn quorum_caption(branch: &BranchR, mark: Nanos, trace_caption: &str) -> String {
    if mark < branch.fork_at {
        return trace_caption.to_string();
    }
    let legs = batch_legs(&branch.setup, branch.setup.mode);
    let mut parts: Vec<String> = Vec::new();
    let arrived: Vec<u64> = branch.branch.writes.iter().filter(|write| write.arrival == mark).map(|write| write.id).collect();
    match arrived.as_slice() {
        [] => {}
        [one] => parts.push(format!("write {one} arrives")),
        many => parts.push(format!("writes {} arrive", id_runs(many))),
    }
    for batch in branch.main.batches.iter().filter(|batch| batch.end == mark) {
        parts.push(format!("B{}'s sync returns: {} told OK", batch.batch, told(batch)));
    }
    if mark == branch.fork_at {
        parts.push(format!("the log forks after write {} onto replicas A, B and C", branch.fork_after_write));
    }
    for batch in branch.branch.batches.iter().filter(|batch| batch.end == mark) {
        let decisive = legs.legs.iter().find(|leg| leg.decisive);
        let by = match decisive {
            Some(leg) if leg.replica == legs.legs[0].replica => format!("{}'s local sync", leg.replica),
            Some(leg) => format!("{}'s ack", leg.replica),
            None => "its quorum".to_string(),
        };
        parts.push(format!(
            "B{} commits on {by}, the {} fastest (W = {}): {:.1} ms, not the {:.1} ms its legs add up to; {} told OK",
            batch.batch,
            ordinal(branch.setup.w),
            branch.setup.w,
            legs.commit_after.as_millis_f64(),
            legs.sum.as_millis_f64(),
            told(batch)
        ));
    }
    for batch in branch.branch.batches.iter().filter(|batch| batch.start == mark) {
        let leader = &legs.legs[0];
        let followers: Vec<&Leg> = legs.legs[1..].iter().collect();
        let names: Vec<&str> = followers.iter().map(|leg| leg.replica.as_str()).collect();
        let acks: Vec<String> = followers.iter().map(|leg| if leg.lost() { "never (lost)".to_string() } else { format!("{:.1} ms", leg.length.as_millis_f64()) }).collect();
        let how = match legs.mode {
            QuorumMode::Raft => format!(
                "{} syncs it locally ({:.1} ms) while sending it to {}, whose acks take {}",
                leader.replica,
                leader.length.as_millis_f64(),
                names.join(" and "),
                acks.join(" and ")
            ),
            QuorumMode::Postgres => format!(
                "{} flushes it locally ({:.1} ms), then ships it to {}, whose acks take {} more",
                leader.replica,
                leader.length.as_millis_f64(),
                names.join(" and "),
                acks.join(" and ")
            ),
        };
        parts.push(format!("B{} takes {}; {how}", batch.batch, id_span(batch.first_write, batch.writes)));
    }
    if parts.is_empty() {
        return trace_caption.to_string();
    }
    format!("{} ms: {}.", format_fixed_millis(mark), parts.join("; "))
}

/// "write 21 is" / "writes 23-24 are".
fn told(batch: &BatchTiming) -> String {
    match batch.writes {
        1 => format!("write {} is", batch.first_write),
        _ => format!("{} are", id_span(batch.first_write, batch.writes)),
    }
}

pub fn ordinal(n: usize) -> String {
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
    fn the_batch_at_the_playhead_knows_its_place_among_the_branchs_batches() {
        let branch = walab_core::quorum::branch_r(&QuorumSetup::branch_r(), 20).unwrap();
        let last = batch_at(&branch, Nanos::from_micros(14_000)).unwrap();
        assert_eq!(last.batch, 14);
        assert_eq!(batch_place(&branch, last), (3, 3));
        let first = batch_at(&branch, Nanos::ZERO).unwrap();
        assert_eq!((first.batch, batch_place(&branch, first)), (12, (1, 3)));
        let budget = branch.budget(23).unwrap();
        assert_eq!((budget.waited_for_batch_in_flight, budget.own_batch, budget.total), (Nanos::from_micros(1_300), Nanos::from_micros(1_400), Nanos::from_micros(2_700)));
    }

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
