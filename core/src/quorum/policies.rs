//! What survives (the second half of Part 10): each sync policy across replicas, how
//! each replica holds a batch at the instant of the commit, and which failures an
//! acknowledged write survives ([`survival_table`]).

use super::QuorumMode;
use crate::time::Nanos;

/// When a replica tells the leader it holds a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum AckAfter {
    /// After its own sync: the copy is on stable media.
    Sync,
    /// On receipt (or after handing it to the OS): the copy is in memory.
    Receipt,
}

/// One replica of a durability policy.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ReplicaSpec {
    pub name: &'static str,
    pub zone: &'static str,
    /// Round trip from the leader (zero for the leader itself).
    pub round_trip: Nanos,
    pub sync_latency: Nanos,
    pub ack_after: AckAfter,
}

/// A sync policy across replicas.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DurabilityPolicy {
    pub name: &'static str,
    /// `replicas[0]` is the leader.
    pub replicas: Vec<ReplicaSpec>,
    pub w: usize,
    pub mode: QuorumMode,
}

/// How a replica holds a batch at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Holding {
    /// Synced to stable media.
    Durable,
    /// In memory or the page cache only.
    Volatile,
    /// Not there yet, as far as the leader knows.
    Missing,
}

/// A failure that strikes at the instant of the commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Failure {
    /// The leader alone loses power; it comes back with its disk.
    LeaderPowerLoss,
    /// The leader's instance and volume are gone for good.
    LostLeader,
    /// The leader's zone is gone, with every replica in it.
    LostZone,
    /// Every replica loses power at once (one power event they all share).
    SharedPowerEvent,
}

impl Failure {
    pub const ALL: [Failure; 4] = [Failure::LeaderPowerLoss, Failure::LostLeader, Failure::LostZone, Failure::SharedPowerEvent];

    pub fn label(&self) -> &'static str {
        match self {
            Failure::LeaderPowerLoss => "leader power loss",
            Failure::LostLeader => "lost leader",
            Failure::LostZone => "lost zone",
            Failure::SharedPowerEvent => "shared power event",
        }
    }
}

impl DurabilityPolicy {
    /// When each replica acknowledges, measured from the batch's start.
    fn ack_times(&self) -> Vec<Nanos> {
        let leader = &self.replicas[0];
        let leader_ack = match leader.ack_after {
            AckAfter::Sync => leader.sync_latency,
            AckAfter::Receipt => Nanos::ZERO,
        };
        let shipped_at = match self.mode {
            QuorumMode::Raft => Nanos::ZERO,
            QuorumMode::Postgres => leader.sync_latency,
        };
        std::iter::once(leader_ack)
            .chain(self.replicas[1..].iter().map(|replica| {
                shipped_at
                    + replica.round_trip
                    + match replica.ack_after {
                        AckAfter::Sync => replica.sync_latency,
                        AckAfter::Receipt => Nanos::ZERO,
                    }
            }))
            .collect()
    }

    /// The commit instant after the batch starts: the W-th acknowledgement.
    pub fn commit_latency(&self) -> Nanos {
        let mut acks = self.ack_times();
        crate::sort::sort(&mut acks);
        acks[self.w - 1]
    }

    /// How each replica holds the batch at the commit instant. The leader always holds
    /// it at least in memory; a follower counts only once it has acknowledged.
    pub fn holdings_at_commit(&self) -> Vec<Holding> {
        let commit = self.commit_latency();
        let acks = self.ack_times();
        self.replicas
            .iter()
            .zip(&acks)
            .enumerate()
            .map(|(index, (replica, &ack))| {
                let synced = match replica.ack_after {
                    AckAfter::Sync => ack <= commit,
                    AckAfter::Receipt => index == 0 && self.mode == QuorumMode::Postgres && replica.sync_latency <= commit,
                };
                if synced {
                    Holding::Durable
                } else if index == 0 || ack <= commit {
                    Holding::Volatile
                } else {
                    Holding::Missing
                }
            })
            .collect()
    }

    /// Whether a batch acknowledged at the commit instant survives `failure` striking then.
    pub fn survives(&self, failure: Failure) -> bool {
        let holdings = self.holdings_at_commit();
        let leader_zone = self.replicas[0].zone;
        let others_hold = |keep: &dyn Fn(&ReplicaSpec) -> bool| {
            self.replicas.iter().zip(&holdings).skip(1).any(|(replica, holding)| keep(replica) && *holding != Holding::Missing)
        };
        match failure {
            Failure::LeaderPowerLoss => holdings[0] == Holding::Durable || others_hold(&|_| true),
            Failure::LostLeader => others_hold(&|_| true),
            Failure::LostZone => others_hold(&|replica| replica.zone != leader_zone),
            Failure::SharedPowerEvent => holdings.contains(&Holding::Durable),
        }
    }
}

/// The page's sync policies on branch R's machines. Labelled assumptions: every sync
/// takes 1.0 ms; B's round trip is 0.4 ms (so it acknowledges a synced copy 1.4 ms after
/// the leader sends) and C's 5.0 ms (6.0 ms); A, B and C sit in zones a, b and c.
pub fn page_policies() -> Vec<DurabilityPolicy> {
    policies_for_three([Nanos::from_millis(1), Nanos::from_micros(1_400), Nanos::from_micros(6_000)])
}

/// The same policies for three replicas timed like `legs` (the leader's sync, then each
/// follower's acknowledgement of a synced copy): every replica syncs as fast as the
/// leader, and a follower's round trip is the rest of its leg.
pub fn policies_for_three(legs: [Nanos; 3]) -> Vec<DurabilityPolicy> {
    let sync = legs[0];
    let b_round_trip = legs[1].saturating_sub(sync);
    let c_round_trip = legs[2].saturating_sub(sync);
    let replica = |name, zone, round_trip: Nanos, ack_after| ReplicaSpec { name, zone, round_trip, sync_latency: sync, ack_after };
    let three = |ack: AckAfter, leader_ack: AckAfter| {
        vec![replica("A", "a", Nanos::ZERO, leader_ack), replica("B", "b", b_round_trip, ack), replica("C", "c", c_round_trip, ack)]
    };
    let policy = |name, replicas, w, mode| DurabilityPolicy { name, replicas, w, mode };
    vec![
        policy("one node, sync before OK", vec![replica("A", "a", Nanos::ZERO, AckAfter::Sync)], 1, QuorumMode::Raft),
        policy("one node, OK before sync", vec![replica("A", "a", Nanos::ZERO, AckAfter::Receipt)], 1, QuorumMode::Raft),
        policy("async replicas (W = 1), leader syncs", three(AckAfter::Sync, AckAfter::Sync), 1, QuorumMode::Raft),
        policy("W = 2 of 3, every replica syncs (Raft)", three(AckAfter::Sync, AckAfter::Sync), 2, QuorumMode::Raft),
        policy("W = 2 of 3, nobody syncs before OK", three(AckAfter::Receipt, AckAfter::Receipt), 2, QuorumMode::Raft),
        policy(
            "W = 2 of 3, B in the leader's zone",
            vec![replica("A", "a", Nanos::ZERO, AckAfter::Sync), replica("B", "a", b_round_trip, AckAfter::Sync), replica("C", "c", c_round_trip, AckAfter::Sync)],
            2,
            QuorumMode::Raft,
        ),
        policy("W = 3 of 3, every replica syncs", three(AckAfter::Sync, AckAfter::Sync), 3, QuorumMode::Raft),
        policy("PostgreSQL synchronous_commit = on", three(AckAfter::Sync, AckAfter::Sync), 2, QuorumMode::Postgres),
        policy("PostgreSQL synchronous_commit = remote_write", three(AckAfter::Receipt, AckAfter::Sync), 2, QuorumMode::Postgres),
    ]
}

/// One row of the survival table.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SurvivalRow {
    pub policy: &'static str,
    pub commit_latency: Nanos,
    pub holdings: Vec<(&'static str, Holding)>,
    /// One answer per [`Failure::ALL`], in order.
    pub survives: Vec<(Failure, bool)>,
}

/// What an acknowledged write survives, per policy, computed from each policy's timing.
pub fn survival_table(policies: &[DurabilityPolicy]) -> Vec<SurvivalRow> {
    policies
        .iter()
        .map(|policy| SurvivalRow {
            policy: policy.name,
            commit_latency: policy.commit_latency(),
            holdings: policy.replicas.iter().map(|replica| replica.name).zip(policy.holdings_at_commit()).collect(),
            survives: Failure::ALL.iter().map(|&failure| (failure, policy.survives(failure))).collect(),
        })
        .collect()
}
