//! Part 10: quorum commit, replication as a durability level.
//!
//! Everything before Part 10 survives a power loss on one machine. A dead volume, a lost
//! instance or a zone outage still takes the only copy. Replication adds copies on other
//! machines, and the question becomes which copies must hold a record before the writer
//! is told OK.
//!
//! # The rule
//!
//! The leader appends a batch to its own log and, at the same moment, sends it to its
//! followers. It commits (and acknowledges every writer in the batch) once `W` of the `N`
//! replicas, itself included, hold the batch, each by its own sync policy. The legs run
//! in parallel, so the commit waits for the *slowest leg it needs*, not for the sum of
//! them: the W-th fastest of {the leader's local sync, each follower's acknowledgement}.
//! At W = 2 of 3 that is the leader's sync or the faster follower, whichever comes later;
//! the slow follower does not count. Raft-style logs work this way (etcd, the Raft paper).
//!
//! PostgreSQL's synchronous replication is different: a WAL sender ships only WAL that is
//! already flushed locally, so a synchronous commit costs the local flush *plus* the
//! standby's round trip ([`QuorumMode::Postgres`]).
//!
//! # Built on the group-commit machine
//!
//! Replication does not change how batches form; it changes how long a batch takes to
//! become "persisted". So this module drives the very same [`GroupCommit`] machine as the
//! single-node log, and only its driver differs: when the machine asks for
//! [`Action::Persist`], the driver reports `handle_persisted` after the quorum latency
//! instead of one local sync. One batch in flight (`inflight_max = 1`) regroups the
//! writes exactly as Part 5 did, just with longer batches; a pipelined log
//! (`inflight_max > 1`) keeps several batches in flight and the machine still releases
//! acknowledgements in order.
//!
//! # Branch R
//!
//! The tiny store's main timeline runs with one local sync of 1.0 ms; write 20 is
//! acknowledged at 11.0 ms. Branch R forks there: the machine is resumed at that log
//! position with the quorum's latency, and the writers already queued (write 21) carry
//! over. Replica A leads (local sync 1.0 ms), B acknowledges 1.4 ms after A sends and C
//! 6.0 ms after. With W = 2 every batch takes max(1.0, 1.4) = 1.4 ms, so the batches
//! regroup: write 23 arrives at 12.5 ms, 0.1 ms after the batch carrying write 22 started,
//! waits 1.3 ms for it and 1.4 ms for its own: 2.7 ms, where the naive sum of every leg
//! (1.3 + 1.0 + 1.4 + 6.0) would claim 9.7.
//!
//! # What survives
//!
//! [`survival_table`] answers the page's other question: for each sync policy, does an
//! acknowledged write survive a lost leader, a lost zone, or a power event that every
//! replica shares? It evaluates the worst instant, the moment of the commit, and asks
//! which replicas hold the batch then and how (synced, or only in memory).

use std::collections::VecDeque;
use std::ops::ControlFlow;

use crate::group_commit::{Action, BatchId, Config, ConfigError, GroupCommit, Policy, Ticket, Tickets};
use crate::session::trace::WriteNumbering;
use crate::sim::clock::{self, End, InstantBound, Simulation};
use crate::time::Nanos;
use crate::tiny_store;
use crate::trace::{Event, FileKind, Trace, TraceWrite};

/// Write n is ticket n: the machine starts at ticket 1 (or at the fork's write + 1, and
/// the branch's writes keep the main timeline's numbers).
const WRITES_FROM_ONE: WriteNumbering = WriteNumbering::from_one();

/// How a commit waits for its replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum QuorumMode {
    /// The leader sends while it syncs; commit at the W-th fastest leg.
    Raft,
    /// The leader sends only what it has flushed; commit at local flush + the (W-1)-th
    /// fastest standby round trip.
    Postgres,
}

/// The replicas' timing and the commit rule.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct QuorumSetup {
    /// `legs[0]` is the leader's local sync; `legs[i]` for i >= 1 is follower i's
    /// acknowledgement delay after the leader sends (network plus its own sync).
    pub legs: Vec<Nanos>,
    /// Replicas, the leader included, that must hold a batch before it commits.
    pub w: usize,
    pub mode: QuorumMode,
    /// Batches in flight at once (1 = one batch in flight, as in Part 5).
    pub inflight_max: usize,
}

/// The most batches in flight a setup may ask for.
pub const INFLIGHT_MAX: usize = 1024;
/// The most replicas a setup may name.
pub const REPLICAS_MAX: usize = 64;
/// The longest leg a setup may name: one hour (longer is not a commit, it is an outage).
pub const LEG_MAX: Nanos = Nanos(3_600_000_000_000);

/// Why a quorum setup or run is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuorumError {
    /// No replicas at all.
    NoReplicas,
    /// W must be between 1 and N.
    BadW { w: usize, replicas: usize },
    /// A setting over its bound.
    TooLarge { what: &'static str, max: u64 },
    /// A leg of zero time (a sync or a round trip takes some time).
    ZeroLeg { replica: usize },
    Config(ConfigError),
    /// The fork must follow one of the tiny store's writes 1 to 23.
    ForkOutOfRange { after_write: u64 },
    /// The run needed more steps than its bound (a bug, not an input problem).
    TicksExceeded,
    /// The machine refused an append (a bug in the driver, not an input problem).
    Refused { write: u64, reason: String },
    /// The driver and the machine disagree (a bug, not an input problem).
    Driver { reason: &'static str },
}

impl std::fmt::Display for QuorumError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuorumError::NoReplicas => f.write_str("at least one replica (the leader) is needed"),
            QuorumError::BadW { w, replicas } => write!(f, "w = {w} must be between 1 and the {replicas} replicas"),
            QuorumError::TooLarge { what, max } => write!(f, "{what}: at most {max}"),
            QuorumError::ZeroLeg { replica } => write!(f, "replica {replica}: a delay of zero"),
            QuorumError::Config(error) => write!(f, "{error}"),
            QuorumError::ForkOutOfRange { after_write } => write!(f, "cannot fork after write {after_write}: the tiny store forks after one of writes 1 to 23"),
            QuorumError::TicksExceeded => f.write_str("the simulation did not finish within its step bound"),
            QuorumError::Refused { write, reason } => write!(f, "write {write} refused: {reason}"),
            QuorumError::Driver { reason } => write!(f, "driver: {reason}"),
        }
    }
}

impl QuorumSetup {
    /// Branch R as the page gives it: A 1.0 ms, B 1.4 ms, C 6.0 ms, W = 2, one batch in
    /// flight, Raft-style.
    pub fn branch_r() -> QuorumSetup {
        QuorumSetup {
            legs: vec![Nanos::from_micros(1_000), Nanos::from_micros(1_400), Nanos::from_micros(6_000)],
            w: 2,
            mode: QuorumMode::Raft,
            inflight_max: 1,
        }
    }

    pub fn validate(&self) -> Result<(), QuorumError> {
        if self.legs.is_empty() {
            return Err(QuorumError::NoReplicas);
        }
        if self.w == 0 || self.w > self.legs.len() {
            return Err(QuorumError::BadW { w: self.w, replicas: self.legs.len() });
        }
        if let Some(replica) = self.legs.iter().position(|leg| leg.0 == 0) {
            return Err(QuorumError::ZeroLeg { replica });
        }
        if self.inflight_max == 0 {
            return Err(QuorumError::Config(ConfigError::InflightMaxZero));
        }
        if self.inflight_max > INFLIGHT_MAX {
            return Err(QuorumError::TooLarge { what: "batches in flight", max: INFLIGHT_MAX as u64 });
        }
        if self.legs.len() > REPLICAS_MAX {
            return Err(QuorumError::TooLarge { what: "replicas", max: REPLICAS_MAX as u64 });
        }
        if self.legs.iter().any(|leg| *leg > LEG_MAX) {
            return Err(QuorumError::TooLarge { what: "a leg, in nanoseconds", max: LEG_MAX.0 });
        }
        Ok(())
    }

    /// Each replica's time from the batch's start until it holds the batch.
    pub fn arrival_of_each_leg(&self) -> Vec<Nanos> {
        match self.mode {
            QuorumMode::Raft => self.legs.clone(),
            QuorumMode::Postgres => {
                let flush = self.legs[0];
                std::iter::once(flush).chain(self.legs[1..].iter().map(|&round_trip| flush + round_trip)).collect()
            }
        }
    }

    /// How long one batch takes to commit: the W-th fastest replica to hold it.
    pub fn batch_latency(&self) -> Nanos {
        let mut legs = self.arrival_of_each_leg();
        crate::sort::sort(&mut legs);
        legs[self.w - 1]
    }

    /// Which replicas the commit waits for (the W fastest), by index.
    pub fn replicas_waited_for(&self) -> Vec<usize> {
        let legs = self.arrival_of_each_leg();
        let mut order: Vec<usize> = (0..legs.len()).collect();
        crate::sort::sort_by_key(&mut order, |&index| (legs[index], index));
        let mut waited: Vec<usize> = order[..self.w].to_vec();
        crate::sort::sort(&mut waited);
        waited
    }

    /// The naive budget that adds every leg as if they ran one after another.
    pub fn legs_sum(&self) -> Nanos {
        self.legs.iter().fold(Nanos::ZERO, |sum, &leg| sum + leg)
    }
}

/// A write handed to the driver: its id, its arrival, when the driver may feed it to
/// the machine (later than the arrival for writers carried over a fork), its segment
/// and its record size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingWrite {
    pub id: u64,
    pub arrival: Nanos,
    pub feed_at: Nanos,
    pub segment: u64,
    pub record_bytes: usize,
}

/// One batch as it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BatchTiming {
    /// The machine's batch number (B1, B2 ... of this run).
    pub batch: u64,
    pub first_write: u64,
    pub writes: u64,
    pub segment: u64,
    /// Byte offset in its segment and size: a sync writes the whole pages these touch.
    pub offset: u64,
    pub bytes: u64,
    pub start: Nanos,
    pub end: Nanos,
}

impl BatchTiming {
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }

    pub fn contains(&self, write: u64) -> bool {
        write >= self.first_write && write < self.first_write + self.writes
    }
}

/// One write as it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WriteTiming {
    pub id: u64,
    pub arrival: Nanos,
    pub ack: Nanos,
}

impl WriteTiming {
    pub fn wait(&self) -> Nanos {
        self.ack - self.arrival
    }
}

/// A driven run: every batch and every acknowledged write, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DrivenRun {
    pub batches: Vec<BatchTiming>,
    pub writes: Vec<WriteTiming>,
}

/// Drives a [`GroupCommit`] machine over `writes` (sorted by `feed_at`), completing each
/// persist `latency(start)` after it starts. `first_ticket` is the machine's next ticket
/// and must be the first write's id. Stops after `stop_after_ack` is acknowledged, if
/// given, without forming the batches that would start at that instant.
///
/// It runs on the simulators' one loop ([`crate::sim::clock`]): all inputs of an instant
/// (completions, then appends) are fed before the machine is polled, so the page's tie
/// rule holds.
pub fn drive(
    machine: GroupCommit,
    writes: &[PendingWrite],
    latency: impl Fn(Nanos) -> Nanos,
    stop_after_ack: Option<u64>,
) -> Result<DrivenRun, QuorumError> {
    let first_id = writes.first().map_or(1, |write| write.id);
    if writes.iter().enumerate().any(|(index, write)| write.id != first_id + index as u64) {
        return Err(QuorumError::Driver { reason: "write ids must be consecutive" });
    }
    let mut driver = Driver {
        machine,
        writes,
        latency,
        stop_after_ack,
        run: DrivenRun { batches: Vec::new(), writes: Vec::new() },
        running: VecDeque::new(),
        next: 0,
        record: vec![0x5au8; writes.iter().map(|write| write.record_bytes).max().unwrap_or(1)],
        first_id,
    };
    let bound = InstantBound { name: "quorum instants", instants_max: 4 * writes.len() as u64 + 16 };
    match clock::run(&mut driver, bound) {
        Ok(End::Quiet { .. }) | Ok(End::Stopped { stop: Ok(()), .. }) => Ok(driver.run),
        Ok(End::Stopped { stop: Err(error), .. }) => Err(error),
        Err(_) => Err(QuorumError::TicksExceeded),
    }
}

/// [`drive`]'s state: the writes still to feed and the persists in flight.
struct Driver<'w, L> {
    machine: GroupCommit,
    writes: &'w [PendingWrite],
    latency: L,
    stop_after_ack: Option<u64>,
    run: DrivenRun,
    /// (done at, batch, index into `run.batches`), in start order.
    running: VecDeque<(Nanos, BatchId, usize)>,
    /// Index of the next write to feed.
    next: usize,
    record: Vec<u8>,
    first_id: u64,
}

impl<L: Fn(Nanos) -> Nanos> Simulation for Driver<'_, L> {
    /// `Ok` once `stop_after_ack` is acknowledged; `Err` when driver and machine disagree.
    type Stop = Result<(), QuorumError>;

    fn next_arrival(&self) -> Option<Nanos> {
        self.writes.get(self.next).map(|write| write.feed_at)
    }

    fn next_completion(&self) -> Option<Nanos> {
        self.running.iter().map(|&(done, _, _)| done).min()
    }

    fn next_timeout(&self) -> Option<Nanos> {
        self.machine.poll_timeout()
    }

    fn complete(&mut self, now: Nanos) -> ControlFlow<Self::Stop> {
        let mut index = 0;
        while index < self.running.len() {
            if self.running[index].0 == now {
                let (_, batch, record_index) = self.running.remove(index).expect("index in range");
                if self.machine.handle_persisted(now, batch, Ok(())).is_err() {
                    return ControlFlow::Break(Err(QuorumError::Driver { reason: "a completion for a batch not in flight" }));
                }
                self.run.batches[record_index].end = now;
            } else {
                index += 1;
            }
        }
        ControlFlow::Continue(())
    }

    fn arrive(&mut self, now: Nanos) -> ControlFlow<Self::Stop> {
        while let Some(write) = self.writes.get(self.next).filter(|write| write.feed_at == now) {
            let ticket = match self.machine.handle_append(now, write.segment, &self.record[..write.record_bytes]) {
                Ok(ticket) => ticket,
                Err(error) => return ControlFlow::Break(Err(QuorumError::Refused { write: write.id, reason: error.to_string() })),
            };
            assert_eq!(ticket, Ticket(write.id), "ticket n is write n");
            self.next += 1;
        }
        ControlFlow::Continue(())
    }

    fn time_out(&mut self, now: Nanos) {
        self.machine.handle_timeout(now);
    }

    fn act(&mut self, now: Nanos) -> ControlFlow<Self::Stop> {
        // Acknowledgements first: a stop after an ack must not start the next batch.
        while let Some(action) = self.machine.poll_action() {
            match action {
                Action::Persist(batch) => {
                    let start = now;
                    let end = start + (self.latency)(start);
                    self.run.batches.push(BatchTiming {
                        batch: batch.id.0,
                        first_write: batch.tickets.first.0,
                        writes: batch.tickets.count,
                        segment: batch.segment,
                        offset: batch.offset,
                        bytes: batch.bytes.len() as u64,
                        start,
                        end,
                    });
                    self.running.push_back((end, batch.id, self.run.batches.len() - 1));
                    self.machine.recycle_buffer(batch.bytes);
                }
                Action::Ack(tickets) => {
                    let mut stopped = false;
                    for ticket in tickets.iter() {
                        // Tickets follow write ids one for one from the first write.
                        let index = (ticket.0 - self.first_id) as usize;
                        let Some(write) = self.writes.get(index).filter(|write| write.id == ticket.0) else {
                            return ControlFlow::Break(Err(QuorumError::Driver { reason: "an acknowledgement for a write never fed" }));
                        };
                        self.run.writes.push(WriteTiming { id: write.id, arrival: write.arrival, ack: now });
                        if self.stop_after_ack == Some(write.id) {
                            stopped = true;
                        }
                    }
                    if stopped {
                        return ControlFlow::Break(Ok(()));
                    }
                }
                Action::Write(_) | Action::Sync { .. } | Action::Fail { .. } => {
                    return ControlFlow::Break(Err(QuorumError::Driver { reason: "an action a sync-first policy never asks for" }));
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn tiny_pending(ids: std::ops::RangeInclusive<u64>, not_before: Nanos) -> Vec<PendingWrite> {
    tiny_store::WRITES[(*ids.start() - 1) as usize..*ids.end() as usize]
        .iter()
        .map(|write| PendingWrite {
            id: write.id,
            arrival: write.arrival,
            feed_at: write.arrival.max(not_before),
            segment: write.segment(),
            record_bytes: write.record().len(),
        })
        .collect()
}

/// The tiny store's main timeline (group commit, one local sync of 1.0 ms), up to the
/// acknowledgement of `after_write`.
pub fn tiny_main_until_ack(after_write: u64) -> Result<DrivenRun, QuorumError> {
    let machine = GroupCommit::new(Config::file(Policy::Group)).map_err(QuorumError::Config)?;
    drive(machine, &tiny_pending(1..=24, Nanos::ZERO), |_| tiny_store::SYNC_LATENCY, Some(after_write))
}

/// Branch R: the main timeline until `after_write` is acknowledged, then the rest of the
/// tiny store's writes under the quorum.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BranchR {
    pub setup: QuorumSetup,
    pub fork_after_write: u64,
    /// When `fork_after_write` was acknowledged on the main timeline.
    pub fork_at: Nanos,
    /// The main timeline up to the fork.
    pub main: DrivenRun,
    /// The branch after the fork.
    pub branch: DrivenRun,
}

/// One write's budget: how long it waited for the batch in flight, how long its own batch
/// took, and what adding every leg would have claimed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WriteBudget {
    pub write: u64,
    pub arrival: Nanos,
    /// From arrival until its own batch started.
    pub waited_for_batch_in_flight: Nanos,
    /// Its own batch, start to commit.
    pub own_batch: Nanos,
    pub total: Nanos,
    /// The wait for the batch in flight plus every replica's leg, as if sequential.
    pub naive_sum: Nanos,
}

impl BranchR {
    /// The budget of one write of the branch.
    pub fn budget(&self, write: u64) -> Option<WriteBudget> {
        let timing = self.branch.writes.iter().find(|timing| timing.id == write)?;
        let batch = self.branch.batches.iter().find(|batch| batch.contains(write))?;
        let waited = batch.start - timing.arrival;
        Some(WriteBudget {
            write,
            arrival: timing.arrival,
            waited_for_batch_in_flight: waited,
            own_batch: batch.duration(),
            total: timing.wait(),
            naive_sum: waited + self.setup.legs_sum(),
        })
    }
}

impl BranchR {
    /// The run as a [`Trace`]: the main timeline up to the fork, then the branch, with a
    /// note at the fork and one per branch batch naming the legs it waited for.
    pub fn trace(&self) -> Trace {
        let mut trace = Trace::new("tiny-store-branch-r", "group", tiny_store::UNIT_BYTES as u32);
        let segments = tiny_store::WRITES.iter().map(|write| write.segment()).max().unwrap_or(1);
        for segment in 1..=segments {
            trace.add_file(&format!("wal-{segment}"), FileKind::Log, 0);
        }
        for write in &tiny_store::WRITES {
            trace.writes.push(TraceWrite {
                id: write.id,
                arrival: write.arrival,
                segment: write.segment(),
                record_bytes: write.record().len() as u64,
                op: Some(match write.op {
                    crate::codec::Op::Put => "put".to_string(),
                    crate::codec::Op::Del => "del".to_string(),
                }),
                key: Some(write.key.to_string()),
                value: Some(write.value.to_string()),
            });
        }
        // (instant, order within the instant, event): arrivals, then completions and
        // acknowledgements, then notes and newly formed batches.
        let mut events: Vec<(Nanos, u8, Event)> = Vec::new();
        for write in &tiny_store::WRITES {
            events.push((write.arrival, 0, WRITES_FROM_ONE.arrive(Ticket(write.id))));
        }
        let legs: Vec<String> = self
            .setup
            .arrival_of_each_leg()
            .iter()
            .enumerate()
            .map(|(index, leg)| {
                let waited = if self.setup.replicas_waited_for().contains(&index) { "" } else { ", not waited for" };
                format!("{} {leg}{waited}", replica_name(index))
            })
            .collect();
        events.push((
            self.fork_at,
            2,
            Event::Note { text: format!("fork after write {}: W = {} of {}, {:?} mode; legs {}", self.fork_after_write, self.setup.w, self.setup.legs.len(), self.setup.mode, legs.join(", ")) },
        ));
        for (batches, quorum) in [(&self.main.batches, false), (&self.branch.batches, true)] {
            for batch in batches {
                let file = (batch.segment - 1) as u32;
                let tickets = Tickets { first: Ticket(batch.first_write), count: batch.writes };
                events.push((batch.start, 3, WRITES_FROM_ONE.formed_from(BatchId(batch.batch), batch.segment, tickets, batch.offset, batch.bytes)));
                events.push((batch.start, 4, Event::Write { file, offset: batch.offset, bytes: batch.bytes }));
                events.push((batch.start, 5, Event::SyncStart { sync: batch.batch, file, batch: Some(batch.batch), units: Vec::new() }));
                if quorum {
                    events.push((batch.start, 6, Event::Note { text: format!("B{} waits for {}", batch.batch, legs.join(", ")) }));
                }
                events.push((batch.end, 1, Event::SyncEnd { sync: batch.batch, file, ok: true, error: None }));
            }
        }
        for run in [&self.main, &self.branch] {
            for write in &run.writes {
                events.push((write.ack, 1, WRITES_FROM_ONE.ack(Tickets { first: Ticket(write.id), count: 1 })));
            }
        }
        crate::sort::sort_by_key(&mut events, |(at, order, _)| (*at, *order));
        for (at, _, event) in events {
            trace.push(at, event);
        }
        trace
    }
}

/// A, B, C ... for replica 0, 1, 2 ...
pub fn replica_name(index: usize) -> String {
    let letter = (b'A' + (index % 26) as u8) as char;
    if index < 26 {
        letter.to_string()
    } else {
        format!("{letter}{}", index / 26)
    }
}

/// Runs branch R: fork the tiny store after `after_write` is acknowledged and run the
/// remaining writes under `setup`.
pub fn branch_r(setup: &QuorumSetup, after_write: u64) -> Result<BranchR, QuorumError> {
    setup.validate()?;
    if !(1..=23).contains(&after_write) {
        return Err(QuorumError::ForkOutOfRange { after_write });
    }
    let main = tiny_main_until_ack(after_write)?;
    let fork_at = main.writes.iter().find(|write| write.id == after_write).map(|write| write.ack).ok_or(QuorumError::TicksExceeded)?;
    // Every write up to `after_write` is durable at the fork (acks are in order); the
    // machine resumes at that log position, in that segment.
    let done = &tiny_store::WRITES[..after_write as usize];
    let lsn: u64 = done.iter().map(|write| write.record().len() as u64).sum();
    let segment = done.last().expect("at least one write").segment();
    let segment_bytes: u64 = done.iter().filter(|write| write.segment() == segment).map(|write| write.record().len() as u64).sum();
    let config = Config { inflight_max: setup.inflight_max, ..Config::file(Policy::Group) };
    let machine = GroupCommit::resume(config, Ticket(after_write + 1), lsn, segment, segment_bytes).map_err(QuorumError::Config)?;
    let latency = setup.batch_latency();
    let mut branch = drive(machine, &tiny_pending(after_write + 1..=24, fork_at), |_| latency, None)?;
    // The resumed machine numbers its batches from 1; continue the main timeline's count.
    for batch in &mut branch.batches {
        batch.batch += main.batches.len() as u64;
    }
    Ok(BranchR { setup: setup.clone(), fork_after_write: after_write, fork_at, main, branch })
}

/// Group commit at steady load: `count` writers evenly spaced at `rate_per_s`, records of
/// `record_bytes`, one local sync of `sync_latency` at a time. The budget takes its batch
/// size from here.
pub fn steady_group_commit(rate_per_s: u64, count: u64, record_bytes: usize, sync_latency: Nanos) -> Result<DrivenRun, QuorumError> {
    let writes: Vec<PendingWrite> = (0..count)
        .map(|index| {
            // Writer i arrives in the middle of its slot: (i + 1/2) / rate.
            let at = Nanos(((2 * u128::from(index) + 1) * 1_000_000_000 / (2 * u128::from(rate_per_s.max(1)))) as u64);
            PendingWrite { id: index + 1, arrival: at, feed_at: at, segment: 1, record_bytes }
        })
        .collect();
    let config = Config { batch_bytes_max: usize::MAX / 4, unflushed_bytes_max: usize::MAX / 4, ..Config::file(Policy::Group) };
    let machine = GroupCommit::new(config).map_err(QuorumError::Config)?;
    drive(machine, &writes, |_| sync_latency, None)
}

mod policies;
pub use self::policies::*;

#[cfg(test)]
mod tests;
